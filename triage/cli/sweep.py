"""`triage sweep`: one row per cell (CSV or Parquet) with the JSON cells' fields as columns, for data tools."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from ..defaults import SWEEP_BYTES_PER_CELL
from ..io.files import room
from ..report import frame
from ..report.result import sweep
from . import progress
from .common import FILE, deliver, force_option, guard, matrix_options, matrix_source


def _counted(chunks: Iterable[frame.Columns], cells: int, bar: progress.Bar) -> Iterator[frame.Columns]:
    """The chunks, each one's cells counted on the bar as it is priced; the bar erased after the last, before
    the file is renamed into place and 'wrote' printed."""
    done = 0
    for columns in chunks:
        done += len(next(iter(columns.values())))
        bar.advance(done, cells, "cells")
        yield columns
        del columns                   # not held while the next chunk is priced: memory is one chunk's
    bar.erase()


@click.command(name="sweep")
@click.argument("card", type=FILE)
@matrix_options
@click.option("--output", "-o", type=FILE, required=True,
              help="out.csv or out.parquet (the suffix picks the format unless --format says).")
@click.option("--format", "-f", "fmt", type=click.Choice(frame.FORMATS), default=None,
              help="csv or parquet; default from the -o suffix.")
@force_option
@guard
def command(card: Path, workloads: Path | None, model: str | None,
            catalog_file: Path | None, axes: dict[str, str | None], output: Path, fmt: str | None,
            force: bool) -> None:
    """Price CARD on every cell of a workload grid and write one row per cell.

    Columns are the JSON cells' fields flattened with dots (baseline.time_s.end_to_end, speedup.theoretical,
    verdict, …); the reasons are words and stay in `triage run --format json`. No crossover, SLO or
    sensitivity analysis is run: a sweep is data. The cells are priced and written a chunk at a time, so a
    grid of up to sweep_cells cells runs in the memory of one chunk; a file appears whole or not at all, while
    to standard output (-o -) the rows stream as they are priced.

    \b
    Example:
      triage sweep claims/kv2x.yaml -w grid.yaml -o cells.csv
      triage sweep claims/kv2x.yaml -w grid.yaml -o cells.parquet
      triage sweep claims/kv2x.yaml --hardware a100-80gb,h100-sxm --context 1024,4096,16384 --batch 1,8,64 -o cells.csv
    """
    fmt = fmt or ("parquet" if output.suffix == ".parquet" else "csv")
    source, model = matrix_source(workloads, model, axes)
    with progress.shown(stdout_busy=str(output) == "-") as bar:
        bar.stage("loading")
        cells, chunks = sweep(card, source, model, catalog_file=catalog_file)
        if str(output) != "-":
            room(output, cells * SWEEP_BYTES_PER_CELL[fmt], f"{cells:,} cells of {fmt}")
        bar.stage("sweeping", cells)
        deliver(frame.writer(_counted(chunks, cells, bar), fmt), output, (card, workloads), force,
                f" ({cells:,} cells, {fmt})")
