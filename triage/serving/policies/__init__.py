"""Scheduling policies, one module each behind one registry (as Vidur gives each replica scheduler its own
module): a policy says what an engine iteration does (engine.py holds the mechanics) and how a request stream runs
through its deployment. The workload schema's `scheduler.policy` names exactly these
(tests/inputs/test_traffic.py)."""

from __future__ import annotations

import numpy as np

from ...inputs.traffic import Scheduler
from ...model.iteration import IterationCost
from ..budget import Budget
from ..outcome import Outcome
from ..requests import Requests
from .base import Policy
from .chunked import Chunked
from .continuous import Continuous
from .disaggregated import Disaggregated
from .static import Static

POLICIES: dict[str, Policy] = {"static": Static(), "continuous": Continuous(), "chunked": Chunked(),
                               "disaggregated": Disaggregated()}


def simulate(req: Requests, cost: IterationCost, sched: Scheduler, decode_cost: IterationCost | None = None,
             measured: np.ndarray | None = None, budget: Budget | None = None) -> Outcome:
    """Every request through the scheduler: first-token and completion times, token gaps (of the ``measured``
    requests only, when given: the warm-up's are left out); the work charged to ``budget`` (ValueError once it
    is spent)."""
    return POLICIES[sched.policy].simulate(req, cost, sched, decode_cost, measured, budget)
