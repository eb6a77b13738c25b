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


def fleet_gain(base_s: np.ndarray, claim_s: np.ndarray, share: np.ndarray) -> tuple[float | None, float, float]:
    """(Σ share·t_base ÷ Σ share·t_claim over cells both serve, Σ share·t_base, Σ share·t_claim)."""
    ok = np.isfinite(base_s) & np.isfinite(claim_s) & (share > 0)
    base, claim = float((share[ok] * base_s[ok]).sum()), float((share[ok] * claim_s[ok]).sum())
    return (base / claim if ok.any() and claim > 0 else None), base, claim


def decide(m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> Decision:
    """GO if GO cells carry half the traffic, CONDITIONAL if GO and CONDITIONAL together do, else NO-GO."""
    shares = {label: float(m.share[v.code == code].sum()) for code, label in enumerate(LABELS)}
    if shares["GO"] >= 0.5:
        verdict = "GO"
    elif shares["GO"] + shares["CONDITIONAL"] >= 0.5:
        verdict = "CONDITIONAL"
    else:
        verdict = "NO-GO"
    theo, _, _ = fleet_gain(g.base_request_theoretical_s, g.claim_request_theoretical_s, m.share)
    gain, base_s, claim_s = fleet_gain(g.base_request_s, g.claim_request_s, m.share)
    base_ok, claim_ok = np.isfinite(g.base_request_s), np.isfinite(g.claim_request_s)
    served = float(m.share[base_ok & claim_ok].sum())
    return Decision(verdict, shares, theo, gain, claim.gpu_hours,
                    base_s / served if gain is not None else None, claim_s / served if gain is not None else None,
                    float(m.share[~base_ok & claim_ok].sum()), float(m.share[~claim_ok].sum()))
