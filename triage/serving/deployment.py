"""A deployment's two sides (baseline and claim), each an iteration model and a scheduler on its GPUs, through a
traffic at every rate: the largest rate at the SLO of each (per GPU) and the gain the verdict reads."""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Any

import numpy as np

from ..defaults import SERVING_AROUND_BEST as AROUND_BEST
from ..defaults import SERVING_MEMO_RUNS
from ..defaults import SERVING_SEARCH_REQUESTS as SEARCH_REQUESTS
from ..inputs.traffic import Scheduler, Traffic
from ..io.run import current
from ..model.iteration import IterationCost
from ..records import record
from .budget import Budget
from .engine import Engine
from .metrics import RateStats, statistics
from .policies import simulate
from .requests import requests
from .search import CLAIM, COLD, NEAR_ANSWER, max_rate


@record
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
    engines: int = 1             # replicas x pp: each rate's batch, preemptions, requests and time are one engine's


@record
class Served:
    """Baseline and claim of one workload × model × chip, and the gain the verdict reads: the ratio of the
    largest rates at the SLO per GPU (``basis`` max_rate_at_slo), else of the goodput at the highest rate; in a
    closed scenario (offline, closed_loop), of the output tokens/s per GPU (``output_tokens_per_s``)."""

    baseline: SideResult
    claim: SideResult
    gain: float
    basis: str
    # the two sides' iteration models (not in the JSON): where a close neighbour's searches start (serve's near)
    costs: tuple[IterationCost, IterationCost] | None = field(default=None, compare=False, repr=False)


def staged(cost: IterationCost, pp: int) -> IterationCost:
    """One micro-batch's engine of a pipeline of ``pp`` stages (each tp GPUs): a micro-batch passes every stage,
    so its iteration takes the tp engine's time (the stages' hops, a decode's b x d activations over NVLink in
    microseconds, left out); the weights spread over pp times the GPUs, and the pp micro-batches in flight share
    the KV room that leaves. ``cost`` is per GPU at tp (free_bytes after a GPU's weights at tp)."""
    if pp == 1:
        return cost
    return replace(cost, free_bytes=cost.free_bytes + cost.weight_bytes * (1.0 - 1.0 / pp))


@record
class Side:
    """One variant's engine: its iteration model (a decode pool's too, when disaggregated) and scheduler; a
    system of ``scheduler.replicas`` instances of ``scheduler.pp`` stages runs as replicas x pp engines of one
    micro-batch each (``cost`` is one engine's: staged()), the requests spread evenly over them, so an idle
    micro-batch slot is the pipeline's bubble and the system's rates and throughputs are the engines' sum."""

    cost: IterationCost
    scheduler: Scheduler
    window: float = float("inf")      # the model's trained context: no request runs longer
    tp: int = 1                       # GPUs of one instance (tensor parallel)
    budget: Budget = field(default_factory=Budget, compare=False)   # the run's token-steps left (serving_work)

    def run(self, traffic: Traffic, rate: float) -> RateStats:
        """The statistics of one rate; a run already simulated with the same inputs is taken from the memo
        (a sensitivity variant's baseline, or a claim side the variant leaves as it was)."""
        memo = current().memo                   # the run's (io/run.py): its evaluations share it, no other
        key = ("serving", self._fingerprint(), id(traffic), rate)
        hit = memo.get(key)
        if hit is not None and hit[0] is traffic:
            return hit[1]
        units = self.engines()
        one = self.engine_traffic(traffic)
        req = requests(one, rate / units, min(self.cost.kv_tokens, self.window))
        measured = np.arange(len(req)) >= int(np.floor(traffic.warmup * len(req)))
        out = statistics(req, simulate(req, self.cost, self.scheduler, measured=measured, budget=self.budget),
                         one, rate / units)
        if units > 1:          # the system: every engine's rates and throughputs
            law = out.littles_law
            out = replace(out, rate_rps=out.rate_rps * units, throughput_rps=out.throughput_rps * units,
                          output_tokens_per_s=out.output_tokens_per_s * units, goodput_rps=out.goodput_rps * units,
                          littles_law=replace(law, in_system=law.in_system * units,
                                              rate_times_latency=law.rate_times_latency * units))
        while len(memo) >= SERVING_MEMO_RUNS:
            memo.pop(next(iter(memo)))
        memo[key] = (traffic, out)              # the traffic kept alive with its entry: its id stays its own
        return out

    def engines(self) -> int:
        """Engines the system runs: replicas x pipeline stages (a micro-batch each)."""
        return self.scheduler.replicas * self.scheduler.pp

    def engine_traffic(self, traffic: Traffic) -> Traffic:
        """What one engine runs: an open loop, every request at 1/engines of the rate (the same traffic); a closed
        run, its share of the requests (rounded to the nearest whole request; the memo shows the count) and of the
        clients (whole: analysis/serving.py refuses a closed loop whose clients do not split; offline, every
        request of its share)."""
        units = self.engines()
        if units == 1 or not traffic.closed:
            return traffic
        n = max(round(traffic.requests / units), 1)
        return replace(traffic, requests=n, clients=n if traffic.scenario == "offline" else traffic.clients // units)

    def _fingerprint(self) -> tuple[Any, ...]:
        c = self.cost
        return (c.compute.tobytes(), c.memory.tobytes(), c.comm.tobytes(), c.busy_per_decode, c.step_s, c.request_s,
                c.sequence_s, c.kv_bytes_per_token, c.free_bytes, self.scheduler, self.window, self.tp)

    def gpus(self) -> int:
        """GPUs the deployment holds: its replicas x pipeline stages x tensor-parallel group (x pools)."""
        s = self.scheduler
        return self.tp * s.pp * s.replicas * (s.prefill_gpus + s.decode_gpus if s.policy == "disaggregated" else 1)


def serve(base: Side, claim: Side, traffic: Traffic, shown: bool = True, near: Served | None = None) -> Served:
    """Both sides' largest rate at the SLO (per GPU of the deployment) and the gain the verdict reads: the
    max-rate ratio, else the goodput ratio at the traffic's highest rate. Where the result is ``shown`` (a
    memo's table and figure), both sides at the traffic's rates and at those the verdict rests on; a
    sensitivity variant (not shown) runs only what its gain reads. Each search starts from an answer already
    found, scaled by the ratio of a decode step's time on the two sides: ``near``'s (a close neighbour's
    results, the evaluation's own for its variants), else, for the claim, the baseline's."""
    if traffic.closed:
        return _closed(base, claim, traffic)
    top_rate = max(traffic.rates)
    probe = searched(traffic)
    context = float(traffic.step_context())
    cold = near is None or near.costs is None
    if cold and probe is traffic:             # the baseline's search starts at a listed rate: a listed run, so
        base.run(traffic, top_rate)           # charged as one (the search reads it from the memo)
    with base.budget.searching():
        if not cold:
            assert near is not None and near.costs is not None
            known = [_answer(side, cost) for side, cost in zip((near.baseline, near.claim), near.costs, strict=True)]
            b = max_rate(base, probe, *_start(_scaled(known, base.cost, context), top_rate))
            c = max_rate(claim, probe, *_start(_scaled(known, claim.cost, context), top_rate))
        else:
            b = max_rate(base, probe, top_rate, COLD, listed=probe is traffic)
            known = [(b, base.run(probe, b).mean_batch, base.cost)] if b else []
            c = max_rate(claim, probe, *_start(_scaled(known, claim.cost, context), top_rate, CLAIM))
    best = {"baseline": b, "claim": c}
    gpus = (base.gpus(), claim.gpus())
    sides = (("baseline", base), ("claim", claim))
    top = None
    if b and c is not None:
        gain, basis = (c / gpus[1]) / (b / gpus[0]), "max_rate_at_slo"
    else:
        top = {name: side.run(traffic, top_rate) for name, side in sides}     # the traffic's highest rate
        gb, gc = top["baseline"].goodput_rps, top["claim"].goodput_rps
        gain, basis = ((gc / gpus[1]) / (gb / gpus[0]) if gb > 0 else float("nan")), "goodput"
    # shown: the traffic's rates and those the verdict rests on, each side's largest rate at the SLO and one
    # AROUND_BEST above the larger, where both miss it (each side's own largest is a run its search made)
    # (a traffic longer than the search's requests: the rows at the searched rates are the search's own stream)
    found = [r for r in best.values() if r]
    around = {*found, *([max(found) * AROUND_BEST] if found else [])} - set(traffic.rates) if shown else set()
    at = sorted({*traffic.rates, *around}) if shown else []
    with base.budget.searching():
        extra = {(name, r): side.run(probe, r) for name, side in sides for r in sorted(around)}
    rates = {name: tuple(extra[(name, r)] if r in around else side.run(traffic, r) for r in at)
             for name, side in sides}

    def side_result(name: str, side: Side, n: int) -> SideResult:
        # GPU-seconds a request costs at the rate the gain reads
        rate = best[name] if top is None else top[name].goodput_rps
        return SideResult(rates[name], best[name], n, side.cost.kv_tokens, side.scheduler.policy, side.scheduler,
                          n / rate if rate else float("nan"), side.engines())
    return Served(side_result("baseline", base, gpus[0]), side_result("claim", claim, gpus[1]), gain, basis,
                  (base.cost, claim.cost))


def _step(cost: IterationCost, batch: float, context: float) -> float:
    """A decode step's seconds at ``batch`` sequences (at least one) of ``context`` tokens."""
    b = max(round(batch), 1)
    line, const = cost.decode_line(b, b * context)
    return float(Engine.step_times(line, const, 1, math.inf)[0])


def _answer(side: SideResult, cost: IterationCost) -> tuple[float | None, float, IterationCost]:
    """A side's largest rate at the SLO, its mean batch there (the row of that rate) and its iteration model."""
    best = side.max_rate_at_slo_rps
    row = next((x for x in side.rates if x.rate_rps == best), None)
    return best, row.mean_batch if row is not None else 1.0, cost


def _scaled(known: list[tuple[float | None, float, IterationCost]], new: IterationCost, context: float
            ) -> float | None:
    """Where a search starts from answers already found (rate, mean batch there, iteration model): the answer
    of the side whose decode step is closest to this side's, times the ratio of the two steps' times."""
    guesses = []
    for best, batch, cost in known:
        if best:
            ratio = _step(cost, batch, context) / _step(new, batch, context)
            guesses.append((abs(math.log(ratio)), best * ratio))
    return min(guesses)[1] if guesses else None


def searched(traffic: Traffic) -> Traffic:
    """The traffic a rate search simulates: at most SERVING_SEARCH_REQUESTS requests, drawn the same way (one
    object per traffic in the run's memo, so the searches of a run share their runs)."""
    if traffic.requests <= SEARCH_REQUESTS:
        return traffic
    memo = current().memo
    key = ("searched", id(traffic))
    hit = memo.get(key)
    if hit is None or hit[0] is not traffic:
        hit = memo[key] = (traffic, replace(traffic, requests=SEARCH_REQUESTS))
    return hit[1]


def _start(near: float | None, top_rate: float, steps: tuple[int, ...] = NEAR_ANSWER
           ) -> tuple[float, tuple[int, ...]]:
    """Where a side's search starts and its gallop's first steps: next to a neighbour's answer, else (none, or
    no rate met the SLO there) doubling from the traffic's highest rate."""
    return (near, steps) if near else (top_rate, COLD)


def _closed(base: Side, claim: Side, traffic: Traffic) -> Served:
    """Both sides of an offline or closed-loop run (one run each, no rate to search): the gain is the ratio of
    the output tokens/s per GPU, what such a benchmark reports."""
    out = {}
    for name, side in (("baseline", base), ("claim", claim)):
        stats = side.run(traffic, math.inf)
        n = side.gpus()
        out[name] = SideResult((stats,), None, n, side.cost.kv_tokens, side.scheduler.policy, side.scheduler,
                               n / stats.throughput_rps if stats.throughput_rps else float("nan"), side.engines())
    b, c = out["baseline"], out["claim"]
    tb, tc = b.rates[0].output_tokens_per_s / b.gpus, c.rates[0].output_tokens_per_s / c.gpus
    return Served(b, c, tc / tb if tb > 0 else float("nan"), "output_tokens_per_s")
