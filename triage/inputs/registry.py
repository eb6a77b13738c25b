"""What each change key of a card is, as data: the groups it touches, what a missing kernel takes back, how
two stacked cards combine it (mechanisms.yaml). The model layer binds each key to its function."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..io.yamlio import load_file


@dataclass(frozen=True)
class MechanismInfo:
    """One change key: operator groups, reverted step inputs, composition rule, what the gain is made of."""

    key: str
    groups: tuple[str, ...]
    reverts: tuple[str, ...]
    compose: str
    carries: str
    directions: tuple[str, ...] = ()
    example: object = None
    optional: bool = False
    phases: tuple[str, ...] = ("decode", "prefill")


@cache
def registry() -> dict[str, MechanismInfo]:
    """Every mechanism, in the order they apply."""
    path = Path(str(resources.files("triage").joinpath("inputs").joinpath("mechanisms.yaml")))
    data = load_file(path, "triage/inputs/mechanisms.yaml", trusted=True).data
    return {key: MechanismInfo(key, tuple(v["groups"]), tuple(v.get("reverts", ())), v["compose"], v["carries"],
                               tuple(v.get("directions", ())), v.get("example"), bool(v.get("optional", False)),
                               tuple(v.get("phases", ("decode", "prefill"))))
            for key, v in data.items()}


def acting_phases(key: str, value: object) -> set[str]:
    """The phases a change key acts on: the registry's, or those its value names (sparse_attention)."""
    if isinstance(value, dict) and "phases" in value:
        return set(value["phases"])
    return set(registry()[key].phases)


def touched_groups(change: dict[str, object]) -> set[str]:
    """Operator groups whose kernels the change replaces."""
    table = registry()
    out = {g for key in change if key != "dequant_ops" for g in table[key].groups}
    ops = change.get("dequant_ops")
    if ops is not None:          # dequantization runs where a changed format is read: KV, weights or both
        spec = ops if isinstance(ops, dict) else {"kv": ops, "weights": ops}
        if spec.get("kv") and "kv_bytes" in change:
            out.add("attention")
        if spec.get("weights") and {"weight_bytes", "weight_quant", "sparsity"} & set(change):
            out.add("linear")
    return out


def changes_format(change: dict[str, object]) -> bool:
    """Whether any mechanism changes a storage format (so a missing kernel matters)."""
    table = registry()
    return any(table[key].reverts for key in change)


OUTSIDE_THE_STEP = ("utilization", "capacity", "scheduling")


def outside_the_step(change: dict[str, object]) -> bool:
    """Whether part of the change's gain lies outside one step (batch slots, memory capacity): the end-to-end
    layer, not the step's bound, then decides."""
    table = registry()
    return any(table[key].carries in OUTSIDE_THE_STEP for key in change)


def switchable(change: dict[str, object]) -> bool:
    """Whether every mechanism of the change is one an operator switches per deployment."""
    table = registry()
    return bool(change) and all(table[key].optional for key in change)


def carried(change: dict[str, object]) -> set[str]:
    """What the change's gain is made of (the registry's 'carries' of each key)."""
    table = registry()
    return {table[key].carries for key in change}


# What a claim must show before it can be GO, per class of method (the course's failure condition 3).
LONG_CONTEXT = "long-context retrieval (needle-in-a-haystack) evaluated: quality.long_context_tested"
PERPLEXITY_AND_TASK = ("perplexity and a downstream task evaluated: quality.evaluated_on names both (e.g. wikitext2 "
                       "and an lm-eval task)")
_PERPLEXITY = ("wikitext", "ppl", "perplexity", "c4", "pile")


def evidence_needed(change: dict[str, Any], quality_retained: float | None) -> list[str]:
    """The evidence a lossy method of this kind must show: token eviction, sparse KV reads or KV at 4 bits or
    fewer need long-context retrieval; weights at 4 bits or fewer need perplexity and a downstream task.
    An exact method (quality retained 1.0 by construction) needs neither."""
    if quality_retained == 1.0:
        return []
    needed = []
    kv = change.get("kv_bytes")
    if "kv_tokens" in change or "kv_read" in change or (isinstance(kv, (int, float)) and kv <= 0.25):
        needed.append(LONG_CONTEXT)
    quant = change.get("weight_quant")
    wb = change.get("weight_bytes")
    if (isinstance(quant, dict) and quant.get("bits", 16) <= 4) or (isinstance(wb, (int, float)) and wb <= 0.3):
        needed.append(PERPLEXITY_AND_TASK)
    return needed


def evidence_missing(needed: list[str], long_context_tested: bool, evaluated_on: tuple[str, ...]) -> list[str]:
    """Which of the needed pieces of evidence the card does not show."""
    perplexity = [e for e in evaluated_on if any(p in e.lower() for p in _PERPLEXITY)]
    missing = []
    for item in needed:
        if item == LONG_CONTEXT and not long_context_tested:
            missing.append(item)
        if item == PERPLEXITY_AND_TASK and not (perplexity and len(evaluated_on) > len(perplexity)):
            missing.append(item)
    return missing
