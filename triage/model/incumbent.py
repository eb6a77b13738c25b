"""The shipped alternative a claim is measured against: its class's incumbent (inputs/classes.yaml), priced on
the same cells by the same cost model, the fastest of its candidates (and the baseline) on each cell."""

from __future__ import annotations

import itertools

import numpy as np

from ..inputs.change import combine, incumbent_candidates
from ..inputs.claim import Claim
from ..inputs.specs import Model
from ..records import record
from . import evidence
from .matrix import Matrix


@record
class IncumbentPrice:
    """GPU-seconds per request with what engines already ship, per cell (the baseline's where that is faster)."""

    name: str
    classes: tuple[str, ...]
    request_s: np.ndarray
    speedup: np.ndarray              # the incumbent's own end-to-end gain over the baseline, per cell


def price(m: Matrix, claim: Claim, g: evidence.Gaps, models: dict[str, Model]) -> IncumbentPrice | None:
    """The incumbent of every class the claim must beat (a format below the incumbent's bits), or None."""
    classes = claim.change.incumbents
    if not classes:
        return None
    best = np.array(g.base_request_s, dtype=float)
    for combo in itertools.product(*[incumbent_candidates(c.key) for c in classes]):
        change = combine(combo)
        shipped = Claim(id="incumbent", title="incumbent", direction=claim.direction, file="<incumbent>",
                        change=change, kernel=True, kernel_in="engine", quality_retained=1.0)
        best = np.fmin(best, evidence.compute(m, shipped, models).claim_request_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        speedup = g.base_request_s / best
    names = " + ".join(c.incumbent.name for c in classes if c.incumbent is not None)
    return IncumbentPrice(names, tuple(c.key for c in classes), best, speedup)
