"""`triage calibrate`: fit an engine's achieved bandwidth and compute efficiency and its fixed costs per
hardware from measured times (the report and the workload file that uses them are report/calibration.py).

A row is a decode step, a prefill, or a whole generation (a prefill of the prompt and output_tokens decode
steps at the mean context), each priced by the cost model once (FLOPs and bytes per operator group). The
predicted time is

    t = Σ_steps [Σ_g max(F_g/(peak·ce), B_g/(BW·be)) + all-reduces + o_step + L·o_layer] + o_request

with L the model's layers (o_layer: the kernel launches of a layer, what CUDA graphs remove) and o_request paid
once a request (scheduling, sampling set-up; at its prefill). The efficiencies are a grid; at each grid point
the three fixed costs, linear in t, are solved in closed form (non-negative least squares on the relative
error, a light pull toward the shipped defaults); the grid point with the least squared log error wins. A
fixed cost the rows cannot tell apart from the others (one layer count, no prefill) is not fitted, nor an
efficiency whose term binds in no row (held_efficiencies: batch-1 decode rows never bind compute); each keeps
the shipped default. It refuses
fewer rows than parameters, says when an efficiency sits on the grid's edge or the rows ask for a negative
cost, and reports the leave-one-out error (the costs re-solved without the row, at the grid point the other
rows' errors choose: a little optimistic, 14.3 % against 14.6 % from full refits on gpt-fast-a100.csv) and each
parameter's jackknife spread.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import CALIBRATION_SHARE, LIMITS
from ..errors import Problem, UserError
from ..inputs import calibration_rows, units, workloads
from ..inputs import catalog as catalog_mod
from ..inputs.calibration_rows import StepRow
from ..inputs.claim import Claim
from ..model import evidence, matrix
from ..model.roofline import GROUPS, StepCost, comm_time, step_cost, step_time
from ..progress import SILENT, Progress
from ..records import record

BANDWIDTH = np.round(np.arange(0.30, 1.0001, 0.01), 2)
COMPUTE = np.round(np.arange(0.30, 1.0001, 0.05), 2)
# the fixed costs, linear in the time: per step, per layer of a step, per prefill step, per sequence of a step
LINEAR = tuple(f"{k}_s" for k in catalog_mod.FIXED_COSTS)


@cache
def defaults() -> dict[str, float]:
    """The shipped workload defaults' efficiencies and overhead: what an uncalibrated run uses."""
    d = catalog_mod.default_workloads().data["defaults"]
    return {"bandwidth": float(d["efficiency"]["bandwidth"]), "compute": float(d["efficiency"]["compute"]),
            **{k: units.parse(d.get(k[:-2], 0), "time", allow_zero=True) for k in LINEAR}}


PARAMETERS = ("bandwidth", "compute", *LINEAR)
PULL = 1e-3        # the pull toward the shipped defaults, per unit of squared (relative) departure
# the pull of a fixed cost, per squared departure in units of the cost that alone would make up a median row
PULL_FIXED = 1e-4
REQUEST_MAX = 0.05  # a per-request fixed cost beyond 50 ms is queueing, not a fixed cost: a warning
_CHUNK_ELEMENTS = 2_000_000


@dataclass
class Row:
    """One measurement and its cost-model terms."""

    spec: StepRow          # the row's columns, typed
    measured_s: float
    counts: np.ndarray     # how many of each step the measured time covers (a generation: 1 prefill, N decodes)
    requests: float        # requests whose fixed cost the time includes (1 with a prefill, 0 for a decode step)
    layers: float          # the model's layers: each step launches their kernels
    flops: np.ndarray      # steps × groups
    bytes: np.ndarray
    peak: float
    bandwidth: float
    comm_s: np.ndarray     # per step


def price(row: StepRow, catalog: Any) -> Row:
    """The row's FLOPs and bytes per group, at 100 % efficiency and no overhead."""
    file, line, batch, context, output, phase = row.file, row.line, row.batch, row.context, row.output_tokens, \
        row.phase
    tp, pipeline = row.tp, row.pipeline
    # the steps the row's time covers: (phase, context, how many)
    steps = [("decode", context, 1)] if phase == "decode" else [("prefill", context, 1)] if phase == "prefill" else \
        [("prefill", context, 1), ("decode", context + output / 2, output)]      # decode at the mean context
    cells = [{"name": f"m{k}", "phase": ph, "context": max(int(round(ctx)), 1), "batch": batch}
             for k, (ph, ctx, _) in enumerate(steps)]
    wdtype = "fp8" if row.weights == "fp8" else "bf16"
    try:
        resolved = workloads.load({"defaults": {"model": row.model, "hardware": row.hardware,
                                              "precision": {"weights": wdtype, "kv": row.kv, "activations": "bf16",
                                                            "compute": row.compute},
                                              "efficiency": {"bandwidth": 1.0, "compute": 1.0}, "overhead": 0,
                                              "tp": tp, "reserve": 0, "attention": row.attention},
                                 "workloads": cells}, catalog.pooled(row.hardware, pipeline))
    except UserError as err:
        raise UserError([Problem(file, line, 1, p.path, p.message) for p in err.problems]) from None
    claim = Claim(id="measured", title="measured configuration", direction="weights", file=file, change=row.change)
    grid = matrix.build(resolved)
    g = evidence.compute(grid, claim, resolved.catalog.models)
    if not g.claim.fits.all():
        raise UserError([Problem(file, line, 1, "$.batch", (
            f"{row.model} at batch {batch:,} and {int(grid.context.max()):,} tokens does not fit "
            f"{row.hardware} × {tp * pipeline} as stated: the engine must have run it otherwise (fewer sequences "
            f"at once, a smaller or offloaded cache); a time fitted to it would be wrong"))])
    x = g.claim.inputs
    cost = step_cost(x)
    hw = evidence.machine(grid)
    n = len(steps)
    return Row(spec=row,
               measured_s=row.measured_s,
               counts=np.array([c for _, _, c in steps], dtype=float),
               requests=float(phase != "decode"),
               layers=float(np.broadcast_to(x.layers, (n,))[0]),
               flops=np.array([[float(np.broadcast_to(cost.flops[k], (n,))[j]) / float(cost.peak_mult[k])
                                for k in GROUPS] for j in range(n)]),
               bytes=np.array([[float(np.broadcast_to(cost.bytes[k], (n,))[j]) for k in GROUPS] for j in range(n)]),
               peak=float(np.broadcast_to(hw.peak, (n,))[0]), bandwidth=float(np.broadcast_to(hw.bandwidth, (n,))[0]),
               comm_s=np.broadcast_to(comm_time(x, hw.link_bandwidth, hw.link_latency), (n,)).astype(float))


def roofline(rows: list[Row], be: Any, ce: Any, comm: bool = True, aligned: bool = False) -> np.ndarray:
    """Each row's steps through the cost model's own step_time, times their counts, at efficiencies broadcast
    against the rows (rows on the last axis; ``aligned``: one pair per row instead), plus (unless ``comm`` is
    off: a lower bound) each step's all-reduces: the predicted seconds before the fixed costs."""
    total: Any = 0.0
    for j in range(max(len(r.counts) for r in rows)):       # at most 2 steps a row: prefill, decode
        pad = [(r.flops[min(j, len(r.counts) - 1)], r.bytes[min(j, len(r.counts) - 1)],
                r.counts[j] if j < len(r.counts) else 0.0, r.comm_s[min(j, len(r.counts) - 1)]) for r in rows]
        flops = np.stack([p[0] for p in pad])
        nbytes = np.stack([p[1] for p in pad])
        counts = np.array([p[2] for p in pad])
        cost = StepCost(flops={g: flops[:, k] for k, g in enumerate(GROUPS)},
                        bytes={g: nbytes[:, k] for k, g in enumerate(GROUPS)})
        b, c = (np.asarray(v, dtype=float) if aligned else np.asarray(v, dtype=float)[..., None] for v in (be, ce))
        t = step_time(cost, np.array([r.peak for r in rows]), np.array([r.bandwidth for r in rows]),
                      {g: c for g in GROUPS}, {g: b for g in GROUPS})
        total = total + counts * (t + (np.array([p[3] for p in pad]) if comm else 0.0))
    return np.asarray(total)


def features(rows: list[Row]) -> np.ndarray:
    """Rows × LINEAR: the seconds each fixed cost adds to a row per second of it (steps, steps × layers,
    requests, steps × sequences)."""
    steps = np.array([r.counts.sum() for r in rows])
    return np.stack([steps, steps * np.array([r.layers for r in rows]), np.array([r.requests for r in rows]),
                     steps * np.array([float(r.spec.batch) for r in rows])], 1)


def predict(rows: list[Row], params: dict[str, float], comm: bool = True) -> np.ndarray:
    """Each row's predicted seconds at one set of parameters (a fixed cost it lacks counts as 0)."""
    linear = np.array([params.get(k, 0.0) for k in LINEAR])
    return np.ravel(roofline(rows, params["bandwidth"], params["compute"], comm)) + features(rows) @ linear


def _mape(pred: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(pred / measured - 1.0)))


def bound_shares(rows: list[Row], params: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Each row's share of its predicted time (fixed costs and all-reduces included) in operator groups where
    an efficiency's term binds: compute where a group's FLOPs outlast its bytes, bandwidth elsewhere. It is the
    row's elasticity to that efficiency, -d log t / d log e: the efficiency's column of the least-squares design,
    in relative units."""
    be, ce = params["bandwidth"], params["compute"]
    total = predict(rows, dict(params))
    compute = np.array([sum(n * float(np.where(c > m, c, 0.0).sum()) for n, c, m in
                            zip(r.counts, r.flops / (r.peak * ce), r.bytes / (r.bandwidth * be), strict=True))
                        for r in rows])
    return {"compute": compute / total, "bandwidth": (np.ravel(roofline(rows, be, ce, comm=False)) - compute) / total}


def held_efficiencies(group: list[Row], params: Mapping[str, float]) -> tuple[str, ...]:
    """The efficiencies the rows do not identify, to hold at the default instead of fitting.

    An efficiency is fitted where its term binds for at least CALIBRATION_SHARE of some row's predicted time,
    at the fitted ``params`` or with it at its default (bound_shares: its column of the least-squares design).
    Where its column is below that in every row at both, the squared error barely moves with it, and not at all
    where the column is zero (batch-1 decode rows never bind compute): its Fisher information vanishes, its
    standard error is unbounded, and what the grid returns is the pull toward the default, a value the rows
    never chose. Held at the default it prices the rows as the fitted value did, to within that share. The
    default is checked too so that an efficiency the rows push away from it (the default would make a row
    compute-bound and too slow) stays fitted: the rows bound it, if from one side only. The fixed costs have
    their own test (free_costs: rows that pay each, in a direction the others lack)."""
    d = defaults()
    at_fit = bound_shares(group, params)
    return tuple(k for k in ("bandwidth", "compute")
                 if max(at_fit[k].max(), bound_shares(group, {**params, k: d[k]})[k].max()) < CALIBRATION_SHARE)


def free_costs(group: list[Row], hold: tuple[str, ...] = ()) -> tuple[int, ...]:
    """The fixed costs the rows can tell apart (indices into LINEAR), in order: the per-step overhead; the
    per-layer cost with two or more layer counts; the per-request cost with two or more rows that pay it; the
    per-sequence cost with two or more batch sizes — each only where it adds a direction the others lack
    (prefill-only rows cannot tell a request from a step); none of ``hold``, whose efficiencies count no more
    among the parameters the rows must outnumber."""
    f = features(group) / np.array([r.measured_s for r in group])[:, None]
    paying = (f > 0).sum(axis=0)
    kinds = (0, len({r.layers for r in group}), paying[2], len({r.spec.batch for r in group}))
    free: list[int] = []
    for k in range(len(LINEAR)):
        if k and kinds[k] < 2 or LINEAR[k] in hold:
            continue
        if np.linalg.matrix_rank(f[:, [*free, k]], tol=1e-9 * float(np.abs(f).max())) == len(free) + 1:
            free.append(k)
    efficiencies = sum(k not in hold for k in ("bandwidth", "compute"))
    while free and len(group) < efficiencies + len(free):   # fewer rows than parameters: drop the last cost
        free.pop()
    return tuple(free)


def _nnls(a_mat: np.ndarray, b_vec: np.ndarray) -> np.ndarray:
    """Non-negative minimizer of θᵀAθ − 2bᵀθ, batched (A: (..., k, k), b: (..., k)): the restricted optimum
    θ_S = A_SS⁺ b_S of the feasible support S that lowers the objective most (bᵀθ_S largest) — exact for the
    few fixed costs here (2^k supports). A⁺ is the pseudo-inverse: rows that cannot tell two costs apart (a
    singular A_SS) give the least-norm solution, not an error."""
    k = b_vec.shape[-1]
    best = np.zeros(b_vec.shape)
    gain = np.zeros(b_vec.shape[:-1])
    for size in range(1, k + 1):
        for support in itertools.combinations(range(k), size):
            s = list(support)
            inv = np.linalg.pinv(a_mat[..., s, :][..., :, s])
            theta = np.einsum("...ij,...j->...i", inv, b_vec[..., s])
            g = np.einsum("...i,...i->...", theta, b_vec[..., s])
            better = (theta >= 0).all(axis=-1) & (g > gain)
            gain = np.where(better, g, gain)
            full = np.zeros(b_vec.shape)
            full[..., s] = theta
            best = np.where(better[..., None], full, best)
    return best


@dataclass
class Fitted:
    """One hardware's fit: the parameters, which fixed costs were free, and the leave-one-out results."""

    params: dict[str, float]
    free: tuple[str, ...]
    loo_pred: np.ndarray
    loo_params: np.ndarray          # rows × PARAMETERS: each left-out row's refit
    negative: tuple[str, ...]       # fixed costs the rows, left free of the bound, would make negative


def solve(group: list[Row], weights: np.ndarray | None = None, prior: Mapping[str, float] | None = None,
          pull: float = PULL, hold: tuple[str, ...] = ()) -> Fitted:
    """The grid over the efficiencies, the fixed costs solved at each point (see the module docstring); the fit
    is pulled toward ``prior`` (the shipped defaults unless given) with strength ``pull`` per unit of squared
    relative departure (the fixed costs' pull in the same proportion to PULL_FIXED); the PARAMETERS in ``hold``
    keep the prior's value."""
    d = {**defaults(), **(prior or {})}
    grids = [np.array([d[k]]) if k in hold else grid for k, grid in (("bandwidth", BANDWIDTH), ("compute", COMPUTE))]
    be, ce = (a.ravel() for a in np.meshgrid(*grids, indexing="ij"))
    n = len(group)
    m = np.array([r.measured_s for r in group])
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float) * n / float(np.sum(weights))
    free = list(free_costs(group, hold))
    prior_costs = np.array([d[k] for k in LINEAR])
    fixed = [k for k in range(len(LINEAR)) if k not in free]
    f = features(group)
    step = max(1, _CHUNK_ELEMENTS // n)
    roof = np.concatenate([roofline(group, be[k:k + step], ce[k:k + step]) for k in range(0, be.size, step)])
    roof = roof + f[:, fixed] @ prior_costs[fixed]                # the costs not fitted stay at the prior's
    a = f[:, free] / m[:, None]                                    # rows × free
    y = 1.0 - roof / m                                             # grid × rows
    # each cost's natural size: the value that alone would make up a median row paying it
    scale = np.array([np.median(m[f[:, k] > 0] / f[f[:, k] > 0, k]) for k in free])
    fixed_pull = PULL_FIXED * pull / PULL
    lam = n * fixed_pull / scale ** 2                              # the pull, in the sum's units
    a_mat = (a * w[:, None]).T @ a + np.diag(lam)
    b_vec = (y * w) @ a + lam * prior_costs[free]
    theta = _nnls(a_mat, b_vec)                                   # grid × free

    pred = roof + theta @ f[:, free].T
    err = np.log(np.maximum(pred, 1e-30) / m) ** 2 * w             # grid × rows, weighted squared log error
    penalty = (pull * ((be / d["bandwidth"] - 1) ** 2 + (ce / d["compute"] - 1) ** 2)
               + fixed_pull * (((theta - prior_costs[free]) / scale) ** 2).sum(axis=1))
    best = int(np.argmin(err.sum(axis=1) / n + penalty))
    params = {"bandwidth": float(be[best]), "compute": float(ce[best]),
              **{k: float(v) for k, v in zip(LINEAR, prior_costs, strict=True)}}
    params.update({LINEAR[k]: float(v) for k, v in zip(free, theta[best], strict=True)})
    unbounded = np.linalg.lstsq(a_mat, b_vec[best], rcond=None)[0] if free else np.zeros(0)
    negative = tuple(LINEAR[k] for k, v, size in zip(free, unbounded, scale, strict=True) if v < -1e-3 * size)

    # leave one out: the grid point the other rows' errors choose, the fixed costs re-solved without the row
    loo_idx = np.argmin((err.sum(axis=1)[:, None] - err) / max(n - 1, 1) + penalty[:, None], axis=0)
    yk = y[loo_idx, np.arange(n)]                                            # rows: each row's own y at its point
    b_k = b_vec[loo_idx] - (w * yk)[:, None] * a                             # rows × free
    a_k = a_mat[None] - (w[:, None, None] * a[:, :, None] * a[:, None, :])   # rows × free × free
    theta_k = _nnls(a_k, b_k) if free else np.zeros((n, 0))
    loo_pred = roof[loo_idx, np.arange(n)] + (theta_k * f[:, free]).sum(axis=1)
    loo_params = np.tile(np.array([params[k] for k in PARAMETERS]), (n, 1))
    loo_params[:, 0], loo_params[:, 1] = be[loo_idx], ce[loo_idx]
    for j, k in enumerate(free):
        loo_params[:, 2 + k] = theta_k[:, j]
    return Fitted(params, tuple(LINEAR[k] for k in free), loo_pred, loo_params, negative)


@record
class FitNote:
    """What a fit says about the model's terms (report/calibration.py words it): ``code`` one of FIT_NOTES, the
    parameter it concerns and the value it states (an efficiency's bound, seconds, a number of rows)."""

    code: str
    name: str = ""
    value: float = 0.0


# an efficiency pinned to the grid's lowest or highest value, a fixed cost the rows would make negative, a
# per-request cost too large to be one, a chip with too few rows to fit, a chip whose rows name several engines
# (``name``: the engines, comma-separated; ``value``: how many)
FIT_NOTES = ("lowest", "highest", "negative", "request-overhead", "not-fitted", "mixed-engines")


def edges(fit: Fitted, held: tuple[str, ...] = ()) -> list[FitNote]:
    """What the fit says about the model's terms: an efficiency pinned to the grid's edge (not one ``held`` at
    its default), a fixed cost the rows would make negative, a per-request cost too large to be one."""
    out = []
    for name, values in (("bandwidth", BANDWIDTH), ("compute", COMPUTE)):
        v = fit.params[name]
        if name not in held and v in (values[0], values[-1]):
            out.append(FitNote("lowest" if v == values[0] else "highest", name, v))
    out += [FitNote("negative", name) for name in fit.negative]
    if fit.params["request_overhead_s"] > REQUEST_MAX:
        out.append(FitNote("request-overhead", "request_overhead_s", fit.params["request_overhead_s"]))
    return out


def fit(group: list[Row], weights: np.ndarray | None = None) -> dict[str, float] | None:
    """The fitted parameters of rows of one hardware (``weights``: each row's share of the error), or None with
    fewer rows than the three parameters every fit has."""
    if len(group) < 3:
        return None
    return solve(group, weights).params


POINT_COLUMNS = ("model", "weights", "kv", "compute", "attention", "phase", "tp", "pipeline", "batch", "context",
                 "output_tokens", "source")


@record
class Point:
    """One measured row: its columns as given (POINT_COLUMNS, None where not), the measured time and the
    predictions before and after the fit, in seconds."""

    columns: tuple[object, ...]
    measured_s: float
    before_s: float
    after_s: float

    def get(self, name: str) -> Any:
        """A column's value as the row gave it (None where it gave none)."""
        return self.columns[POINT_COLUMNS.index(name)]


@record
class HardwareFit:
    """One chip's fit: the parameters (the defaults where too few rows), which fixed costs were fitted, their
    jackknife standard errors, the mean absolute error before, after and leaving each row out, the notes.
    ``identified``: the PARAMETERS the rows fitted (held_efficiencies, free_costs); every other one is the
    default, and has no standard error."""

    hardware: str
    rows: int
    default: dict[str, float]
    warnings: tuple[FitNote, ...]
    fitted: dict[str, float] | None
    parameters: dict[str, float]
    free: tuple[str, ...]
    uncertainty: dict[str, float] | None
    compute_identified: bool
    identified: tuple[str, ...]
    error_before: float
    error_after: float
    error_leave_one_out: float | None
    points: tuple[Point, ...]


@record
class Calibration:
    """A calibration file fitted chip by chip."""

    source: str
    hardware: tuple[HardwareFit, ...]
    left_out: tuple[str, ...] = ()        # files of another build than the baseline (calibration_rows.read)


def calibrate(path: Path | str, catalog_file: Path | str | None = None, progress: Progress = SILENT) -> Calibration:
    """Fit per hardware; report the parameters, their jackknife spread, the prediction error before and after,
    and the leave-one-out error. Rows name hardware and models of the shipped catalog merged with a user catalog
    (``catalog_file``, else $TRIAGE_CATALOG). A hardware with fewer than three rows keeps the defaults and says
    so. ``progress`` is told each stage (loading, calibrating the rows, fitting the chips) and each row and chip
    done."""
    progress.stage("loading")
    cat = catalog_mod.resolve(catalog_file)
    path = Path(path)
    read, left_out = calibration_rows.read(path)
    progress.stage("calibrating", len(read))
    rows = []
    # a server's name (a vLLM result's model_id) stands for the catalog entry citing that repository: the
    # table built once, not searched per row
    repos: dict[str, str] = {}
    for key, model in cat.models.items():
        if model.hf_repo is not None:
            repos.setdefault(model.hf_repo, key)
    for k, r in enumerate(read, start=1):        # pricing each row is most of a calibration's time
        rows.append(price(calibration_rows.step_row(r, cat, repos), cat))
        progress.advance(k, len(read), "rows")
    fits = []
    d = defaults()
    chips = sorted({r.spec.hardware for r in rows})
    progress.stage("fitting", len(chips))
    for hw in chips:
        group = [r for r in rows if r.spec.hardware == hw]
        measured = np.array([r.measured_s for r in group])
        before = predict(group, d)
        notes: list[FitNote] = []
        spread: dict[str, float] | None
        identified: tuple[str, ...] = ()
        if len(group) < 3:
            params, spread, loo, fitted_params = dict(d), None, None, None
            free: tuple[str, ...] = ()
            notes.append(FitNote("not-fitted", value=len(group)))
        else:
            fitted = solve(group)
            held = held_efficiencies(group, fitted.params)
            if held:                    # refit without them: the fixed costs may take the rows' spare freedom
                fitted = solve(group, hold=held)
            params, free, fitted_params = fitted.params, fitted.free, fitted.params
            identified = tuple(k for k in PARAMETERS if k in free or k in ("bandwidth", "compute") and k not in held)
            loo = _mape(fitted.loo_pred, measured)
            n = len(group)
            spread = {}
            for j, name in enumerate(PARAMETERS):       # jackknife standard error of each fitted parameter
                if name in identified:
                    v = fitted.loo_params[:, j]
                    spread[name] = float(np.sqrt((n - 1) / n * np.sum((v - v.mean()) ** 2)))
            notes += edges(fitted, held)
        engines = sorted({str(r.spec.engine or "").strip()[:LIMITS.name_chars] for r in group} - {""})
        if len(engines) > 1:        # one profile from several engines' rows describes none of them
            notes.append(FitNote("mixed-engines", ", ".join(engines), len(engines)))
        after = predict(group, params)
        fits.append(HardwareFit(
            hw, len(group), d, tuple(notes), fitted_params, params, tuple(free), spread, "compute" in identified,
            identified,
            _mape(before, measured), _mape(after, measured), loo,
            tuple(Point(tuple(getattr(r.spec, k) for k in POINT_COLUMNS), r.measured_s, float(before[i]),
                        float(after[i])) for i, r in enumerate(group))))
        progress.advance(len(fits), len(chips), "chips")
    return Calibration(str(path), tuple(fits), tuple(left_out))
