"""chunked: Sarathi-Serve's stall-free batching: every iteration carries all running decodes plus prefill chunks
up to a token budget, so decodes never stall for a long prompt (Agrawal et al. 2024)."""

from __future__ import annotations

from ..engine import Engine
from .base import Policy


def chunked_iteration(e: Engine) -> None:
    """One Sarathi iteration: every decode, then prefill chunks up to the token budget."""
    e.settle()                                # each decode's own state: the iteration reads and moves it
    decodes = [i for i in e.running if e.pre[i] <= 0]
    budget = float(e.s.token_budget - len(decodes))
    chunks: list[tuple[int, float]] = []
    if e.prefilling:
        for i in e.running:
            if budget <= 0:
                break
            if e.pre[i] > 0:
                c = min(e.pre[i], budget)
                chunks.append((i, c))
                budget -= c
    back = 0.0
    while budget > 0 and e.waiting and e.admissible(e.waiting[0]):
        i = e.waiting.popleft()
        e.admit(i)
        if e.swapped[i]:                       # back from host memory: its KV over the link, no prefill
            back += e.ctx[i] * e.cost.kv_bytes_per_token
            e.swapped[i] = False
            continue
        c = min(e.pre[i], budget)
        chunks.append((i, c))
        budget -= c
    if e.paged and e.kv_used + len(decodes) > e.kv_cap and len(e.running) > 1:
        e.preempt()                           # the decodes cannot grow a token each: make room first
        return
    t_sum = float(len(decodes))
    d = sum(e.ctx[i] for i in decodes)
    r = t_sum
    p = new = 0.0
    completed = []
    for i, c in chunks:
        prior = e.ctx[i]
        t_sum += c
        d += prior
        p += c * prior + c * (c + 1.0) / 2.0
        if not e.charged[i]:
            new += 1
            e.charged[i] = True
        e.ctx[i] += c
        e.pre[i] -= c
        if e.pre[i] <= 0:
            e.prefilling -= 1
            completed.append(i)
            r += 1
    t = e.cost.scalar(t_sum, r, d, p, new) + back / e.s.host_link_bytes_per_s
    for i in decodes:
        e.ctx[i] += 1
    if e.paged:
        e.kv_used += len(decodes)
    e.advance(t, len(decodes) + len(chunks))
    e.emit(decodes + completed)


class Chunked(Policy):
    """A mixed iteration while a prompt is being prefilled or one can be admitted, else decodes to the next
    event."""

    def starts(self, e: Engine) -> bool:
        return bool(e.prefilling) or bool(e.waiting) and e.admissible(e.waiting[0])

    def iteration(self, e: Engine) -> None:
        chunked_iteration(e)
