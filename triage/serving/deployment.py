"""A deployment's two sides (baseline and claim), each an iteration model and a scheduler on its GPUs, through a
traffic at every rate: the largest rate at the SLO of each (per GPU) and the gain the verdict reads."""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Any

import numpy as np

from ..defaults import SERVING_AROUND_BEST as AROUND_BEST
from ..defaults import SERVING_MEMO_RUNS
from ..inputs.traffic import Scheduler, Traffic
from ..io.run import current
from ..model.iteration import IterationCost
from ..records import record
from .budget import Budget
from .metrics import RateStats, statistics
from .policies import simulate
from .requests import requests
from .search import max_rate


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


def serve(base: Side, claim: Side, traffic: Traffic, shown: bool = True) -> Served:
    """Both sides at every rate of the traffic and, where the result is ``shown`` (a memo's table and figure;
    not a sensitivity variant, which reads the gain only), at the rates the verdict rests on; the largest rate
    at the SLO of each (per GPU of the deployment), and the gain the verdict reads: the max-rate ratio, else
    the goodput ratio at the traffic's highest rate."""
    if traffic.closed:
        return _closed(base, claim, traffic)
    sides = (("baseline", base), ("claim", claim))
    best = {name: max_rate(side, traffic, max(traffic.rates)) for name, side in sides}
    top = {name: side.run(traffic, max(traffic.rates)) for name, side in sides}     # the traffic's highest rate
    # shown: the traffic's rates and those the verdict rests on, each side's largest rate at the SLO and one
    # AROUND_BEST above the larger, where both miss it (each side's own largest is a run its search made)
    found = [r for r in best.values() if r] if shown else []
    at = sorted({*traffic.rates, *found, *([max(found) * AROUND_BEST] if found else [])})
    rates = {name: tuple(side.run(traffic, r) for r in at) for name, side in sides}
    gpus = (base.gpus(), claim.gpus())
    b, c = best["baseline"], best["claim"]
    if b and c is not None:
        gain, basis = (c / gpus[1]) / (b / gpus[0]), "max_rate_at_slo"
    else:
        gb, gc = top["baseline"].goodput_rps, top["claim"].goodput_rps
        gain, basis = ((gc / gpus[1]) / (gb / gpus[0]) if gb > 0 else float("nan")), "goodput"

    def side_result(name: str, side: Side, n: int) -> SideResult:
        # GPU-seconds a request costs at the rate the gain reads
        rate = best[name] if basis == "max_rate_at_slo" else top[name].goodput_rps
        return SideResult(rates[name], best[name], n, side.cost.kv_tokens, side.scheduler.policy, side.scheduler,
                          n / rate if rate else float("nan"), side.engines())
    return Served(side_result("baseline", base, gpus[0]), side_result("claim", claim, gpus[1]), gain, basis)


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
