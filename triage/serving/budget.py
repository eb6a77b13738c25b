"""The token-steps a run may simulate (limit serving_work), charged where they are spent."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..defaults import PROGRESS_REPORTS
from ..progress import SILENT, Progress

# The simulation's cost in token-steps, measured on a 2-core machine: one decode step priced inside a vectorized
# run of steps is one (about 80 ns); every Python iteration of the event loop (a prefill, a chunked iteration, the
# event that ends a run of steps) costs ITERATION_STEPS, plus SEQUENCE_STEPS for each running sequence it visits
# (9 us for an iteration of one sequence; 20,000 requests at saturation, 256 sequences, in 1.8 s a side).
# Since the batch advances as a cohort (issue 44: the same saturated run in 0.20 s), an iteration visits only the
# sequences admitted since the last jump, but is still charged for every running one: a run is charged more than
# it costs and stops at serving_work sooner than the ~30 s it documents, never later.
ITERATION_STEPS, SEQUENCE_STEPS = 100, 2
# A simulation's fixed cost (its requests, engine and statistics), charged when it starts: 40 traffic workloads
# of ten requests each ran 5,600 simulations in 3.37 s of CPU, 600 us each, of which the charges above covered
# 2,543 token-steps (~200 us); the other ~400 us are 5,000 token-steps at 80 ns (measured 2026-12-07, issue 46:
# 3,000 such workloads took ~80 s before the documented ~30 s stop).
SIMULATION_STEPS = 5_000


@dataclass
class Budget:
    """Token-steps a run may still simulate, charged where they are spent (preemptions and batch sizes the
    estimate before the run could not know); ValueError once spent. The rate searches are charged apart
    (``searching``), against their own limit, so a search never spends what the rates a user listed need."""

    limit: float = math.inf
    spent: float = 0.0
    progress: Progress = SILENT       # told the token-steps spent of the limits, PROGRESS_REPORTS times over them
    search_limit: float = math.inf
    searched: float = 0.0
    _searching: bool = field(default=False, init=False, repr=False)
    _report_at: float = field(default=math.inf, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.progress is not SILENT and math.isfinite(self.limit + self.search_limit):
            self._report_at = self.spent + self.searched + (self.limit + self.search_limit) / PROGRESS_REPORTS

    @contextmanager
    def searching(self) -> Iterator[None]:
        """Charge what runs inside to the rate searches' limit."""
        self._searching = True
        try:
            yield
        finally:
            self._searching = False

    def charge(self, steps: float) -> None:
        # one run's simulations are serial (a matrix with traffic prices its sensitivity variants one at a time,
        # analysis/where_it_pays.py), so a charge needs no lock
        if self._searching:
            self.searched += steps
            if self.searched > self.search_limit:
                raise ValueError(f"the rate searches ran past {self.search_limit:,.0f} token-steps (limit "
                                 f"serving_search_work): fewer requests or output tokens, no SLO (nothing to "
                                 f"search), or a scheduler that preempts less")
        else:
            self.spent += steps
            if self.spent > self.limit:
                raise ValueError(f"the simulations ran past {self.limit:,.0f} token-steps (limit serving_work): "
                                 f"fewer requests, rates or output tokens, or a scheduler that preempts less")
        total = self.spent + self.searched
        if total >= self._report_at:     # one comparison a charge; a report every limits / PROGRESS_REPORTS
            both = self.limit + self.search_limit
            self._report_at = total + both / PROGRESS_REPORTS
            self.progress.advance(total, both, "token-steps")
