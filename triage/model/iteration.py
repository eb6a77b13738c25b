"""One scheduler iteration's time from the cost model: a batch mixing decodes and prefill chunks.

An iteration is summed by five statistics: T new tokens, R sequences that emit a token (logit rows), D KV
tokens the decodes and chunks read, P query-key pairs the prefill chunks attend, and the fixed costs. Each
group's FLOPs, vector ops and bytes are affine in (T, R, D, P); the coefficients are read off the cost
model's own ``step_cost`` at five probe steps of the cell (decode at batch 1 and 2, a longer context, a
prefill of 1 and 2 tokens), so the serving simulation prices exactly what a step prices (a pure decode of B
sequences at context C, a prefill of one prompt: ``tests/serving/test_serving.py``).

A mixture of experts reads, of its routed experts, the share its T tokens touch, 1 − (1 − k/E)^T (roofline.py:
experts_touched_fraction): k of E experts at one token, all of them at a large batch. That share is not affine in
T, so the routed experts' weight reads (and their dequantization) are kept apart: the affine coefficients are
fitted with them left out, and each iteration adds them at its own token count. (The embedding rows a step reads
also saturate, at the table's size, which only a step of more tokens than the vocabulary reaches.)
"""

from __future__ import annotations

from dataclasses import field, replace

import numpy as np

from ..records import record
from .roofline import GROUPS, Machine, StepInputs, comm_time, experts_touched_fraction, group_times, step_cost

# one group's decode line at a batch size, what does not move with the contexts: compute at no context, per
# context token, the experts' compute, its growth a step; memory's four the same; attention's occupancy scale
LineParts = tuple[float, float, float, float, float, float, float, float, float]

LINEAR = GROUPS.index("linear")
ATTENTION = GROUPS.index("attention")

# probe steps: (decode, batch, context); the statistics (T, R, D, P) each one has, for a context C0, C0 + dC
_C0, _DC = 64.0, 64.0
_PROBES = ((True, 1.0, _C0), (True, 2.0, _C0), (True, 1.0, _C0 + _DC), (False, 1.0, 1.0), (False, 1.0, 2.0))
_STATS = np.array([[1, 1, 1, _C0, 0], [1, 2, 2, 2 * _C0, 0], [1, 1, 1, _C0 + _DC, 0],
                   [1, 1, 1, 0, 1], [1, 2, 1, 0, 3]], dtype=float)          # columns: 1, T, R, D, P


@record
class IterationCost:
    """Seconds of one iteration as Σ_g max(compute_g, memory_g) + all-reduces + fixed, each side affine in
    the iteration's statistics; ``kv_bytes_per_token`` and ``free_bytes`` are the memory a sequence's KV takes
    and the room for it (per GPU)."""

    compute: np.ndarray          # groups × 5 coefficients (seconds per unit of 1, T, R, D, P)
    memory: np.ndarray
    busy_per_decode: float       # share of the SMs one decode sequence's attention keeps busy (1 with split KV)
    comm: np.ndarray             # 2 coefficients: 1, T
    step_s: float                # fixed per iteration: the step overhead and the layers' launches
    request_s: float             # fixed per iteration that starts new requests (their first prefill chunks),
                                 # however many: what the step model charges a prefill step of any batch, and
                                 # what calibration fits (a TTFT row of batch B pays it once)
    sequence_s: float            # fixed per sequence an iteration carries (R): sampling, detokenizing, scheduling
    kv_bytes_per_token: float
    free_bytes: float            # HBM left for KV after weights and reserve
    # a mixture of experts: the seconds of reading (memory) and dequantizing (compute) every routed expert, and
    # the share of them one token touches (k/E); an iteration of T tokens pays 1 − (1 − k/E)^T of each
    expert_memory_s: float = 0.0
    expert_compute_s: float = 0.0
    expert_share: float = 0.0
    weight_bytes: float = 0.0    # the weights a GPU holds (what pipeline stages spread further)
    # the coefficients as plain floats, for the per-iteration paths
    _compute: list[list[float]] = field(init=False, repr=False, compare=False)
    _memory: list[list[float]] = field(init=False, repr=False, compare=False)
    # a decode line's parts that do not move with the contexts, per batch size (decode_line)
    _lines: dict[int, tuple[list[LineParts], float]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compute", self.compute.tolist())
        object.__setattr__(self, "_memory", self.memory.tolist())
        object.__setattr__(self, "_lines", {})

    def touched(self, tokens: float) -> float:
        """The share of the routed experts an iteration of ``tokens`` tokens reads (0 for a dense model): the
        cost model's experts_touched_fraction, for k/E = ``expert_share``."""
        return float(experts_touched_fraction(tokens, 1.0, self.expert_share)) if self.expert_share else 0.0

    def decode_line(self, b: int, d0: float) -> tuple[list[tuple[float, float, float, float]], float]:
        """Decode-only iterations of b sequences whose contexts sum to d0 at the first and grow by b a step: per
        group (compute at step 0, its growth a step, memory at step 0, its growth), and the constant seconds.
        Every step of the line has b tokens, so its routed experts' share is one value. What does not move with
        the contexts is worked out once per batch size (a simulation asks for the same few thousands of times)."""
        if b not in self._lines:
            occupancy = max(min(1.0, b * self.busy_per_decode), 1e-9)
            experts = self.touched(b)
            per: list[LineParts] = []
            for g, (c, m) in enumerate(zip(self._compute, self._memory, strict=True)):
                linear = g == LINEAR
                scale = 1.0 / occupancy if g == ATTENTION else 1.0
                per.append((c[0] + (c[1] + c[2]) * b, c[3], self.expert_compute_s * experts if linear else 0.0,
                            c[3] * b, m[0] + (m[1] + m[2]) * b, m[3], self.expert_memory_s * experts if linear
                            else 0.0, scale, m[3] * b * scale))
            self._lines[b] = (per, float(self.comm[0] + self.comm[1] * b + self.step_s + self.sequence_s * b))
        per, const = self._lines[b]
        return [((c0 + c3 * d0) + ce, cs, ((m0 + m3 * d0) + me) * scale, ms)
                for c0, c3, ce, cs, m0, m3, me, scale, ms in per], const

    def scalar(self, t: float, r: float, d: float, p: float, new_requests: float) -> float:
        """``time`` of one iteration, in plain floats (the simulation's per-iteration path)."""
        total = 0.0
        experts = self.touched(t)
        for k, ((c0, c1, c2, c3, c4), (m0, m1, m2, m3, m4)) in enumerate(zip(self._compute, self._memory, strict=True)):
            c = c0 + c1 * t + c2 * r + c3 * d + c4 * p
            m = m0 + m1 * t + m2 * r + m3 * d + m4 * p
            if k == LINEAR:
                c += self.expert_compute_s * experts
                m += self.expert_memory_s * experts
            if k == ATTENTION and p <= 0:
                m /= max(min(1.0, r * self.busy_per_decode), 1e-9)
            total += c if c > m else m
        return (total + self.comm[0] + self.comm[1] * t + self.step_s + self.sequence_s * r
                + (self.request_s if new_requests > 0 else 0.0))

    @property
    def kv_tokens(self) -> float:
        """KV tokens the free memory holds."""
        return max(self.free_bytes, 0.0) / self.kv_bytes_per_token


def _probe(x: StepInputs) -> StepInputs:
    """The cell's inputs at the five probe steps (one cell in, five out)."""
    n = len(_PROBES)
    decode = np.array([p[0] for p in _PROBES])
    batch = np.array([p[1] for p in _PROBES])
    context = np.array([p[2] for p in _PROBES])
    one = x.take(np.zeros(n, dtype=int))
    return replace(one, decode=decode, batch=batch, context=context, kv_read_tokens=context,
                   kv_stored_tokens=context, query_tokens=np.asarray(1.0), prefix_fraction=np.asarray(0.0))


def iteration_cost(x: StepInputs, hw: Machine, ceff: dict[str, float], beff: dict[str, float], step_s: float,
                   layer_s: float, request_s: float, sequence_s: float, capacity: float, reserve: float
                   ) -> IterationCost:
    """The iteration model of one cell (``x`` and ``hw`` hold that one cell) at its efficiencies per group and
    fixed costs; KV per token inflated by the cell's fragmentation (memory_waste)."""
    probe = _probe(x)
    first = Machine(*(np.ravel(getattr(hw, f))[0] for f in ("peak", "vector_peak", "bandwidth", "link_bandwidth",
                                                            "link_latency", "sms")))
    # the routed experts' reads apart (not affine in the tokens): the FLOPs of the experts the tokens use are
    # (k/E of them per token), so they stay in the fit; their bytes and dequantization come in per iteration
    cost = step_cost(probe)
    routed = float(np.ravel(x.routed_expert_params)[0])
    if routed:
        reads = step_cost(replace(probe, routed_expert_params=np.asarray(0.0)))
        cost = replace(cost, bytes=reads.bytes, vector_ops=reads.vector_ops)
    sides = group_times(cost, first.peak, first.bandwidth, ceff, beff, first.vector_peak)
    inv = np.linalg.inv(_STATS)
    compute = np.stack([inv @ np.broadcast_to(sides[g][0], (len(_PROBES),)) for g in GROUPS])
    memory = np.stack([inv @ np.broadcast_to(sides[g][1], (len(_PROBES),)) for g in GROUPS])
    comm = comm_time(probe, first.link_bandwidth, first.link_latency)
    comm_coef = np.array([2 * comm[0] - comm[1], comm[1] - comm[0]])          # batch 1 and 2 decodes: T = 1, 2
    per_token = float(np.ravel(x.kv_elements_per_token * x.kv_stored_bpe / x.tp)[0])
    head = x.stored_params - x.body_params - x.routed_expert_params
    weights = float(np.ravel(((x.stored_params - head) * x.weight_stored_bpe + head * x.head_stored_bpe) / x.tp)[0])
    layers = float(np.ravel(x.layers)[0])
    split = bool(np.ravel(x.split_kv)[0])
    busy = 1.0 if split or not np.isfinite(first.sms) else float(np.ravel(x.heads / x.tp)[0]) / float(first.sms)
    waste = float(np.ravel(x.memory_waste)[0])
    tp = float(np.ravel(x.tp)[0])
    expert_memory = routed * float(np.ravel(x.weight_read_bpe)[0]) / tp / (first.bandwidth * beff["linear"])
    dequant = routed * float(np.ravel(x.dequant_weight_ops)[0]) / tp
    expert_compute = dequant / first.vector_peak / ceff["linear"] if dequant else 0.0
    share = float(np.ravel(np.divide(x.experts_per_token, np.maximum(x.experts, 1.0)))[0]) if routed else 0.0
    return IterationCost(compute, memory, busy, comm_coef, step_s + layer_s * layers, request_s, sequence_s,
                         per_token / (1.0 - waste), capacity - weights - reserve, float(expert_memory),
                         float(expert_compute), share, weights)
