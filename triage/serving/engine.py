"""One engine instance's event loop: the waiting queue, the running batch and the KV it holds, iteration by
iteration, each iteration priced by the cost model (model/iteration.py); what an iteration does is its
scheduling policy's (policies/).

KV memory is paged (a sequence holds its tokens / (1 - waste)) or reserved at admission (Orca and
FasterTransformer: the true length, the output rounded up to a power of two, or the model's maximum length;
Kwon et al. 2023 §6.1). When a growing paged batch runs out, the latest admitted sequence is preempted
(recompute: it re-prefills its prompt and the tokens so far; swap: its KV goes to host memory and back over
the host link). Prefix caching prefills and holds a shared prompt prefix once.

Between arrivals, completions and memory exhaustion a batch of decodes advances in one pass: each group's
sides are linear in the step (contexts grow by one token a step), so the k steps to the next event are priced
together, and the Python loop runs once per event, not per token. The sequences that ran every such pass since
they joined the batch advance as one cohort (its steps, longest gaps and last token kept once), so a pass
visits only the sequences admitted since the last one, not the whole batch.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from heapq import heappop, heappush
from itertools import accumulate
from typing import Protocol

import numpy as np

from ..inputs.traffic import Scheduler
from ..model.iteration import IterationCost
from .budget import ITERATION_STEPS, SEQUENCE_STEPS, SIMULATION_STEPS, Budget
from .outcome import GapSketch, Outcome
from .requests import Requests

WATERMARK = 0.01             # share of the KV cache an admission leaves free (vLLM's watermark default, assumed)
FLUSH = 1 << 16              # token gaps gathered as Python floats before they move into the sketch
JUMP = 1 << 20               # decode steps one jump prices at most (its step times are one array)
ARRAYED = 64                 # a jump's step times beyond this many are computed as arrays (cheaper than a list)
LISTED = 1 << 12             # a jump's step times up to this many are Python floats (cheaper to sum, take the
                             # largest of and gather than an array below a few thousand), an array beyond


class Scheduling(Protocol):
    """What the engine asks of its scheduling policy: one iteration, and whether the next arrival can change the
    batch. The policies (policies/) implement it and import the engine; the engine imports none of them."""

    def step(self, e: Engine) -> None: ...

    def arrival_matters(self, e: Engine) -> bool: ...


class Engine:
    """One instance's state: the waiting queue, the running batch and the KV it holds. Per-request state is
    kept in plain lists (the loop touches a few entries an event; numpy's per-call cost would dominate)."""

    def __init__(self, req: Requests, cost: IterationCost, sched: Scheduler, policy: Scheduling,
                 decode_only: bool = False, first: np.ndarray | None = None, measured: np.ndarray | None = None,
                 budget: Budget | None = None):
        self.req, self.cost, self.s, self.policy = req, cost, sched, policy
        self.budget = budget if budget is not None else Budget()
        self.budget.charge(SIMULATION_STEPS)          # its fixed cost, whatever its requests
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
        self.released = req.clients      # closed loop: requests sent so far (the next one goes when one completes)
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
        # multi-step scheduling (vLLM's num_scheduler_steps): a scheduler call runs this many decode steps; a
        # waiting request starts at the call's end, and a sequence that finishes inside it keeps its slot, its KV
        # and its share of the steps (``spent``) to the end
        self.call_steps = sched.scheduler_steps
        self.call_left = 0               # decode steps the running call has left
        self.spent: list[bool] = [False] * n
        # the cohort: running sequences that have run every decode jump since they joined it (all of the batch but
        # those admitted since the last jump, ``fresh``), advanced together: a jump adds its steps to ``steps``
        # and its longest gap to ``tops``, and a member's own context, tokens left, last token and longest gap
        # are settled from them when it leaves (it finishes, is preempted, or a chunked iteration reads it)
        self.fresh: list[int] = []       # running, not in the cohort, in admission order
        self.member = [False] * n
        self.members = self.members_measured = 0
        self.steps = 0                   # decode steps the cohort has run
        self.tops: list[float] = []      # per jump, the longest gap a member had in it
        self.cohort_end = 0.0            # when the cohort last emitted
        self.cohort_ctx = 0.0            # Σ over members of (context − steps) when it joined: Σ context = this
                                         # + members × steps (whole tokens: exact in any order)
        self.joined = [(0, 0, 0)] * n    # (steps, len(tops), join number) when it joined
        self.joins = 0
        self.ends: list[tuple[int, int, int, int]] = []   # heap of (steps when its tokens run out, admission
        self.admission = [0] * n                          # number, id, join number)
        self.admitted = 0

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

    def admissible(self, i: int, extra: int = 0) -> bool:
        """A free sequence slot and the KV for it, leaving (paged) room for the running batch's next token and a
        watermark of the cache (vLLM's 1 %), so an admission does not force a preemption at once."""
        if len(self.running) + extra >= self.s.max_seqs:
            return False
        spare = len(self.running) + extra + WATERMARK * self.kv_cap if self.paged else 0.0
        return self.kv_used + self._need(i) + spare <= self.kv_cap

    def admit(self, i: int) -> None:
        self.running.append(i)
        self.fresh.append(i)
        self.admission[i] = self.admitted
        self.admitted += 1
        self.kv_used += self._need(i)
        if self.pre[i] > 0:
            self.prefilling += 1

    # -- iterations ------------------------------------------------------------------------------------------
    def advance(self, t: float, batch: int) -> None:
        self.now += t
        self.busy_s += t
        self.batch_seconds += t * batch

    def emit(self, ids: list[int]) -> None:
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
        """Request i emitted its last token: (closed loop) its client sends the next request now; it leaves the
        batch now, or at the end of the multi-step call it is in (holding its slot and KV to then)."""
        self.done[i] = self.now
        if self.released and self.released < len(self.arrival):
            self.arrival[self.released] = self.now
            self.released += 1
        if self.call_left > 0:
            self.spent[i] = True
        else:
            self._release(i)

    def _release(self, i: int) -> None:
        self._leave(i)
        self.running.remove(i)
        self.kv_used -= self._held(i)

    # -- the cohort ------------------------------------------------------------------------------------------
    def _leave(self, i: int) -> None:
        """Running sequence i leaves the batch: settled if a member, else out of ``fresh``."""
        if self.member[i]:
            self._settle(i)
        else:
            self.fresh.remove(i)

    def _settle(self, i: int) -> None:
        """Member i's own state from the cohort's (it leaves the cohort, not the batch): its context and tokens
        left moved by the steps since it joined, its last token the cohort's, its longest gap the longest of the
        jumps since."""
        steps, top, _ = self.joined[i]
        moved = self.steps - steps
        self.cohort_ctx -= self.ctx[i] - steps
        self.ctx[i] += moved
        self.left[i] -= moved
        self.last[i] = self.cohort_end
        if top < len(self.tops):
            longest = max(self.tops[top:])
            if longest > self.gap[i]:
                self.gap[i] = longest
        self.member[i] = False
        self.members -= 1
        self.members_measured -= self.measured[i]

    def settle(self) -> None:
        """Every member settled: the whole batch's state as its own (a chunked iteration reads it)."""
        if self.members:
            for i in self.running:
                if self.member[i]:
                    self._settle(i)
            self.fresh = list(self.running)

    def _join(self) -> None:
        """The fresh sequences, having run the jump that just ended, join the cohort."""
        for i in self.fresh:
            self.member[i] = True
            self.joins += 1
            self.joined[i] = (self.steps, len(self.tops), self.joins)
            self.cohort_ctx += self.ctx[i] - self.steps
            self.members += 1
            self.members_measured += self.measured[i]
            heappush(self.ends, (self.steps + int(self.left[i]), self.admission[i], i, self.joins))
        self.fresh = []

    def _next_end(self) -> float:
        """Decode steps until the first member runs out of tokens (inf with no member); stale entries dropped."""
        ends = self.ends
        while ends and not (self.member[ends[0][2]] and self.joined[ends[0][2]][2] == ends[0][3]):
            heappop(ends)
        return ends[0][0] - self.steps if ends else math.inf

    def decode_jump(self) -> None:
        """Decode steps of the running batch up to the next event: the steps' times from one decode line. Under
        multi-step scheduling the events are the call's end and the completions inside it (a finished sequence
        runs on, emitting nothing, to the call's end); arrivals wait for the call's end."""
        multi = self.call_steps > 1
        if multi and self.call_left == 0:             # a new scheduler call
            # vLLM takes a call's KV for all its steps when it schedules it (lookahead slots), preempting the
            # latest sequences until the rest fit ("while not self._can_append_slots(seq_group, ...)",
            # vllm/core/scheduler.py, _schedule_running, ROCm/vllm @ f8c9a38); one sequence runs what room it has
            while self.paged and len(self.running) > 1 and \
                    self.kv_cap - self.kv_used < len(self.running) * self.call_steps:
                self.preempt()
            self.call_left = self.call_steps
        run = self.running
        b = len(run)
        ctx, left, last, gap, measured = self.ctx, self.left, self.last, self.gap, self.measured
        if multi:                                     # the sequences that emit; every one advanced here
            live = [i for i in run if not self.spent[i]]
            k = min(max(int(min(map(left.__getitem__, live))), 1), JUMP) if live else JUMP
            k = min(k, self.call_left)
        else:                                         # the cohort advanced as one, the fresh ones here
            live = self.fresh
            soon = min(map(left.__getitem__, live)) if live else math.inf
            k = min(max(int(min(soon, self._next_end())), 1), JUMP)
        if self.paged:
            room = self.kv_cap - self.kv_used
            if room < b:                              # the batch cannot grow one token: end the call, then
                if multi and len(live) < b:           # preempt the latest
                    self._end_call()
                else:
                    self.preempt()
                return
            k = min(k, int(room // b))
        held = sum(map(ctx.__getitem__, run)) if multi else (
            self.cohort_ctx + self.members * self.steps + sum(map(ctx.__getitem__, live)))
        line, const = self.cost.decode_line(b, held)
        arrives = self.next < len(self.arrival) and not multi and self.policy.arrival_matters(self)
        horizon = self.arrival[self.next] - self.now if arrives else math.inf
        times = self.step_times(line, const, k, horizon)
        k = len(times)
        self.budget.charge(k)
        listed = k <= LISTED
        total = sum(times) if listed else float(np.sum(times))
        later = times[1:]
        longest = (max(later) if listed else float(np.max(later))) if k > 1 else 0.0
        # the first step's gap: one step for those that ran the last iteration, longer for those that waited
        # (the cohort's members all ran the same iterations: one gap for them all); each one's longest gap,
        # its context and tokens left
        t0 = times[0]
        now, end = self.now, self.now + total
        waited = t0 * (1 + 1e-9)
        start = now + t0
        steady = counted = 0                          # measured sequences whose first gap is one step; of the batch
        done: list[int] = []
        if self.members:
            g = start - self.cohort_end
            many = self.members_measured
            if g > waited:
                self.gaps.extend([g] * many)
                self.weights.extend([1.0] * many)
            else:
                steady += many
                g = t0
            counted += many
            self.tops.append(longest if longest > g else g)
            self.steps += k
            ends = self.ends
            out = []
            while ends and ends[0][0] <= self.steps:
                _, order, i, join = heappop(ends)
                if self.member[i] and self.joined[i][2] == join:
                    out.append((order, i))
            done = [i for _, i in sorted(out)]
        add_gap, add_weight = self.gaps.append, self.weights.append
        for i in live:
            g = start - last[i]
            if g > waited:
                if measured[i]:
                    counted += 1
                    add_gap(g)
                    add_weight(1.0)
            else:
                if measured[i]:
                    counted += 1
                    steady += 1
                g = t0
            if longest > g:
                g = longest
            if g > gap[i]:
                gap[i] = g
            last[i] = end
            ctx[i] += k
            r = left[i] - k
            left[i] = r
            if r <= 0:
                done.append(i)
        if steady:
            self.gaps.append(t0)
            self.weights.append(float(steady))
        if k > 1 and counted:
            if listed:
                self.gaps.extend(later)
                self.weights.extend([float(counted)] * (k - 1))
            else:                                     # a long run of steps goes to the sketch as one array
                self.sketch.add(later, float(counted))
        self._flush()
        self.advance(total, b)
        if multi:                                     # the finished ones of the call compute on, thrown away
            for i in run:
                if self.spent[i]:
                    self.ctx[i] += k
        if self.paged:
            self.kv_used += k * b
        if multi:
            self.call_left -= k
        for i in done:
            self._finish(i)
        if multi:
            if self.call_left == 0:
                self._end_call()
        else:                                         # every one of the batch emitted at the jump's end
            self.cohort_end = end
            self._join()

    def _end_call(self) -> None:
        """A multi-step call ends: the sequences that finished inside it leave the batch."""
        self.call_left = 0
        for i in [i for i in self.running if self.spent[i]]:
            self._release(i)

    @staticmethod
    def step_times(line: list[tuple[float, float, float, float]], const: float, k: int, horizon: float
               ) -> list[float] | np.ndarray:
        """The times of up to k decode steps, stopping at the first step that ends at or past ``horizon`` (an
        array when more than LISTED, a list otherwise; computed as an array beyond ARRAYED). A step's time is the
        constant plus, per group, the larger of its compute and memory lines; between the steps where a group's
        larger line changes, the steps' times are one line, written out as one (a few switches at most, not k x
        groups comparisons). The lines only grow (contexts do), so no step is shorter than the first: the
        horizon is crossed within horizon / first + 1 steps, and no more are written."""
        a, b = const, 0.0
        switches: list[tuple[int, float, float]] = []   # (first step, the time's change there, its slope's)
        for c0, cs, m0, ms in line:
            if c0 > m0:                               # compute's line first; memory's from where it is larger
                a += c0
                b += cs
                if ms > cs:
                    switches.append((math.floor((c0 - m0) / (ms - cs)) + 1, m0 - c0, ms - cs))
            else:
                a += m0
                b += ms
                if cs > ms:
                    switches.append((math.floor((m0 - c0) / (cs - ms)) + 1, c0 - m0, cs - ms))
        if horizon != math.inf and a > 0:
            k = min(k, max(int(horizon // a) + 2, 1))
        lines = []                                    # (first step, past its last, time at step 0, slope)
        start = 0
        for at, da, db in sorted(switches):
            if at >= k:
                break
            lines.append((start, at, a, b))
            a, b, start = a + da, b + db, at
        lines.append((start, k, a, b))
        if k > ARRAYED:
            times = np.concatenate([a + b * np.arange(s0, s1, dtype=float) for s0, s1, a, b in lines])
            if horizon != math.inf:
                times = times[:int(np.searchsorted(np.cumsum(times), horizon)) + 1]
            return times if len(times) > LISTED else times.tolist()
        out = [a + b * s for s0, s1, a, b in lines for s in range(s0, s1)]
        if horizon != math.inf:
            out = out[:bisect_left(list(accumulate(out)), horizon) + 1]
        return out

    def preempt(self) -> None:
        """Make room: the latest admitted sequence leaves the batch, its KV swapped to host memory or its
        tokens to be prefilled again."""
        i = self.running[-1]
        self._leave(i)
        self.running.pop()
        self.kv_used -= self._held(i)
        self.preemptions += 1
        if self.s.preemption == "swap" or self.decode_only:   # a decode instance cannot prefill: it swaps
            self.swapped[i] = True
            self.now += self.ctx[i] * self.cost.kv_bytes_per_token / self.s.host_link_bytes_per_s
        else:                                          # recompute: its prompt and tokens so far, prefilled again
            self.pre[i] = self.ctx[i] - self.base[i]
            self.ctx[i] = self.base[i]
        self.waiting.appendleft(i)

    def run(self) -> Outcome:
        """Every request through the scheduler, each loop iteration charged to the budget: the policy decides
        what an iteration does once a request is running or waiting."""
        n = len(self.arrival)
        while True:
            self.budget.charge(ITERATION_STEPS + SEQUENCE_STEPS * len(self.running))
            self._arrive()
            if not self.running and not self.waiting:
                if self.next >= n:
                    return self._outcome()
                self.now = max(self.now, self.arrival[self.next])
                continue
            self.policy.step(self)

    def _outcome(self) -> Outcome:
        self._flush(force=True)
        return Outcome(np.array(self.first), np.array(self.done), np.array(self.gap), self.sketch,
                       self.busy_s, self.batch_seconds, self.preemptions,
                       np.array(self.arrival) if self.released else None)
