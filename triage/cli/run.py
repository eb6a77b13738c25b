"""`triage run`: one claim (or a stack) over the workload matrix → the decision memo, the JSON or a brief."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import click

from ..io.files import Content
from . import progress
from .common import (
    FILE,
    check_output,
    collector_off,
    deliver,
    force_option,
    guard,
    matrix_options,
    matrix_source,
    output_format,
    output_option,
    output_path,
    verbose,
)


def _binary(data: bytes) -> Callable[[BinaryIO], None]:
    """Bytes as the writer a delivered file takes."""
    def write(stream: BinaryIO) -> None:
        stream.write(data)
    return write


@click.command(name="run")
@click.argument("cards", nargs=-1, required=True, type=FILE)
@click.option("--stack", is_flag=True, help="Apply several cards together as one claim (savings add up).")
@matrix_options
@output_option
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default=None,
              help="md (the decision memo) or json; default from the -o suffix, else md.")
@click.option("--brief", is_flag=True, help="A one-page reading-group brief instead of the memo.")
@click.option("--figures", type=click.Choice(["svg", "png", "none"]), default="svg",
              help="With -o FILE.md: write FILE.roofline.svg, FILE.gain.svg, FILE.latency.svg and, where a workload "
                   "has traffic, FILE.serving.svg beside the memo (default), the same as PNG (the png extra), or "
                   "none.")
@click.option("--measured", type=click.Path(exists=False, path_type=Path),
              help="Measurements (CSV, JSON, vLLM bench JSON, or a folder of them) for the implementation and "
                   "end-to-end layers.")
@click.option("--baseline", type=click.Choice(["current", "paper"]), default="current",
              help="Price against today's stack as the workload file states it (current) or the one the card's paper "
                   "improved on (paper: its setting's attention, KV waste, precision, batch utilization, tp).")
@force_option
@guard
def command(cards: tuple[Path, ...], stack: bool, workloads: Path | None, model: str | None,
            catalog_file: Path | None, axes: dict[str, str | None], output: Path | None,
            fmt: str | None, brief: bool, figures: str, measured: Path | None, baseline: str, force: bool) -> None:
    """Evaluate a claim CARD over the workload matrix and print the decision memo.

    A workload with traffic: is also served request by request (the memo's "Serving: the request level":
    TTFT, TBT and TPOT percentiles, goodput and the largest request rate at the SLO, for baseline and claim).

    \b
    Example:
      triage run claims/kv2x.yaml
      triage run claims/kv2x.yaml -o memo.json
      triage run claims/kv2x.yaml --model ./Meta-Llama-3-8B/config.json
      triage run claims/fp8-inference.yaml --model llama-3-8b --hardware l40s --context 2048,32768 --batch 1,8
      triage run claims/kv2x.yaml --brief
      triage run claims/pagedattention-vllm.yaml --baseline paper
      triage run claims/sarathi-serve.yaml -w examples/serving-conv.yaml
      triage run claims/int8-weights.yaml claims/int8-kv.yaml --stack
    """
    # the pipeline and the renderers load here, when a card is run, not for --help or a usage error
    with collector_off():
        from ..report.memo import RENDERERS, figure_data, render_brief, render_markdown
        from ..report.result import evaluate, with_measurements

    output = output_path(output)
    check_output(output, (*cards, workloads, measured), force)
    if brief and (fmt == "json" or (output is not None and output.suffix == ".json")):
        raise click.UsageError("--brief is Markdown: drop --format json (or write it to a .md file)")
    if len(cards) > 1 and not stack:
        raise click.UsageError("several cards: add --stack to apply them together, or use `triage compare`")
    card: Any = list(cards) if len(cards) > 1 else cards[0]
    source, model = matrix_source(workloads, model, axes)
    fmt = "brief" if brief else output_format(fmt, output)
    with progress.shown() as bar:
        start = time.perf_counter()
        result = evaluate(card, source, model, baseline=baseline, catalog_file=catalog_file, progress=bar)
        if measured is not None:
            result = with_measurements(result, measured)
        evaluated = time.perf_counter()
        # the flags that shape the document, repeated in its regenerate line after the evaluation's own
        shape = (*(("-o", str(output)) if output is not None else ()),
                 *(("-f", fmt) if fmt in ("md", "json") and output is not None and output.suffix != f".{fmt}"
                   else ()),
                 *(("--figures", figures) if figures != "svg" and fmt == "md" and output is not None else ()))
        # render everything first, then write: a failure leaves no output behind
        bar.stage("rendering")
        figure_files: list[tuple[Path, Content]] = []
        if fmt == "md" and output is not None and figures != "none":
            from ..report.figures import to_png

            figure_files = [(output.with_name(f"{output.stem}.{name}.{figures}"),
                             svg if figures == "svg" else _binary(to_png(svg)))
                            for name, svg in figure_data(result).items()]
            text: Content = render_markdown(result, [{"title": p.stem.split(".")[-1], "path": p.name}
                                                     for p, _ in figure_files], shape)
        elif fmt == "md":
            text = render_markdown(result, "--figures none" if figures == "none" else "", shape)
        elif fmt == "brief":
            text = render_brief(result, shape)
        else:                                           # the JSON: a writer, a window of cells at a time
            text = RENDERERS[fmt](result)
        verbose(f"card {card}; workloads {result.matrix.source}; {len(result)} cells; evaluated in "
                f"{(evaluated - start) * 1e3:.0f} ms, rendered {fmt} in "
                f"{(time.perf_counter() - evaluated) * 1e3:.0f} ms")
        bar.stage("writing")
        deliver(text, output, (*cards, workloads, measured), force,
                f" ({len(result)} cells, decision {result.evaluation.decision.verdict})",
                beside=[(path, svg) for path, svg in figure_files])
