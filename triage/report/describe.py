"""One line per change key, in words, for the memo's 'Change' row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.mechanisms import expected_for, kv_quant_bytes, quantized_bytes_per_weight, speculative_plan


def _tokens_text(kind: str) -> Callable[[Any], str]:
    def text(spec: dict[str, Any]) -> str:
        amount = f"{spec['keep'] * 100:g} % of the context" if "keep" in spec else f"at most {spec['budget']:,}"
        extra = f", plus {spec['metadata'] * 100:g} % metadata" if spec.get("metadata") else ""
        return f"KV tokens {kind}: {amount}{extra}"
    return text


def _spec_text(spec: dict[str, Any]) -> str:
    plan = speculative_plan(spec)
    draft = f"draft model {plan.draft_model}" if plan.draft_model else f"draft cost {plan.draft_cost:g} of a step"
    domains = "".join(f", {d}: {expected_for(spec, d):.2f}" for d in spec.get("by_domain", {}))
    return (f"speculative decoding: {plan.draft_passes:g} draft pass(es) ({draft}), verify {plan.verify_tokens:g} "
            f"tokens, {plan.expected_tokens:.2f} tokens per step{domains}")


def _weight_quant_text(s: dict[str, Any]) -> str:
    return (f"int{s['bits']} weights, group {s['group_size']} ({quantized_bytes_per_weight(s):.4g} B per weight)"
            + (", LM head in 16 bits" if s.get("keep_16bit", True) else ""))


def _kv_quant_text(s: dict[str, Any]) -> str:
    group = f", group {s['group_size']}" if s.get("group_size") else ""
    residual = (f", the {s['residual_tokens']:,} most recent tokens at the baseline's precision"
                if s.get("residual_tokens") else "")
    outliers = f", {s['outliers']:.3g} of elements as sparse outliers" if s.get("outliers") else ""
    return f"{s['bits']}-bit KV cache{group}{outliers} ({kv_quant_bytes(s):.4g} B per element){residual}"


DESCRIBE: dict[str, Callable[[Any], str]] = {
    "distill_to": lambda v: f"serve {v} instead",
    "kv_heads": lambda n: f"{n} KV heads (GQA/MQA)",
    "kv_latent": lambda s: f"latent KV cache of {s['elements']} per layer",
    "kv_bytes": lambda m: f"KV bytes per token × {m:g}",
    "kv_quant": _kv_quant_text,
    "kv_tokens": _tokens_text("kept (eviction, read and stored)"),
    "kv_read": _tokens_text("read per step (all stored)"),
    "streaming_heads": lambda s: (f"{s['share'] * 100:g} % of the heads keep only {s['tokens']:,} tokens (sinks + "
                                  f"recent window), the rest the whole context"),
    "sparse_attention": lambda s: (f"each query attends at most {s['budget']:,} keys at "
                                   f"{' and '.join(s['phases'])}"),
    "attention_dtype": lambda d: f"attention computed in {d}",
    "hadamard": lambda s: (f"{s.get('per_layer', 1):g} online Hadamard rotation(s) of {s['size']:,} elements per "
                           f"token and layer"),
    "prefix_hit": lambda f: f"{f * 100:g} % of each prompt cached",
    "memory_waste": lambda f: f"KV fragmentation {f * 100:g} %",
    "attention_flops": lambda m: f"attention FLOPs × {m:g}",
    "score_bytes": lambda m: f"attention score traffic × {m:g}",
    "split_kv": lambda v: "split-KV decoding",
    "weight_bytes": lambda m: f"bytes per weight × {m:g}",
    "weight_quant": _weight_quant_text,
    "sparsity": lambda s: f"{s['pattern']} structured sparsity",
    "compute_dtype": lambda d: f"linear layers computed in {d}",
    "linear_flops": lambda m: f"linear-layer FLOPs × {m:g}",
    "low_rank": lambda s: f"rank-{s['rank']} factorized projections",
    "speculative": _spec_text,
    "tp": lambda n: f"tensor parallel over {n} GPUs",
    "batching": lambda s: f"batch slots {s['utilization'] * 100:g} % useful",
    "scheduler": lambda s: "scheduler: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.items()),
    "dequant_ops": lambda v: "dequantization: " + (
        ", ".join(f"{ops:g} vector ops per {what} element" for what, ops in
                  (("KV", v.get("kv")), ("weight", v.get("weights"))) if ops is not None)
        if isinstance(v, dict) else f"{v:g} vector ops per element read"),
}


def describe(change: dict[str, Any]) -> list[str]:
    """Each change key of a card in words, in the card's order."""
    return [DESCRIBE[key](value) for key, value in change.items()]
