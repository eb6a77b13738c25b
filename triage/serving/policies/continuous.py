"""continuous: iteration-level scheduling, prefill first (Orca; vLLM before chunking): waiting requests are
prefilled together, up to max_batched_tokens, while the running decodes wait a step (Yu et al. 2022; Kwon et al.
2023)."""

from __future__ import annotations

from ..engine import Engine
from .base import Policy


def prefill_batch(e: Engine) -> None:
    """Continuous or static: admit waiting prompts up to the token and sequence limits, prefill them
    together (the running decodes wait this iteration)."""
    take: list[int] = []
    tokens = 0.0
    while e.waiting:
        i = e.waiting[0]
        if take and tokens + e.pre[i] > e.s.max_batched_tokens or not e.admissible(i):
            break
        e.waiting.popleft()
        take.append(i)
        tokens += e.pre[i]
        e.admit(i)
    if not take:
        return
    t_sum = r = d = p = new = back = 0.0
    for i in take:
        if e.swapped[i]:            # a swapped-out sequence comes back over the host link
            back += e.ctx[i] * e.cost.kv_bytes_per_token
            continue
        n, prior = e.pre[i], e.ctx[i]
        t_sum += n
        r += 1
        d += prior
        p += n * prior + n * (n + 1.0) / 2.0
        new += not e.charged[i]
    t = e.cost.scalar(t_sum, r, d, p, new) + back / e.s.host_link_bytes_per_s
    emit = []
    for i in take:
        e.charged[i] = True
        if e.pre[i] > 0:
            e.prefilling -= 1
        e.ctx[i] += e.pre[i]
        e.pre[i] = 0.0
        if e.swapped[i]:
            e.swapped[i] = False
        else:
            emit.append(i)
    e.advance(t, len(e.running))
    e.emit(emit)


class Continuous(Policy):
    """Admit and prefill whenever a waiting request fits, else run the decodes to the next event; under
    multi-step scheduling only between the scheduler's calls (vLLM: a prefill is a call of one step, a decode
    call runs num_scheduler_steps: "If it is a prefill, num_lookahead_slots must be 0", "num_lookahead_slots + 1
    must match the scheduler steps", vllm/sequence.py, init_multi_step_from_lookahead_slots, ROCm/vllm @
    f8c9a38)."""

    def starts(self, e: Engine) -> bool:
        return bool(e.waiting) and e.call_left == 0 and e.admissible(e.waiting[0])

    def iteration(self, e: Engine) -> None:
        prefill_batch(e)
