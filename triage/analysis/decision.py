"""The overall decision across the matrix's traffic, as numbers and the code of the rule that decided it (the
report words it: report/rules.py)."""

from __future__ import annotations

import numpy as np

from ..defaults import REGRESSION_TOLERANCE
from ..inputs.claim import Claim
from ..model.evidence import Gaps
from ..model.matrix import Matrix
from ..model.verdicts import LABELS, Verdicts, simulated
from ..records import record


@record
class Rule:
    """The decision rule that decided (a code of RULES) and what its words need to state."""

    code: str
    min_gain: float = 0.0                 # the threshold it compared against
    tolerated: bool = False               # no regret: a simulated workload within the tolerance counted unchanged
    engine_kernel: bool = False           # no regret: the kernel ships in an engine


# Every rule, first that matches wins (report/rules.py words each): the stack serves too few requests, nothing
# pays and a blocker names why (Verdicts attributes), no gain anywhere, no regret, the threshold cleared, below it
# (nothing pays / some workloads pay), some workload slower, conditions stated per workload.
BLOCKERS = ("incompatible", "quality_fail", "evidence_missing", "incumbent_low", "unproven_integration",
            "theory_low")
RULES = ("none_served", "stack", *BLOCKERS, "no_gain", "no_regret", "clears", "below", "below_some_pay",
         "regresses", "conditions")


@record
class Decision:
    """GO / CONDITIONAL / NO-GO, the share of requests each cell verdict carries, and the fleet's gains.

    The fleet gain is total GPU-time over total GPU-time for the same traffic, never an average of ratios:
    Σ shareᵢ·tᵢ(baseline) ÷ Σ shareᵢ·tᵢ(claim), with shareᵢ the fraction of requests and tᵢ the GPU-seconds
    of one request of cell i, over the cells both sides can serve. ``unserved_*`` are the shares of
    requests only the claim can serve and that neither can.
    """

    verdict: str
    shares: dict[str, float]
    weighted_theoretical: float | None
    weighted_end_to_end: float | None
    reproduction_gpu_hours: float | None
    gpu_seconds_per_request_baseline: float | None = None     # over the cells both sides serve
    gpu_seconds_per_request_claim: float | None = None
    share_only_claim_serves: float = 0.0
    share_claim_cannot_serve: float = 0.0
    rule: Rule = Rule("conditions")
    incumbent: str | None = None                  # the shipped alternative the class is measured against
    weighted_over_incumbent: float | None = None  # the fleet gain over it (GPU-time over GPU-time)


def fleet_gain(base_s: np.ndarray, claim_s: np.ndarray, share: np.ndarray) -> tuple[float | None, float, float]:
    """(Σ share·t_base ÷ Σ share·t_claim over cells both serve, Σ share·t_base, Σ share·t_claim)."""
    ok = np.isfinite(base_s) & np.isfinite(claim_s) & (share > 0)
    base, claim = float((share[ok] * base_s[ok]).sum()), float((share[ok] * claim_s[ok]).sum())
    return (base / claim if ok.any() and claim > 0 else None), base, claim


def _rule(m: Matrix, claim: Claim, g: Gaps, v: Verdicts, gain: float | None, shares: dict[str, float],
          over_incumbent: float | None, incumbent_s: np.ndarray | None) -> tuple[str, Rule]:
    """(verdict, the rule that decided it), first matching rule wins (README: decision rules). The decision
    follows from the cells: GO needs GO cells, NO-GO has none that pay."""
    if gain is None:
        return "NO-GO", Rule("none_served")
    column = m.column("min_gain")
    min_gain = float(column) if column.ndim == 0 else float(np.average(column, weights=m.share))
    both = np.isfinite(g.base_request_s) & np.isfinite(g.claim_request_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(both, g.base_request_s / np.where(both, g.claim_request_s, 1.0), np.nan)
    # a simulated workload within the simulation's resolution of 1.0x is no slower (defaults.REGRESSION_TOLERANCE):
    # for the no-regret test it counts as unchanged, and the fleet must still gain with it so counted
    sim = simulated(m)
    resolved: float | None = gain
    if sim.any():
        sim = np.broadcast_to(sim, ratio.shape)
        within = sim & both & (np.abs(np.nan_to_num(ratio, nan=1.0) - 1.0) <= REGRESSION_TOLERANCE)
        resolved = fleet_gain(g.base_request_s, np.where(within, g.base_request_s, g.claim_request_s), m.share)[0]
    else:
        within = np.zeros(ratio.shape, dtype=bool)
    floor = 1.0 - np.where(sim, REGRESSION_TOLERANCE, 1e-9)
    paired = ratio[both]
    never_slower = bool(np.all(paired >= np.broadcast_to(floor, ratio.shape)[both])) \
        and not np.any(np.isfinite(g.base_request_s) & ~both)
    regress = bool(np.any(paired < 1.0 - REGRESSION_TOLERANCE))
    paying = shares["GO"] + shares["CONDITIONAL"]
    if v.incompatible.size and float(m.share[v.incompatible].sum()) >= 0.5:
        return "NO-GO", Rule("stack")
    if paying <= 0:
        for name in BLOCKERS:
            mask = getattr(v, name)
            if mask.size and float(m.share[mask & (v.code != 3)].sum()) > 0:
                return "NO-GO", Rule(name)
        return "NO-GO", Rule("no_gain", min_gain)
    exact = claim.exact and not np.any(np.isfinite(v.measured_quality) & v.quality_fail)
    bar = over_incumbent if over_incumbent is not None else gain
    if exact and never_slower and shares["GO"] > 0 and shares["CONDITIONAL"] == 0 and (resolved or 0.0) > 1.0:
        return "GO", Rule("no_regret", tolerated=bool(np.any(within & (ratio < 1.0))),
                          engine_kernel=claim.kernel_in == "engine")
    # an optional feature switched off where it does not pay leaves those workloads as they were; a NO-GO cell
    # that only gains too little is no blocker once the fleet clears the threshold, a quality, evidence or
    # stack failure is
    on = np.broadcast_to(g.switched_on, m.share.shape)
    conditional_on = float(m.share[(v.code == 1) & on].sum())
    hard = float(m.share[v.fixed()].sum())
    if shares["GO"] > 0 and conditional_on == 0 and shares["DOES-NOT-FIT"] == 0 and hard == 0 \
            and bar >= min_gain and not regress:
        return "GO", Rule("clears", min_gain)
    if bar < min_gain:
        # workloads that pay in the fleet's own currency (GPU-time per request), not only in latency
        with np.errstate(invalid="ignore", divide="ignore"):
            own = (g.base_request_s if incumbent_s is None else incumbent_s) / g.claim_request_s
        pays = (v.code <= 1) & (np.nan_to_num(own) >= min_gain)
        if not pays.any():
            return "NO-GO", Rule("below", min_gain)
        return "CONDITIONAL", Rule("below_some_pay", min_gain)
    if regress:
        return "CONDITIONAL", Rule("regresses")
    return "CONDITIONAL", Rule("conditions")


def decide(m: Matrix, claim: Claim, g: Gaps, v: Verdicts, incumbent: str | None = None,
           incumbent_request_s: np.ndarray | None = None) -> Decision:
    """The fleet's decision, from the cells: the share of requests each verdict carries, the fleet gain
    (GPU-time for the same requests) over the baseline and over the shipped alternative where the claim's class
    has one, and a no-regret rule for an exact change that is never slower."""
    shares = {label: float(m.share[v.code == code].sum()) for code, label in enumerate(LABELS)}
    gain, base_s, claim_s = fleet_gain(g.base_request_s, g.claim_request_s, m.share)
    base_ok, claim_ok = np.isfinite(g.base_request_s), np.isfinite(g.claim_request_s)
    # the bound over the same requests as the end-to-end gain (the cells both sides serve)
    served_cells = np.where(base_ok & claim_ok, 1.0, np.nan)
    theo, _, _ = fleet_gain(g.base_request_theoretical_s * served_cells, g.claim_request_theoretical_s, m.share)
    served = float(m.share[base_ok & claim_ok].sum())
    over = fleet_gain(incumbent_request_s, g.claim_request_s, m.share)[0] if incumbent_request_s is not None \
        else None
    verdict, rule = _rule(m, claim, g, v, gain, shares, over, incumbent_request_s)
    return Decision(verdict, shares, theo, gain, claim.gpu_hours,
                    base_s / served if gain is not None else None, claim_s / served if gain is not None else None,
                    float(m.share[~base_ok & claim_ok].sum()), float(m.share[~claim_ok].sum()), rule,
                    incumbent if incumbent_request_s is not None else None, over)
