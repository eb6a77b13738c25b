"""`triage calibrate`: fit efficiencies and overhead per hardware from measured step times."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from ..analysis import calibrate as calibrate_mod
from ..errors import Problem, UserError
from ..io import yamlio
from ..report.calibration import as_json, render_markdown, workload_file
from . import progress
from .common import FILE, catalog_option, deliver, force_option, guard


@click.command(name="calibrate")
@click.argument("measurements", type=click.Path(path_type=Path))
@click.option("--output", "-o", type=FILE, help="Write the fitted engine profile and a workload per row that uses "
                                                  "it (atomically); other workload files use it with engine: FILE.")
@click.option("--format", "-f", "fmt", type=click.Choice(["md", "json"]), default="md",
              help="The report as md or json (on standard output).")
@click.option("--engine", "engine", default="calibrated", show_default=True,
              help="The name of the engine profile -o writes (lowercase letters, digits, '.', '_', '-').")
@catalog_option
@force_option
@guard
def command(measurements: Path, output: Path | None, fmt: str, engine: str, catalog_file: Path | None,
            force: bool) -> None:
    """Fit bandwidth and compute efficiency (and per-step overhead) per hardware from measured step times.

    MEASUREMENTS is a CSV or JSON of rows (model, hardware, context, batch, weights, group_size, tp,
    tokens_per_s or tpot, source), the JSON `vllm bench serve --save-result --metadata model=M hardware=H`
    writes (a decode row from its TPOT, and at concurrency 1 a prefill row from its TTFT), or a folder of them:
    what `triage run --measured` reads.

    \b
    Example:
      triage calibrate examples/measurements/gpt-fast-a100.csv
      triage calibrate my-runs.csv -o calibrated.yaml
      triage calibrate vllm-results/
    """
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", engine):
        raise click.UsageError("--engine: a lowercase name of at most 64 letters, digits, '.', '_' or '-'")
    with progress.shown() as bar:
        report = calibrate_mod.calibrate(measurements, catalog_file, progress=bar)
        bar.stage("rendering")
        if fmt == "json":
            click.echo(json.dumps(as_json(report), indent=2, allow_nan=False))
        else:
            click.echo(render_markdown(report), nl=True)
        if output is not None:
            text = workload_file(report, engine)
            try:                              # a file triage writes for itself to read must be one it reads
                yamlio.load(text, str(output))
            except UserError as err:
                raise UserError([Problem(str(output), path="", message=(
                    f"triage could not read back the profile with a workload per row ({err.problems[0].message}): "
                    f"calibrate fewer rows for -o, or read the fit with --format json"))]) from None
            bar.stage("writing")
            deliver(text, output, (measurements,), force)
