"""`triage validate`: check claim cards and workload files, every problem listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import Problem, UserError
from ..inputs import cards as cards_mod
from ..inputs import catalog, workloads
from ..io.files import new_run
from .common import EXIT_USER, FILE, catalog_option, guard, info, report


@click.command(name="validate")
@click.argument("cards", nargs=-1, type=FILE)
@click.option("--workloads", "-w", "workload_files", multiple=True, type=FILE,
              help="Also validate this workload file (repeatable).")
@catalog_option
@click.option("--strict", is_flag=True,
              help="Also require evidence ({quote, where} with the source's version) for every reported number, "
                   "setting detail and quality figure of a paper card.")
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="text: one line per problem; json: a list of problems.")
@guard
def command(cards: tuple[Path, ...], workload_files: tuple[Path, ...], catalog_file: Path | None, strict: bool,
            fmt: str) -> None:
    """Check claim cards (and workload files): schema and meaning, every problem listed.

    Cards resolve names in the shipped catalog, the --catalog file and the --workloads files' definitions.

    \b
    Example:
      triage validate claims/*.yaml
      triage validate --strict claims/*.yaml
      triage validate claims/kv2x.yaml --workloads my-matrix.yaml
    """
    if not cards and not workload_files:
        raise click.UsageError("give at least one card or --workloads file")
    problems: list[Problem] = []
    cat = catalog.resolve(catalog_file)
    for path in workload_files:
        new_run(command=True)                   # each file is its own run: the read limits apply per file
        try:
            opened = workloads.definitions(path, cat)       # read and checked against the schema once
            workloads.load(opened)
            cat = opened.catalog
        except UserError as err:
            problems += err.problems
    for path in cards:
        new_run(command=True)
        try:
            cards_mod.load(path, cat, strict_evidence=strict)
        except UserError as err:
            problems += err.problems
    if fmt == "json":
        click.echo(json.dumps([p.to_dict() for p in problems], indent=2))
    else:
        report(problems)
        n = len(cards) + len(workload_files)
        if not problems:
            info(f"{n} file{'s' if n != 1 else ''} valid")
    if problems:
        sys.exit(EXIT_USER)
