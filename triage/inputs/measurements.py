"""Measurement files as their files give them, before any meaning: a CSV, a JSON object or list of objects (one of
them the result `vllm bench serve --save-result` writes), or a folder of such files. `triage run --measured`
(analysis/measured.py) and `triage calibrate` (inputs/calibration_rows.py) read through here, each giving the
fields its own meaning, so the two accept the same files.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError
from ..io.files import read_text
from ..io.jsonio import load_json
from ..records import record


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
