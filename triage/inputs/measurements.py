"""Measurement files as their files give them, before any meaning: a CSV, a JSON object or list of objects (one of
them the result `vllm bench serve --save-result` writes), or a folder of such files. `triage run --measured`
(analysis/measured.py) and `triage calibrate` (inputs/calibration_rows.py) read through here, each giving the
fields its own meaning, so the two accept the same files.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError
from ..io.files import read_text
from ..io.jsonio import load_json
from ..records import record
from . import units


@record
class Record:
    """One measurement as read: its file, its line (a CSV row's; 1 in a JSON file), its fields (a CSV's empty
    cells left out) and whether it is a `vllm bench serve` result (whose times vllm_time reads)."""

    file: str
    line: int
    fields: dict[str, Any]
    vllm: bool = False


def is_vllm(fields: Mapping[str, Any]) -> bool:
    """Whether an object is the result `vllm bench serve --save-result` writes (it carries a TPOT in ms)."""
    return "mean_tpot_ms" in fields or "median_tpot_ms" in fields


def vllm_time(fields: Mapping[str, Any], metric: str) -> str | None:
    """A vLLM result's time for ``metric`` (tpot, ttft, e2el) as a quantity with its unit ('9.25 ms'): the
    median, else the mean; None where the result has neither."""
    value = fields.get(f"median_{metric}_ms", fields.get(f"mean_{metric}_ms"))
    return None if value is None else f"{value} ms"


def read(path: Path | str) -> list[Record]:
    """Every measurement in a file or a folder of .json and .csv files (at most LIMITS.measured_files), in
    file-name order; a file or folder without one is refused."""
    path = Path(path)
    if path.is_dir():
        files = sorted([*path.glob("*.json"), *path.glob("*.csv")])
        if len(files) > LIMITS.measured_files:
            raise UserError([Problem(str(path), path="", message=(
                f"{len(files):,} measurement files; a folder may hold at most {LIMITS.measured_files:,} "
                f"(limit measured_files)"))])
        if not files:
            raise UserError([Problem(str(path), path="", message="no .json or .csv measurement files in this folder")])
        return [rec for f in files for rec in read(f)]
    text = read_text(path)
    if path.suffix == ".csv":
        try:
            rows = list(csv.DictReader(io.StringIO(text)))
        except csv.Error as exc:
            raise UserError([Problem(str(path), path="", message=f"CSV: {exc}")]) from None
        return [Record(str(path), n + 2, {k: v for k, v in r.items() if k is not None and v not in (None, "")})
                for n, r in enumerate(rows)]
    data = load_json(text, str(path))
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(x, dict) for x in items):
        raise UserError([Problem(str(path), path="$", message="expected an object or a list of objects")])
    return [Record(str(path), 1, x, is_vllm(x)) for x in items]


# `triage run --measured`: the columns a measured row may hold (analysis/measured.py reads the typed rows)
FIELDS = ("workload", "variant", "hardware", "tpot", "ttft", "tpot_s", "ttft_s", "throughput", "quality")


@record
class MeasuredRow:
    """One measurement `triage run --measured` reads: its workload, side and chip, times in seconds, throughput
    and quality."""

    workload: str
    variant: str
    hardware: str | None
    tpot: float | None
    ttft: float | None
    throughput: float | None
    quality: float | None


def _number(raw: Any, column: str | None, where: Problem) -> float | None:
    """A time from its column (``column``: a quantity, or bare seconds in a *_s column), else a plain number."""
    if raw is None or raw == "":
        return None
    try:
        value = units.column_time(raw, column) if column else float(raw)
    except (units.UnitError, ValueError, TypeError, OverflowError) as exc:
        raise UserError([Problem(where.file, where.line, where.col, where.path, str(exc))]) from None
    if not math.isfinite(value) or value < 0:
        raise UserError([Problem(where.file, where.line, where.col, where.path, f"expected a finite number >= 0, "
                                                                              f"got {raw!r}")])
    return value


def _at(p: Problem, field: str) -> Problem:
    return Problem(p.file, p.line, p.col, f"$.{field}", p.message)


def _measured_row(rec: Record) -> MeasuredRow:
    """One measurement, normalised (seconds, tokens/s)."""
    raw: Mapping[str, Any] = rec.fields
    file, line = rec.file, rec.line
    if rec.vllm:                                                 # vllm bench serve --save-result
        raw = {"workload": raw.get("workload"), "variant": raw.get("variant"), "hardware": raw.get("hardware"),
               "tpot": vllm_time(raw, "tpot"), "ttft": vllm_time(raw, "ttft"),
               "throughput": raw.get("output_throughput"), "quality": raw.get("quality")}
    unknown = [k for k in raw if k not in FIELDS]
    if unknown:
        raise UserError([Problem(file, line, 1, f"$.{unknown[0]}", f"unknown measurement field {unknown[0]!r} "
                                                                  f"(known: {', '.join(FIELDS)})")])
    for key in ("workload", "variant"):
        if not raw.get(key):
            raise UserError([Problem(file, line, 1, f"$.{key}", f"missing {key!r} (vLLM: add --metadata "
                                                                f"workload=NAME variant=baseline|claim)")])
    if raw["variant"] not in ("baseline", "claim"):
        raise UserError([Problem(file, line, 1, "$.variant", f"expected baseline or claim, got {raw['variant']!r}")])
    where = Problem(file, line, 1, "$")
    times = {}
    for key in ("tpot", "ttft"):
        if raw.get(key) not in (None, "") and raw.get(f"{key}_s") not in (None, ""):
            raise UserError([Problem(file, line, 1, f"$.{key}_s", f"{key} is given twice ({key} and {key}_s): "
                                                                  f"keep one")])
        column = key if raw.get(key) not in (None, "") else f"{key}_s"
        times[key] = _number(raw.get(column), column, _at(where, column))
    return MeasuredRow(str(raw["workload"]), raw["variant"], raw.get("hardware") or None, times["tpot"],
                       times["ttft"], _number(raw.get("throughput"), None, _at(where, "throughput")),
                       _number(raw.get("quality"), None, _at(where, "quality")))


def measured_rows(path: Path | str) -> list[MeasuredRow]:
    """Every measurement `triage run --measured` reads in a file or folder, typed."""
    return [_measured_row(rec) for rec in read(path)]
