"""`triage calibrate`: fit achieved bandwidth efficiency, compute efficiency and per-step overhead per
hardware from measured step times (the report and the workload file that uses them are report/calibration.py).

Each measurement row is priced by the cost model once (FLOPs and bytes per operator group); the fit
is a grid search over (bandwidth efficiency, compute efficiency, overhead) minimizing the squared log
error of t = Σ_g max(F_g/(peak·ce), B_g/(BW·be)) + all-reduces + overhead, vectorized over the grid
and the rows together.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import LIMITS
from ..errors import Problem, UserError, escape
from ..inputs import catalog as catalog_mod
from ..inputs import units, workloads
from ..inputs.claim import Claim
from ..io.files import read_text
from ..model import layers, matrix
from ..model.roofline import GROUPS, StepCost, comm_time, step_cost, step_time

BANDWIDTH = np.round(np.arange(0.30, 1.0001, 0.01), 2)
COMPUTE = np.round(np.arange(0.30, 1.0001, 0.05), 2)
OVERHEAD = np.round(np.arange(0.0, 10.0001, 0.1), 1) * 1e-3


@cache
def defaults() -> dict[str, float]:
    """The shipped workload defaults' efficiencies and overhead: what an uncalibrated run uses."""
    d = catalog_mod.default_workloads().data["defaults"]
    return {"bandwidth": float(d["efficiency"]["bandwidth"]), "compute": float(d["efficiency"]["compute"]),
            "overhead_s": units.parse(d["overhead"], "time", allow_zero=True)}

REQUIRED = ("model", "hardware", "context")
_CHUNK_ELEMENTS = 2_000_000


@dataclass
class Row:
    """One measurement and its cost-model terms."""

    spec: dict[str, Any]
    measured_s: float
    flops: np.ndarray      # per group
    bytes: np.ndarray
    peak: float
    bandwidth: float
    comm_s: float


def _read_rows(path: Path) -> list[dict[str, Any]]:
    text = read_text(path)
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:
        raise UserError([Problem(str(path), path="", message=f"CSV: {exc}")]) from None
    if not rows:
        raise UserError([Problem(str(path), path="", message="no measurement rows")])
    if len(rows) > LIMITS.calibration_rows:
        raise UserError([Problem(str(path), path="", message=(
            f"{len(rows):,} rows; a calibration takes at most {LIMITS.calibration_rows:,} (limit calibration_rows)"))])
    for n, r in enumerate(rows, start=2):
        missing = [k for k in REQUIRED if not r.get(k)]
        if missing or not (r.get("tokens_per_s") or r.get("tpot")):
            need = missing or ["tokens_per_s or tpot"]
            raise UserError([Problem(str(path), n, 1, f"$.{need[0]}", f"row needs {need[0]!r}")])
    return rows


def _field(raw: dict[str, Any], key: str, file: str, line: int, default: Any = None, kind: type = int,
           minimum: float = 0.0, strict: bool = True) -> Any:
    """A numeric column of a row (> minimum, or >= it when not ``strict``; whole for ints), or UserError
    naming it; values are never echoed at length."""
    value = raw.get(key)
    if value in (None, ""):
        return default
    shown = escape(str(value), 20)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a number, got {shown!r}")]) from None
    low = number <= minimum if strict else number < minimum
    if not np.isfinite(number) or low or number > 1e18:
        bound = f"{'>' if strict else '>='} {minimum:g}"
        raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a finite number {bound}, got {shown!r}")])
    if kind is int:
        if number != int(number):
            raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a whole number, got {shown!r}")])
        return int(number)
    return number


def _price(raw: dict[str, Any], file: str, line: int, catalog: Any) -> Row:
    """The row's FLOPs and bytes per group, at 100 % efficiency and no overhead."""
    batch = _field(raw, "batch", file, line, 1)
    context = _field(raw, "context", file, line)
    tp = _field(raw, "tp", file, line, 1)
    weights = raw.get("weights") or "bf16"
    if weights not in ("bf16", "fp16", "int8", "int4"):
        raise UserError([Problem(file, line, 1, "$.weights", f"expected bf16, fp16, int8 or int4, got {weights!r}")])
    change: dict[str, Any] = {"weight_bytes": 1.0}
    if weights in ("int8", "int4"):
        group = _field(raw, "group_size", file, line, 1_000_000)
        change = {"weight_quant": {"bits": 8 if weights == "int8" else 4, "group_size": group,
                                   "scale_bits": _field(raw, "scale_bits", file, line, 16, strict=False),
                                   "zero_bits": _field(raw, "zero_bits", file, line, 0, strict=False),
                                   "keep_16bit": str(raw.get("keep_16bit", "true")).lower() == "true"}}
    try:
        resolved = workloads.load({"defaults": {"model": raw["model"], "hardware": raw["hardware"],
                                              "precision": {"weights": "bf16", "kv": "bf16", "activations": "bf16",
                                                            "compute": "bf16"},
                                              "efficiency": {"bandwidth": 1.0, "compute": 1.0}, "overhead": 0,
                                              "tp": tp, "reserve": 0},
                                 "workloads": [{"name": "m", "phase": raw.get("phase") or "decode",
                                                "context": context, "batch": batch}]}, catalog)
    except UserError as err:
        raise UserError([Problem(file, line, 1, p.path, p.message) for p in err.problems]) from None
    claim = Claim(id="measured", title="measured configuration", direction="weights", file=file, change=change)
    grid = matrix.build(resolved)
    g = layers.compute(grid, claim, resolved.catalog.models)
    x = g.claim.inputs
    cost = step_cost(x)
    hw = layers.machine(grid)
    if raw.get("tokens_per_s"):
        tokens = batch if grid.decode[0] else batch * grid.context[0]
        measured = float(tokens) / _field(raw, "tokens_per_s", file, line, kind=float)
    else:
        try:
            measured = units.parse(raw["tpot"], "time")
        except units.UnitError as exc:
            raise UserError([Problem(file, line, 1, "$.tpot", str(exc))]) from None
    if not (math.isfinite(measured) and 1e-9 <= measured <= 3600.0):
        raise UserError([Problem(file, line, 1, "$.tokens_per_s" if raw.get("tokens_per_s") else "$.tpot",
                                 "the row's step time is not between 1 ns and an hour")])
    return Row(spec={**raw, "batch": batch, "context": context, "tp": tp, "weights": weights}, measured_s=measured,
               flops=np.array([float(cost.flops[k][0]) / float(cost.peak_mult[k]) for k in GROUPS]),
               bytes=np.array([float(cost.bytes[k][0]) for k in GROUPS]),
               peak=float(np.broadcast_to(hw.peak, (1,))[0]), bandwidth=float(np.broadcast_to(hw.bandwidth, (1,))[0]),
               comm_s=float(comm_time(x, hw.link_bandwidth, hw.link_latency)[0]))


def _predict(rows: list[Row], be: Any, ce: Any, overhead: Any) -> np.ndarray:
    """Predicted seconds through the cost model's own step_time, the parameters broadcast against the rows
    (rows on the last axis)."""
    flops = np.stack([r.flops for r in rows])            # rows × groups
    nbytes = np.stack([r.bytes for r in rows])
    cost = StepCost(flops={g: flops[:, k] for k, g in enumerate(GROUPS)},
                    bytes={g: nbytes[:, k] for k, g in enumerate(GROUPS)})
    be, ce, overhead = (np.asarray(v, dtype=float)[..., None] for v in (be, ce, overhead))
    t = step_time(cost, np.array([r.peak for r in rows]), np.array([r.bandwidth for r in rows]),
                  {g: ce for g in GROUPS}, {g: be for g in GROUPS})
    return t + np.array([r.comm_s for r in rows]) + overhead


def _error(pred: np.ndarray, measured: np.ndarray) -> np.ndarray:
    return np.mean(np.log(pred / measured) ** 2, axis=-1)


def _mape(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / measured - 1.0)))


def calibrate(path: Path | str, catalog_file: Path | str | None = None) -> dict[str, Any]:
    """Fit per hardware; report the parameters and the prediction error before and after. Rows name hardware
    and models of the shipped catalog merged with a user catalog (``catalog_file``, else $TRIAGE_CATALOG)."""
    cat = catalog_mod.resolve(catalog_file)
    path = Path(path)
    rows = [_price(r, str(path), n, cat) for n, r in enumerate(_read_rows(path), start=2)]
    report: dict[str, Any] = {"source": str(path), "hardware": []}
    be, ce, oh = (a.ravel() for a in np.meshgrid(BANDWIDTH, COMPUTE, OVERHEAD, indexing="ij"))
    for hw in sorted({r.spec["hardware"] for r in rows}):
        group = [r for r in rows if r.spec["hardware"] == hw]
        measured = np.array([r.measured_s for r in group])
        before = _predict(group, defaults()["bandwidth"], defaults()["compute"], defaults()["overhead_s"])
        # the grid × rows in chunks of at most _CHUNK_ELEMENTS predictions: memory bounded whatever the rows
        step = max(1, _CHUNK_ELEMENTS // len(group))
        err = np.concatenate([_error(_predict(group, be[k:k + step], ce[k:k + step], oh[k:k + step]), measured)
                              for k in range(0, be.size, step)])
        # among equally good fits keep the defaults: an efficiency no point binds is not identifiable
        err = err + 1e-12 * (np.abs(ce - defaults()["compute"]) + np.abs(be - defaults()["bandwidth"]))
        best = int(np.argmin(err))
        fit = {"bandwidth": float(be[best]), "compute": float(ce[best]), "overhead_s": float(oh[best])}
        after = _predict(group, fit["bandwidth"], fit["compute"], fit["overhead_s"])
        binding = any((r.flops / (r.peak * fit["compute"]) > r.bytes / (r.bandwidth * fit["bandwidth"])).any()
                      for r in group)
        report["hardware"].append({
            "hardware": hw, "rows": len(group), "fitted": fit, "default": defaults(),
            "compute_identified": bool(binding),
            "error_before": _mape(np.asarray(before).ravel(), measured),
            "error_after": _mape(np.asarray(after).ravel(), measured),
            "points": [{**{k: r.spec.get(k) for k in ("model", "weights", "tp", "batch", "context", "source")},
                        "measured_s": r.measured_s, "before_s": float(np.ravel(before)[i]),
                        "after_s": float(np.ravel(after)[i])} for i, r in enumerate(group)]})
    return report
