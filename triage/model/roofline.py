"""The roofline cost model of one inference step, vectorized over every cell of the matrix.

Symbols (all numpy arrays, one value per cell, SI base units):
  B batch (sequences), q query tokens per sequence in a decode step (1, or γ+1
  when verifying speculated tokens), T context (tokens of KV per sequence),
  P prompt tokens, L layers, H query heads, d head dim, h hidden size,
  V vocabulary, E KV elements per token (2·L·H_kv·d; MLA: L·(d_c + d_rope)),
  b_w / b_kv / b_a bytes per weight, KV element and activation, N the
  tensor-parallel degree.

Per operator group g (linear layers, attention, LM head, the rest) the time is
the roofline of Williams, Waterman & Patterson (2009):
    t_g = max((FLOPs_g / peak + vector_ops_g / vector_peak) / compute_eff,
              bytes_g / (BW · bandwidth_eff))
and a step costs Σ_g t_g plus the tensor-parallel all-reduces. Bytes count
compulsory HBM traffic only — weights, KV, embedding rows, logits — with
activations assumed to stay on chip (fused kernels), which is what makes this
a lower bound. Vector ops are work on the non-tensor units: dequantization.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field, fields, replace
from typing import Any

import numpy as np

from ..records import record

GROUPS = ("linear", "attention", "lm_head", "other")
PerGroup = Mapping[str, float | np.ndarray]   # a value for each of GROUPS: a float, or a column over the cells
LOGIT_BYTES = 4.0  # logits are written in fp32
ALLREDUCES_PER_LAYER = 2  # Megatron tensor parallelism: after attention and after the MLP (Shoeybi et al. 2019)


@record
class StepInputs:
    """One variant (baseline or claim) of every cell.

    ``decode``, ``batch`` and ``context`` have one entry per cell; every other
    field is either that or a 0-d array when all cells share the value (a
    model's layer count over a sweep), so numpy broadcasts instead of
    streaming a million copies of one number.
    """

    decode: np.ndarray
    batch: np.ndarray
    context: np.ndarray
    layers: np.ndarray
    heads: np.ndarray
    kv_heads: np.ndarray
    head_dim: np.ndarray
    mla: np.ndarray                  # bool: multi-head latent attention (its cache has no heads)
    hidden: np.ndarray
    intermediate: np.ndarray         # MLP width a token passes through
    vocab: np.ndarray
    kv_elements_per_token: np.ndarray
    pair_flops_decode: np.ndarray    # attention FLOPs per query-key pair, all layers
    pair_flops_prefill: np.ndarray
    window: np.ndarray               # sliding window in tokens (inf: none)
    window_fraction: np.ndarray      # fraction of layers that use it
    experts: np.ndarray              # routed experts per MoE layer (0: dense)
    experts_per_token: np.ndarray
    routed_expert_params: np.ndarray
    body_params: np.ndarray
    lm_head_params: np.ndarray
    embedding_params: np.ndarray
    stored_params: np.ndarray
    weight_read_bpe: np.ndarray      # bytes per body weight as the kernels read it
    weight_stored_bpe: np.ndarray    # bytes per body weight as stored in HBM
    head_read_bpe: np.ndarray        # LM head and embedding (often kept in 16 bits)
    head_stored_bpe: np.ndarray
    kv_read_bpe: np.ndarray
    kv_stored_bpe: np.ndarray
    act_bpe: np.ndarray
    kv_read_tokens: np.ndarray       # KV tokens read per sequence per decode step
    kv_stored_tokens: np.ndarray     # KV tokens held per sequence
    linear_flops_mult: np.ndarray
    attention_flops_mult: np.ndarray
    eager: np.ndarray                # bool: attention scores are written to HBM
    split_kv: np.ndarray             # bool: decode attention splits the KV (full occupancy)
    memory_waste: np.ndarray         # fraction of KV memory lost to fragmentation
    query_tokens: Any = field(default_factory=lambda: np.asarray(1.0))     # decode queries per sequence
    prefix_fraction: Any = field(default_factory=lambda: np.asarray(0.0))  # prompt share found in a cache
    kv_metadata: Any = field(default_factory=lambda: np.asarray(0.0))      # metadata read, share of stored KV
    score_bytes_mult: Any = field(default_factory=lambda: np.asarray(1.0))
    dequant_kv_ops: Any = field(default_factory=lambda: np.asarray(0.0))       # vector ops per KV element read
    dequant_weight_ops: Any = field(default_factory=lambda: np.asarray(0.0))   # vector ops per weight read
    tp: Any = field(default_factory=lambda: np.asarray(1.0))                   # tensor-parallel GPUs
    linear_peak_mult: Any = field(default_factory=lambda: np.asarray(1.0))     # int8/fp8 GEMMs: peak × this
    attention_peak_mult: Any = field(default_factory=lambda: np.asarray(1.0))  # fp8 attention: peak × this
    transform_ops: Any = field(default_factory=lambda: np.asarray(0.0))        # rotation vector ops per token
    utilization: Any = field(default_factory=lambda: np.asarray(1.0))          # useful share of batch slots

    def with_batch(self, batch: np.ndarray) -> StepInputs:
        """The same cells at another batch size."""
        return replace(self, batch=np.asarray(batch, dtype=float))

    def take(self, idx: np.ndarray) -> StepInputs:
        """A subset of cells."""
        return StepInputs(**{f.name: at(getattr(self, f.name), idx) for f in fields(self)})


@record
class Machine:
    """The hardware side of every cell: dense peak, vector peak, HBM bandwidth, link, SMs."""

    peak: np.ndarray
    vector_peak: np.ndarray
    bandwidth: np.ndarray
    link_bandwidth: np.ndarray
    link_latency: np.ndarray
    sms: np.ndarray

    def take(self, idx: np.ndarray) -> Machine:
        return Machine(*(at(getattr(self, f.name), idx) for f in fields(self)))


def at(a: Any, idx: np.ndarray | int) -> np.ndarray:
    """``a[idx]`` for a per-cell column, ``a`` itself for a shared (0-d) one."""
    a = np.asarray(a)
    return a if a.ndim == 0 else a[idx]


def by_phase(decode: np.ndarray, on_decode: Callable[[], Any], on_prefill: Callable[[], Any]) -> Any:
    """np.where(decode, on_decode(), on_prefill()), evaluating only the phases present."""
    if decode.all():
        return on_decode()
    if not decode.any():
        return on_prefill()
    return np.where(decode, on_decode(), on_prefill())


NOTHING = np.zeros(())     # a group's count that is zero on every cell, kept 0-d: numpy broadcasts it for free


def _zeros() -> dict[str, np.ndarray]:
    return {g: NOTHING for g in GROUPS}


def _none(a: Any) -> bool:
    """A count that is zero on every cell as a 0-d value (its time is zero: nothing to divide)."""
    return np.ndim(a) == 0 and float(a) == 0.0


@record
class StepCost:
    """FLOPs, vector ops and HBM bytes of one step on one GPU, per operator group (one entry per cell).

    The totals over groups are summed once, when the cost is made: they are read for every cell.
    """

    flops: dict[str, np.ndarray]
    bytes: dict[str, np.ndarray]
    vector_ops: dict[str, np.ndarray] = field(default_factory=_zeros)
    peak_mult: PerGroup = field(default_factory=lambda: {g: 1.0 for g in GROUPS})
    total_flops: np.ndarray = field(init=False)
    total_bytes: np.ndarray = field(init=False)

    def take(self, idx: np.ndarray) -> StepCost:
        """The cost of a subset of cells."""
        return StepCost(*({g: at(part[g], idx) for g in GROUPS}
                          for part in (self.flops, self.bytes, self.vector_ops, self.peak_mult)))

    def __post_init__(self) -> None:
        object.__setattr__(self, "total_flops", np.asarray(sum(self.flops[g] for g in GROUPS), dtype=float))
        object.__setattr__(self, "total_bytes", np.asarray(sum(self.bytes[g] for g in GROUPS), dtype=float))


def tokens_per_step(x: StepInputs) -> np.ndarray:
    """New tokens a step pushes through the linear layers: B·q (decode) or B·P·(1 − prefix hit) (prefill)."""
    return by_phase(x.decode, lambda: x.batch * x.query_tokens,
                    lambda: x.batch * x.context * (1.0 - x.prefix_fraction))


def causal_pairs(prompt: Any, window: Any = np.inf) -> Any:
    """Query-key pairs of causal attention over P tokens, query i seeing min(i, W) keys.

    Σ_{i=1..P} min(i, W) = W'(W'+1)/2 + (P − W')·W' with W' = min(P, W); P(P+1)/2 without a window.
    """
    w = np.minimum(prompt, window)
    return w * (w + 1.0) / 2.0 + (prompt - w) * w


def prefill_pairs(x: StepInputs) -> np.ndarray:
    """Pairs a prefill computes: all P queries, minus those of a cached prefix, windowed on sliding layers."""
    def pairs(n: Any) -> Any:
        return (1.0 - x.window_fraction) * causal_pairs(n) + x.window_fraction * causal_pairs(n, x.window)

    return pairs(x.context) - pairs(x.context * x.prefix_fraction)


def attended_tokens(context: np.ndarray, window: Any, fraction: Any) -> np.ndarray:
    """KV tokens one decode step attends, averaged over layers: (1−f)·T + f·min(T, W) (Mistral's rolling cache)."""
    return (1.0 - fraction) * context + fraction * np.minimum(context, window)


def experts_touched_fraction(tokens: Any, experts: Any, top_k: Any) -> Any:
    """Expected share of a layer's E routed experts hit by ``tokens`` tokens each routed to k of them.

    With uniform routing an expert is missed by one token with probability 1 − k/E,
    so the expected distinct experts are E·(1 − (1 − k/E)^tokens): a batch of 1 reads
    k experts, a large batch reads them all (the bytes of an MoE step grow with batch).
    """
    share = np.divide(top_k, np.maximum(experts, 1.0))
    return 1.0 - (1.0 - share) ** tokens


def attention_score_bytes(batch: Any, heads: Any, queries: Any, keys: Any, act_bpe: Any) -> Any:
    """One materialized score matrix of one layer: B·H·T_q·T_k·b_a (course §2.4: 8.4 MB per head at T=2048)."""
    return batch * heads * queries * keys * act_bpe


def step_cost(x: StepInputs) -> StepCost:
    """FLOPs, vector ops and bytes per group and GPU, for decode (M = B·q) and prefill (M = B·P, causal).

    Attention FLOPs are 2·H·(d_qk + d_v) per query-key pair and layer: 4·L·H·d·T·B at decode.
    Tensor parallelism splits the weights, heads and KV of every group but the rest over N GPUs.
    """
    shape = x.batch.shape
    tokens = tokens_per_step(x)
    # linear layers: the dense body once per step; of the routed experts, those the step's tokens touch
    routed_share = np.divide(x.experts_per_token, np.maximum(x.experts, 1.0))
    active = x.body_params + x.routed_expert_params * routed_share
    lin_f = (2.0 * active * x.linear_flops_mult) * tokens
    # a dense model (no routed expert anywhere) reads its body whatever the batch: one value, not a column
    read_params = x.body_params if _none(x.routed_expert_params) else x.body_params + \
        x.routed_expert_params * experts_touched_fraction(tokens, x.experts, x.experts_per_token)
    lin_b = read_params * x.weight_read_bpe
    lin_v = NOTHING if _none(x.dequant_weight_ops) and _none(x.transform_ops) else \
        read_params * x.dequant_weight_ops + tokens * x.transform_ops

    # attention: decode reads T_read tokens of KV per sequence once for its q queries and writes q new ones;
    # prefill attends causally (within the window on sliding layers) and writes the new prompt tokens' KV.
    kv_row = x.kv_elements_per_token
    att_f = x.attention_flops_mult * by_phase(
        x.decode, lambda: x.pair_flops_decode * x.batch * x.query_tokens * x.kv_read_tokens,
        lambda: x.pair_flops_prefill * x.batch * prefill_pairs(x))
    kv_read = by_phase(x.decode, lambda: x.batch * kv_row * (x.kv_read_tokens * x.kv_read_bpe
                                                             + x.kv_metadata * x.kv_stored_tokens * x.kv_stored_bpe),
                       lambda: 0.0)
    kv_written = by_phase(x.decode, lambda: x.batch * x.query_tokens,
                          lambda: x.batch * x.context * (1.0 - x.prefix_fraction)) * kv_row * x.kv_stored_bpe
    att_b = kv_read + kv_written
    att_v = NOTHING if _none(x.dequant_kv_ops) else \
        by_phase(x.decode, lambda: x.batch * x.kv_read_tokens * kv_row * x.dequant_kv_ops, lambda: 0.0)
    if x.eager.any():
        # eager attention writes S, reads it for softmax, writes P, reads it for PV:
        # four passes over the score matrix per layer (Dao et al. 2022, Algorithm 0).
        queries = by_phase(x.decode, lambda: x.query_tokens, lambda: x.context * (1.0 - x.prefix_fraction))
        keys = by_phase(x.decode, lambda: x.kv_read_tokens, lambda: x.context)
        scores = 4.0 * x.layers * attention_score_bytes(x.batch, x.heads, queries, keys, x.act_bpe)
        att_b = att_b + np.where(x.eager, scores * x.score_bytes_mult, 0.0)

    # LM head: logits for each new query of a decode step, the last prompt position in prefill
    logit_rows = by_phase(x.decode, lambda: x.batch * x.query_tokens, lambda: x.batch)
    head_f = (2.0 * x.lm_head_params) * logit_rows
    head_b = x.lm_head_params * x.head_read_bpe

    # the rest: embedding lookup reads one row per token (never the whole table), logits out
    rows = np.minimum(tokens * x.hidden, x.embedding_params) * x.head_read_bpe
    other_b = rows + logit_rows * (x.vocab * LOGIT_BYTES)

    one_gpu = np.ndim(x.tp) == 0 and float(x.tp) == 1.0       # no division to make when nothing is sharded

    def full(a: Any, shard: bool = True) -> np.ndarray:
        return np.broadcast_to(np.asarray(a if one_gpu or not shard else a / x.tp, dtype=float), shape)

    return StepCost(
        flops={"linear": full(lin_f), "attention": full(att_f), "lm_head": full(head_f), "other": NOTHING},
        bytes={"linear": full(lin_b), "attention": full(att_b), "lm_head": full(head_b),
               "other": full(other_b, shard=False)},
        vector_ops={"linear": NOTHING if lin_v is NOTHING else full(lin_v),
                    "attention": NOTHING if att_v is NOTHING else full(att_v), "lm_head": NOTHING, "other": NOTHING},
        peak_mult={"linear": x.linear_peak_mult, "attention": x.attention_peak_mult, "lm_head": 1.0, "other": 1.0},
    )


def comm_time(x: StepInputs, link_bandwidth: Any, link_latency: Any) -> np.ndarray:
    """Tensor-parallel all-reduces of one step: 2 per layer of the new tokens' hidden states.

    A ring all-reduce of S bytes over N GPUs moves 2(N−1)/N·S per GPU and takes
    2(N−1) latency-bound steps (Patarasuk & Yuan 2009); zero at N = 1.
    """
    n = x.tp
    if not np.any(np.asarray(n) > 1):                   # one GPU everywhere: nothing to reduce
        return np.broadcast_to(NOTHING, x.batch.shape)
    size = tokens_per_step(x) * x.hidden * x.act_bpe
    one = 2.0 * (n - 1.0) / n * size / link_bandwidth + 2.0 * (n - 1.0) * link_latency
    return np.broadcast_to(np.where(n > 1, ALLREDUCES_PER_LAYER * x.layers * one, 0.0), x.batch.shape)


def group_times(cost: StepCost, peak: Any, bandwidth: Any, compute_eff: PerGroup,
                bandwidth_eff: PerGroup, vector_peak: Any = None) -> dict[str, tuple[Any, Any]]:
    """(compute time, memory time) per group: (FLOPs/peak + ops/vector peak)/ce and bytes/(BW·be)."""
    out = {}
    for g in GROUPS:
        compute: Any = NOTHING if _none(cost.flops[g]) else cost.flops[g] / (peak * cost.peak_mult[g])
        if vector_peak is not None and not _none(cost.vector_ops[g]):
            compute = compute + cost.vector_ops[g] / vector_peak
        out[g] = (compute if _none(compute) else compute / compute_eff[g],
                  cost.bytes[g] / (bandwidth * bandwidth_eff[g]))
    return out


def step_time(cost: StepCost, peak: Any, bandwidth: Any, compute_eff: PerGroup | None = None,
              bandwidth_eff: PerGroup | None = None, vector_peak: Any = None) -> np.ndarray:
    """Σ_g max(compute time, memory time): the step's roofline time in seconds (efficiencies default to 1)."""
    ones = {g: 1.0 for g in GROUPS}
    sides = group_times(cost, peak, bandwidth, compute_eff or ones, bandwidth_eff or ones, vector_peak)
    return sum(np.maximum(c, m) for c, m in sides.values())


def bound_times(cost: StepCost, peak: Any, bandwidth: Any, vector_peak: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The step's roofline time at full efficiency (``step_time``'s) and the seconds of it spent in groups whose
    FLOPs outlast their bytes, from one pass over the groups."""
    ones = {g: 1.0 for g in GROUPS}
    sides = group_times(cost, peak, bandwidth, ones, ones, vector_peak)
    total = sum(np.maximum(c, m) for c, m in sides.values())
    compute = sum(np.where(c >= m, c, 0.0) for c, m in sides.values())
    return total, compute  # type: ignore[return-value]


def decode_occupancy(x: StepInputs, sms: Any) -> np.ndarray:
    """Share of the SMs a decode attention kernel without split-KV keeps busy: min(1, B·H/N / SMs).

    FlashAttention parallelizes over batch × heads; one query per sequence leaves
    most SMs idle at small batch, which split-KV (Flash-Decoding) fixes (Dao et al. 2023).
    """
    unsplit = x.decode & ~np.asarray(x.split_kv, dtype=bool)
    if not unsplit.any():                               # every decode splits its KV (or none decodes): full
        return np.broadcast_to(np.asarray(1.0), x.batch.shape)
    busy = np.where(np.isfinite(sms), np.minimum(1.0, x.batch * x.heads / x.tp / sms), 1.0)   # unknown SMs: no penalty
    return np.broadcast_to(np.where(unsplit, busy, 1.0), x.batch.shape)


@record
class Memory:
    """HBM footprint per GPU as fixed + batch × per_sequence (bytes)."""

    weights: np.ndarray
    kv_per_sequence: np.ndarray
    activations_per_sequence: np.ndarray

    def per_sequence(self, memory_waste: Any) -> np.ndarray:
        """KV inflated by fragmentation, KV/(1−waste), plus the sequence's activations."""
        return self.kv_per_sequence / (1.0 - memory_waste) + self.activations_per_sequence

    def total(self, batch: np.ndarray, memory_waste: Any, reserve: Any) -> np.ndarray:
        """W + B·(KV/(1−waste) + activations) + reserve."""
        return self.weights + batch * self.per_sequence(memory_waste) + reserve

    def max_batch(self, capacity: Any, memory_waste: Any, reserve: Any) -> np.ndarray:
        """Largest whole batch that fits; 0 when even one sequence does not."""
        room = capacity - self.weights - reserve
        return np.maximum(np.floor(room / self.per_sequence(memory_waste)), 0.0)


def memory(x: StepInputs) -> Memory:
    """Weights stored, KV held per sequence, and the activation working set per sequence, per GPU.

    Activations: per token in flight (4·h + 2·I)·b_a (residual, norm, attention
    output, gated MLP), one layer's score matrix when attention is eager, and
    fp32 logits for the new positions.
    """
    shape = x.batch.shape
    head = x.stored_params - x.body_params - x.routed_expert_params     # embedding and untied LM head
    weights = ((x.stored_params - head) * x.weight_stored_bpe + head * x.head_stored_bpe) / x.tp
    kv_seq = x.kv_stored_tokens * (x.kv_elements_per_token * x.kv_stored_bpe) / x.tp
    tokens_per_seq = by_phase(x.decode, lambda: x.query_tokens, lambda: x.context)
    act = tokens_per_seq * ((4.0 * x.hidden + 2.0 * x.intermediate) * x.act_bpe) + x.vocab * LOGIT_BYTES
    if x.eager.any():
        keys = by_phase(x.decode, lambda: x.kv_read_tokens, lambda: x.context)
        scores = attention_score_bytes(1.0, x.heads / x.tp, tokens_per_seq, keys, x.act_bpe) * x.score_bytes_mult
        act = act + np.where(x.eager, scores, 0.0)
    return Memory(*(np.broadcast_to(np.asarray(a, dtype=float), shape) for a in (weights, kv_seq, act)))
