"""What every scheduling policy is: what one engine iteration does once a request is running or waiting, whether
the next arrival can change the batch, and how a request stream runs through its deployment (one instance)."""

from __future__ import annotations

import numpy as np

from ...inputs.traffic import Scheduler
from ...model.iteration import IterationCost
from ..budget import Budget
from ..engine import Engine
from ..outcome import Outcome
from ..requests import Requests


class Policy:
    """A scheduling policy (one per module of this package, registered in POLICIES)."""

    def step(self, e: Engine) -> None:
        """One iteration of ``e``: the policy's own iteration where it can start one, else the running decodes to
        the next event; neither means a waiting request can never fit."""
        if self.starts(e):
            self.iteration(e)
        elif e.running:
            e.decode_jump()
        else:
            raise ValueError("a request's KV does not fit the GPU's free memory")

    def starts(self, e: Engine) -> bool:
        """Whether the policy's own iteration runs now (a prefill, a mixed iteration)."""
        raise NotImplementedError

    def iteration(self, e: Engine) -> None:
        """The policy's own iteration."""
        raise NotImplementedError

    def arrival_matters(self, e: Engine) -> bool:
        """Whether the next arrival could change the batch (an idle sequence slot for it), so a run of decode
        steps stops there."""
        return len(e.running) < e.s.max_seqs

    def simulate(self, req: Requests, cost: IterationCost, sched: Scheduler, decode_cost: IterationCost | None,
                 measured: np.ndarray | None, budget: Budget | None) -> Outcome:
        """Every request through one instance of the engine under this policy."""
        return Engine(req, cost, sched, self, measured=measured, budget=budget).run()
