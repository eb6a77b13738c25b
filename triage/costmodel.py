"""The roofline cost model of one inference step, vectorized over every cell of the matrix.

Symbols (all numpy arrays, one value per cell, SI base units):
  B batch (sequences), T context (tokens of KV per sequence), P prompt tokens,
  L layers, H query heads, d head dim, h hidden size, V vocabulary,
  E = 2·L·H_kv·d KV elements per token, b_w / b_kv / b_a bytes per weight,
  KV element and activation.

Per operator group g (linear layers, attention, LM head, the rest) the time is
the roofline of Williams, Waterman & Patterson (2009):
    t_g = max(FLOPs_g / (peak · compute_eff_g), bytes_g / (BW · bandwidth_eff_g))
and a step costs Σ_g t_g. Bytes count compulsory HBM traffic only — weights,
KV, embedding rows, logits — with activations assumed to stay on chip (fused
kernels), which is what makes this a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

GROUPS = ("linear", "attention", "lm_head", "other")
LOGIT_BYTES = 4.0  # logits are written in fp32


@dataclass(frozen=True)
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
    weight_read_bpe: np.ndarray      # bytes per weight as the kernels read it
    weight_stored_bpe: np.ndarray    # bytes per weight as stored in HBM
    kv_read_bpe: np.ndarray
    kv_stored_bpe: np.ndarray
    act_bpe: np.ndarray
    kv_read_tokens: np.ndarray       # KV tokens read per sequence per decode step
    kv_stored_tokens: np.ndarray     # KV tokens held per sequence
    linear_flops_mult: np.ndarray
    attention_flops_mult: np.ndarray
    eager: np.ndarray                # bool: attention scores are written to HBM

    def with_batch(self, batch: np.ndarray) -> StepInputs:
        """The same cells at another batch size."""
        return replace(self, batch=np.asarray(batch, dtype=float))

    def take(self, idx: np.ndarray) -> StepInputs:
        """A subset of cells."""
        return StepInputs(**{f.name: at(getattr(self, f.name), idx) for f in fields(self)})


def at(a: np.ndarray, idx: np.ndarray | int) -> np.ndarray:
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


@dataclass(frozen=True)
class StepCost:
    """FLOPs and HBM bytes of one step, per operator group (one entry per cell)."""

    flops: dict[str, np.ndarray]
    bytes: dict[str, np.ndarray]

    @property
    def total_flops(self) -> np.ndarray:
        return sum(self.flops.values())  # type: ignore[return-value]

    @property
    def total_bytes(self) -> np.ndarray:
        return sum(self.bytes.values())  # type: ignore[return-value]


def tokens_per_step(x: StepInputs) -> np.ndarray:
    """Tokens a step pushes through the linear layers: B (decode) or B·P (prefill)."""
    return by_phase(x.decode, lambda: x.batch, lambda: x.batch * x.context)


def causal_pairs(prompt: np.ndarray, window: Any = np.inf) -> np.ndarray:
    """Query-key pairs of causal attention over P tokens, query i seeing min(i, W) keys.

    Σ_{i=1..P} min(i, W) = W'(W'+1)/2 + (P − W')·W' with W' = min(P, W); P(P+1)/2 without a window.
    """
    w = np.minimum(prompt, window)
    return w * (w + 1.0) / 2.0 + (prompt - w) * w


def attended_tokens(context: np.ndarray, window: Any, fraction: Any) -> np.ndarray:
    """KV tokens one decode step attends, averaged over layers: (1−f)·T + f·min(T, W) (Mistral's rolling cache)."""
    return (1.0 - fraction) * context + fraction * np.minimum(context, window)


def experts_touched_fraction(tokens: np.ndarray, experts: Any, top_k: Any) -> np.ndarray:
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
    """FLOPs and bytes per group for decode (M=B GEMV + KV read) and prefill (M=B·P GEMM, causal).

    Attention FLOPs are 2·H·(d_qk + d_v) per query-key pair and layer: 4·L·H·d·T·B at decode.
    """
    shape = x.batch.shape
    tokens = tokens_per_step(x)
    # linear layers: the dense body once per step; of the routed experts, those the step's tokens touch
    active = x.body_params + x.routed_expert_params * np.divide(x.experts_per_token, np.maximum(x.experts, 1.0))
    lin_f = (2.0 * active * x.linear_flops_mult) * tokens
    touched = x.routed_expert_params * experts_touched_fraction(tokens, x.experts, x.experts_per_token)
    lin_b = (x.body_params + touched) * x.weight_read_bpe

    # attention: decode reads T_read tokens of KV per sequence and writes one;
    # prefill attends causally (within the window on sliding layers) and writes the prompt's KV.
    kv_row = x.kv_elements_per_token
    att_f = x.attention_flops_mult * by_phase(
        x.decode, lambda: x.pair_flops_decode * x.batch * x.kv_read_tokens,
        lambda: x.pair_flops_prefill * x.batch * ((1.0 - x.window_fraction) * causal_pairs(x.context)
                                                  + x.window_fraction * causal_pairs(x.context, x.window)))
    att_b = by_phase(x.decode,
                     lambda: x.batch * (x.kv_read_tokens * (kv_row * x.kv_read_bpe) + kv_row * x.kv_stored_bpe),
                     lambda: x.batch * x.kv_stored_tokens * (kv_row * x.kv_stored_bpe))
    if x.eager.any():
        # eager attention writes S, reads it for softmax, writes P, reads it for PV:
        # four passes over the score matrix per layer (Dao et al. 2022, Algorithm 0).
        queries = by_phase(x.decode, lambda: 1.0, lambda: x.context)
        keys = by_phase(x.decode, lambda: x.kv_read_tokens, lambda: x.context)
        scores = 4.0 * x.layers * attention_score_bytes(x.batch, x.heads, queries, keys, x.act_bpe)
        att_b = att_b + np.where(x.eager, scores, 0.0)

    # LM head: logits for the last position of each sequence, the matrix read whole.
    head_f = (2.0 * x.lm_head_params) * x.batch
    head_b = x.lm_head_params * x.weight_read_bpe

    # the rest: embedding lookup reads one row per token (never the whole table), logits out
    rows = np.minimum(tokens * x.hidden, x.embedding_params) * x.weight_read_bpe
    other_b = rows + x.batch * (x.vocab * LOGIT_BYTES)

    def full(a: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(a, dtype=float), shape)

    return StepCost(
        flops={"linear": full(lin_f), "attention": full(att_f), "lm_head": full(head_f), "other": full(0.0)},
        bytes={"linear": full(lin_b), "attention": full(att_b), "lm_head": full(head_b), "other": full(other_b)},
    )


def group_times(cost: StepCost, peak: np.ndarray, bandwidth: np.ndarray,
                compute_eff: Mapping[str, np.ndarray | float], bandwidth_eff: Mapping[str, np.ndarray | float]
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(FLOPs_g / (peak·ce_g), bytes_g / (BW·be_g)) for each group g: the two sides of its roofline."""
    return {g: (cost.flops[g] / (peak * compute_eff[g]), cost.bytes[g] / (bandwidth * bandwidth_eff[g]))
            for g in GROUPS}


def step_time(cost: StepCost, peak: np.ndarray, bandwidth: np.ndarray,
              compute_eff: Mapping[str, np.ndarray | float] | None = None,
              bandwidth_eff: Mapping[str, np.ndarray | float] | None = None) -> np.ndarray:
    """Σ_g max(compute time, memory time): the step's roofline time in seconds (efficiencies default to 1)."""
    ones = {g: 1.0 for g in GROUPS}
    sides = group_times(cost, peak, bandwidth, compute_eff or ones, bandwidth_eff or ones)
    return sum(np.maximum(c, m) for c, m in sides.values())


def compute_bound_time(cost: StepCost, peak: np.ndarray, bandwidth: np.ndarray) -> np.ndarray:
    """Seconds of the bound spent in groups whose FLOPs outlast their bytes."""
    ones = {g: 1.0 for g in GROUPS}
    sides = group_times(cost, peak, bandwidth, ones, ones)
    return sum(np.where(c >= m, c, 0.0) for c, m in sides.values())  # type: ignore[return-value]


@dataclass(frozen=True)
class Memory:
    """HBM footprint as fixed + batch × per_sequence (bytes)."""

    weights: np.ndarray
    kv_per_sequence: np.ndarray
    activations_per_sequence: np.ndarray

    def per_sequence(self, memory_waste: np.ndarray) -> np.ndarray:
        """KV inflated by fragmentation, KV/(1−waste), plus the sequence's activations."""
        return self.kv_per_sequence / (1.0 - memory_waste) + self.activations_per_sequence

    def total(self, batch: np.ndarray, memory_waste: np.ndarray, reserve: np.ndarray) -> np.ndarray:
        """W + B·(KV/(1−waste) + activations) + reserve."""
        return self.weights + batch * self.per_sequence(memory_waste) + reserve

    def max_batch(self, capacity: np.ndarray, memory_waste: np.ndarray, reserve: np.ndarray) -> np.ndarray:
        """Largest whole batch that fits; 0 when even one sequence does not."""
        room = capacity - self.weights - reserve
        return np.maximum(np.floor(room / self.per_sequence(memory_waste)), 0.0)


def memory(x: StepInputs) -> Memory:
    """Weights stored, KV held per sequence, and the activation working set per sequence.

    Activations: per token in flight (4·h + 2·I)·b_a (residual, norm, attention
    output, gated MLP), one layer's score matrix when attention is eager, and
    fp32 logits for the last position.
    """
    shape = x.batch.shape
    weights = x.stored_params * x.weight_stored_bpe
    kv_seq = x.kv_stored_tokens * (x.kv_elements_per_token * x.kv_stored_bpe)
    tokens_per_seq = by_phase(x.decode, lambda: 1.0, lambda: x.context)
    act = tokens_per_seq * ((4.0 * x.hidden + 2.0 * x.intermediate) * x.act_bpe) + x.vocab * LOGIT_BYTES
    if x.eager.any():
        keys = by_phase(x.decode, lambda: x.kv_read_tokens, lambda: x.context)
        act = act + np.where(x.eager, attention_score_bytes(1.0, x.heads, tokens_per_seq, keys, x.act_bpe), 0.0)
    return Memory(*(np.broadcast_to(np.asarray(a, dtype=float), shape) for a in (weights, kv_seq, act)))
