"""Serving in the evaluation: each workload with `traffic:` becomes a deployment per model and chip (the cells'
own iteration model, baseline and claim, the claim's `change.scheduler` laid over the workload's), simulated by
the serving package (triage/serving/) within the run's token-step budget; a scheduling card's end-to-end gain
on those cells is the simulation's (its largest rate at the SLO, or its goodput).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..defaults import LIMITS, SERVING_MIN_MEASURED
from ..errors import Problem, UserError
from ..inputs import traffic as traffic_mod
from ..inputs.claim import Claim
from ..inputs.traffic import Traffic
from ..inputs.workloads import Settings
from ..model import evidence
from ..model.evidence import Gaps
from ..model.iteration import IterationCost, iteration_cost
from ..model.matrix import Matrix
from ..progress import SILENT, Progress
from ..serving.budget import ITERATION_STEPS, SIMULATION_STEPS, Budget
from ..serving.deployment import Served, Side, serve, staged
from ..serving.requests import requests

Results = dict[tuple[int, int, int], Served]


def cell_cost(m: Matrix, claim: Claim, g: Gaps, i: int, side: str = "baseline") -> IterationCost:
    """The iteration model of cell ``i``'s baseline or claim: its inputs, chip, efficiencies (a card's kernels
    at its share of them), fixed costs and memory, as the cell was priced."""
    e = g.engine
    ceff, beff = evidence.efficiencies(claim, e["compute"], e["bandwidth"])[side == "claim"]
    x = (g.base if side == "baseline" else g.claim).inputs

    def at(v: Any) -> float:
        return float(np.broadcast_to(v, (len(m),))[i])
    return iteration_cost(x.take(np.array([i])), evidence.machine(m).take(np.array([i])),
                          {k: at(v) for k, v in ceff.items()}, {k: at(v) for k, v in beff.items()},
                          at(e["overhead_s"]), at(e["layer_overhead_s"]), at(e["request_overhead_s"]),
                          at(e["sequence_overhead_s"]),
                          at(m.column("memory_bytes", "hardware")), at(m.column("reserve_bytes")))


def work(side: Side, traffic: Traffic) -> float:
    """Token-steps one simulation of ``traffic`` on ``side`` takes at least (serving/budget.py's costs): every
    output token, and each request's prefill iterations (a chunked prompt at least ceil(prompt / token_budget))
    and the two events (arrival, completion) that end a run of decode steps, and the simulation's fixed cost.
    The sequences each iteration visits, the rate search, preemptions and the ends of multi-step calls are
    charged as the simulation runs (Budget)."""
    req = requests(side.engine_traffic(traffic), 1.0, min(side.cost.kv_tokens, side.window))
    s = side.scheduler
    prefills = float(np.ceil(req.prompt / s.token_budget).sum()) if s.policy == "chunked" else float(len(req))
    return float(req.output.sum()) + (prefills + 2.0 * len(req)) * ITERATION_STEPS + SIMULATION_STEPS


def _check_work(m: Matrix, sides: dict[tuple[int, int, int], tuple[Side, Side]]) -> None:
    """A run's simulated token-steps, bounded before any request is simulated (limit serving_work) by what it
    takes at least: both sides at every listed rate (the rate search and the sensitivity variants may add more,
    and the run-wide Budget stops them)."""
    total = 0.0
    for (b, _, _), pair in sides.items():
        t = m.blocks[b].traffic
        assert t is not None
        try:
            total += max(len(t.rates), 1) * sum(work(side, t) for side in pair)
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


def _check_split(block: Settings, t: Traffic, side: Side) -> None:
    """A closed run must spread evenly over a system's engines (replicas x pp): a closed loop's clients split
    whole, and each engine keeps enough of its share (Side.engine_traffic) to measure (an addressed error
    otherwise)."""
    engines = side.engines()
    if not t.closed or engines == 1:
        return
    clients = min(t.clients, t.requests)
    if t.scenario == "closed_loop" and clients % engines:
        raise UserError([_at(block, f"{clients:,} clients do not split evenly over {engines:,} engines (replicas x "
                                    f"pp): a multiple of {engines:,}, or another system")])
    n = side.engine_traffic(t).requests
    measured = n - int(math.floor(t.warmup * n))
    if measured < SERVING_MIN_MEASURED:
        raise UserError([_at(block, f"{t.requests:,} requests over {engines:,} engines leave each {measured} "
                                    f"measured after the warm-up; a run needs {SERVING_MIN_MEASURED}: more requests "
                                    f"or fewer engines")])


def run_budget(progress: Progress = SILENT) -> Budget:
    """The token-steps one run may simulate (limit serving_work) and its rate searches apart (limit
    serving_search_work), to share between its simulations; each simulation's spending told to ``progress``."""
    return Budget(LIMITS.serving_work, progress=progress, search_limit=LIMITS.serving_search_work)


def _simulate(m: Matrix, claim: Claim, g: Gaps, budget: Budget, progress: Progress, shown: bool = True,
              near: Results | None = None) -> Results:
    """Baseline and claim of every (block, model, chip) with traffic, simulated, charged to ``budget``; the
    stage told to ``progress`` once the work is checked; each rate search started next to ``near``'s answer
    for the same workload (the evaluation's own, for a sensitivity variant)."""
    sides: dict[tuple[int, int, int], tuple[Side, Side]] = {}
    for (b, mi, hi), i in _pairs(m).items():
        block = m.blocks[b]
        where = f"{m.models[mi].label} on {m.hardware[hi].key}"
        window = m.models[mi].window
        tp_b, tp_c = (int(np.broadcast_to(x.tp, (len(m),))[i]) for x in (g.base.inputs, g.claim.inputs))
        merged = g.schedulers[b]                 # the card's change.scheduler laid over the block's (model)
        wrong = traffic_mod.scheduler_problem(merged)
        if wrong:
            raise UserError([Problem(claim.file, path="$.change.scheduler", message=f"on workload {block.name!r}: "
                                                                                    f"{wrong[1]}")])
        sched_b, sched_c = traffic_mod.scheduler(block.scheduler), traffic_mod.scheduler(merged)
        t = block.traffic
        assert t is not None
        if t.closed and "disaggregated" in (sched_b.policy, sched_c.policy):
            raise UserError([_at(block, f"a {t.scenario} run of the disaggregated policy is not simulated (its "
                                        f"pools' clients are not modelled): a server scenario, or another policy")])
        layers = m.models[mi].num_hidden_layers
        for s in (sched_b, sched_c):
            if s.pp > layers:
                raise UserError([_at(block, f"{where}: {s.pp} pipeline stages for {layers} layers (a stage holds "
                                            f"whole layers)")])
        base = Side(staged(cell_cost(m, claim, g, i, "baseline"), sched_b.pp), sched_b, window, tp_b, budget)
        new = Side(staged(cell_cost(m, claim, g, i, "claim"), sched_c.pp), sched_c, window, tp_c, budget)
        for side in (base, new):
            _check_split(block, t, side)
            if side.cost.kv_tokens < 2 * side.scheduler.block_size:
                raise UserError([_at(block, (
                    f"{where}: the weights leave no room for a request's KV cache ({side.cost.kv_tokens:,.0f} "
                    f"tokens); more GPUs (tp) or a smaller model"))])
        sides[(b, mi, hi)] = (base, new)
    _check_work(m, sides)
    progress.stage("simulating", len(sides))
    results: Results = {}
    for (b, mi, hi), (base, new) in sides.items():
        block = m.blocks[b]
        assert block.traffic is not None
        try:
            results[(b, mi, hi)] = serve(base, new, block.traffic, shown, near.get((b, mi, hi)) if near else None)
        except ValueError as exc:
            where = f"{m.models[mi].label} on {m.hardware[hi].key}"
            raise UserError([_at(block, f"{where}: {exc}")]) from None
    return results


def price(m: Matrix, claim: Claim, g: Gaps, known: Results | None = None, work: Budget | None = None,
          progress: Progress = SILENT, shown: bool = True, near: Results | None = None) -> tuple[Results, Gaps]:
    """Every workload with traffic: one simulation per model and chip of it, baseline and claim (the claim's
    `change.scheduler` laid over the workload's scheduler); ``g`` with those cells' end-to-end gain and
    GPU-seconds per request taken from the simulation. ``known``: results already simulated for the same
    inputs (a sensitivity variant that moves nothing the simulation reads), applied without simulating.
    ``work``: the run's budget (shared with its sensitivity variants); ``progress``: told when simulating
    begins (a variant's simulation, inside the analysis stage, is not a stage of its own); ``shown``: whether
    the results are a memo's (a variant's are not: it runs no rate the table alone would show); ``near``: a
    close neighbour's results (a variant's evaluation), where each rate search starts."""
    if not any(b.traffic is not None for b in m.blocks):
        return {}, g
    results = known if known is not None else _simulate(m, claim, g, work or run_budget(), progress, shown, near)
    gain = np.full(len(m), np.nan)
    basis = np.array(np.broadcast_to(g.e2e_metric, (len(m),)))
    base_req = np.array(np.broadcast_to(g.base_request_s, (len(m),)), dtype=float)
    claim_req = np.array(np.broadcast_to(g.claim_request_s, (len(m),)), dtype=float)
    for (b, mi, hi), r in results.items():
        same = (m.block_idx == b) & (m.model_idx == mi) & (m.hardware_idx == hi)
        gain[same] = r.gain
        basis[same] = evidence.e2e_metric_code(r.basis)
        base_req[same] = r.baseline.gpu_seconds_per_request
        claim_req[same] = r.claim.gpu_seconds_per_request
    served = ~np.isnan(gain)
    return results, replace(g, speedup_end_to_end=np.where(served, gain, g.speedup_end_to_end),
                            base_request_s=base_req, claim_request_s=claim_req,
                            e2e_metric=np.where(served, basis, g.e2e_metric))
