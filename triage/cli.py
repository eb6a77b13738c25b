"""The `triage` command: a thin shell that parses options, calls the core, prints, and sets the exit code.

Exit codes: 0 ok, 1 bad input (a user error, printed without a traceback),
2 bad usage (click), 3 an internal error (a bug: rerun with --traceback).
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

EXIT_USER, EXIT_INTERNAL = 1, 3


def _guard(fn: Callable[..., None]) -> Callable[..., None]:
    """The one top-level handler: user errors as addressed lines, bugs with a hint."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from .errors import UserError

        ctx = click.get_current_context()
        try:
            fn(*args, **kwargs)
        except UserError as err:
            for problem in err.problems:
                click.echo(f"error: {problem}", err=True)
            ctx.exit(EXIT_USER)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if ctx.find_root().params.get("show_traceback"):
                traceback.print_exc()
            else:
                click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                           "This is a bug in triage; rerun with --traceback and report it.", err=True)
            ctx.exit(EXIT_INTERNAL)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage", prog_name="triage")
@click.option("--traceback", "show_traceback", is_flag=True, help="Show the traceback of an internal error.")
def main(show_traceback: bool) -> None:
    """Turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml --workloads my-matrix.yaml -o memo.md
      triage validate claims/*.yaml
    """


@main.command()
@click.argument("card", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--workloads", "-w", "workloads", type=click.Path(dir_okay=False, path_type=Path),
              help="Workload matrix file (default: the shipped chat-4k / docqa-128k / chat-4k-b64 / prefill-2k).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here (atomically) instead of standard output.")
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="md (the decision memo) or json; default from the -o suffix, else md.")
@click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
@_guard
def run(card: Path, workloads: Path | None, output: Path | None, fmt: str | None, force: bool) -> None:
    """Evaluate CARD over the workload matrix and print the decision memo.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml -o memo.json
    """
    from .engine import evaluate
    from .memo import RENDERERS
    from .output import write_atomic

    fmt = fmt or ("json" if output is not None and output.suffix == ".json" else "md")
    result = evaluate(card, workloads)
    text = RENDERERS[fmt](result)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_atomic(output, text, inputs=tuple(p for p in (card, workloads) if p is not None), force=force)
        click.echo(f"wrote {output} ({len(result)} cells, decision {result.decision()['verdict']})", err=True)


@main.command()
@click.argument("cards", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--workloads", "-w", "workload_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Also validate this workload file (repeatable).")
@click.option("--format", "-f", "fmt", type=click.Choice(["text", "json"]), default="text",
              help="text: one line per problem; json: a list of problems.")
@_guard
def validate(cards: tuple[Path, ...], workload_files: tuple[Path, ...], fmt: str) -> None:
    """Check claim cards (and workload files): schema and meaning, every problem listed.

    \b
    Example:
      triage validate claims/*.yaml
      triage validate claims/kv2x.yaml --workloads my-matrix.yaml
    """
    from . import cards as cards_mod
    from . import catalog, workloads
    from .errors import UserError

    if not cards and not workload_files:
        raise click.UsageError("give at least one card or --workloads file")
    cat = catalog.load()
    problems = []
    for path in cards:
        try:
            cards_mod.load(path, cat)
        except UserError as err:
            problems += err.problems
    for path in workload_files:
        try:
            workloads.load(path, cat)
        except UserError as err:
            problems += err.problems
    if fmt == "json":
        click.echo(json.dumps([p.to_dict() for p in problems], indent=2))
    else:
        for problem in problems:
            click.echo(f"error: {problem}", err=True)
        n = len(cards) + len(workload_files)
        if not problems:
            click.echo(f"{n} file{'s' if n != 1 else ''} valid", err=True)
    if problems:
        sys.exit(EXIT_USER)
