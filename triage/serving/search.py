"""The largest request rate that meets a traffic's SLO, on one lattice of rates, 2^(j/128) requests/s (0.54 %
apart): a gallop from a hint to a bracket (a rate within the SLO below one outside it), then the bracket closed
to two neighbouring lattice rates by interpolating how far each rate is from its bounds (regula falsi, the
Illinois variant; bisection where that stalls). Every probe is a lattice rate, so the searches of a run (both
sides, a sensitivity variant's) meet on the same rates and take them from the run's memo (Side.run).

Only the bracket's choice of probes reads the margins; what a probe decides is its own slo_met, so the answer is
the one bisection finds wherever the SLO holds below a rate and fails above it."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from ..defaults import SERVING_RATE_MAX, SERVING_RATE_MIN
from ..inputs.traffic import Traffic
from .metrics import RateStats, slo_margin

PER_OCTAVE = 128              # lattice rates per doubling of the rate: 2^(1/128) = 0.54 % apart
NEAR = 0.5                    # margins (logs of a statistic over its bound) the interpolation trusts: within
                              # a factor 1.65 of the bound; a queue past its knee is no line
# the gallop's first steps (lattice rates; the last doubles from there): from a hint nothing is known about, a
# doubling; from an answer another search found (the claim's from the baseline's, a sensitivity variant's from
# the evaluation's own), that answer's next rate first, where that search ended (a side that prices as the
# other lands on the same answer, whatever the SLO does between the rates: its runs are the memo's), then 9 %
# for a claim's gain, 2.2 % for a variant
COLD, CLAIM, NEAR_ANSWER = (PER_OCTAVE,), (1, 16), (1, 4)
LOWEST = math.ceil(math.log2(SERVING_RATE_MIN) * PER_OCTAVE)
HIGHEST = math.floor(math.log2(SERVING_RATE_MAX) * PER_OCTAVE)


class Runs(Protocol):
    """Anything that simulates a traffic at a rate (a deployment's side)."""

    def run(self, traffic: Traffic, rate: float) -> RateStats: ...


def rate_at(j: int) -> float:
    """The lattice's j-th rate, requests/s."""
    return float(2.0 ** (j / PER_OCTAVE))


def below(rate: float) -> int:
    """The lattice index of the largest lattice rate at or below ``rate`` (within the search's range)."""
    j = math.floor(math.log2(min(max(rate, SERVING_RATE_MIN), SERVING_RATE_MAX)) * PER_OCTAVE + 1e-9)
    return min(max(j, LOWEST), HIGHEST)


def max_rate(side: Runs, traffic: Traffic, hint: float, steps: tuple[int, ...] = COLD, listed: bool = False
             ) -> float | None:
    """The largest lattice rate (requests/s) meeting the SLO whose next one fails; None without an SLO, 0.0 when
    even the lowest rate fails, the highest when it holds there. ``hint``: where to start (the lattice rate at
    or below it); ``steps``: the gallop's first steps in lattice rates, the last doubling from there (small where
    the hint is a close neighbour's answer, a doubling otherwise); ``listed``: the hint is a rate the traffic
    lists (run for the memo anyway), probed as it is: within the SLO, so is the lattice rate below it; outside,
    so is the one above."""
    if traffic.slo_ttft_s is None and traffic.slo_tbt_s is None and traffic.slo_tpot_s is None:
        return None

    def probe(j: int) -> float:
        return slo_margin(traffic, side.run(traffic, rate_at(j)))

    j = below(hint)
    if listed and rate_at(j) != hint:
        m = slo_margin(traffic, side.run(traffic, hint))
        if m > 0:
            j += 1
    else:
        m = probe(j)
    lo: tuple[int, float] | None = (j, m) if m <= 0 else None        # within the SLO
    hi: tuple[int, float] | None = None if m <= 0 else (j, m)        # outside it
    first, doubling = iter(steps[:-1]), steps[-1]
    while lo is None or hi is None:                                  # the gallop
        move = next(first, 0)
        if not move:
            move, doubling = doubling, 2 * doubling
        if lo is not None:
            if lo[0] >= HIGHEST:
                return rate_at(HIGHEST)
            j = min(lo[0] + move, HIGHEST)
        else:
            assert hi is not None
            if hi[0] <= LOWEST:
                return 0.0
            j = max(hi[0] - move, LOWEST)
        m = probe(j)
        if m <= 0:
            lo = (j, m)
        else:
            hi = (j, m)
    return rate_at(_close(probe, lo, hi))


def _close(probe: Callable[[int], float], lo: tuple[int, float], hi: tuple[int, float]) -> int:
    """Narrow a bracket (lo within the SLO, hi outside) to neighbouring lattice rates; the lower end. The next
    probe is where the margins' line crosses zero (Illinois: an end kept twice has its margin halved), reaching
    2^k lattice rates past its end when that end moved k times in a row (a margin that bends near capacity
    keeps the line's zero next to the end that moves); the midpoint where a margin is beyond NEAR or the last
    probe did not halve the bracket."""
    (jl, ml), (jh, mh) = lo, hi
    streak = 0                        # > 0: the low end moved that many times in a row; < 0: the high end
    stalled = False                   # the last probe did not halve the bracket
    while jh - jl > 1:
        width = jh - jl
        if stalled or not -NEAR < ml < 0 < mh < NEAR:
            j = (jl + jh) // 2
        else:
            j = math.floor(jl + width * -ml / (mh - ml))
            if streak > 0:
                j = max(j, jl + 2 ** streak)
            elif streak < 0:
                j = min(j, jh - 2 ** -streak)
        j = min(max(j, jl + 1), jh - 1)
        m = probe(j)
        if m <= 0:
            jl, ml = j, m
            if streak > 0:
                mh /= 2.0
            streak = streak + 1 if streak > 0 else 1
        else:
            jh, mh = j, m
            if streak < 0:
                ml /= 2.0
            streak = streak - 1 if streak < 0 else -1
        stalled = 2 * (jh - jl) > width
    return jl
