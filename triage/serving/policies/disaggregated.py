"""disaggregated: prefill and decode on separate GPU pools (DistServe, Splitwise: Zhong et al. 2024, Patel et
al. 2024): a prefill pool serves prompts in batches (each instance prefill-first, round robin); the KV moves over a
link; a decode pool continues, each instance joining arrived requests with their KV."""

from __future__ import annotations

import numpy as np

from ...inputs.traffic import Scheduler
from ...model.iteration import IterationCost
from ..budget import Budget
from ..engine import Engine
from ..outcome import Outcome
from ..requests import Requests
from .base import Policy
from .continuous import Continuous

CONTINUOUS = Continuous()


def join_decodes(e: Engine) -> None:
    """Disaggregated decode pool: arrived requests join the batch with their KV (no prefill here)."""
    while e.waiting and e.admissible(e.waiting[0]):
        i = e.waiting.popleft()
        e.admit(i)
        if e.swapped[i]:                       # back from host memory over the link
            e.now += e.ctx[i] * e.cost.kv_bytes_per_token / e.s.host_link_bytes_per_s
            e.swapped[i] = False
        e.started[i] = e.charged[i] = True


def _prefill_pool(req: Requests, cost: IterationCost, sched: Scheduler, budget: Budget | None) -> np.ndarray:
    """Disaggregated prefill: each request's prefill completion time on its instance (round robin)."""
    done = np.empty(len(req))
    for k in range(sched.prefill_gpus):
        idx = np.arange(k, len(req), sched.prefill_gpus)
        e = Engine(req.take(idx), cost, Scheduler(policy="continuous", max_seqs=sched.max_seqs,
                                                  max_batched_tokens=sched.max_batched_tokens), CONTINUOUS,
                   budget=budget)
        e.left = [1.0] * len(idx)                       # a prefill instance emits the first token and is done
        done[idx] = e.run().first
    return done


class Disaggregated(Policy):
    """The decode pool's iteration (requests join with their KV, no prefill here) and the two pools' run."""

    def step(self, e: Engine) -> None:
        join_decodes(e)
        if e.running:
            e.decode_jump()
        elif e.waiting:
            raise ValueError("a request's KV does not fit the decode instance")

    def simulate(self, req: Requests, cost: IterationCost, sched: Scheduler, decode_cost: IterationCost | None,
                 measured: np.ndarray | None, budget: Budget | None) -> Outcome:
        """Prefill pool, the KV transfer, then the decode pool; a one-token request ends at its prefill."""
        first = _prefill_pool(req, cost, sched, budget)
        transfer = req.prompt * cost.kv_bytes_per_token / sched.link_bytes_per_s + sched.link_latency_s
        out = Outcome(first, np.full(len(req), np.nan), np.zeros(len(req)))
        ready = first + transfer
        multi = req.output > 1
        for k in range(sched.decode_gpus):
            idx = np.flatnonzero(multi)[k::sched.decode_gpus]
            idx = idx[np.argsort(ready[idx], kind="stable")]
            sub = Requests(ready[idx], req.prompt[idx], req.output[idx] - 1)
            e = Engine(sub, decode_cost or cost, sched, self, decode_only=True, first=first[idx],
                       measured=None if measured is None else measured[idx], budget=budget)
            o = e.run()
            out.done[idx] = o.done
            out.max_gap[idx] = o.max_gap                   # its first gap: first token to second, transfer included
            out.gaps.merge(o.gaps)
            out.busy_s += o.busy_s
            out.batch_seconds += o.batch_seconds
            out.preemptions += o.preemptions
        single = ~multi
        out.done[single] = first[single]
        return out
