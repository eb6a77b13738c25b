"""`python -m triage` is the `triage` command."""

from .cli import main

main(prog_name="triage")
