"""`triage calibrate`: fit achieved bandwidth efficiency, compute efficiency and per-step overhead per
hardware from measured times (the report and the workload file that uses them are report/calibration.py).

A row is a decode step, a prefill, or a whole generation (a prefill of the prompt and output_tokens decode
steps at the mean context), each priced by the cost model once (FLOPs and bytes per operator group); the
fit is a grid search over (bandwidth efficiency, compute efficiency, overhead) minimizing the squared log
error of t = Σ_steps [Σ_g max(F_g/(peak·ce), B_g/(BW·be)) + all-reduces + overhead], vectorized over the
grid and the rows together, with a light pull toward the shipped defaults. It refuses fewer rows than
parameters, says when a parameter sits on the grid's edge, and reports the leave-one-out error and each
parameter's jackknife spread.
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
from ..inputs.validation import did_you_mean
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
            "overhead_s": units.parse(d["overhead"], "time", allow_zero=True),
            "request_overhead_s": units.parse(d.get("request_overhead", 0), "time", allow_zero=True)}


REQUIRED = ("model", "hardware", "context")
WEIGHTS = ("bf16", "fp16", "fp8", "int8", "int4")
KV = WEIGHTS                                           # the same storage formats
COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "int8")      # the GEMMs' dtype (W8A8 FP8 or INT8 runs at its peak)
PARAMETERS = ("bandwidth", "compute", "overhead_s")
PULL = 1e-3        # the pull toward the shipped defaults, per unit of squared (relative) departure
REQUEST_MAX = 0.05  # the largest per-request fixed cost a fit may report (50 ms: beyond it, queueing)
_CHUNK_ELEMENTS = 2_000_000


@dataclass
class Row:
    """One measurement and its cost-model terms."""

    spec: dict[str, Any]
    measured_s: float
    counts: np.ndarray     # how many of each step the measured time covers (a generation: 1 prefill, N decodes)
    requests: float        # requests whose fixed cost the time includes (1 with a prefill, 0 for a decode step)
    flops: np.ndarray      # steps × groups
    bytes: np.ndarray
    peak: float
    bandwidth: float
    comm_s: np.ndarray     # per step


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
        if missing or not (r.get("tokens_per_s") or any(r.get(k) for k in TIMES)):
            need = missing or ["tokens_per_s or a time (tpot_s, ttft_s, e2e_s in seconds; tpot, ttft with a unit)"]
            raise UserError([Problem(str(path), n, 1, f"$.{need[0].split()[0]}", f"row needs {need[0]!r}")])
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


def price(raw: dict[str, Any], file: str, line: int, catalog: Any) -> Row:
    """The row's FLOPs and bytes per group, at 100 % efficiency and no overhead."""
    batch = _field(raw, "batch", file, line, 1)
    context = _field(raw, "context", file, line)
    tp = _field(raw, "tp", file, line, 1)
    weights = raw.get("weights") or "bf16"
    if weights not in WEIGHTS:
        raise UserError([Problem(file, line, 1, "$.weights", f"expected {', '.join(WEIGHTS)}, got {weights!r}")])
    kv = raw.get("kv") or "bf16"
    if kv not in KV:
        raise UserError([Problem(file, line, 1, "$.kv", f"expected {', '.join(KV)}, got {kv!r}")])
    compute = raw.get("compute") or "bf16"
    if compute not in COMPUTE_DTYPES:
        raise UserError([Problem(file, line, 1, "$.compute", f"expected {', '.join(COMPUTE_DTYPES)}, got {compute!r}")])
    attention = raw.get("attention") or "fused"
    if attention not in ("eager", "fused", "split"):
        raise UserError([Problem(file, line, 1, "$.attention", f"expected eager, fused or split, got {attention!r}")])
    phase = raw.get("phase") or "decode"
    if phase not in ("decode", "prefill", "generation"):
        raise UserError([Problem(file, line, 1, "$.phase", f"expected decode, prefill or generation, got {phase!r}")])
    for key in ("model", "hardware"):
        table = catalog.models if key == "model" else catalog.hardware
        if raw[key] not in table:
            raise UserError([Problem(file, line, 1, f"$.{key}", (
                f"unknown {key} {escape(raw[key], 40)!r}{did_you_mean(raw[key], table)}; define it in a catalog "
                f"file and pass --catalog (or $TRIAGE_CATALOG)"))])
    change: dict[str, Any] = {"weight_bytes": 1.0}
    if weights in ("int8", "int4"):
        group = _field(raw, "group_size", file, line, 1_000_000)
        change = {"weight_quant": {"bits": 8 if weights == "int8" else 4, "group_size": group,
                                   "scale_bits": _field(raw, "scale_bits", file, line, 16, strict=False),
                                   "zero_bits": _field(raw, "zero_bits", file, line, 0, strict=False),
                                   "keep_16bit": str(raw.get("keep_16bit", "true")).lower() == "true"}}
    output = _field(raw, "output_tokens", file, line, 0, strict=False)
    if phase == "generation" and not output:
        raise UserError([Problem(file, line, 1, "$.output_tokens", "a generation row needs output_tokens")])
    # the steps the row's time covers: (phase, context, how many)
    steps = [("decode", context, 1)] if phase == "decode" else [("prefill", context, 1)] if phase == "prefill" else \
        [("prefill", context, 1), ("decode", context + output / 2, output)]      # decode at the mean context
    cells = [{"name": f"m{k}", "phase": ph, "context": max(int(round(ctx)), 1), "batch": batch}
             for k, (ph, ctx, _) in enumerate(steps)]
    wdtype = "fp8" if weights == "fp8" else "bf16"
    try:
        resolved = workloads.load({"defaults": {"model": raw["model"], "hardware": raw["hardware"],
                                              "precision": {"weights": wdtype, "kv": kv, "activations": "bf16",
                                                            "compute": compute},
                                              "efficiency": {"bandwidth": 1.0, "compute": 1.0}, "overhead": 0,
                                              "tp": tp, "reserve": 0, "attention": attention},
                                 "workloads": cells}, catalog)
    except UserError as err:
        raise UserError([Problem(file, line, 1, p.path, p.message) for p in err.problems]) from None
    claim = Claim(id="measured", title="measured configuration", direction="weights", file=file, change=change)
    grid = matrix.build(resolved)
    g = layers.compute(grid, claim, resolved.catalog.models)
    if not g.claim.fits.all():
        raise UserError([Problem(file, line, 1, "$.batch", (
            f"{raw['model']} at batch {batch:,} and {int(grid.context.max()):,} tokens does not fit "
            f"{raw['hardware']} × {tp} as stated: the engine must have run it otherwise (fewer sequences at once, "
            f"a smaller or offloaded cache); a time fitted to it would be wrong"))])
    x = g.claim.inputs
    cost = step_cost(x)
    hw = layers.machine(grid)
    measured = _measured(raw, file, line, batch, context, output, phase)
    n = len(steps)
    return Row(spec={**raw, "batch": batch, "context": context, "tp": tp, "weights": weights, "phase": phase,
                     "kv": kv, "compute": compute, "attention": attention, "output_tokens": output},
               measured_s=measured,
               counts=np.array([c for _, _, c in steps], dtype=float),
               requests=float(phase != "decode"),
               flops=np.array([[float(np.broadcast_to(cost.flops[k], (n,))[j]) / float(cost.peak_mult[k])
                                for k in GROUPS] for j in range(n)]),
               bytes=np.array([[float(np.broadcast_to(cost.bytes[k], (n,))[j]) for k in GROUPS] for j in range(n)]),
               peak=float(np.broadcast_to(hw.peak, (n,))[0]), bandwidth=float(np.broadcast_to(hw.bandwidth, (n,))[0]),
               comm_s=np.broadcast_to(comm_time(x, hw.link_bandwidth, hw.link_latency), (n,)).astype(float))


# a measured time: a column whose name gives the unit (seconds), or a quantity with its unit
TIMES = ("tpot_s", "ttft_s", "e2e_s", "tpot", "ttft")
# what each phase's time is: a decode step's TPOT, a prefill's TTFT, a whole request's end-to-end time
PHASE_TIMES = {"decode": ("tokens_per_s", "tpot_s", "tpot"), "prefill": ("tokens_per_s", "ttft_s", "ttft"),
               "generation": ("tokens_per_s", "e2e_s")}


def _measured(raw: dict[str, Any], file: str, line: int, batch: int, context: int, output: int,
              phase: str) -> float:
    """The row's measured seconds: of one step (decode, prefill) or of the whole request (generation)."""
    given = [k for k in ("tokens_per_s", *TIMES) if raw.get(k)]
    if len(given) > 1:
        raise UserError([Problem(file, line, 1, f"$.{given[1]}",
                                 f"give one measurement a row, not {' and '.join(given)}")])
    allowed = PHASE_TIMES[phase]
    if given[0] not in allowed:
        raise UserError([Problem(file, line, 1, f"$.{given[0]}", (
            f"a {phase} row is measured by {' or '.join(allowed)}, not {given[0]}"))])
    if raw.get("tokens_per_s"):
        rate = _field(raw, "tokens_per_s", file, line, kind=float)
        tokens = {"decode": batch, "prefill": batch * context, "generation": batch * output}[phase]
        measured, key = float(tokens) / rate, "tokens_per_s"
    else:
        key = next(k for k in TIMES if raw.get(k))
        try:
            measured = units.parse(raw[key], "time", bare_seconds=key.endswith("_s"))
        except units.UnitError as exc:
            hint = f" (or give it in the {key}_s column, in seconds)" if not key.endswith("_s") else ""
            raise UserError([Problem(file, line, 1, f"$.{key}", f"{exc}{hint}")]) from None
    if not (math.isfinite(measured) and 1e-9 <= measured <= 3600.0):
        raise UserError([Problem(file, line, 1, f"$.{key}", "the row's time is not between 1 ns and an hour")])
    return measured


def predict(rows: list[Row], be: Any, ce: Any, overhead: Any, comm: bool = True, request: float = 0.0,
            aligned: bool = False) -> np.ndarray:
    """Predicted seconds through the cost model's own step_time, the parameters broadcast against the rows
    (rows on the last axis; ``aligned``: one parameter set per row instead): each row's steps, times their
    counts, each step paying the overhead and (unless ``comm`` is off: a lower bound) its all-reduces, each
    request its fixed cost once."""
    total: Any = request * np.array([r.requests for r in rows])
    for j in range(max(len(r.counts) for r in rows)):       # at most 2 steps a row: prefill, decode
        pad = [(r.flops[min(j, len(r.counts) - 1)], r.bytes[min(j, len(r.counts) - 1)],
                r.counts[j] if j < len(r.counts) else 0.0, r.comm_s[min(j, len(r.counts) - 1)]) for r in rows]
        flops = np.stack([p[0] for p in pad])
        nbytes = np.stack([p[1] for p in pad])
        counts = np.array([p[2] for p in pad])
        cost = StepCost(flops={g: flops[:, k] for k, g in enumerate(GROUPS)},
                        bytes={g: nbytes[:, k] for k, g in enumerate(GROUPS)})
        b, c, o = (np.asarray(v, dtype=float) if aligned else np.asarray(v, dtype=float)[..., None]
                   for v in (be, ce, overhead))
        t = step_time(cost, np.array([r.peak for r in rows]), np.array([r.bandwidth for r in rows]),
                      {g: c for g in GROUPS}, {g: b for g in GROUPS})
        total = total + counts * (t + (np.array([p[3] for p in pad]) if comm else 0.0) + o)
    return np.asarray(total)


def _mape(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / measured - 1.0)))


def _fit(group: list[Row], grid: tuple[np.ndarray, np.ndarray, np.ndarray],
         request: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per grid point: each row's squared log error (grid × rows, float32, in chunks), and the pull toward
    the shipped defaults (among near-equal fits the defaults win: an efficiency no row binds is not
    identifiable)."""
    be, ce, oh = grid
    measured = np.array([r.measured_s for r in group])
    step = max(1, _CHUNK_ELEMENTS // len(group))
    err = np.concatenate([(np.log(predict(group, be[k:k + step], ce[k:k + step], oh[k:k + step], request=request)
                                  / measured) ** 2).astype(np.float32) for k in range(0, be.size, step)])
    d = defaults()
    pull = PULL * ((be / d["bandwidth"] - 1) ** 2 + (ce / d["compute"] - 1) ** 2 + (oh / 1e-3 - d["overhead_s"] / 1e-3)
                   ** 2 / 100)
    return err, pull


def edges(fit: dict[str, float]) -> list[str]:
    """The parameters the fit pinned to the grid's edge: the rows want a value the grid (and the model) lacks."""
    out = []
    for name, values, unit in (("bandwidth", BANDWIDTH, 1.0), ("compute", COMPUTE, 1.0), ("overhead_s", OVERHEAD, 1e3)):
        v = fit[name]
        if v in (values[0], values[-1]):
            side = "lowest" if v == values[0] else "highest"
            shown = f"{v * unit:g} ms" if name == "overhead_s" else f"{v:g}"
            out.append(f"{name.replace('_s', '')} {shown} is the {side} value the fit may take: the rows ask for "
                       f"more than the model's terms can give (a launch floor, a per-request cost, a kernel far from "
                       f"its peak); read the error, not the parameter")
    return out


def _request(group: list[Row], p: dict[str, float]) -> float:
    """A request's fixed cost: the median of what the rows with a prefill measure beyond the step model, within
    [0, REQUEST_MAX]; 0 with fewer than two such rows (one row cannot tell it from noise)."""
    with_prefill = [r for r in group if r.requests]
    if len(with_prefill) < 2:
        return 0.0
    pred = np.ravel(predict(with_prefill, p["bandwidth"], p["compute"], p["overhead_s"]))
    gap = np.array([r.measured_s for r in with_prefill]) - pred
    return float(np.clip(np.median(gap), 0.0, REQUEST_MAX))


def _grid_fit(group: list[Row], grid: tuple[np.ndarray, np.ndarray, np.ndarray]) \
        -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """The three grid parameters and the per-request cost, alternated twice (the cost from the prefill rows'
    residuals, the grid refitted with it); the error matrix and pull of the last fit."""
    request = 0.0
    for _ in range(2):
        err, pull = _fit(group, grid, request)
        best = int(np.argmin(err.sum(axis=1, dtype=np.float64) / len(group) + pull))
        p = {"bandwidth": float(grid[0][best]), "compute": float(grid[1][best]), "overhead_s": float(grid[2][best])}
        request = _request(group, p)
    return {**p, "request_overhead_s": request}, err, pull


def fit(group: list[Row]) -> dict[str, float] | None:
    """The fitted parameters of rows of one hardware, or None with fewer rows than parameters."""
    if len(group) < len(PARAMETERS):
        return None
    be, ce, oh = (a.ravel() for a in np.meshgrid(BANDWIDTH, COMPUTE, OVERHEAD, indexing="ij"))
    return _grid_fit(group, (be, ce, oh))[0]


def calibrate(path: Path | str, catalog_file: Path | str | None = None) -> dict[str, Any]:
    """Fit per hardware; report the parameters, their jackknife spread, the prediction error before and after,
    and the leave-one-out error. Rows name hardware and models of the shipped catalog merged with a user catalog
    (``catalog_file``, else $TRIAGE_CATALOG). A hardware with fewer rows than the three parameters keeps the
    defaults and says so."""
    cat = catalog_mod.resolve(catalog_file)
    path = Path(path)
    rows = [price(r, str(path), n, cat) for n, r in enumerate(_read_rows(path), start=2)]
    report: dict[str, Any] = {"source": str(path), "hardware": []}
    be, ce, oh = (a.ravel() for a in np.meshgrid(BANDWIDTH, COMPUTE, OVERHEAD, indexing="ij"))
    grid = (be, ce, oh)
    d = defaults()
    for hw in sorted({r.spec["hardware"] for r in rows}):
        group = [r for r in rows if r.spec["hardware"] == hw]
        measured = np.array([r.measured_s for r in group])
        before = np.ravel(predict(group, d["bandwidth"], d["compute"], d["overhead_s"]))
        entry: dict[str, Any] = {"hardware": hw, "rows": len(group), "default": d, "warnings": []}
        if len(group) < len(PARAMETERS):
            fit, spread, loo = dict(d), None, None
            entry["warnings"].append(f"not fitted: {len(group)} row{'s' if len(group) != 1 else ''} for "
                                     f"{len(PARAMETERS)} parameters; the defaults stay (add rows)")
            entry["fitted"] = None
        else:
            fit, err, pull = _grid_fit(group, grid)
            # leave one out: refit on the other rows (their summed error), predict the row left out
            loo_idx = np.argmin((err.sum(axis=1, dtype=np.float64)[:, None] - err) / (len(group) - 1)
                                + pull[:, None], axis=0)
            loo_pred = predict(group, grid[0][loo_idx], grid[1][loo_idx], grid[2][loo_idx],
                               request=fit["request_overhead_s"], aligned=True)
            loo = _mape(loo_pred, measured)
            n = len(group)
            spread = {}
            for name, axis in zip(PARAMETERS, grid, strict=True):     # jackknife standard error
                values = axis[loo_idx]
                spread[name] = float(np.sqrt((n - 1) / n * np.sum((values - values.mean()) ** 2)))
            entry["warnings"] += edges(fit)
            entry["fitted"] = fit
        after = np.ravel(predict(group, fit["bandwidth"], fit["compute"], fit["overhead_s"],
                                 request=fit.get("request_overhead_s", 0.0)))
        binding = any((r.flops / (r.peak * fit["compute"]) > r.bytes / (r.bandwidth * fit["bandwidth"])).any()
                      for r in group)
        entry.update({
            "parameters": fit, "uncertainty": spread, "compute_identified": bool(binding),
            "error_before": _mape(before, measured), "error_after": _mape(after, measured),
            "error_leave_one_out": loo,
            "points": [{**{k: r.spec.get(k) for k in ("model", "weights", "kv", "compute", "attention", "phase", "tp",
                                                       "batch", "context", "output_tokens", "source")},
                        "measured_s": r.measured_s, "before_s": float(before[i]),
                        "after_s": float(after[i])} for i, r in enumerate(group)]})
        report["hardware"].append(entry)
    return report
