"""What each change key of a card is, as data: the groups it touches, what a missing kernel takes back, how
two stacked cards combine it, its words and its schema fragment (mechanisms.yaml, the one place a mechanism is
described). The claim schema's `change` section is generated from it; the model layer binds each key to its
function."""

from __future__ import annotations

from dataclasses import field
from functools import cache
from typing import Any

from ..io.resources import package_file
from ..io.yamlio import load_file
from ..records import record


@record
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
    klass: str = ""
    kv_format: bool = False
    scales: tuple[str, ...] = ()      # a pure multiplier: the step inputs it multiplies (no function of its own)
    multiplies: str | None = None     # a multiplier of a baseline quantity (claim's ÷ baseline's): its name
    words: str | None = None          # the memo's words, a str.format template of the value ({value}, or its keys)
    schema: dict[str, Any] = field(default_factory=dict)     # its JSON-schema fragment under change:


@record
class Incumbent:
    """What engines already ship in a class's place: priced as the fastest of ``candidates`` on each cell."""

    name: str
    bits: float
    candidates: tuple[dict[str, Any], ...]
    shipped: str
    evidence: dict[str, str]


@record
class MechanismClass:
    """A class of mechanisms (classes.yaml): its words, integration properties and incumbent."""

    key: str
    words: str
    attention_backends: bool
    online: bool
    incumbent: Incumbent | None


def _data(name: str) -> Any:
    return load_file(package_file("inputs", name), f"triage/inputs/{name}", trusted=True).data


@record
class FloatFormat:
    """A float element format (formats.yaml): 1 sign bit, ``exponent`` and ``mantissa`` bits."""

    key: str
    exponent: int
    mantissa: int
    source: str

    @property
    def bits(self) -> int:
        """Bits per element: 1 sign + exponent + mantissa (e3m2: 6)."""
        return 1 + self.exponent + self.mantissa


@cache
def registry() -> dict[str, MechanismInfo]:
    """Every mechanism, in the order they apply."""
    return {key: MechanismInfo(key, tuple(v["groups"]), tuple(v.get("reverts", ())), v["compose"], v["carries"],
                               tuple(v.get("directions", ())), v.get("example"), bool(v.get("optional", False)),
                               tuple(v.get("phases", ("decode", "prefill"))), v["class"],
                               bool(v.get("kv_format", False)), tuple(v.get("scales", ())), v.get("multiplies"),
                               v.get("words"), dict(v["schema"]))
            for key, v in _data("mechanisms.yaml").items()}


@cache
def float_formats() -> dict[str, FloatFormat]:
    """Every float element format a weight or KV format may name, in formats.yaml's order."""
    return {key: FloatFormat(key, int(v["exponent"]), int(v["mantissa"]), v["source"])
            for key, v in _data("formats.yaml").items()}


def float_format_schema() -> dict[str, Any]:
    """The claim schema's `$defs/float_format`, generated from formats.yaml (schemas/claim.schema.json holds it
    as generated; tests/inputs/test_registry.py keeps the two equal)."""
    bits = ", ".join(f"{key} {f.bits}" for key, f in float_formats().items())
    return {"enum": list(float_formats()),
            "description": f"A float element format, 1 sign + exponent + mantissa bits ({bits}; OCP MX v1.0, "
                           f"OCP OFP8): its bits per element, scales counted apart."}


def change_schema() -> dict[str, Any]:
    """The claim schema's `change` section, generated from the registry (schemas/claim.schema.json holds it
    as generated; tests/inputs/test_registry.py keeps the two equal)."""
    return {"type": "object", "additionalProperties": False, "minProperties": 1,
            "description": "Multipliers (> 0) on the baseline's cost components.",
            "properties": {key: info.schema for key, info in registry().items()}}


# the scheduler keys that are quantities, typed in the workload schema by its own unit definitions
QUANTITY_REFS = {"link": "#/$defs/quantity", "host_link": "#/$defs/quantity", "link_latency": "#/$defs/quantity0"}


def scheduler_properties() -> dict[str, Any]:
    """The workload schema's `scheduler:` keys: the registry's scheduler change (a card lays its keys over a
    workload's block), its quantities typed by the workload schema's units (schemas/workloads.schema.json holds
    them as generated; tests/inputs/test_registry.py keeps the two equal)."""
    props = registry()["scheduler"].schema["properties"]
    return {k: {"$ref": QUANTITY_REFS[k]} if k in QUANTITY_REFS else v for k, v in props.items()}


@cache
def classes() -> dict[str, MechanismClass]:
    """Every mechanism class, with its incumbent where engines ship one."""
    def incumbent(v: dict[str, Any] | None) -> Incumbent | None:
        if v is None:
            return None
        return Incumbent(v["name"], float(v["bits"]), tuple(v["candidates"]), v["shipped"], dict(v["evidence"]))

    return {key: MechanismClass(key, v["words"], bool(v["integration"]["attention_backends"]),
                                bool(v["integration"]["online"]), incumbent(v.get("incumbent")))
            for key, v in _data("classes.yaml").items()}


# A format's dtype, in bits, where a change names one (compute_dtype: int8 -> 8).
DTYPE_BITS = {"fp32": 32, "tf32": 19, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "fp6": 6, "int4": 4, "fp4": 4}


WEIGHT_FORMATS = frozenset({"weight_bytes", "weight_quant", "sparsity"})   # what dequantizing weights reads
KV_FORMATS = frozenset({"kv_bytes", "kv_quant"})                          # what dequantizing the KV reads


OUTSIDE_THE_STEP = ("utilization", "capacity", "scheduling")


# What the serving simulation's iterations do not carry: a step emits one token a sequence, so more tokens a
# step (speculation) is priced at the steps' level only.
UNSIMULATED = {"tokens_per_step"}


# What a claim must show before it can be GO, per class of method (the course's failure condition 3).
LONG_CONTEXT = "long-context retrieval (needle-in-a-haystack) evaluated: quality.long_context_tested"
PERPLEXITY_AND_TASK = ("perplexity and a downstream task evaluated: quality.evaluated_on names both (e.g. wikitext2 "
                       "and an lm-eval task)")
LOW_BITS = 4           # a format at or below this many bits per value is a low-bit class (the course's condition 3)
_PERPLEXITY = ("wikitext", "ppl", "perplexity", "c4", "pile")


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
