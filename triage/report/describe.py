"""One line per change key, in words, for the memo's 'Change' row: the registry's template, or a describer where the
words need arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from ..defaults import SCALE_BITS, ZERO_BITS
from ..inputs.registry import element_bits, registry
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


def _element(s: dict[str, Any], integer: str) -> str:
    """A format's element: a float format by name and width ('e3m2 (6-bit float)'), an integer one as
    ``integer`` words it (from its bits)."""
    return f"{s['format']} ({element_bits(s):g}-bit float)" if "format" in s else integer.format(bits=s["bits"])


def _scale(s: dict[str, Any]) -> str:
    """What each scale holds: '16 bits of scale', '16 bits of scale and 8 of zero point'."""
    zero = s.get("zero_bits", ZERO_BITS)
    return f"{s.get('scale_bits', SCALE_BITS)} bits of scale" + (f" and {zero} of zero point" if zero else "")


def _weight_quant_text(s: dict[str, Any]) -> str:
    weights = _element(s, "int{bits}") + " weights"
    if "group_size" in s:
        scales = f"group {s['group_size']} ({quantized_bytes_per_weight(s):.4g} B per weight)"
    elif s["scales"] == "per-channel":
        scales = f"per-channel scales ({element_bits(s) / 8:.4g} B per weight + {_scale(s)} per output channel)"
    else:
        scales = f"per-tensor scales ({element_bits(s) / 8:.4g} B per weight)"
    return f"{weights}, {scales}" + (", LM head in 16 bits" if s.get("keep_16bit", True) else "")


def _kv_quant_text(s: dict[str, Any]) -> str:
    group = f", group {s['group_size']}" if s.get("group_size") else ""
    residual = (f", the {s['residual_tokens']:,} most recent tokens at the baseline's precision"
                if s.get("residual_tokens") else "")
    outliers = f", {s['outliers']:.3g} of elements as sparse outliers" if s.get("outliers") else ""
    return (f"{_element(s, '{bits}-bit')} KV cache{group}{outliers} ({kv_quant_bytes(s):.4g} B per element)"
            f"{residual}")


# The mechanisms whose words need arithmetic (bytes per element, percentages, plans); every other key is worded
# by its registry template (mechanisms.yaml: words) or as the quantity it multiplies (multiplies), so a new
# mechanism needs no edit here.
DESCRIBE: dict[str, Callable[[Any], str]] = {
    "kv_quant": _kv_quant_text,
    "kv_tokens": _tokens_text("kept (eviction, read and stored)"),
    "kv_read": _tokens_text("read per step (all stored)"),
    "streaming_heads": lambda s: (f"{s['share'] * 100:g} % of the heads keep only {s['tokens']:,} tokens (sinks + "
                                  f"recent window), the rest the whole context"),
    "sparse_attention": lambda s: (f"each query attends at most {s['budget']:,} keys at "
                                   f"{' and '.join(s['phases'])}"),
    "hadamard": lambda s: (f"{s.get('per_layer', 1):g} online Hadamard rotation(s) of {s['size']:,} elements per "
                           f"token and layer"),
    "prefix_hit": lambda f: f"{f * 100:g} % of each prompt cached",
    "memory_waste": lambda f: f"KV fragmentation {f * 100:g} %",
    "weight_quant": _weight_quant_text,
    "speculative": _spec_text,
    "batching": lambda s: f"batch slots {s['utilization'] * 100:g} % useful",
    "scheduler": lambda s: "scheduler: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in s.items()),
    "dequant_ops": lambda v: "dequantization: " + (
        ", ".join(f"{ops:g} vector ops per {what} element" for what, ops in
                  (("KV", v.get("kv")), ("weight", v.get("weights"))) if ops is not None)
        if isinstance(v, dict) else f"{v:g} vector ops per element read"),
}


def _words(key: str, value: Any) -> str:
    info = registry()[key]
    if info.multiplies is not None:
        return f"{info.multiplies} × {value:g}"
    if info.words is None:
        return DESCRIBE[key](value)
    return info.words.format(value=value, **(value if isinstance(value, dict) else {}))


def describe(change: dict[str, Any]) -> list[str]:
    """Each change key of a card in words, in the card's order."""
    return [_words(key, value) for key, value in change.items()]


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
