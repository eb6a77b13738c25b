"""The serving layer: a workload with `traffic:` replays its request stream through the engine's scheduler
for the baseline and the claim (model/serving.py), at each rate, and searches the largest rate that meets the
SLO; a scheduling card's end-to-end gain is that rate's gain (or the goodput's, where no rate meets it).

Statistics leave out the first ``warmup`` share of the requests (the queue fills from empty); a rate's
throughput counts the requests that finish inside the measured window (first measured arrival to last
arrival), so above capacity it stops at what the engine completes while the queue grows.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..defaults import LIMITS, SERVING_MEMO_RUNS, SERVING_MIN_MEASURED, SERVING_RATE_MAX, SERVING_RATE_MIN
from ..errors import Problem, UserError
from ..inputs import traffic as traffic_mod
from ..inputs.claim import Claim
from ..inputs.traffic import Lengths, Scheduler, Traffic
from ..inputs.workloads import Settings
from ..model import layers
from ..model.iteration import IterationCost, iteration_cost
from ..model.layers import Gaps
from ..model.matrix import Matrix
from ..model.serving import ITERATION_STEPS, Budget, Outcome, Requests, simulate

STABLE = 0.9                  # completions per arrival, at least, for a rate to count as served
SEARCH_STEPS = 8              # bisection steps of the largest rate at the SLO (0.4 % of the bracket)
DOUBLINGS = 20                # the search's doublings (or quarterings) from the largest rate, at most


def _lengths(spec: Lengths, trace: np.ndarray | None, n: int, rng: np.random.Generator) -> np.ndarray:
    if spec.kind == "fixed":
        out = np.full(n, spec.a)
    elif spec.kind == "lognormal":
        out = spec.a * np.exp(spec.b * rng.standard_normal(n))
    elif spec.kind == "uniform":
        out = rng.uniform(spec.a, spec.b, n)
    else:
        assert trace is not None
        out = np.resize(trace, n).astype(float)
    return np.maximum(np.round(out), 1.0)                    # whole tokens


FIT = 0.95                    # a request is cut to this share of the KV room (the watermark and a block spare)


def requests(traffic: Traffic, rate: float, max_tokens: float) -> Requests:
    """The request stream at ``rate`` (requests/s): the same lengths at every rate (one seed), arrivals
    Poisson, gamma, or the trace's gaps scaled to the rate; a request longer than ``max_tokens`` (the KV the
    engine holds) is cut to fit, its output kept."""
    rng = np.random.default_rng(traffic.seed)
    n = traffic.requests
    t = traffic.trace
    prompt = _lengths(traffic.prompt, None if t is None else t.prompt, n, rng)
    output = _lengths(traffic.output, None if t is None else t.output, n, rng)
    if traffic.arrivals == "trace":
        assert t is not None
        gaps = np.resize(np.diff(t.arrival), n)           # the trace's gaps, repeated past its end
        gaps[0] = 0.0
        mean = float(gaps[1:].mean()) if n > 1 else 1.0
        arrival = np.cumsum(gaps) / (mean * rate) if mean > 0 else np.arange(n) / rate
    elif traffic.arrivals == "gamma":
        shape = 1.0 / traffic.cv ** 2
        arrival = np.cumsum(rng.gamma(shape, 1.0 / (rate * shape), n))
    else:
        arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    if not np.all(np.isfinite(arrival)) or np.any(np.diff(arrival) < 0):
        raise ValueError(f"the arrival times at {rate:g} requests/s are not finite, ordered times (the gaps "
                         f"overflow when scaled to the rate)")
    room = max(np.floor(FIT * max_tokens) - 16.0, 2.0)
    output = np.clip(output, 1.0, room - 1.0)
    prompt = np.clip(prompt, 1.0, np.maximum(room - output, 1.0))
    # the shared prefix: every request whose index falls in the share (spread evenly), at most its prompt less one
    hit = np.floor((np.arange(n) + 1) * traffic.prefix_share) > np.floor(np.arange(n) * traffic.prefix_share)
    shared = np.where(hit, np.minimum(float(traffic.prefix_tokens), prompt - 1.0), 0.0)
    return Requests(arrival - arrival[0], prompt, output, shared)


@dataclass(frozen=True)
class Percentiles:
    """P50, P90, P99 and mean of one latency, in seconds (NaN where no request gave one)."""

    p50: float
    p90: float
    p99: float
    mean: float

    def at(self, which: str) -> float:
        """The percentile a traffic's SLO names: 'p50', 'p90' or 'p99'."""
        return float(getattr(self, which))


@dataclass(frozen=True)
class LittlesLaw:
    """The check on a rate's statistics: time-average requests in the system against arrival rate × mean time."""

    in_system: float
    rate_times_latency: float


@dataclass(frozen=True)
class RateStats:
    """One rate's latency percentiles, throughput, goodput and whether it meets the SLO (field order: the JSON's)."""

    rate_rps: float
    ttft_s: Percentiles
    tbt_s: Percentiles
    tpot_s: Percentiles
    e2e_s: Percentiles
    throughput_rps: float
    output_tokens_per_s: float
    goodput_rps: float
    slo_met: bool
    mean_batch: float
    preemptions: int
    requests: int
    warmup_requests: int
    simulated_s: float
    littles_law: LittlesLaw


@dataclass(frozen=True)
class SideResult:
    """One side's simulation: every rate, the largest at the SLO, the deployment, and the GPU-seconds a request
    costs at the rate the gain reads."""

    rates: tuple[RateStats, ...]
    max_rate_at_slo_rps: float | None
    gpus: int
    kv_tokens: float
    scheduler: str
    scheduler_config: Scheduler
    gpu_seconds_per_request: float


@dataclass(frozen=True)
class Served:
    """Baseline and claim of one workload × model × chip, and the gain the verdict reads: the ratio of the
    largest rates at the SLO per GPU (``basis`` max_rate_at_slo), else of the goodput at the highest rate."""

    baseline: SideResult
    claim: SideResult
    gain: float
    basis: str


def _summary(values: np.ndarray, weights: np.ndarray | None = None) -> Percentiles:
    """P50, P90, P99 and mean of (weighted) values, in seconds."""
    if values.size == 0:
        return Percentiles(float("nan"), float("nan"), float("nan"), float("nan"))
    w = np.ones_like(values) if weights is None else weights
    order = np.argsort(values, kind="stable")
    v, cw = values[order], np.cumsum(w[order])
    q = [float(v[min(np.searchsorted(cw, p * cw[-1]), v.size - 1)]) for p in (0.5, 0.9, 0.99)]
    return Percentiles(q[0], q[1], q[2], float(np.average(values, weights=w)))


def statistics(req: Requests, out: Outcome, traffic: Traffic, rate: float) -> RateStats:
    """One rate's latency percentiles, throughput, goodput and the checks on them (Little's law). TTFT, TPOT and
    end-to-end percentiles are over the measured requests, and so are the time-between-tokens percentiles when
    the simulation was told which requests are measured (Side.run does)."""
    n = len(req)
    start = int(np.floor(traffic.warmup * n))
    if n - start < SERVING_MIN_MEASURED:
        raise ValueError(f"{n - start} measured requests after the warm-up; a rate needs {SERVING_MIN_MEASURED}")
    keep = np.arange(start, n)
    window = (float(req.arrival[start]), float(req.arrival[-1]))
    span = max(window[1] - window[0], 1e-12)
    done = out.done[keep]
    finished = np.isfinite(done)
    # what the engine completes inside the window, whichever request it is (above capacity: warm-up ones too)
    completed = (out.done >= window[0]) & (out.done <= window[1])
    ttft = out.first[keep] - req.arrival[keep]
    e2e = done - req.arrival[keep]
    multi = finished & (req.output[keep] > 1)
    tpot = (done[multi] - out.first[keep][multi]) / (req.output[keep][multi] - 1)
    gaps, weights = out.token_gaps()
    every_ttft = out.first - req.arrival
    meets = completed.copy()
    if traffic.slo_ttft_s is not None:
        meets &= every_ttft <= traffic.slo_ttft_s
    if traffic.slo_tbt_s is not None:
        meets &= out.max_gap <= traffic.slo_tbt_s
    if traffic.slo_tpot_s is not None:
        tp = np.where(req.output > 1, (out.done - out.first) / np.maximum(req.output - 1, 1), 0.0)
        meets &= tp <= traffic.slo_tpot_s
    # Little's law over the window: the time-average number in the system against arrival rate × mean time
    a, d = req.arrival[keep], np.where(finished, done, np.inf)
    overlap = np.clip(np.minimum(d, window[1]) - np.maximum(a, window[0]), 0.0, None)
    in_system = float(overlap.sum() / span)
    arrivals_in = (n - start - 1) / span
    throughput = float(completed.sum() / span)
    ttft_s, tbt_s, tpot_s = _summary(ttft[finished]), _summary(gaps, weights), _summary(tpot)
    return RateStats(
        rate, ttft_s, tbt_s, tpot_s, _summary(e2e[finished]), throughput,
        float(req.output[completed].sum() / span), float(meets.sum() / span),
        # a rate is served only if the engine keeps up with it (completions within 10 % of arrivals: a growing
        # queue fails whatever the latency bounds say) and the bounds hold
        throughput >= STABLE * arrivals_in and _slo_met(traffic, ttft_s, tbt_s, tpot_s, finished.all()),
        out.batch_seconds / out.busy_s if out.busy_s else 0.0, out.preemptions, int(n - start), start,
        float(np.nanmax(out.done)),
        LittlesLaw(in_system, arrivals_in * float(np.mean(e2e[finished])) if finished.all() else float("nan")))


def _slo_met(traffic: Traffic, ttft: Percentiles, tbt: Percentiles, tpot: Percentiles, all_done: bool) -> bool:
    """Whether a rate meets the SLO: TTFT, TBT and TPOT at their percentiles (P99 unless the traffic says)
    within their targets, and every request served."""
    ok = all_done
    for bound, at, values in ((traffic.slo_ttft_s, traffic.ttft_at, ttft), (traffic.slo_tbt_s, traffic.tbt_at, tbt),
                              (traffic.slo_tpot_s, traffic.tpot_at, tpot)):
        if bound is not None:
            ok = ok and values.at(at) <= bound
    return bool(ok)


_MEMO: dict[tuple[Any, ...], tuple[Traffic, RateStats]] = {}
_MEMO_LOCK = threading.Lock()        # the sensitivity's variants simulate in threads (analysis/regions.py)


@dataclass(frozen=True)
class Side:
    """One variant's engine: its iteration model (a decode pool's too, when disaggregated) and scheduler."""

    cost: IterationCost
    scheduler: Scheduler
    window: float = float("inf")      # the model's trained context: no request runs longer
    tp: int = 1                       # GPUs of one instance (tensor parallel)
    budget: Budget = field(default_factory=Budget, compare=False)   # the run's token-steps left (serving_work)

    def run(self, traffic: Traffic, rate: float) -> RateStats:
        """The statistics of one rate; a run already simulated with the same inputs is taken from the memo
        (a sensitivity variant's baseline, or a claim side the variant leaves as it was)."""
        key = (self._fingerprint(), id(traffic), rate)
        with _MEMO_LOCK:
            hit = _MEMO.get(key)
        if hit is not None and hit[0] is traffic:
            return hit[1]
        req = requests(traffic, rate, min(self.cost.kv_tokens, self.window))
        measured = np.arange(len(req)) >= int(np.floor(traffic.warmup * len(req)))
        out = statistics(req, simulate(req, self.cost, self.scheduler, measured=measured, budget=self.budget),
                         traffic, rate)
        with _MEMO_LOCK:
            while len(_MEMO) >= SERVING_MEMO_RUNS:
                _MEMO.pop(next(iter(_MEMO)))
            _MEMO[key] = (traffic, out)     # the traffic kept alive with its entry: its id stays its own
        return out

    def _fingerprint(self) -> tuple[Any, ...]:
        c = self.cost
        return (c.compute.tobytes(), c.memory.tobytes(), c.comm.tobytes(), c.busy_per_decode, c.step_s, c.request_s,
                c.kv_bytes_per_token, c.free_bytes, self.scheduler, self.window, self.tp)

    def gpus(self) -> int:
        """GPUs the deployment holds: its instances times each one's tensor-parallel group."""
        s = self.scheduler
        return self.tp * (s.prefill_gpus + s.decode_gpus if s.policy == "disaggregated" else 1)


def max_rate(side: Side, traffic: Traffic, hint: float) -> float | None:
    """The largest rate (requests/s) meeting the SLO, by doubling from ``hint`` then bisection; None without an
    SLO or when even a rate 1/1000 of the hint fails."""
    if traffic.slo_ttft_s is None and traffic.slo_tbt_s is None and traffic.slo_tpot_s is None:
        return None
    low, high = 0.0, min(max(hint, SERVING_RATE_MIN), SERVING_RATE_MAX)
    for _ in range(DOUBLINGS):                # up from the hint while the SLO holds
        if not side.run(traffic, high).slo_met:
            break
        low, high = high, min(high * 2, SERVING_RATE_MAX)
        if low == SERVING_RATE_MAX:
            return low
    else:
        return low
    for _ in range(DOUBLINGS):                # down from the hint until it holds
        if low:
            break
        probe = high / 4
        if probe < SERVING_RATE_MIN:
            return 0.0
        if side.run(traffic, probe).slo_met:
            low = probe
        else:
            high = probe
    if not low:
        return 0.0
    for _ in range(SEARCH_STEPS):             # bisection in log space: a factor of 2^(1/2^k) at the end
        mid = float(np.sqrt(low * high))
        low, high = (mid, high) if side.run(traffic, mid).slo_met else (low, mid)
    return low


def serve(base: Side, claim: Side, traffic: Traffic) -> Served:
    """Both sides at every rate, the largest rate at the SLO of each (per GPU of the deployment), and the gain
    the verdict reads: the max-rate ratio, else the goodput ratio at the highest rate."""
    rates, best = {}, {}
    for name, side in (("baseline", base), ("claim", claim)):
        rates[name] = tuple(side.run(traffic, r) for r in traffic.rates)
        best[name] = max_rate(side, traffic, max(traffic.rates))
    gpus = (base.gpus(), claim.gpus())
    b, c = best["baseline"], best["claim"]
    if b and c is not None:
        gain, basis = (c / gpus[1]) / (b / gpus[0]), "max_rate_at_slo"
    else:
        gb, gc = rates["baseline"][-1].goodput_rps, rates["claim"][-1].goodput_rps
        gain, basis = ((gc / gpus[1]) / (gb / gpus[0]) if gb > 0 else float("nan")), "goodput"

    def side_result(name: str, side: Side, n: int) -> SideResult:
        # GPU-seconds a request costs at the rate the gain reads
        rate = best[name] if basis == "max_rate_at_slo" else rates[name][-1].goodput_rps
        return SideResult(rates[name], best[name], n, side.cost.kv_tokens, side.scheduler.policy, side.scheduler,
                          n / rate if rate else float("nan"))
    return Served(side_result("baseline", base, gpus[0]), side_result("claim", claim, gpus[1]), gain, basis)


Results = dict[tuple[int, int, int], Served]


def cell_cost(m: Matrix, claim: Claim, g: Gaps, i: int, side: str = "baseline") -> IterationCost:
    """The iteration model of cell ``i``'s baseline or claim: its inputs, chip, efficiencies (a card's kernels
    at its share of them), fixed costs and memory, as the cell was priced."""
    e = g.engine
    ceff, beff = layers.efficiencies(claim, e["compute"], e["bandwidth"])[side == "claim"]
    x = (g.base if side == "baseline" else g.claim).inputs

    def at(v: Any) -> float:
        return float(np.broadcast_to(v, (len(m),))[i])
    return iteration_cost(x.take(np.array([i])), layers.machine(m).take(np.array([i])),
                          {k: at(v) for k, v in ceff.items()}, {k: at(v) for k, v in beff.items()},
                          at(e["overhead_s"]), at(e["layer_overhead_s"]), at(e["request_overhead_s"]),
                          at(m.column("memory_bytes", "hardware")), at(m.column("reserve_bytes")))


def work(side: Side, traffic: Traffic) -> float:
    """Token-steps one simulation of ``traffic`` on ``side`` takes at least (model/serving.py's costs): every
    output token, and each request's prefill iterations (a chunked prompt at least ceil(prompt / token_budget))
    and the two events (arrival, completion) that end a run of decode steps. The sequences each iteration
    visits, the rate search and preemptions are charged as the simulation runs (Budget)."""
    req = requests(traffic, 1.0, min(side.cost.kv_tokens, side.window))
    s = side.scheduler
    prefills = float(np.ceil(req.prompt / s.token_budget).sum()) if s.policy == "chunked" else float(len(req))
    return float(req.output.sum()) + (prefills + 2.0 * len(req)) * ITERATION_STEPS


def _check_work(m: Matrix, sides: dict[tuple[int, int, int], tuple[Side, Side]]) -> None:
    """A run's simulated token-steps, bounded before any request is simulated (limit serving_work) by what it
    takes at least: both sides at every listed rate (the rate search and the sensitivity variants may add more,
    and the run-wide Budget stops them)."""
    total = 0.0
    for (b, _, _), pair in sides.items():
        t = m.blocks[b].traffic
        assert t is not None
        try:
            total += len(t.rates) * sum(work(side, t) for side in pair)
        except ValueError as exc:
            raise UserError([_at(m.blocks[b], str(exc))]) from None
    if total > LIMITS.serving_work:
        raise UserError([Problem(m.source, path="$.workloads", message=(
            f"the traffic blocks ask for at least {total:,.0f} simulated token-steps (every output token and "
            f"{ITERATION_STEPS} an iteration, x rates x 2 sides x models and chips); a run simulates at most "
            f"{LIMITS.serving_work:,} (limit serving_work, about 30 s of simulation): fewer requests, rates or "
            f"output tokens"))])


def _pairs(m: Matrix) -> dict[tuple[int, int, int], int]:
    """(block, model, chip) of every workload with traffic -> its first cell, in the matrix's order."""
    cells = np.flatnonzero(np.array([b.traffic is not None for b in m.blocks])[m.block_idx])
    keys = np.stack([m.block_idx[cells], m.model_idx[cells], m.hardware_idx[cells]], axis=1)
    _, first = np.unique(keys, axis=0, return_index=True)
    return {(int(m.block_idx[i]), int(m.model_idx[i]), int(m.hardware_idx[i])): int(i) for i in sorted(cells[first])}


def _at(block: Settings, message: str) -> Problem:
    """A problem of a workload's traffic, addressed to its file, line and path (its name where it has none)."""
    if block.traffic_at is not None:
        return replace(block.traffic_at, message=f"workload {block.name!r}: {message}")
    return Problem(block.name, path="$.traffic", message=message)


def run_budget() -> Budget:
    """The token-steps one run may simulate (limit serving_work), to share between its simulations."""
    return Budget(LIMITS.serving_work)


def _simulate(m: Matrix, claim: Claim, g: Gaps, budget: Budget) -> Results:
    """Baseline and claim of every (block, model, chip) with traffic, simulated, charged to ``budget``."""
    change = traffic_mod.parse_change(claim)
    sides: dict[tuple[int, int, int], tuple[Side, Side]] = {}
    for (b, mi, hi), i in _pairs(m).items():
        block = m.blocks[b]
        where = f"{m.models[mi].label} on {m.hardware[hi].key}"
        window = m.models[mi].window
        tp_b, tp_c = (int(np.broadcast_to(x.tp, (len(m),))[i]) for x in (g.base.inputs, g.claim.inputs))
        merged = {**block.scheduler, **change}
        wrong = traffic_mod.scheduler_problem(merged)
        if wrong:
            raise UserError([Problem(claim.file, path="$.change.scheduler", message=f"on workload {block.name!r}: "
                                                                                    f"{wrong}")])
        base = Side(cell_cost(m, claim, g, i, "baseline"), traffic_mod.scheduler(block.scheduler), window, tp_b,
                    budget)
        new = Side(cell_cost(m, claim, g, i, "claim"), traffic_mod.scheduler(merged), window, tp_c, budget)
        for side in (base, new):
            if side.cost.kv_tokens < 2 * side.scheduler.block_size:
                raise UserError([_at(block, (
                    f"{where}: the weights leave no room for a request's KV cache ({side.cost.kv_tokens:,.0f} "
                    f"tokens); more GPUs (tp) or a smaller model"))])
        sides[(b, mi, hi)] = (base, new)
    _check_work(m, sides)
    results: Results = {}
    for (b, mi, hi), (base, new) in sides.items():
        block = m.blocks[b]
        assert block.traffic is not None
        try:
            results[(b, mi, hi)] = serve(base, new, block.traffic)
        except ValueError as exc:
            where = f"{m.models[mi].label} on {m.hardware[hi].key}"
            raise UserError([_at(block, f"{where}: {exc}")]) from None
    return results


def price(m: Matrix, claim: Claim, g: Gaps, known: Results | None = None, work: Budget | None = None
          ) -> tuple[Results, Gaps]:
    """Every workload with traffic: one simulation per model and chip of it, baseline and claim (the claim's
    `change.scheduler` laid over the workload's scheduler); ``g`` with those cells' end-to-end gain and
    GPU-seconds per request taken from the simulation. ``known``: results already simulated for the same
    inputs (a sensitivity variant that moves nothing the simulation reads), applied without simulating.
    ``work``: the run's budget (shared with its sensitivity variants)."""
    if not any(b.traffic is not None for b in m.blocks):
        return {}, g
    results = known if known is not None else _simulate(m, claim, g, work or run_budget())
    gain = np.full(len(m), np.nan)
    basis = np.array(np.broadcast_to(g.e2e_metric, (len(m),)))
    base_req = np.array(np.broadcast_to(g.base_request_s, (len(m),)), dtype=float)
    claim_req = np.array(np.broadcast_to(g.claim_request_s, (len(m),)), dtype=float)
    for (b, mi, hi), r in results.items():
        same = (m.block_idx == b) & (m.model_idx == mi) & (m.hardware_idx == hi)
        gain[same] = r.gain
        basis[same] = layers.e2e_metric_code(r.basis)
        base_req[same] = r.baseline.gpu_seconds_per_request
        claim_req[same] = r.claim.gpu_seconds_per_request
    served = ~np.isnan(gain)
    return results, replace(g, speedup_end_to_end=np.where(served, gain, g.speedup_end_to_end),
                            base_request_s=base_req, claim_request_s=claim_req,
                            e2e_metric=np.where(served, basis, g.e2e_metric))
