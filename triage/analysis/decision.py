"""The overall decision across the matrix's traffic, as numbers (the report words it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inputs.claim import Claim
from ..model.layers import Gaps
from ..model.matrix import Matrix
from ..model.verdicts import LABELS, Verdicts


@dataclass(frozen=True)
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
    rule: str = ""


def fleet_gain(base_s: np.ndarray, claim_s: np.ndarray, share: np.ndarray) -> tuple[float | None, float, float]:
    """(Σ share·t_base ÷ Σ share·t_claim over cells both serve, Σ share·t_base, Σ share·t_claim)."""
    ok = np.isfinite(base_s) & np.isfinite(claim_s) & (share > 0)
    base, claim = float((share[ok] * base_s[ok]).sum()), float((share[ok] * claim_s[ok]).sum())
    return (base / claim if ok.any() and claim > 0 else None), base, claim


REGRESSION_TOLERANCE = 0.02     # a workload more than 2 % slower with the claim is a regression


def _rule(m: Matrix, claim: Claim, g: Gaps, v: Verdicts, gain: float | None,
          shares: dict[str, float]) -> tuple[str, str]:
    """(verdict, the rule that decided it), first matching rule wins (README: decision rules)."""
    if gain is None:
        return "NO-GO", "no workload both sides can serve"
    min_gain = float(np.average(np.broadcast_to(m.column("min_gain"), m.share.shape), weights=m.share))
    both = np.isfinite(g.base_request_s) & np.isfinite(g.claim_request_s)
    ratio = np.where(both, g.base_request_s / np.where(both, g.claim_request_s, 1.0), np.nan)
    never_slower = bool(np.all(ratio[both] >= 1.0 - 1e-9)) and not np.any(np.isfinite(g.base_request_s) & ~both)
    regress = bool(np.any(ratio[both] < 1.0 - REGRESSION_TOLERANCE))
    quality_fail = float(m.share[v.quality_fail].sum())
    exact = claim.quality_retained == 1.0 and not np.any(np.isfinite(v.measured_quality) & v.quality_fail)
    if quality_fail > 0:
        return "NO-GO", "quality below the gate on part of the requests"
    if v.incompatible.size and float(m.share[v.incompatible].sum()) >= 0.5:
        return "NO-GO", "the method cannot run in the stack that serves most of the requests"
    if float(m.share[v.evidence_missing].sum()) > 0:
        return "NO-GO", "evidence the method class needs is missing (see the workloads' reasons)"
    if exact and never_slower and gain > 1.0:
        return "GO", "no regret: exact (quality retained 1.0) and never slower on any workload"
    if gain < min_gain:
        return "NO-GO", f"the fleet gain is below the {min_gain:.2f}x threshold"
    if regress:
        return "CONDITIONAL", "the fleet gains, but some workload is slower: enable it per workload"
    if shares["CONDITIONAL"] > 0 or shares["DOES-NOT-FIT"] > 0:
        return "CONDITIONAL", "the fleet gains, on conditions stated per workload"
    return "GO", f"the fleet gain clears the {min_gain:.2f}x threshold and no workload regresses"


def decide(m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> Decision:
    """The fleet's decision: on the fleet gain (GPU-time for the same requests), with a no-regret rule for an
    exact change that is never slower; the shares say what each cell verdict carries."""
    shares = {label: float(m.share[v.code == code].sum()) for code, label in enumerate(LABELS)}
    gain, base_s, claim_s = fleet_gain(g.base_request_s, g.claim_request_s, m.share)
    base_ok, claim_ok = np.isfinite(g.base_request_s), np.isfinite(g.claim_request_s)
    # the bound over the same requests as the end-to-end gain (the cells both sides serve)
    served_cells = np.where(base_ok & claim_ok, 1.0, np.nan)
    theo, _, _ = fleet_gain(g.base_request_theoretical_s * served_cells, g.claim_request_theoretical_s, m.share)
    served = float(m.share[base_ok & claim_ok].sum())
    verdict, rule = _rule(m, claim, g, v, gain, shares)
    return Decision(verdict, shares, theo, gain, claim.gpu_hours,
                    base_s / served if gain is not None else None, claim_s / served if gain is not None else None,
                    float(m.share[~base_ok & claim_ok].sum()), float(m.share[~claim_ok].sum()), rule)
