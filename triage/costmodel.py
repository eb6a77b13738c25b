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

from dataclasses import dataclass, fields, replace
from typing import Mapping

import numpy as np

GROUPS = ("linear", "attention", "lm_head", "other")
LOGIT_BYTES = 4.0  # logits are written in fp32


@dataclass(frozen=True)
class StepInputs:
    """One variant (baseline or claim) of every cell, as arrays."""

    decode: np.ndarray
    batch: np.ndarray
    context: np.ndarray
    layers: np.ndarray
    heads: np.ndarray
    head_dim: np.ndarray
    hidden: np.ndarray
    intermediate: np.ndarray
    vocab: np.ndarray
    kv_elements_per_token: np.ndarray
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

    def with_batch(self, batch: np.ndarray) -> "StepInputs":
        """The same cells at another batch size."""
        return replace(self, batch=np.asarray(batch, dtype=float))

    def take(self, idx: np.ndarray) -> "StepInputs":
        """A subset of cells."""
        return StepInputs(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})


@dataclass(frozen=True)
class StepCost:
    """FLOPs and HBM bytes of one step, per operator group."""

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
    return np.where(x.decode, x.batch, x.batch * x.context)


def causal_pairs(prompt: np.ndarray) -> np.ndarray:
    """Query-key pairs of causal attention over P tokens: Σ_{i=1..P} i = P(P+1)/2."""
    return prompt * (prompt + 1.0) / 2.0


def attention_score_bytes(batch: np.ndarray, heads: np.ndarray, queries: np.ndarray, keys: np.ndarray,
                          act_bpe: np.ndarray) -> np.ndarray:
    """One materialized score matrix of one layer: B·H·T_q·T_k·b_a (course §2.4: 8.4 MB per head at T=2048)."""
    return batch * heads * queries * keys * act_bpe


def step_cost(x: StepInputs) -> StepCost:
    """FLOPs and bytes per group for decode (M=B GEMV + KV read) and prefill (M=B·P GEMM, causal)."""
    tokens = tokens_per_step(x)
    lin_f = 2.0 * x.body_params * tokens * x.linear_flops_mult
    lin_b = x.body_params * x.weight_read_bpe

    # attention: decode reads T_read tokens of KV per sequence and writes one;
    # prefill attends causally and writes the prompt's KV.
    mac = 4.0 * x.layers * x.heads * x.head_dim          # 2 FLOP per MAC, QK^T and PV
    pairs = np.where(x.decode, x.batch * x.kv_read_tokens, x.batch * causal_pairs(x.context))
    att_f = mac * pairs * x.attention_flops_mult
    kv_row = x.kv_elements_per_token
    kv_read = np.where(x.decode, x.batch * x.kv_read_tokens * kv_row * x.kv_read_bpe, 0.0)
    kv_write = np.where(x.decode, x.batch, x.batch * x.kv_stored_tokens) * kv_row * x.kv_stored_bpe
    # eager attention writes S, reads it for softmax, writes P, reads it for PV:
    # four passes over the score matrix per layer (Dao et al. 2022, Algorithm 0).
    queries = np.where(x.decode, 1.0, x.context)
    keys = np.where(x.decode, x.kv_read_tokens, x.context)
    scores = np.where(x.eager, 4.0 * x.layers * attention_score_bytes(x.batch, x.heads, queries, keys, x.act_bpe),
                      0.0)
    att_b = kv_read + kv_write + scores

    # LM head: logits for the last position of each sequence, the matrix read whole.
    head_f = 2.0 * x.lm_head_params * x.batch
    head_b = x.lm_head_params * x.weight_read_bpe

    # the rest: embedding lookup reads one row per token (never the whole table), logits out
    rows = np.minimum(tokens * x.hidden, x.embedding_params) * x.weight_read_bpe
    other_b = rows + x.batch * x.vocab * LOGIT_BYTES
    zero = np.zeros_like(lin_f)
    return StepCost(
        flops={"linear": lin_f, "attention": att_f, "lm_head": head_f, "other": zero},
        bytes={"linear": lin_b, "attention": att_b, "lm_head": head_b, "other": other_b},
    )


def group_times(cost: StepCost, peak: np.ndarray, bandwidth: np.ndarray,
                compute_eff: Mapping[str, np.ndarray | float], bandwidth_eff: Mapping[str, np.ndarray | float]
                ) -> dict[str, np.ndarray]:
    """t_g = max(F_g / (peak·ce_g), bytes_g / (BW·be_g)) for each group g."""
    return {g: np.maximum(cost.flops[g] / (peak * compute_eff[g]), cost.bytes[g] / (bandwidth * bandwidth_eff[g]))
            for g in GROUPS}


def step_time(cost: StepCost, peak: np.ndarray, bandwidth: np.ndarray,
              compute_eff: Mapping[str, np.ndarray | float] | None = None,
              bandwidth_eff: Mapping[str, np.ndarray | float] | None = None) -> np.ndarray:
    """Σ_g t_g: the step's roofline time in seconds (efficiencies default to 1: the bound)."""
    ones = {g: 1.0 for g in GROUPS}
    times = group_times(cost, peak, bandwidth, compute_eff or ones, bandwidth_eff or ones)
    return sum(times.values())  # type: ignore[return-value]


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
    weights = x.stored_params * x.weight_stored_bpe
    kv_seq = x.kv_stored_tokens * x.kv_elements_per_token * x.kv_stored_bpe
    tokens_per_seq = np.where(x.decode, 1.0, x.context)
    queries = tokens_per_seq
    keys = np.where(x.decode, x.kv_read_tokens, x.context)
    act = tokens_per_seq * (4.0 * x.hidden + 2.0 * x.intermediate) * x.act_bpe
    act = act + np.where(x.eager, attention_score_bytes(1.0, x.heads, queries, keys, x.act_bpe), 0.0)
    act = act + x.vocab * LOGIT_BYTES
    return Memory(weights, kv_seq, act)
