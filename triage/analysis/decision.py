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
    """GO / CONDITIONAL / NO-GO, the traffic share of each cell verdict, the share-weighted gains."""

    verdict: str
    shares: dict[str, float]
    weighted_theoretical: float | None
    weighted_end_to_end: float | None
    reproduction_gpu_hours: float | None


def _weighted(x: np.ndarray, share: np.ndarray) -> float | None:
    ok = np.isfinite(x)
    w = share[ok]
    return float((x[ok] * w).sum() / w.sum()) if ok.any() and w.sum() > 0 else None


def decide(m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> Decision:
    """GO if GO cells carry half the traffic, CONDITIONAL if GO and CONDITIONAL together do, else NO-GO."""
    shares = {label: float(m.share[v.code == code].sum()) for code, label in enumerate(LABELS)}
    if shares["GO"] >= 0.5:
        verdict = "GO"
    elif shares["GO"] + shares["CONDITIONAL"] >= 0.5:
        verdict = "CONDITIONAL"
    else:
        verdict = "NO-GO"
    return Decision(verdict, shares, _weighted(g.speedup_theoretical, m.share),
                    _weighted(g.speedup_end_to_end, m.share), claim.gpu_hours)
