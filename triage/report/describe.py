"""One line per change key, in words, for the memo's 'Change' row: the registry's template, or a describer where the
words need arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from ..defaults import SCALE_BITS, ZERO_BITS
from ..inputs.change import (
    Change,
    DequantOps,
    KvQuant,
    KvRead,
    SchedulerKeys,
    Speculative,
    TokenKeep,
    Value,
    WeightQuant,
    plain,
)
from ..inputs.registry import registry
from ..model.mechanisms import expected_for, kv_quant_bytes, quantized_bytes_per_weight, speculative_plan


def _tokens_text(kind: str) -> Callable[[TokenKeep | KvRead], str]:
    def text(spec: TokenKeep | KvRead) -> str:
        amount = f"{spec.keep * 100:g} % of the context" if spec.keep is not None else f"at most {spec.budget:,}"
        metadata = spec.metadata if isinstance(spec, KvRead) else None
        extra = f", plus {metadata * 100:g} % metadata" if metadata else ""
        return f"KV tokens {kind}: {amount}{extra}"
    return text


def _spec_text(spec: Speculative) -> str:
    plan = speculative_plan(spec)
    draft = f"draft model {plan.draft_model}" if plan.draft_model else f"draft cost {plan.draft_cost:g} of a step"
    domains = "".join(f", {d}: {expected_for(spec, d):.2f}" for d, _ in spec.by_domain)
    return (f"speculative decoding: {plan.draft_passes:g} draft pass(es) ({draft}), verify {plan.verify_tokens:g} "
            f"tokens, {plan.expected_tokens:.2f} tokens per step{domains}")


def _element(s: KvQuant | WeightQuant, integer: str) -> str:
    """A format's element: a float format by name and width ('e3m2 (6-bit float)'), an integer one as
    ``integer`` words it (from its bits)."""
    return f"{s.format} ({s.element_bits:g}-bit float)" if s.format is not None else integer.format(bits=s.bits)


def _scale(s: WeightQuant) -> str:
    """What each scale holds: '16 bits of scale', '16 bits of scale and 8 of zero point'."""
    zero = ZERO_BITS if s.zero_bits is None else s.zero_bits
    scale = SCALE_BITS if s.scale_bits is None else s.scale_bits
    return f"{scale} bits of scale" + (f" and {zero} of zero point" if zero else "")


def _weight_quant_text(s: WeightQuant) -> str:
    weights = _element(s, "int{bits}") + " weights"
    if s.group_size is not None:
        scales = f"group {s.group_size} ({quantized_bytes_per_weight(s):.4g} B per weight)"
    elif s.scales == "per-channel":
        scales = f"per-channel scales ({s.element_bits / 8:.4g} B per weight + {_scale(s)} per output channel)"
    else:
        scales = f"per-tensor scales ({s.element_bits / 8:.4g} B per weight)"
    return f"{weights}, {scales}" + (", LM head in 16 bits" if s.keep_16bit is not False else "")


def _kv_quant_text(s: KvQuant) -> str:
    group = f", group {s.group_size}" if s.group_size else ""
    residual = (f", the {s.residual_tokens:,} most recent tokens at the baseline's precision"
                if s.residual_tokens else "")
    outliers = f", {s.outliers:.3g} of elements as sparse outliers" if s.outliers else ""
    return (f"{_element(s, '{bits}-bit')} KV cache{group}{outliers} ({kv_quant_bytes(s):.4g} B per element)"
            f"{residual}")


def _scheduler_text(s: SchedulerKeys) -> str:
    """The keys a scheduling change sets, its link quantities as the card wrote them."""
    return "scheduler: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in plain(s).items())


def _dequant_text(v: DequantOps) -> str:
    if v.single:
        return f"dequantization: {v.kv:g} vector ops per element read"
    return "dequantization: " + ", ".join(f"{ops:g} vector ops per {what} element"
                                          for what, ops in (("KV", v.kv), ("weight", v.weights)) if ops is not None)


# The mechanisms whose words need arithmetic (bytes per element, percentages, plans); every other key is worded
# by its registry template (mechanisms.yaml: words) or as the quantity it multiplies (multiplies), so a new
# mechanism needs no edit here.
DESCRIBE: dict[str, Callable[[Any], str]] = {
    "kv_quant": _kv_quant_text,
    "kv_tokens": _tokens_text("kept (eviction, read and stored)"),
    "kv_read": _tokens_text("read per step (all stored)"),
    "streaming_heads": lambda s: (f"{s.share * 100:g} % of the heads keep only {s.tokens:,} tokens (sinks + "
                                  f"recent window), the rest the whole context"),
    "sparse_attention": lambda s: f"each query attends at most {s.budget:,} keys at {' and '.join(s.phases)}",
    "hadamard": lambda s: (f"{1 if s.per_layer is None else s.per_layer:g} online Hadamard rotation(s) of "
                           f"{s.size:,} elements per token and layer"),
    "prefix_hit": lambda f: f"{f * 100:g} % of each prompt cached",
    "memory_waste": lambda f: f"KV fragmentation {f * 100:g} %",
    "weight_quant": _weight_quant_text,
    "speculative": _spec_text,
    "batching": lambda s: f"batch slots {s.utilization * 100:g} % useful",
    "scheduler": _scheduler_text,
    "dequant_ops": _dequant_text,
}


def _words(key: str, value: Value) -> str:
    info = registry()[key]
    if info.multiplies is not None:
        return f"{info.multiplies} × {value:g}"
    if info.words is None:
        return DESCRIBE[key](value)
    written = plain(value)
    return info.words.format(value=written, **(written if isinstance(written, dict) else {}))


def describe(change: Change) -> list[str]:
    """Each change key of a card in words, in the card's order."""
    return [_words(key, getattr(change, key)) for key in change.order]


def flow(value: Any) -> str:
    """A value as one line of YAML flow style, as a card writes it (`triage new`'s examples, the docs' table)."""
    return str(yaml.safe_dump(value, default_flow_style=True, width=1000)).strip().removesuffix("...").strip()


def mechanism_table() -> str:
    """The docs' table of what a `change` can say (docs/claim-cards.md), from the registry alone: a new
    mechanism appears in it with no edit (tests/test_readme.py keeps the page equal to this)."""
    rows = ["| direction | key (`triage new`'s example) | what it changes |", "|---|---|---|"]
    for key, info in registry().items():
        words = str(info.schema.get("description", "")).replace("|", "\\|")
        rows.append(f"| {' / '.join(info.directions)} | `{key}: {flow(info.example)}` | {words} |")
    return "\n".join(rows)
