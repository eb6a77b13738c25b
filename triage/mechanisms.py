"""How each kind of change in a card alters the cost model's inputs: one small function each.

A mechanism maps (baseline StepInputs, the card's value) to the claim's
StepInputs. It declares the operator groups whose kernels it changes, so the
card's implementation efficiencies apply there and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .costmodel import StepInputs


def kv_bytes(x: StepInputs, m: float) -> StepInputs:
    """KV bytes per token × m, read and stored (KV quantization, low rank, fewer KV heads)."""
    return replace(x, kv_read_bpe=x.kv_read_bpe * m, kv_stored_bpe=x.kv_stored_bpe * m)


def weight_bytes(x: StepInputs, m: float) -> StepInputs:
    """Bytes per weight × m, read and stored, every weight (int8: 0.5 of fp16)."""
    return replace(x, weight_read_bpe=x.weight_read_bpe * m, weight_stored_bpe=x.weight_stored_bpe * m)


def linear_flops(x: StepInputs, m: float) -> StepInputs:
    """FLOPs of the linear layers × m (pruning, low rank)."""
    return replace(x, linear_flops_mult=x.linear_flops_mult * m)


def attention_flops(x: StepInputs, m: float) -> StepInputs:
    """FLOPs of attention × m (sparse or approximate attention)."""
    return replace(x, attention_flops_mult=x.attention_flops_mult * m)


def kv_tokens(x: StepInputs, spec: dict[str, float]) -> StepInputs:
    """Eviction: keep a fraction of the context, or a fixed token budget, read and stored by decode.

    Prefill still computes and writes the whole prompt's KV (eviction follows it).
    """
    kept = x.context * spec["keep"] if "keep" in spec else np.minimum(x.context, float(spec["budget"]))
    return replace(x, kv_read_tokens=np.minimum(x.kv_read_tokens, kept),
                   kv_stored_tokens=np.where(x.decode, np.minimum(x.kv_stored_tokens, kept), x.kv_stored_tokens))


@dataclass(frozen=True)
class Mechanism:
    """A change key of the card, its function, the groups it touches and how to say it."""

    apply: Callable[[StepInputs, Any], StepInputs]
    groups: tuple[str, ...]
    describe: Callable[[Any], str]
    format_change: bool  # changes a storage format: without a kernel, reads keep the old bytes


def _kv_tokens_text(spec: dict[str, float]) -> str:
    if "keep" in spec:
        return f"KV tokens kept per sequence: {spec['keep'] * 100:g} % of the context (read and stored)"
    return f"KV tokens kept per sequence: at most {spec['budget']:,} (read and stored)"


REGISTRY: dict[str, Mechanism] = {
    "kv_bytes": Mechanism(kv_bytes, ("attention",), lambda m: f"KV bytes per token × {m:g}", True),
    "weight_bytes": Mechanism(weight_bytes, ("linear", "lm_head"), lambda m: f"bytes per weight × {m:g}", True),
    "linear_flops": Mechanism(linear_flops, ("linear",), lambda m: f"linear-layer FLOPs × {m:g}", False),
    "attention_flops": Mechanism(attention_flops, ("attention",), lambda m: f"attention FLOPs × {m:g}", False),
    "kv_tokens": Mechanism(kv_tokens, ("attention",), _kv_tokens_text, False),
}


def apply(change: dict[str, Any], x: StepInputs) -> StepInputs:
    """The claim's inputs: every mechanism of ``change`` applied to the baseline ``x``."""
    for key, value in change.items():
        x = REGISTRY[key].apply(x, value)
    return x


def without_format_reads(claim: StepInputs, base: StepInputs) -> StepInputs:
    """No kernel reads the new format in place: reads cost the baseline's bytes, storage keeps the saving."""
    return replace(claim, kv_read_bpe=base.kv_read_bpe, weight_read_bpe=base.weight_read_bpe)


def touched_groups(change: dict[str, Any]) -> set[str]:
    """Operator groups whose kernels the change replaces."""
    return {g for key in change for g in REGISTRY[key].groups}


def changes_format(change: dict[str, Any]) -> bool:
    """Whether any mechanism changes a storage format (so a missing kernel matters)."""
    return any(REGISTRY[key].format_change for key in change)
