"""A rate's statistics: TTFT, time between tokens, TPOT and end-to-end percentiles over the measured requests,
throughput, goodput and whether the rate meets the SLO, with Little's law as the check on them.

Statistics leave out the first ``warmup`` share of the requests (the queue fills from empty); a rate's
throughput counts the requests that finish inside the measured window (first measured arrival to last
arrival), so above capacity it stops at what the engine completes while the queue grows.
"""

from __future__ import annotations

import math

import numpy as np

from ..defaults import SERVING_MIN_MEASURED
from ..inputs.traffic import Traffic
from ..records import record
from .outcome import Outcome
from .requests import Requests

STABLE = 0.9                  # completions per arrival, at least, for a rate to count as served


@record
class Percentiles:
    """P50, P90, P99 and mean of one latency, in seconds (NaN where no request gave one)."""

    p50: float
    p90: float
    p99: float
    mean: float

    def at(self, which: str) -> float:
        """The percentile a traffic's SLO names: 'p50', 'p90' or 'p99'."""
        return float(getattr(self, which))


@record
class LittlesLaw:
    """The check on a rate's statistics: time-average requests in the system against arrival rate × mean time."""

    in_system: float
    rate_times_latency: float


@record
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
    # a closed scenario's requests were sent as clients came free (the outcome knows when); its window runs to
    # the last completion, as a benchmark's duration does
    closed = traffic.closed
    arrival = req.arrival if out.arrival is None else out.arrival
    window = (float(arrival[start]), float(np.nanmax(out.done)) if closed else float(arrival[-1]))
    span = max(window[1] - window[0], 1e-12)
    done = out.done[keep]
    finished = np.isfinite(done)
    # what the engine completes inside the window, whichever request it is (above capacity: warm-up ones too)
    # (closed: after the window opens, as the completion that sent the first measured request is the warm-up's)
    completed = ((out.done > window[0]) if closed else (out.done >= window[0])) & (out.done <= window[1])
    ttft = out.first[keep] - arrival[keep]
    e2e = done - arrival[keep]
    multi = finished & (req.output[keep] > 1)
    tpot = (done[multi] - out.first[keep][multi]) / (req.output[keep][multi] - 1)
    gaps, weights = out.token_gaps()
    every_ttft = out.first - arrival
    meets = completed.copy()
    if traffic.slo_ttft_s is not None:
        meets &= every_ttft <= traffic.slo_ttft_s
    if traffic.slo_tbt_s is not None:
        meets &= out.max_gap <= traffic.slo_tbt_s
    if traffic.slo_tpot_s is not None:
        tp = np.where(req.output > 1, (out.done - out.first) / np.maximum(req.output - 1, 1), 0.0)
        meets &= tp <= traffic.slo_tpot_s
    # Little's law over the window: the time-average number in the system against arrival rate × mean time
    a, d = arrival[keep], np.where(finished, done, np.inf)
    overlap = np.clip(np.minimum(d, window[1]) - np.maximum(a, window[0]), 0.0, None)
    in_system = float(overlap.sum() / span)
    throughput = float(completed.sum() / span)
    arrivals_in = throughput if closed else (n - start - 1) / span
    ttft_s, tbt_s, tpot_s = _summary(ttft[finished]), _summary(gaps, weights), _summary(tpot)
    return RateStats(
        throughput if closed else rate, ttft_s, tbt_s, tpot_s, _summary(e2e[finished]), throughput,
        float(req.output[completed].sum() / span), float(meets.sum() / span),
        # a rate is served only if the engine keeps up with it (completions within 10 % of arrivals: a growing
        # queue, or a batch that grows without one, fails whatever the latency bounds say; so does a run shorter
        # than about ten of its requests' latencies, whose window the system spends filling) and the bounds hold
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


def slo_margin(traffic: Traffic, s: RateStats) -> float:
    """How far a rate is from its SLO, for the rate search's choice of probes: the largest log of a latency
    over its bound (and of the arrivals over what completes, where the queue grows), at most 0 exactly where the
    rate meets the SLO and above 0 where it does not (+inf: a statistic is missing)."""
    short = math.log(STABLE * s.rate_rps / s.throughput_rps) if s.throughput_rps > 0 else math.inf
    logs = [short] if short > 0 else [-math.inf]      # a queue that keeps up says nothing of how close the bounds are
    for bound, at, values in ((traffic.slo_ttft_s, traffic.ttft_at, s.ttft_s), (traffic.slo_tbt_s, traffic.tbt_at,
                                                                                s.tbt_s),
                              (traffic.slo_tpot_s, traffic.tpot_at, s.tpot_s)):
        if bound is not None:
            v = values.at(at)
            logs.append(math.inf if math.isnan(v) else math.log(v / bound) if v > 0 else -math.inf)
    m = max(logs)
    return min(m, 0.0) if s.slo_met else max(m, 1e-12)
