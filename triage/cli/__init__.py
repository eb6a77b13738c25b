"""The `triage` command: a thin shell over the core, one module per command (cli/<command>.py)."""

from __future__ import annotations

import click

from . import calibrate, catalog, compare, new, run, schema, sweep, validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage", prog_name="triage")
@click.option("--traceback", "show_traceback", is_flag=True, help="Show the traceback of an internal error.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but the output and errors.")
@click.option("--verbose", "-v", is_flag=True, help="Also print what was read and how long each stage took.")
def main(show_traceback: bool, quiet: bool, verbose: bool) -> None:
    """Turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml --workloads my-matrix.yaml -o memo.md
      triage sweep claims/kv2x.yaml -w grid.yaml -o cells.csv
      triage validate claims/*.yaml
      triage new --direction cache --id my-paper
      triage catalog models

    Exit codes: 0 ok, 1 bad input, 2 bad usage, 3 internal error.
    """


for _module in (run, compare, sweep, validate, calibrate, schema, new, catalog):
    main.add_command(_module.command)
