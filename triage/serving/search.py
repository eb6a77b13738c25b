"""The largest request rate that meets a traffic's SLO: doubling up (or quartering down) from a hint, then
bisection in log space."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..defaults import SERVING_RATE_MAX, SERVING_RATE_MIN
from ..inputs.traffic import Traffic
from .metrics import RateStats

SEARCH_STEPS = 8              # bisection steps of the largest rate at the SLO (0.4 % of the bracket)
DOUBLINGS = 20                # the search's doublings (or quarterings) from the largest rate, at most


class Runs(Protocol):
    """Anything that simulates a traffic at a rate (a deployment's side)."""

    def run(self, traffic: Traffic, rate: float) -> RateStats: ...


def max_rate(side: Runs, traffic: Traffic, hint: float) -> float | None:
    """The largest rate (requests/s) meeting the SLO, by doubling from ``hint`` then bisection; None without an
    SLO or when even a rate 1/1000 of the hint fails."""
    if traffic.slo_ttft_s is None and traffic.slo_tbt_s is None and traffic.slo_tpot_s is None:
        return None
    low, high = 0.0, min(max(hint, SERVING_RATE_MIN), SERVING_RATE_MAX)
    for _ in range(DOUBLINGS):                # up from the hint while the SLO holds
        if not side.run(traffic, high).slo_met:
            break
        low, high = high, min(high * 2, SERVING_RATE_MAX)
        if low == SERVING_RATE_MAX:
            return low
    else:
        return low
    for _ in range(DOUBLINGS):                # down from the hint until it holds
        if low:
            break
        probe = high / 4
        if probe < SERVING_RATE_MIN:
            return 0.0
        if side.run(traffic, probe).slo_met:
            low = probe
        else:
            high = probe
    if not low:
        return 0.0
    for _ in range(SEARCH_STEPS):             # bisection in log space: a factor of 2^(1/2^k) at the end
        mid = float(np.sqrt(low * high))
        low, high = (mid, high) if side.run(traffic, mid).slo_met else (low, mid)
    return low
