"""Request-level serving simulation: a queue of requests through an engine's scheduler, iteration by
iteration, each iteration priced by the cost model (model/iteration.py).

Schedulers (one loop, switched by policy):

static        a batch of up to max_seqs requests starts when the engine is idle and runs until all are done;
continuous    iteration-level scheduling, prefill first (vLLM before chunking): waiting requests are
              prefilled together (up to max_batched_tokens) while the running decodes wait a step;
chunked       Sarathi-Serve: every iteration carries all decodes plus prefill chunks up to a token budget,
              so decodes never stall for a long prompt;
disaggregated prefill and decode on separate GPU pools (DistServe, Splitwise): a prefill pool serves
              prompts in batches; the KV moves over a link; a decode pool continues.

KV memory is paged (a sequence holds its tokens / (1 - waste)) or reserved at admission (Orca and
FasterTransformer: the true length, the output rounded up to a power of two, or the model's maximum length;
Kwon et al. 2023 §6.1). When a growing paged batch runs out, the latest admitted sequence is preempted
(recompute: it re-prefills its prompt and the tokens so far; swap: its KV goes to host memory and back over
the host link). Prefix caching skips a cached prefix's prefill.

Between arrivals, completions and memory exhaustion a batch of decodes advances in closed form: the
iteration times of the k steps to the next event are one vectorized call (contexts grow by one token a
step), so the Python loop runs once per event, not per token.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..inputs.traffic import Scheduler
from .iteration import IterationCost


@dataclass(frozen=True)
class Requests:
    """Arrival times (s, ascending) and prompt and output lengths (tokens) of a request stream."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival)

    def take(self, idx: np.ndarray) -> Requests:
        return Requests(self.arrival[idx], self.prompt[idx], self.output[idx])


@dataclass
class Outcome:
    """Per request: first-token and completion times (s), the longest gap between its tokens; all token gaps
    (values and weights); the engine's busy time and batch-seconds; preemptions."""

    first: np.ndarray
    done: np.ndarray
    max_gap: np.ndarray
    gaps: list[np.ndarray] = field(default_factory=list)       # arrays of gaps (s), each element weighing ...
    gap_weight: list[float] = field(default_factory=list)      # ... this many tokens
    busy_s: float = 0.0
    batch_seconds: float = 0.0
    preemptions: int = 0

    def add_gaps(self, values: np.ndarray, weight: float) -> None:
        self.gaps.append(np.atleast_1d(np.asarray(values, dtype=float)))
        self.gap_weight.append(weight)

    def token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gap between two tokens of a request (s), with how many tokens each value stands for."""
        if not self.gaps:
            return np.zeros(0), np.zeros(0)
        return (np.concatenate(self.gaps),
                np.concatenate([np.full(a.size, w) for a, w in zip(self.gaps, self.gap_weight, strict=True)]))


WATERMARK = 0.01             # share of the KV cache an admission leaves free (vLLM's watermark default, assumed)


def _pairs(n: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Query-key pairs of a causal chunk of n tokens after ``prior`` cached ones: n·prior + n(n+1)/2."""
    return n * prior + n * (n + 1.0) / 2.0


class _Engine:
    """One instance's state: the waiting queue, the running batch and the KV it holds."""

    def __init__(self, req: Requests, cost: IterationCost, sched: Scheduler, decode_only: bool = False):
        self.req, self.cost, self.s = req, cost, sched
        n = len(req)
        self.out = Outcome(np.full(n, np.nan), np.full(n, np.nan), np.zeros(n))
        self.decode_only = decode_only
        cached = np.zeros(n)
        if sched.prefix_share > 0 and sched.prefix_tokens > 0:
            hit = (np.arange(n) * sched.prefix_share) % 1.0 + sched.prefix_share > 1.0 - 1e-12   # evenly spread
            cached = np.where(hit, np.minimum(sched.prefix_tokens, req.prompt - 1), 0.0)
        self.prefill_left = (req.prompt - cached).astype(float) if not decode_only else np.zeros(n)
        self.ctx = cached.astype(float) if not decode_only else req.prompt.astype(float)
        self.out_left = req.output.astype(float)
        self.last = np.full(n, np.nan)
        self.started = np.zeros(n, dtype=bool)
        self.charged = np.zeros(n, dtype=bool)         # its per-request fixed cost paid (first prefill chunk)
        self.kv_cap = cost.kv_tokens
        self.kv_used = 0.0
        self.paged = sched.kv == "paged"
        out = req.output.astype(float)
        room = {"oracle": out, "pow2": 2.0 ** np.ceil(np.log2(np.maximum(out, 1.0))),
                "max": np.maximum(sched.max_length - req.prompt, out)}[sched.reserve]
        self.reservation = req.prompt + room                # reserve: tokens held from admission to the end
        self.now = 0.0
        self.next = 0                    # next request not yet arrived
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.swapped = np.zeros(n, dtype=bool)

    # -- admission -------------------------------------------------------------------------------------------
    def _arrive(self) -> None:
        while self.next < len(self.req) and self.req.arrival[self.next] <= self.now:
            self.waiting.append(self.next)
            self.next += 1

    def _need(self, i: int) -> float:
        """KV tokens request i holds once admitted: paged, its context and its prompt still to prefill; reserved,
        its reservation."""
        return self.ctx[i] + self.prefill_left[i] if self.paged else float(self.reservation[i])

    def _admissible(self, i: int, extra: int = 0) -> bool:
        """A free sequence slot and the KV for it, leaving (paged) room for the running batch's next token and a
        watermark of the cache (vLLM's 1 %), so an admission does not force a preemption at once."""
        if len(self.running) + extra >= self.s.max_seqs:
            return False
        spare = len(self.running) + extra + WATERMARK * self.kv_cap if self.paged else 0.0
        return self.kv_used + self._need(i) + spare <= self.kv_cap

    # -- iterations ------------------------------------------------------------------------------------------
    def _advance(self, t: float, batch: int) -> None:
        self.now += t
        self.out.busy_s += t
        self.out.batch_seconds += t * batch

    def _token(self, ids: np.ndarray) -> None:
        """Each of ``ids`` emitted a token now: its gap, its first token, its end."""
        if ids.size == 0:
            return
        fresh = ~self.started[ids]
        self.out.first[ids[fresh]] = self.now
        self.started[ids] = True
        seen = ids[~fresh]
        if seen.size:
            gap = self.now - self.last[seen]
            low, high = gap.min(), gap.max()
            if high - low <= 1e-12 * high:            # one iteration's gap for all of them
                self.out.add_gaps(gap[:1], float(seen.size))
            else:
                self.out.add_gaps(gap, 1.0)
            self.out.max_gap[seen] = np.maximum(self.out.max_gap[seen], gap)
        self.last[ids] = self.now
        self.out_left[ids] -= 1
        for i in ids[self.out_left[ids] <= 0]:
            self._finish(int(i))

    def _held(self, i: int) -> float:
        return self.ctx[i] if self.paged else float(self.reservation[i])

    def _finish(self, i: int) -> None:
        self.out.done[i] = self.now
        self.running.remove(i)
        self.kv_used -= self._held(i)

    def _prefill_batch(self) -> None:
        """Continuous or static: admit waiting prompts up to the token and sequence limits, prefill them
        together (the running decodes wait this iteration)."""
        take: list[int] = []
        tokens = 0.0
        while self.waiting:
            i = self.waiting[0]
            p = self.prefill_left[i]
            if take and tokens + p > self.s.max_batched_tokens or not self._admissible(i, len(take)):
                break
            self.waiting.popleft()
            take.append(i)
            tokens += p
            self.kv_used += self._need(i)
        if not take:
            return
        ids = np.array(take)
        prior, n = self.ctx[ids], self.prefill_left[ids]
        swapped = self.swapped[ids]
        t = self.cost.scalar(float(n[~swapped].sum()), float((~swapped).sum()), float(prior[~swapped].sum()),
                             float(_pairs(n, prior)[~swapped].sum()), float((~self.charged[ids]).sum()))
        # a swapped-out sequence comes back over the host link and decodes on from the next step
        t += float((self.ctx[ids[swapped]] * self.cost.kv_bytes_per_token).sum()) / self.s.host_link_bytes_per_s
        self.swapped[ids] = False
        self.charged[ids] = True
        self.running.extend(take)
        self.ctx[ids] += n
        self.prefill_left[ids] = 0.0
        self._advance(t, len(self.running))
        self._token(ids[~swapped])

    def _chunked(self) -> None:
        """One Sarathi iteration: every decode, then prefill chunks up to the token budget."""
        run = np.array(self.running, dtype=int)
        decodes = run[self.prefill_left[run] <= 0] if run.size else run
        budget = self.s.token_budget - decodes.size
        chunks: list[tuple[int, float]] = []
        for i in self.running:
            if budget <= 0:
                break
            if self.prefill_left[i] > 0:
                c = min(self.prefill_left[i], budget)
                chunks.append((i, c))
                budget -= c
        while budget > 0 and self.waiting and self._admissible(self.waiting[0]):
            i = self.waiting.popleft()
            self.running.append(i)
            self.kv_used += self._need(i)
            c = min(self.prefill_left[i], budget)
            chunks.append((i, c))
            budget -= c
        ids = np.array([i for i, _ in chunks], dtype=int)
        n = np.array([c for _, c in chunks], dtype=float)
        prior = self.ctx[ids]
        done = ids[n >= self.prefill_left[ids]] if ids.size else ids
        fresh = float((~self.charged[ids]).sum()) if ids.size else 0.0
        self.charged[ids] = True
        t = self.cost.scalar(float(decodes.size + n.sum()), float(decodes.size + done.size),
                             float(self.ctx[decodes].sum() + prior.sum()), float(_pairs(n, prior).sum()), fresh)
        if ids.size:
            self.ctx[ids] += n
            self.prefill_left[ids] -= n
        self.ctx[decodes] += 1
        self.kv_used += decodes.size if self.paged else 0
        self._advance(t, decodes.size + ids.size)
        self._token(np.concatenate([decodes, done]))

    def _decode_jump(self) -> None:
        """Decode steps of the running batch up to the next event, in one vectorized pricing."""
        run = np.array(self.running, dtype=int)
        b = run.size
        k = int(self.out_left[run].min())
        if self.paged:
            room = self.kv_cap - self.kv_used
            if room < b:                              # the batch cannot grow one token: preempt the latest
                self._preempt()
                return
            k = min(k, int(room // b))
        line, const = self.cost.decode_line(b, float(self.ctx[run].sum()))
        arrival = self.next < len(self.req) and self._arrival_matters()
        if arrival:                                   # steps only grow longer: no more than this many to it
            first = self.cost.first_step(line, const)
            k = min(k, int((self.req.arrival[self.next] - self.now) / first) + 1)
        t = self.cost.steps(line, const, max(k, 1))
        cum = np.cumsum(t)
        if arrival:
            stop = int(np.searchsorted(self.now + cum, self.req.arrival[self.next]))
            k = min(k, stop + 1)
        k = max(k, 1)
        t, cum = t[:k], cum[:k]
        gap0 = self.now + t[0] - self.last[run]
        stalled = gap0 > t[0] * (1 + 1e-9)             # waited for a prefill or came back: its own gap
        self.out.add_gaps(gap0[stalled], 1.0)
        self.out.add_gaps(t[:1], float((~stalled).sum()))
        if k > 1:
            self.out.add_gaps(t[1:], float(b))
        self.out.max_gap[run] = np.maximum(self.out.max_gap[run], np.maximum(gap0, t[1:].max() if k > 1 else 0.0))
        self._advance(float(cum[-1]), b)
        self.last[run] = self.now
        self.ctx[run] += k
        self.kv_used += k * b if self.paged else 0
        self.out_left[run] -= k
        for i in run[self.out_left[run] <= 0]:
            self._finish(int(i))

    def _arrival_matters(self) -> bool:
        """Whether the next arrival could change the batch (an idle slot for it, or chunked prefills)."""
        if self.s.policy == "static" or self.decode_only and self.s.policy != "disaggregated":
            return False
        return len(self.running) < self.s.max_seqs

    def _preempt(self) -> None:
        i = self.running.pop()
        self.kv_used -= self._held(i)
        self.out.preemptions += 1
        if self.s.preemption == "swap":
            self.swapped[i] = True
            self.now += self.ctx[i] * self.cost.kv_bytes_per_token / self.s.host_link_bytes_per_s
        else:                                          # recompute: its prompt and tokens so far, prefilled again
            self.prefill_left[i] = self.ctx[i]
            self.ctx[i] = 0.0
        self.waiting.appendleft(i)

    def _join_decodes(self) -> None:
        """Disaggregated decode pool: arrived requests join the batch with their KV (no prefill here)."""
        while self.waiting and self._admissible(self.waiting[0]):
            i = self.waiting.popleft()
            self.running.append(i)
            self.kv_used += self._need(i)
            self.last[i] = self.req.arrival[i]
            self.started[i] = self.charged[i] = True

    def run(self) -> Outcome:
        while True:
            self._arrive()
            if not self.running and not self.waiting:
                if self.next >= len(self.req):
                    return self.out
                self.now = max(self.now, float(self.req.arrival[self.next]))
                continue
            if self.decode_only:
                self._join_decodes()
                if self.running:
                    self._decode_jump()
                elif self.waiting:
                    raise ValueError("a request's KV does not fit the decode instance")
                continue
            if self.s.policy == "chunked":
                pending = any(self.prefill_left[i] > 0 for i in self.running)
                if pending or self.waiting and self._admissible(self.waiting[0]):
                    self._chunked()
                else:
                    self._decode_jump()
                continue
            idle = not self.running
            if self.waiting and (idle or self.s.policy != "static") and self._admissible(self.waiting[0]):
                self._prefill_batch()
            elif self.running:
                self._decode_jump()
            else:
                raise ValueError("a request's KV does not fit the GPU's free memory")


def _prefill_pool(req: Requests, cost: IterationCost, sched: Scheduler) -> np.ndarray:
    """Disaggregated prefill: each request's prefill completion time on its instance (round robin)."""
    done = np.empty(len(req))
    for k in range(sched.prefill_gpus):
        idx = np.arange(k, len(req), sched.prefill_gpus)
        e = _Engine(req.take(idx), cost, Scheduler(policy="continuous", max_seqs=sched.max_seqs,
                                                   max_batched_tokens=sched.max_batched_tokens))
        e.out_left[:] = 1.0                             # a prefill instance emits the first token and is done
        done[idx] = e.run().first
    return done


def simulate(req: Requests, cost: IterationCost, sched: Scheduler, decode_cost: IterationCost | None = None
             ) -> Outcome:
    """Every request through the scheduler: first-token and completion times, token gaps."""
    if sched.policy != "disaggregated":
        return _Engine(req, cost, sched).run()
    first = _prefill_pool(req, cost, sched)
    transfer = req.prompt * cost.kv_bytes_per_token / sched.link_bytes_per_s + sched.link_latency_s
    out = Outcome(first, np.full(len(req), np.nan), np.zeros(len(req)))
    ready = first + transfer
    multi = req.output > 1
    for k in range(sched.decode_gpus):
        idx = np.flatnonzero(multi)[k::sched.decode_gpus]
        idx = idx[np.argsort(ready[idx], kind="stable")]
        sub = Requests(ready[idx], req.prompt[idx], req.output[idx] - 1)
        e = _Engine(sub, decode_cost or cost, sched, decode_only=True)
        o = e.run()
        out.done[idx] = o.done
        out.max_gap[idx] = np.maximum(o.max_gap, ready[idx] - first[idx])
        out.gaps += o.gaps + [ready[idx] - first[idx]]
        out.gap_weight += o.gap_weight + [1.0]
        out.busy_s += o.busy_s
        out.batch_seconds += o.batch_seconds
        out.preemptions += o.preemptions
    single = ~multi
    out.done[single] = first[single]
    return out
