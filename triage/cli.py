"""The `triage` command: a thin shell that parses options, calls the core, prints, and sets the exit code.

Exit codes: 0 ok, 1 bad input (a user error, printed without a traceback),
2 bad usage (click), 3 an internal error (a bug: rerun with --traceback).
Colour only on a terminal and never with NO_COLOR set (https://no-color.org).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

EXIT_USER, EXIT_INTERNAL = 1, 3


def _color() -> bool | None:
    """False under NO_COLOR; otherwise click decides (colour only on a terminal)."""
    return False if os.environ.get("NO_COLOR") else None


def _error(message: str) -> None:
    click.echo(click.style("error:", fg="red", bold=True) + f" {message}", err=True, color=_color())


def _info(message: str) -> None:
    """A progress line on stderr, unless --quiet."""
    if not click.get_current_context().find_root().params.get("quiet"):
        click.echo(message, err=True)


def _format(fmt: str | None, output: Path | None) -> str:
    """The --format given, else json for a .json output, else md."""
    return fmt or ("json" if output is not None and output.suffix == ".json" else "md")


def _deliver(text: str, output: Path | None, inputs: tuple[Path | None, ...], force: bool, note: str = "") -> None:
    """Standard output, or an atomic write that never lands on an input."""
    from .output import write_atomic

    if output is None:
        click.echo(text, nl=False)
        return
    write_atomic(output, text, inputs=tuple(p for p in inputs if p is not None), force=force)
    _info(f"wrote {output}{note}")


def _verbose(message: str) -> None:
    if click.get_current_context().find_root().params.get("verbose"):
        click.echo(message, err=True)


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
                _error(str(problem))
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
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but the output and errors.")
@click.option("--verbose", "-v", is_flag=True, help="Also print what was read and how long each stage took.")
def main(show_traceback: bool, quiet: bool, verbose: bool) -> None:
    """Turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml --workloads my-matrix.yaml -o memo.md
      triage validate claims/*.yaml
      triage new --direction cache --id my-paper
      triage catalog models

    Exit codes: 0 ok, 1 bad input, 2 bad usage, 3 internal error.
    """


@main.command()
@click.argument("cards", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--stack", is_flag=True, help="Apply several cards together as one claim (savings add up).")
@click.option("--workloads", "-w", "workloads", type=click.Path(dir_okay=False, path_type=Path),
              help="Workload matrix file (default: the shipped chat-4k / docqa-128k / chat-4k-b64 / prefill-2k).")
@click.option("--model", "-m", "model", metavar="NAME|CONFIG.json",
              help="Replace every workload's model: a catalog name or a local Hugging Face config.json.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here (atomically) instead of standard output.")
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="md (the decision memo) or json; default from the -o suffix, else md.")
@click.option("--brief", is_flag=True, help="A one-page reading-group brief instead of the memo.")
@click.option("--figures", type=click.Choice(["svg", "none"]), default="svg",
              help="With -o FILE.md: write FILE.roofline.svg and FILE.gain.svg beside the memo (default), or none.")
@click.option("--measured", type=click.Path(exists=False, path_type=Path),
              help="Measurements (CSV, JSON, vLLM bench JSON, or a folder of them) for the implementation and "
                   "end-to-end layers.")
@click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
@_guard
def run(cards: tuple[Path, ...], stack: bool, workloads: Path | None, model: str | None, output: Path | None,
        fmt: str | None, brief: bool, figures: str, measured: Path | None, force: bool) -> None:
    """Evaluate a claim CARD over the workload matrix and print the decision memo.

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml -o memo.json
      triage run claims/kv2x.yaml --model ./Meta-Llama-3-8B/config.json
      triage run claims/kv2x.yaml --brief
      triage run claims/int8-weights.yaml claims/int8-kv.yaml --stack
    """
    from .engine import evaluate
    from .memo import RENDERERS
    from .output import write_atomic

    if brief and fmt == "json":
        raise click.UsageError("--brief is Markdown: drop --format json")
    if len(cards) > 1 and not stack:
        raise click.UsageError("several cards: add --stack to apply them together, or use `triage compare`")
    card: Any = list(cards) if len(cards) > 1 else cards[0]
    fmt = "brief" if brief else _format(fmt, output)
    start = time.perf_counter()
    result = evaluate(card, workloads, model)
    if measured is not None:
        from .measured import apply

        result = apply(result, measured)
    evaluated = time.perf_counter()
    figure_files: list[dict[str, str]] | str = ""
    if fmt == "md" and output is not None and figures == "svg":
        from .memo import figure_data

        figure_files = []
        for name, svg in figure_data(result, result.to_dict()).items():
            path = output.with_name(f"{output.stem}.{name}.svg")
            write_atomic(path, svg, force=force)
            figure_files.append({"title": name, "path": path.name})
    elif fmt == "md" and figures == "none":
        figure_files = "--figures none"
    if fmt == "md":
        from .memo import render_markdown

        text = render_markdown(result, figure_files)
    else:
        text = RENDERERS[fmt](result)
    _verbose(f"card {card}; workloads {result.matrix.source}; {len(result)} cells; evaluated in "
             f"{(evaluated - start) * 1e3:.0f} ms, rendered {fmt} in {(time.perf_counter() - evaluated) * 1e3:.0f} ms")
    _deliver(text, output, (*cards, workloads), force,
             f" ({len(result)} cells, decision {result.decision()['verdict']})")


@main.command()
@click.argument("cards", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--workloads", "-w", "workloads", type=click.Path(dir_okay=False, path_type=Path),
              help="Workload matrix file (default: the shipped one).")
@click.option("--model", "-m", "model", metavar="NAME|CONFIG.json", help="Replace every workload's model.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here (atomically) instead of standard output.")
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="md or json; default from the -o suffix, else md.")
@click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
@_guard
def compare(cards: tuple[Path, ...], workloads: Path | None, model: str | None, output: Path | None,
            fmt: str | None, force: bool) -> None:
    """Rank claims on the same workloads: per workload, overall, and per GPU-hour of reproduction.

    \b
    Example:
      triage compare claims/kv2x.yaml claims/gqa-int8-kv.yaml
      triage compare claims/*.yaml -w examples/mix-longdoc.yaml -o which-first.md
    """
    from .compare import comparison, render_markdown
    from .engine import evaluate

    if len(cards) < 2:
        raise click.UsageError("compare needs at least two cards")
    results = [evaluate(card, workloads, model) for card in cards]
    text = render_markdown(results) if _format(fmt, output) == "md" else json.dumps(
        comparison(results), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    _deliver(text, output, (*cards, workloads), force)


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
            _error(str(problem))
        n = len(cards) + len(workload_files)
        if not problems:
            _info(f"{n} file{'s' if n != 1 else ''} valid")
    if problems:
        sys.exit(EXIT_USER)


@main.command()
@click.argument("measurements", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a workload file that uses the fitted values (atomically).")
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default="md",
              help="The report as md or json (on standard output).")
@click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
@_guard
def calibrate(measurements: Path, output: Path | None, fmt: str, force: bool) -> None:
    """Fit bandwidth and compute efficiency (and per-step overhead) per hardware from measured step times.

    MEASUREMENTS is a CSV: model, hardware, context, batch, weights, group_size, tp, tokens_per_s or tpot,
    source.

    \b
    Example:
      triage calibrate examples/measurements/gpt-fast-a100.csv
      triage calibrate my-runs.csv -o calibrated.yaml
    """
    from . import calibrate as calibrate_mod
    from .output import write_atomic

    report = calibrate_mod.calibrate(measurements)
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, allow_nan=False))
    else:
        click.echo(calibrate_mod.render_markdown(report), nl=True)
    if output is not None:
        write_atomic(output, calibrate_mod.workload_file(report), inputs=(measurements,), force=force)
        _info(f"wrote {output}")


@main.command()
@click.argument("name", type=click.Choice(["claim", "workloads"]), default="claim")
@_guard
def schema(name: str) -> None:
    """Print the JSON Schema of claim cards (or of workload files).

    \b
    Example:
      triage schema > claim.schema.json
      triage schema workloads
    """
    from .resources import resource_dir

    click.echo((resource_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8"), nl=False)


@main.command()
@click.option("--direction", "-d", required=True,
              type=click.Choice(["attention", "cache", "weights", "decoding", "system"]),
              help="Which of the course's five directions the paper moves.")
@click.option("--id", "card_id", required=True, help="The card's id, lowercase (also its file name).")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write it (default: claims/ID.yaml).")
@_guard
def new(direction: str, card_id: str, output: Path | None) -> None:
    """Write a commented claim card for a paper; never overwrites.

    \b
    Example:
      triage new --direction cache --id kivi
      triage new -d weights --id awq -o cards/awq.yaml
    """
    import re

    from .errors import Problem, UserError
    from .scaffold import card_text

    if not re.fullmatch(r"[a-z0-9][a-z0-9._+-]*", card_id):
        raise UserError([Problem("--id", path="", message=(
            f"{card_id!r} is not a card id: lowercase letters, digits, '.', '_', '+', '-'"))])
    target = output or Path("claims") / f"{card_id}.yaml"
    if target.exists():
        raise UserError([Problem(str(target), path="", message="exists: triage new never overwrites a card")])
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target.open("x", encoding="utf-8") as fh:
            fh.write(card_text(card_id, direction).replace("../schemas/", _schema_prefix(target)))
    except FileExistsError:
        raise UserError([Problem(str(target), path="", message="exists: triage new never overwrites a card")]) \
            from None
    _info(f"wrote {target}: fill in the TODOs, then `triage validate {target}`")


def _schema_prefix(card: Path) -> str:
    """Relative path from a new card to this checkout's schemas/, else the installed copy."""
    from .resources import resource_dir

    schemas = resource_dir("schemas").resolve()
    try:
        return os.path.relpath(schemas, card.resolve().parent) + "/"
    except ValueError:
        return schemas.as_uri() + "/"


@main.group()
def catalog() -> None:
    """Browse the shipped hardware, models and workloads; import a Hugging Face config.json.

    \b
    Example:
      triage catalog hardware
      triage catalog models --format json
      triage catalog import ./Meta-Llama-3-8B/config.json --name llama-3-8b-local
    """


def _section(section: str) -> Any:
    @catalog.command(name=section, help=(f"The shipped {section}, with derived figures and sources.\n\n\b\n"
                                         f"Example:\n  triage catalog {section}\n"
                                         f"  triage catalog {section} --format json"))
    @click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default="md",
                  help="md (a table) or json.")
    @_guard
    def show(fmt: str) -> None:
        from .catalog_view import render

        click.echo(render(section, fmt), nl=False)

    return show


for _name in ("hardware", "models", "workloads"):
    _section(_name)


@catalog.command(name="import")
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--name", "key", required=True, help="The model's name in the catalog.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a workload file holding the entry (atomically) instead of printing it.")
@click.option("--force", is_flag=True, help="Overwrite an output file triage did not write.")
@_guard
def import_config(config: Path, key: str, output: Path | None, force: bool) -> None:
    """Turn a local Hugging Face config.json into a catalog model entry (YAML).

    \b
    Example:
      triage catalog import ./Mixtral-8x7B-v0.1/config.json --name mixtral
      triage catalog import config.json --name mine -o my-models.yaml
    """
    import yaml

    from .hfconfig import load_model, read_config, to_entry

    entry = to_entry(read_config(config), str(config))
    model = load_model(config, key=key)          # validates it as the catalog would
    header = (f"# triage workload file: model {key!r} from {config}\n"
              f"# {model.params:,.0f} parameters, {model.kv_elements_per_token:,.0f} KV elements per token\n")
    text = header + yaml.safe_dump({"models": {key: entry}}, sort_keys=False, allow_unicode=True, width=100)
    _deliver(text, output, (config,), force)
