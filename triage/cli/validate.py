"""`triage validate`: check claim cards and workload files, every problem listed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..analysis.cannot_act import growth
from ..errors import Problem, UserError
from ..inputs import cards as cards_mod
from ..inputs import catalog, workloads
from ..inputs.claim import Claim
from ..io.resources import schema
from ..io.run import new_run
from ..io.yamlio import load_file
from ..report.notices import words
from .common import EXIT_USER, FILE, catalog_option, guard, info, report, warning


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

    Cards resolve names in the shipped catalog, the --catalog file and the --workloads files' definitions. A
    valid card may still draw a warning (a saving's multiplier above 1 grows what it names): printed, the exit
    status unchanged.

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
    warned: list[str] = []
    for path in cards:
        new_run(command=True)
        try:
            claim = cards_mod.load(path, cat, strict_evidence=strict)
        except UserError as err:
            problems += err.problems + _workload_hint(path)
            continue
        warned += [f"{c.file}: {words(n)}" for c in _cards(claim) for n in growth(c.change)]
    for line in dict.fromkeys(warned):          # a card stacked by two cards named is warned of once
        warning(line)
    if fmt == "json":
        click.echo(json.dumps([p.to_dict() for p in problems], indent=2))
    else:
        report(problems)
        n = len(cards) + len(workload_files)
        if not problems:
            info(f"{n} file{'s' if n != 1 else ''} valid")
    if problems:
        sys.exit(EXIT_USER)


def _workload_hint(path: Path) -> list[Problem]:
    """A problem pointing to -w where a file given as a card is a workload file: its top-level keys are all the
    workload schema's and none is a card's (the card errors alone would say only what a card lacks)."""
    try:
        data = load_file(path).data
    except UserError:
        return []
    keys = set(data) if isinstance(data, dict) else set()
    if not keys or not keys <= set(schema("workloads")["properties"]) or keys & set(schema("claim")["properties"]):
        return []
    return [Problem(str(path), path="", message=(
        f"this is a workload file (top-level {', '.join(sorted(keys))}), not a card: validate it with "
        f"`triage validate -w {path}`"))]


def _cards(claim: Claim) -> list[Claim]:
    """The cards a claim is made of, each with its own file and change: itself, or a stack's parts (nested
    stacks' too)."""
    return [c for part in claim.stacked for c in _cards(part)] or [claim]
