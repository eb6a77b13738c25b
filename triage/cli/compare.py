"""`triage compare`: several claims on the same workloads, ranked per workload and overall."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..analysis.pipeline import held
from ..report.compare import comparison, render_markdown
from ..report.result import evaluate
from .common import FILE, deliver, force_option, guard, matrix_options, matrix_source, output_format, output_option


@click.command(name="compare")
@click.argument("cards", nargs=-1, required=True, type=FILE)
@matrix_options
@output_option
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="md or json; default from the -o suffix, else md.")
@force_option
@guard
def command(cards: tuple[Path, ...], workloads: Path | None, model: str | None,
            catalog_file: Path | None, axes: dict[str, str | None], output: Path | None,
            fmt: str | None, force: bool) -> None:
    """Rank claims on the same workloads: per workload, overall, and per GPU-hour of reproduction.

    \b
    Example:
      triage compare claims/kv2x.yaml claims/gqa-int8-kv.yaml
      triage compare claims/*.yaml -w examples/mix-longdoc.yaml -o which-first.md
      triage compare claims/awq.yaml claims/int8-weights.yaml --model llama-3-8b --hardware l40s --context 4096
    """
    if len(cards) < 2:
        raise click.UsageError("compare needs at least two cards")
    source, model = matrix_source(workloads, model, axes)
    first = evaluate(cards[0], source, model, analyse=False, catalog_file=catalog_file)
    held(len(first), len(cards), stacked=False)            # before the other cards are priced
    results = [first, *(evaluate(card, source, model, analyse=False, catalog_file=catalog_file)
                        for card in cards[1:])]
    text = render_markdown(results) if output_format(fmt, output) == "md" else json.dumps(
        comparison(results), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    deliver(text, output, (*cards, workloads), force)
