"""Measurements: fill the implementation and end-to-end layers with what was measured.

Accepted: CSV or JSON rows {workload, variant: baseline|claim, tpot, ttft, throughput, quality, hardware?},
the JSON `vllm bench serve --save-result --metadata workload=W variant=V [hardware=H]` writes, or a
folder of such files (inputs/measurements.py reads them, for `triage calibrate` too). tpot/ttft are
quantities ('41 ms'); a bare number is refused with a hint, except in the columns whose name carries the
unit, tpot_s/ttft_s (seconds); vLLM's *_ms fields are read as milliseconds. The memo then shows predicted
against measured and which layer lost the gain.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import Problem, UserError
from ..inputs import measurements
from ..inputs.measurements import MeasuredRow
from ..model import evidence, verdicts
from . import decision
from .evaluation import Comparison, Evaluation, Measured


def _time(row: MeasuredRow | None, metric: str) -> float | None:
    """A side's measured TPOT or TTFT (s), None where the side or the time was not measured."""
    if row is None:
        return None
    return row.tpot if metric == "tpot" else row.ttft


def read(path: Path | str) -> list[MeasuredRow]:
    """Every measurement in a file or a folder of files, typed (inputs/measurements.py reads them)."""
    return measurements.measured_rows(path)


def apply(result: Evaluation, path: Path | str) -> Evaluation:
    """The result with measured times in the end-to-end layer, and a per-workload comparison."""
    rows = read(path)
    m, g = result.matrix, result.gaps
    names, hws = m.labels("blocks"), m.labels("hardware")
    found: dict[tuple[str, str], tuple[int, dict[str, MeasuredRow]]] = {}     # (workload, chip) -> its cell, each side
    for row in rows:
        cells = np.flatnonzero((names == row.workload) & ((hws == row.hardware) if row.hardware else True))
        if cells.size == 0:
            raise UserError([Problem(str(path), path="$.workload", message=(
                f"no cell for workload {row.workload!r}" + (f" on {row.hardware}" if row.hardware else "")))])
        if cells.size > 1:
            raise UserError([Problem(str(path), path="$.hardware", message=(
                f"workload {row.workload!r} has {cells.size} cells (several hardware or models): give hardware"))])
        found.setdefault((row.workload, hws[cells[0]]), (int(cells[0]), {}))[1][row.variant] = row
    comparisons = []
    e2e = g.speedup_end_to_end.copy()
    n = len(m)
    basis = np.array(np.broadcast_to(g.e2e_metric, (n,)))
    quality_ratio, claim_s = np.full(n, np.nan), np.full(n, np.nan)
    base_req, claim_req = np.array(g.base_request_s, dtype=float), np.array(g.claim_request_s, dtype=float)
    steps = np.broadcast_to(evidence.steps_per_request(m), (n,))
    gpus_b = np.broadcast_to(g.base.inputs.tp, (n,))
    gpus_c = np.broadcast_to(g.claim.inputs.tp, (n,))
    util_b = np.broadcast_to(g.base.inputs.utilization, (n,))
    util_c = np.broadcast_to(g.claim.inputs.utilization, (n,))
    for (name, hw), (i, sides) in sorted(found.items()):
        metric = "tpot" if m.decode[i] else "ttft"
        base, claim = sides.get("baseline"), sides.get("claim")
        t_base, t_claim = _time(base, metric), _time(claim, metric)
        measured = None
        if t_claim is not None:
            claim_s[i] = t_claim
        if t_base is not None and t_claim is not None:
            # measured step times, per useful token as the model prices them (idle batch slots included), for the
            # speedup and the fleet's GPU-time; only where both sides were measured, never one measured and one
            # predicted
            step_base, step_claim = t_base / util_b[i], t_claim / util_c[i]
            base_req[i] = evidence.request_seconds(steps[i], step_base, gpus_b[i], m.batch[i])
            claim_req[i] = evidence.request_seconds(steps[i], step_claim, gpus_c[i], m.batch[i])
            measured = step_base / step_claim
            e2e[i] = measured
            basis[i] = evidence.e2e_metric_code("measured")
        theo, impl = float(g.speedup_theoretical[i]), float(g.speedup_implementation[i])
        lost = None
        if measured is not None and measured > theo * 1.05:
            lost = "nothing"
        elif measured is not None:
            kernel_loss, system_loss = theo / impl, impl / measured
            lost = "implementation" if kernel_loss >= system_loss else "end-to-end"
        q_base, q_claim = (None if r is None else r.quality for r in (base, claim))
        quality = q_claim / q_base if q_claim is not None and q_base else None
        if quality is not None:
            quality_ratio[i] = quality
        comparisons.append(Comparison(name, hw, metric, theo, impl, float(g.base.time_end_to_end[i]),
                                      float(g.claim.time_end_to_end[i]), t_base, t_claim,
                                      measured, quality, lost))
    new_gaps = replace(g, speedup_end_to_end=e2e, base_request_s=base_req, claim_request_s=claim_req,
                       e2e_metric=basis)
    # the evaluation's own rules: the same shipped alternative (measured times move the claim, not what ships)
    inc_s = result.incumbent.request_s if result.incumbent is not None else None
    new_verdicts = verdicts.decide(m, result.claim, new_gaps, quality_ratio, claim_s, incumbent_request_s=inc_s)
    # the sensitivity was computed from the card's predictions; with measurements in the verdicts it would
    # contradict them, so it is dropped (the memo says the verdicts rest on measurements)
    analysis = replace(result.analysis, sensitivity=()) if result.analysis is not None else None
    return replace(result, gaps=new_gaps, verdicts=new_verdicts, analysis=analysis,
                   decision=decision.decide(m, result.claim, new_gaps, new_verdicts,
                                            result.incumbent.name if result.incumbent is not None else None, inc_s),
                   measured=Measured(str(path), tuple(comparisons)))
