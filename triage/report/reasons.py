"""The words behind each cell's verdict and behind the decision (only for what is rendered)."""

from __future__ import annotations

import numpy as np

from ..analysis.decision import Decision
from ..inputs.claim import Claim
from ..inputs.units import fmt_bytes, fmt_gib, fmt_percent, fmt_ratio, fmt_time
from ..model.layers import Gaps
from ..model.matrix import Matrix
from ..model.verdicts import Verdicts


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




def decision_reasons(d: Decision, claim: Claim) -> list[str]:
    """Why the decision is what it is: the traffic each verdict carries, the rule, the reproduction cost."""
    why = [f"{label} on {fmt_percent(share)} of the traffic" for label, share in d.shares.items() if share > 0]
    why.append("GO needs GO cells on at least half the traffic, CONDITIONAL needs GO and CONDITIONAL together")
    hours = claim.gpu_hours
    if hours is not None and d.weighted_end_to_end is not None:
        why.append(f"reproduction costs {hours:,.0f} GPU-hours for a share-weighted end-to-end gain of "
                   f"{fmt_ratio(d.weighted_end_to_end)}")
    return why
