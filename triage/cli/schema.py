"""`triage schema`: print the JSON Schema of claim cards or workload files."""

from __future__ import annotations

import click

from ..io.resources import schema_text
from .common import guard


@click.command(name="schema")
@click.argument("name", type=click.Choice(["claim", "workloads"]), default="claim")
@guard
def command(name: str) -> None:
    """Print the JSON Schema of claim cards (or of workload files).

    \b
    Example:
      triage schema > claim.schema.json
      triage schema workloads
    """
    click.echo(schema_text(name), nl=False)
