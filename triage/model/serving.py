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
the host link). Prefix caching prefills and holds a shared prompt prefix once.

Between arrivals, completions and memory exhaustion a batch of decodes advances in one pass: each group's
sides are linear in the step (contexts grow by one token a step), so the k steps to the next event are priced
together, and the Python loop runs once per event, not per token.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..inputs.traffic import Scheduler
from .iteration import IterationCost


@dataclass(frozen=True)
class Requests:
    """Arrival times (s, ascending), prompt and output lengths (tokens) of a request stream, and how much of
    each prompt is a prefix other requests share (tokens; None: none)."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    shared: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrival)

    def take(self, idx: np.ndarray) -> Requests:
        return Requests(self.arrival[idx], self.prompt[idx], self.output[idx],
                        None if self.shared is None else self.shared[idx])


class GapSketch:
    """Token gaps (s) and the tokens each stands for, in fixed memory: exact in preallocated arrays up to
    ``EXACT`` values, then folded into a log-spaced histogram whose bins are 0.01 % wide, so a percentile is
    exact for an ordinary run and within 0.01 % for one of any length (never a Python float per token)."""

    EXACT = 1 << 20                     # values kept exactly (16 MiB)
    LOW, HIGH, WIDTH = 1e-9, 1e6, 1e-4  # the histogram's range (s) and relative bin width
    _BINS = int(np.ceil(np.log(HIGH / LOW) / np.log1p(WIDTH))) + 2   # a bin below LOW (0 s gaps) and above HIGH

    def __init__(self) -> None:
        self._v = np.empty(0)
        self._w = np.empty(0)
        self._n = 0
        self._hist: np.ndarray | None = None

    def add(self, values: np.ndarray | list[float], weights: np.ndarray | list[float] | float) -> None:
        """Gaps ``values`` (s), each standing for ``weights`` tokens (one weight for all, or one each)."""
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            return
        w = np.broadcast_to(np.asarray(weights, dtype=float), v.shape)
        if self._hist is None and self._n + v.size <= self.EXACT:
            if self._n + v.size > self._v.size:          # grow by doubling, never past EXACT
                size = min(max(2 * self._v.size, self._n + v.size, 1024), self.EXACT)
                self._v, self._w = np.resize(self._v, size), np.resize(self._w, size)
            self._v[self._n:self._n + v.size] = v
            self._w[self._n:self._n + v.size] = w
            self._n += v.size
            return
        if self._hist is None:                           # fold what is held, then count in bins from now on
            self._hist = np.zeros(self._BINS)
            held, weight = self._v[:self._n], self._w[:self._n]
            self._v, self._w, self._n = np.empty(0), np.empty(0), 0
            self._count(held, weight)
        self._count(v, w)

    def _count(self, v: np.ndarray, w: np.ndarray) -> None:
        assert self._hist is not None
        with np.errstate(divide="ignore"):
            at = np.floor(np.log(np.maximum(v, self.LOW * 0.5) / self.LOW) / np.log1p(self.WIDTH)) + 1
        idx = np.clip(at, 0, self._BINS - 1).astype(np.int64)
        low = int(idx.min())                  # count over the bins the values span, not all of them (O(values))
        counts = np.bincount(idx - low, weights=w)
        self._hist[low:low + counts.size] += counts

    def merge(self, other: GapSketch) -> None:
        """Add every gap ``other`` holds."""
        self.add(*other.values())

    def values(self) -> tuple[np.ndarray, np.ndarray]:
        """(gaps, weights): the exact values, or once folded each non-empty bin's geometric centre and count."""
        if self._hist is None:
            return self._v[:self._n].copy(), self._w[:self._n].copy()
        full = np.flatnonzero(self._hist)
        centre = np.where(full == 0, 0.0, self.LOW * np.power(1.0 + self.WIDTH, np.maximum(full, 1) - 0.5))
        return centre, self._hist[full]


@dataclass
class Outcome:
    """Per request: first-token and completion times (s), the longest gap between its tokens; all token gaps
    (a fixed-memory sketch of values and weights); the engine's busy time and batch-seconds; preemptions."""

    first: np.ndarray
    done: np.ndarray
    max_gap: np.ndarray
    gaps: GapSketch = field(default_factory=GapSketch)
    busy_s: float = 0.0
    batch_seconds: float = 0.0
    preemptions: int = 0

    def token_gaps(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gap between two tokens of a request (s), with how many tokens each value stands for."""
        return self.gaps.values()


WATERMARK = 0.01             # share of the KV cache an admission leaves free (vLLM's watermark default, assumed)
# The simulation's cost in token-steps, measured on a 2-core machine: one decode step priced inside a vectorized
# run of steps is one (about 80 ns); every Python iteration of the event loop (a prefill, a chunked iteration, the
# event that ends a run of steps) costs ITERATION_STEPS, plus SEQUENCE_STEPS for each running sequence it visits
# (9 us for an iteration of one sequence; 20,000 requests at saturation, 256 sequences, in 1.8 s a side).
ITERATION_STEPS, SEQUENCE_STEPS = 100, 2


@dataclass
class Budget:
    """Token-steps a run may still simulate, charged where they are spent (preemptions and batch sizes the
    estimate before the run could not know); ValueError once spent."""

    limit: float = math.inf
    spent: float = 0.0
    # the sensitivity's variants simulate in threads (analysis/regions.py): a charge is read-add-write
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def charge(self, steps: float) -> None:
        with self._lock:
            self.spent += steps
        if self.spent > self.limit:
            raise ValueError(f"the simulations ran past {self.limit:,.0f} token-steps (limit serving_work): fewer "
                             f"requests, rates or output tokens, or a scheduler that preempts less")


FLUSH = 1 << 16              # token gaps gathered as Python floats before they move into the sketch
JUMP = 1 << 20               # decode steps one jump prices at most (its step times are one array)


class _Engine:
    """One instance's state: the waiting queue, the running batch and the KV it holds. Per-request state is
    kept in plain lists (the loop touches a few entries an event; numpy's per-call cost would dominate)."""

    def __init__(self, req: Requests, cost: IterationCost, sched: Scheduler, decode_only: bool = False,
                 first: np.ndarray | None = None, measured: np.ndarray | None = None, budget: Budget | None = None):
        self.req, self.cost, self.s = req, cost, sched
        self.budget = budget if budget is not None else Budget()
        n = len(req)
        # whose token gaps the statistics keep (the warm-up's are left out)
        self.measured: list[bool] = [True] * n if measured is None else measured.tolist()
        self.decode_only = decode_only
        # prefix caching: a shared prefix is prefilled once and held once (its KV set aside from the cache);
        # each request that starts with it prefills only the rest
        cached = req.shared.astype(float) if sched.prefix_caching and req.shared is not None else np.zeros(n)
        prompt = req.prompt.astype(float)
        self.pre: list[float] = ([0.0] * n) if decode_only else (prompt - cached).tolist()
        self.ctx: list[float] = prompt.tolist() if decode_only else cached.tolist()
        self.left: list[float] = req.output.astype(float).tolist()
        # a decode pool's request arrives with its KV; its first token came from the prefill pool at ``first``
        self.last: list[float] = first.tolist() if first is not None else [0.0] * n
        self.gap: list[float] = [0.0] * n            # the longest gap between two of its tokens
        self.first: list[float] = [math.nan] * n
        self.done: list[float] = [math.nan] * n
        self.started = [False] * n
        self.charged = [False] * n                    # its per-request fixed cost paid (first prefill chunk)
        self.swapped = [False] * n
        self.arrival: list[float] = req.arrival.tolist()
        self.base: list[float] = cached.tolist()     # tokens of its context held in the shared copy
        self.kv_cap = cost.kv_tokens - float(cached.max(initial=0.0))
        self.kv_used = 0.0
        self.paged = sched.kv == "paged"
        self.block = float(sched.block_size) - 1.0 if self.paged else 0.0   # a last block's empty slots, at most
        out = req.output.astype(float)
        room = {"oracle": out, "pow2": 2.0 ** np.ceil(np.log2(np.maximum(out, 1.0))),
                "max": np.maximum(sched.max_length - prompt, out)}[sched.reserve]
        # reserve: tokens held from admission to the end (never more than the cache: a sequence that fits runs)
        self.reservation: list[float] = np.minimum(prompt + room, np.maximum(self.kv_cap, prompt + out)).tolist()
        self.now = 0.0
        self.next = 0                    # next request not yet arrived
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling = 0              # running requests with prompt tokens still to prefill
        self.gaps: list[float] = []      # token gaps (s) and how many tokens each stands for, until FLUSH ...
        self.weights: list[float] = []
        self.sketch = GapSketch()        # ... then here, in fixed memory
        self.busy_s = self.batch_seconds = 0.0
        self.preemptions = 0

    # -- admission -------------------------------------------------------------------------------------------
    def _arrive(self) -> None:
        n = len(self.arrival)
        while self.next < n and self.arrival[self.next] <= self.now:
            self.waiting.append(self.next)
            self.next += 1

    def _need(self, i: int) -> float:
        """KV tokens request i holds once admitted: paged, its own context and its prompt still to prefill (and
        its last block's empty slots, at most); reserved, its reservation."""
        return self.ctx[i] + self.pre[i] - self.base[i] + self.block if self.paged else self.reservation[i]

    def _held(self, i: int) -> float:
        return self.ctx[i] - self.base[i] + self.block if self.paged else self.reservation[i]

    def _admissible(self, i: int, extra: int = 0) -> bool:
        """A free sequence slot and the KV for it, leaving (paged) room for the running batch's next token and a
        watermark of the cache (vLLM's 1 %), so an admission does not force a preemption at once."""
        if len(self.running) + extra >= self.s.max_seqs:
            return False
        spare = len(self.running) + extra + WATERMARK * self.kv_cap if self.paged else 0.0
        return self.kv_used + self._need(i) + spare <= self.kv_cap

    def _admit(self, i: int) -> None:
        self.running.append(i)
        self.kv_used += self._need(i)
        if self.pre[i] > 0:
            self.prefilling += 1

    # -- iterations ------------------------------------------------------------------------------------------
    def _advance(self, t: float, batch: int) -> None:
        self.now += t
        self.busy_s += t
        self.batch_seconds += t * batch

    def _token(self, ids: list[int]) -> None:
        """Each of ``ids`` emitted a token now: its gap (one entry for all that share it), its first token, its
        end."""
        now = self.now
        last, gap, left, started = self.last, self.gap, self.left, self.started
        common, count = -1.0, 0.0
        finished = []
        measured = self.measured
        for i in ids:
            if started[i]:
                g = now - last[i]
                if not measured[i]:
                    pass
                elif g == common:
                    count += 1
                else:
                    if count:
                        self.gaps.append(common)
                        self.weights.append(count)
                    common, count = g, 1.0
                if g > gap[i]:
                    gap[i] = g
            else:
                self.first[i] = now
                started[i] = True
            last[i] = now
            left[i] -= 1
            if left[i] <= 0:
                finished.append(i)
        if count:
            self.gaps.append(common)
            self.weights.append(count)
        self._flush()
        for i in finished:
            self._finish(i)

    def _flush(self, force: bool = False) -> None:
        """Move the gathered gaps into the sketch once there are FLUSH of them (or now)."""
        if self.gaps and (force or len(self.gaps) >= FLUSH):
            self.sketch.add(self.gaps, self.weights)
            self.gaps, self.weights = [], []

    def _finish(self, i: int) -> None:
        self.done[i] = self.now
        self.running.remove(i)
        self.kv_used -= self._held(i)

    def _prefill_batch(self) -> None:
        """Continuous or static: admit waiting prompts up to the token and sequence limits, prefill them
        together (the running decodes wait this iteration)."""
        take: list[int] = []
        tokens = 0.0
        while self.waiting:
            i = self.waiting[0]
            if take and tokens + self.pre[i] > self.s.max_batched_tokens or not self._admissible(i):
                break
            self.waiting.popleft()
            take.append(i)
            tokens += self.pre[i]
            self._admit(i)
        if not take:
            return
        t_sum = r = d = p = new = back = 0.0
        for i in take:
            if self.swapped[i]:            # a swapped-out sequence comes back over the host link
                back += self.ctx[i] * self.cost.kv_bytes_per_token
                continue
            n, prior = self.pre[i], self.ctx[i]
            t_sum += n
            r += 1
            d += prior
            p += n * prior + n * (n + 1.0) / 2.0
            new += not self.charged[i]
        t = self.cost.scalar(t_sum, r, d, p, new) + back / self.s.host_link_bytes_per_s
        emit = []
        for i in take:
            self.charged[i] = True
            if self.pre[i] > 0:
                self.prefilling -= 1
            self.ctx[i] += self.pre[i]
            self.pre[i] = 0.0
            if self.swapped[i]:
                self.swapped[i] = False
            else:
                emit.append(i)
        self._advance(t, len(self.running))
        self._token(emit)

    def _chunked(self) -> None:
        """One Sarathi iteration: every decode, then prefill chunks up to the token budget."""
        decodes = [i for i in self.running if self.pre[i] <= 0]
        budget = float(self.s.token_budget - len(decodes))
        chunks: list[tuple[int, float]] = []
        if self.prefilling:
            for i in self.running:
                if budget <= 0:
                    break
                if self.pre[i] > 0:
                    c = min(self.pre[i], budget)
                    chunks.append((i, c))
                    budget -= c
        back = 0.0
        while budget > 0 and self.waiting and self._admissible(self.waiting[0]):
            i = self.waiting.popleft()
            self._admit(i)
            if self.swapped[i]:                       # back from host memory: its KV over the link, no prefill
                back += self.ctx[i] * self.cost.kv_bytes_per_token
                self.swapped[i] = False
                continue
            c = min(self.pre[i], budget)
            chunks.append((i, c))
            budget -= c
        if self.paged and self.kv_used + len(decodes) > self.kv_cap and len(self.running) > 1:
            self._preempt()                           # the decodes cannot grow a token each: make room first
            return
        t_sum = float(len(decodes))
        d = sum(self.ctx[i] for i in decodes)
        r = t_sum
        p = new = 0.0
        completed = []
        for i, c in chunks:
            prior = self.ctx[i]
            t_sum += c
            d += prior
            p += c * prior + c * (c + 1.0) / 2.0
            if not self.charged[i]:
                new += 1
                self.charged[i] = True
            self.ctx[i] += c
            self.pre[i] -= c
            if self.pre[i] <= 0:
                self.prefilling -= 1
                completed.append(i)
                r += 1
        t = self.cost.scalar(t_sum, r, d, p, new) + back / self.s.host_link_bytes_per_s
        for i in decodes:
            self.ctx[i] += 1
        if self.paged:
            self.kv_used += len(decodes)
        self._advance(t, len(decodes) + len(chunks))
        self._token(decodes + completed)

    def _decode_jump(self) -> None:
        """Decode steps of the running batch up to the next event: the steps' times from one decode line."""
        run = self.running
        b = len(run)
        k = min(max(int(min(self.left[i] for i in run)), 1), JUMP)
        if self.paged:
            room = self.kv_cap - self.kv_used
            if room < b:                              # the batch cannot grow one token: preempt the latest
                self._preempt()
                return
            k = min(k, int(room // b))
        line, const = self.cost.decode_line(b, sum(self.ctx[i] for i in run))
        horizon = self.arrival[self.next] - self.now if self.next < len(self.arrival) and self._arrival_matters() \
            else math.inf
        times = self._steps(line, const, k, horizon)
        k = len(times)
        self.budget.charge(k)
        total = float(np.sum(times)) if k > 64 else sum(times)
        # the first step's gap: one step for those that ran the last iteration, longer for those that waited
        t0 = times[0]
        steady = 0                                    # measured sequences whose first gap is one step
        counted = 0                                   # measured sequences of the batch
        for i in run:
            g = self.now + t0 - self.last[i]
            kept = self.measured[i]
            counted += kept
            if g > t0 * (1 + 1e-9):
                if kept:
                    self.gaps.append(g)
                    self.weights.append(1.0)
                if g > self.gap[i]:
                    self.gap[i] = g
            else:
                steady += kept
                if t0 > self.gap[i]:
                    self.gap[i] = t0
        if steady:
            self.gaps.append(t0)
            self.weights.append(float(steady))
        if k > 1 and counted:
            later = times[1:]
            if k > 64:                                # a long run of steps goes to the sketch as one array
                self.sketch.add(later, float(counted))
            else:
                self.gaps.extend(later)
                self.weights.extend([float(counted)] * (k - 1))
            longest = float(np.max(later)) if k > 64 else max(later)
            for i in run:
                if longest > self.gap[i]:
                    self.gap[i] = longest
        self._flush()
        self._advance(total, b)
        now = self.now
        finished = []
        for i in run:
            self.last[i] = now
            self.ctx[i] += k
            self.left[i] -= k
            if self.left[i] <= 0:
                finished.append(i)
        if self.paged:
            self.kv_used += k * b
        for i in finished:
            self._finish(i)

    @staticmethod
    def _steps(line: list[tuple[float, float, float, float]], const: float, k: int, horizon: float
               ) -> list[float] | np.ndarray:
        """The times of up to k decode steps, stopping at the first step that ends at or past ``horizon`` (an
        array when more than 64, a list otherwise)."""
        if k > 64:                                    # many steps: one vectorized pass, the horizon searched
            times = IterationCost.steps(line, const, k)
            if horizon != math.inf:
                times = times[:int(np.searchsorted(np.cumsum(times), horizon)) + 1]
            return times if len(times) > 64 else times.tolist()
        out: list[float] = []
        elapsed = 0.0
        for s in range(k):
            t = const
            for c0, cs, m0, ms in line:
                c, m = c0 + cs * s, m0 + ms * s
                t += c if c > m else m
            out.append(t)
            elapsed += t
            if elapsed >= horizon:
                break
        return out

    def _arrival_matters(self) -> bool:
        """Whether the next arrival could change the batch (an idle slot for it, or chunked prefills)."""
        if self.s.policy == "static" or self.decode_only and self.s.policy != "disaggregated":
            return False
        return len(self.running) < self.s.max_seqs

    def _preempt(self) -> None:
        i = self.running.pop()
        self.kv_used -= self._held(i)
        self.preemptions += 1
        if self.s.preemption == "swap" or self.decode_only:   # a decode instance cannot prefill: it swaps
            self.swapped[i] = True
            self.now += self.ctx[i] * self.cost.kv_bytes_per_token / self.s.host_link_bytes_per_s
        else:                                          # recompute: its prompt and tokens so far, prefilled again
            self.pre[i] = self.ctx[i] - self.base[i]
            self.ctx[i] = self.base[i]
        self.waiting.appendleft(i)

    def _join_decodes(self) -> None:
        """Disaggregated decode pool: arrived requests join the batch with their KV (no prefill here)."""
        while self.waiting and self._admissible(self.waiting[0]):
            i = self.waiting.popleft()
            self._admit(i)
            if self.swapped[i]:                       # back from host memory over the link
                self.now += self.ctx[i] * self.cost.kv_bytes_per_token / self.s.host_link_bytes_per_s
                self.swapped[i] = False
            self.started[i] = self.charged[i] = True

    def run(self) -> Outcome:
        """Every request through the scheduler, each loop iteration charged to the budget."""
        n = len(self.arrival)
        while True:
            self.budget.charge(ITERATION_STEPS + SEQUENCE_STEPS * len(self.running))
            self._arrive()
            if not self.running and not self.waiting:
                if self.next >= n:
                    return self._outcome()
                self.now = max(self.now, self.arrival[self.next])
                continue
            if self.decode_only:
                self._join_decodes()
                if self.running:
                    self._decode_jump()
                elif self.waiting:
                    raise ValueError("a request's KV does not fit the decode instance")
                continue
            if self.s.policy == "chunked":
                if self.prefilling or self.waiting and self._admissible(self.waiting[0]):
                    self._chunked()
                elif self.running:
                    self._decode_jump()
                else:
                    raise ValueError("a request's KV does not fit the GPU's free memory")
                continue
            idle = not self.running
            if self.waiting and (idle or self.s.policy != "static") and self._admissible(self.waiting[0]):
                self._prefill_batch()
            elif self.running:
                self._decode_jump()
            else:
                raise ValueError("a request's KV does not fit the GPU's free memory")

    def _outcome(self) -> Outcome:
        self._flush(force=True)
        return Outcome(np.array(self.first), np.array(self.done), np.array(self.gap), self.sketch,
                       self.busy_s, self.batch_seconds, self.preemptions)


def _prefill_pool(req: Requests, cost: IterationCost, sched: Scheduler, budget: Budget | None) -> np.ndarray:
    """Disaggregated prefill: each request's prefill completion time on its instance (round robin)."""
    done = np.empty(len(req))
    for k in range(sched.prefill_gpus):
        idx = np.arange(k, len(req), sched.prefill_gpus)
        e = _Engine(req.take(idx), cost, Scheduler(policy="continuous", max_seqs=sched.max_seqs,
                                                   max_batched_tokens=sched.max_batched_tokens), budget=budget)
        e.left = [1.0] * len(idx)                       # a prefill instance emits the first token and is done
        done[idx] = e.run().first
    return done


def simulate(req: Requests, cost: IterationCost, sched: Scheduler, decode_cost: IterationCost | None = None,
             measured: np.ndarray | None = None, budget: Budget | None = None) -> Outcome:
    """Every request through the scheduler: first-token and completion times, token gaps (of the ``measured``
    requests only, when given: the warm-up's are left out); the work charged to ``budget`` (ValueError once it
    is spent)."""
    if sched.policy != "disaggregated":
        return _Engine(req, cost, sched, measured=measured, budget=budget).run()
    first = _prefill_pool(req, cost, sched, budget)
    transfer = req.prompt * cost.kv_bytes_per_token / sched.link_bytes_per_s + sched.link_latency_s
    out = Outcome(first, np.full(len(req), np.nan), np.zeros(len(req)))
    ready = first + transfer
    multi = req.output > 1
    for k in range(sched.decode_gpus):
        idx = np.flatnonzero(multi)[k::sched.decode_gpus]
        idx = idx[np.argsort(ready[idx], kind="stable")]
        sub = Requests(ready[idx], req.prompt[idx], req.output[idx] - 1)
        e = _Engine(sub, decode_cost or cost, sched, decode_only=True, first=first[idx],
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
