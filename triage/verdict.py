"""Verdicts: per cell (vectorized codes), the reasons behind each, and the share-weighted decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import mechanisms
from .cards import Claim
from .gaps import Gaps
from .units import fmt_bytes, fmt_gib, fmt_percent, fmt_ratio, fmt_time
from .workloads import Matrix

GO, CONDITIONAL, NO_GO, DOES_NOT_FIT = 0, 1, 2, 3
LABELS = ("GO", "CONDITIONAL", "NO-GO", "DOES-NOT-FIT")


@dataclass
class Verdicts:
    """Per-cell verdict codes and the boolean facts they were decided from."""

    code: np.ndarray
    min_gain: np.ndarray
    gate: np.ndarray
    enables: np.ndarray
    quality_fail: np.ndarray
    theory_low: np.ndarray
    kernel_missing: np.ndarray
    e2e_low: np.ndarray
    quality_untested: bool
    long_untested: np.ndarray
    slo_missed: np.ndarray


def decide(m: Matrix, claim: Claim, g: Gaps) -> Verdicts:
    """GO, CONDITIONAL, NO-GO or DOES-NOT-FIT for every cell, first matching rule wins.

    DOES-NOT-FIT  the claim does not fit memory at the cell's batch;
    NO-GO         quality below the gate, or the bound (theoretical gain) below
                  min_gain, or the end-to-end gain below it with a kernel present;
    CONDITIONAL   the gain needs a kernel that reads the new format, or quality
                  is unreported / untested on long context, or the SLO is still missed;
    GO            otherwise.
    """
    shape = m.batch.shape
    min_gain = np.broadcast_to(m.column("min_gain"), shape)
    gate = np.broadcast_to(m.column("quality_gate"), shape)
    enables = ~g.base.fits & g.claim.fits
    retained = claim.quality_retained
    quality_fail = retained < gate if retained is not None else np.zeros(len(m), dtype=bool)
    theory_low = (g.speedup_theoretical < min_gain) & ~enables
    kernel_missing = (not claim.kernel and mechanisms.changes_format(claim.change)) & \
        (g.speedup_implementation < min_gain) & ~theory_low
    e2e = np.where(np.isnan(g.speedup_end_to_end), np.inf, g.speedup_end_to_end)
    e2e_low = (e2e < min_gain) & ~enables
    long_untested = m.long_context & (not claim.long_context_tested)
    with np.errstate(invalid="ignore"):
        slo_missed = g.claim.time_end_to_end > g.slo      # NaN SLO compares False

    code = np.full(len(m), GO)
    cond = (retained is None) | long_untested | slo_missed
    code = np.where(cond, CONDITIONAL, code)
    code = np.where(e2e_low & ~kernel_missing, NO_GO, code)
    code = np.where(kernel_missing, CONDITIONAL, code)
    code = np.where(theory_low | quality_fail, NO_GO, code)
    code = np.where(~g.claim.fits, DOES_NOT_FIT, code)
    return Verdicts(code, min_gain, gate, enables, quality_fail, theory_low, kernel_missing, e2e_low,
                    retained is None, long_untested, slo_missed)


def _metric(decode: bool) -> str:
    return "TPOT" if decode else "TTFT"


def reasons(i: int, m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> list[str]:
    """The sentences that explain cell ``i``'s verdict, most decisive first."""
    out: list[str] = []
    b, c = g.base, g.claim
    base_bytes, claim_bytes = float(b.cost.total_bytes[i]), float(c.cost.total_bytes[i])
    saved = base_bytes - claim_bytes
    theo, mg = float(g.speedup_theoretical[i]), float(v.min_gain[i])
    batch = int(m.batch[i])
    if not c.fits[i]:
        out.append(f"does not fit at batch {batch}: needs {fmt_gib(float(c.memory_bytes[i]))} of "
                   f"{fmt_gib(float(g.capacity[i]))}; the claim fits at most batch {int(c.max_batch[i])}")
    if v.quality_fail[i]:
        out.append(f"quality retained {fmt_percent(claim.quality_retained)} is below the "
                   f"{fmt_percent(float(v.gate[i]))} gate")
    bound = float(b.compute_bound_fraction[i])
    untouched = (saved == 0.0 and float(b.cost.total_flops[i]) == float(c.cost.total_flops[i])
                 and float(b.memory_bytes[i]) == float(c.memory_bytes[i])
                 and float(b.time_implementation[i]) == float(c.time_implementation[i]))
    if untouched:
        out.append("the change does not touch this workload's step (for example a fix this baseline already has, "
                   "or a phase the change does not act on): no gain")
    elif bound > 0.5:
        out.append(f"the step is compute-bound ({fmt_percent(bound)} of its time): saving "
                   f"{fmt_percent(saved / base_bytes)} of the bytes ({fmt_bytes(saved)}) barely moves it; the bound is "
                   f"{fmt_ratio(theo)}" + (f", below the {fmt_ratio(mg, 2)} threshold" if v.theory_low[i] else ""))
    else:
        out.append(f"saves {fmt_percent(saved / base_bytes)} of the bytes read per step "
                   f"({fmt_bytes(saved)} of {fmt_bytes(base_bytes)}): the bound is {fmt_ratio(theo)}"
                   + (f", below the {fmt_ratio(mg, 2)} threshold" if v.theory_low[i] else ""))
    if v.enables[i]:
        b0 = g.e2e_baseline_batch[i]
        tail = (f"end-to-end compares throughput at batch {batch} with the baseline at batch {int(b0)}"
                if np.isfinite(b0) else "the baseline cannot run at all")
        out.append(f"the baseline does not fit at batch {batch} ({fmt_gib(float(b.memory_bytes[i]))} of "
                   f"{fmt_gib(float(g.capacity[i]))}); the claim does: {tail}")
    if v.kernel_missing[i]:
        out.append(f"no kernel reads the new format in place: reads cost the old bytes, so the "
                   f"implementation gain is {fmt_ratio(float(g.speedup_implementation[i]))}")
    if v.e2e_low[i] and not v.theory_low[i] and not v.kernel_missing[i]:
        out.append(f"end-to-end gain {fmt_ratio(float(g.speedup_end_to_end[i]))} is below the "
                   f"{fmt_ratio(mg, 2)} threshold (kernel efficiency and overhead eat the bound)")
    if v.quality_untested:
        out.append("the card reports no quality retained: the quality gate cannot be checked")
    if v.long_untested[i]:
        out.append("long-context workload, but the card reports no long-context evaluation "
                   "(needle-in-a-haystack): average scores can hide the drop")
    slo = g.slo[i]
    if np.isfinite(slo):
        t = float(c.time_end_to_end[i])
        verb = "misses" if v.slo_missed[i] else "meets"
        out.append(f"{_metric(bool(m.decode[i]))} {fmt_time(t)} with the claim {verb} the {fmt_time(float(slo))} SLO")
    return out


def decision(m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> dict[str, Any]:
    """Share-weighted overall decision: GO if GO cells carry half the traffic, CONDITIONAL if GO and
    CONDITIONAL together do, else NO-GO."""
    shares = {label: float(m.share[v.code == code].sum()) for code, label in enumerate(LABELS)}
    if shares["GO"] >= 0.5:
        verdict = "GO"
    elif shares["GO"] + shares["CONDITIONAL"] >= 0.5:
        verdict = "CONDITIONAL"
    else:
        verdict = "NO-GO"

    def weighted(x: np.ndarray) -> float | None:
        ok = np.isfinite(x)
        w = m.share[ok]
        return float((x[ok] * w).sum() / w.sum()) if ok.any() and w.sum() > 0 else None

    gain = weighted(g.speedup_end_to_end)
    theo = weighted(g.speedup_theoretical)
    why = [f"{label} on {fmt_percent(share)} of the traffic" for label, share in shares.items() if share > 0]
    why.append("GO needs GO cells on at least half the traffic, CONDITIONAL needs GO and CONDITIONAL together")
    hours = claim.gpu_hours
    if hours is not None and gain is not None:
        why.append(f"reproduction costs {hours:,.0f} GPU-hours for a share-weighted end-to-end gain of "
                   f"{fmt_ratio(gain)}")
    return {"verdict": verdict, "shares": shares, "weighted_speedup": {"theoretical": theo, "end_to_end": gain},
            "reproduction_gpu_hours": hours, "reasons": why}
