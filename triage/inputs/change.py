"""A card's `change` resolved once, at load, into one frozen, typed record: each mechanism key's value as a number,
a format name or its own spec record, and every fact the later layers read about it (what its gain is made of,
which operator groups and phases it touches, whether it changes a stored format, its classes and the incumbents
it must beat, the evidence a lossy method of its kind must show) as fields. Model, analysis and report read
fields; nothing below inputs/ asks the registry about a change again.

The spec records mirror the registry's schema fragments (inputs/mechanisms.yaml); tests/inputs/test_change.py
keeps each record's fields equal to its schema's properties. The facts depend on which keys a change sets and
the formats it declares, never on a speculative acceptance rate: a sensitivity variant replaces that alone.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import field
from functools import cache
from typing import Any

from ..records import DERIVED as DERIVED_FIELD
from ..records import record, written
from .registry import (
    DTYPE_BITS,
    KV_FORMATS,
    LONG_CONTEXT,
    LOW_BITS,
    OUTSIDE_THE_STEP,
    PERPLEXITY_AND_TASK,
    UNSIMULATED,
    WEIGHT_FORMATS,
    MechanismClass,
    classes,
    float_formats,
    registry,
)
from .traffic import LINKS, SchedulerKeys, keys


@record
class KvLatent:
    """kv_latent: an MLA-style latent cache of ``elements`` per token and layer."""

    elements: int


@record
class KvQuant:
    """kv_quant: a declared KV format (integer ``bits`` or a float ``format``), its scales and residual."""

    element_bits: float = field(metadata=DERIVED_FIELD)   # bits per element: ``bits``, or the float format's (e4m3: 8)
    bits: int | None = None
    format: str | None = None
    group_size: int | None = None
    scale_bits: int | None = None
    zero_bits: int | None = None
    residual_tokens: int | None = None
    outliers: float | None = None
    outlier_bits: int | None = None


@record
class TokenKeep:
    """kv_tokens: the share of the context kept (``keep``) or a token ``budget``."""

    keep: float | None = None
    budget: int | None = None


@record
class KvRead:
    """kv_read: the share of the context read (``keep``) or a token ``budget``, and what choosing it costs
    (``metadata``: bytes per KV byte read besides)."""

    keep: float | None = None
    budget: int | None = None
    metadata: float | None = None


@record
class StreamingHeads:
    """streaming_heads: a ``share`` of the heads keep a window of ``tokens``."""

    share: float
    tokens: int


@record
class SparseAttention:
    """sparse_attention: each query attends at most ``budget`` keys, on ``phases``."""

    budget: int
    phases: tuple[str, ...]


@record
class WeightQuant:
    """weight_quant: a declared weight format (integer ``bits`` or a float ``format``) and its scales."""

    element_bits: float = field(metadata=DERIVED_FIELD)   # bits per element: ``bits``, or the float format's (e3m2: 6)
    bits: int | None = None
    format: str | None = None
    group_size: int | None = None
    scales: str | None = None           # per-channel or per-tensor, where no group_size is given
    scale_bits: int | None = None
    zero_bits: int | None = None
    keep_16bit: bool | None = None


@record
class Sparsity:
    """sparsity: an N:M structured ``pattern`` (2:4)."""

    pattern: str


@record
class Hadamard:
    """hadamard: online rotations of ``size``, ``per_layer`` of them."""

    size: int
    per_layer: float | None = None


@record
class LowRank:
    """low_rank: every dense projection factorized at ``rank``."""

    rank: int


@record
class Speculative:
    """speculative: a chain draft (``tokens``, ``acceptance``) or a tree / multi-head draft (``tokens_per_step``,
    ``verify_tokens``, ``draft_passes``), with a draft model or a draft cost, and per-domain values."""

    tokens: int | None = None
    acceptance: float | None = None
    tokens_per_step: float | None = None
    verify_tokens: int | None = None
    draft_passes: int | None = None
    draft_model: str | None = None
    draft_cost: float | None = None
    by_domain: tuple[tuple[str, float], ...] = ()


@record
class Batching:
    """batching: the share of batch slots doing useful work."""

    utilization: float


@record
class DequantOps:
    """dequant_ops: vector-unit ops per element read in a changed KV or weight format (``single``: the card gave
    one number for both)."""

    kv: float | None = None
    weights: float | None = None
    single: bool = field(default=False, metadata=DERIVED_FIELD)


Spec = (KvLatent | KvQuant | TokenKeep | KvRead | StreamingHeads | SparseAttention | WeightQuant | Sparsity | Hadamard
        | LowRank | Speculative | Batching | DequantOps | SchedulerKeys)
Value = float | int | str | bool | Spec

# the spec record of each mechanism whose value is a mapping (the others are a number, a name or a flag)
SPECS: dict[str, type] = {
    "kv_latent": KvLatent, "kv_quant": KvQuant, "kv_tokens": TokenKeep, "streaming_heads": StreamingHeads,
    "kv_read": KvRead, "sparse_attention": SparseAttention, "weight_quant": WeightQuant, "sparsity": Sparsity,
    "hadamard": Hadamard, "low_rank": LowRank, "speculative": Speculative, "batching": Batching,
    "dequant_ops": DequantOps, "scheduler": SchedulerKeys,
}
# spec fields made at load, not written on a card (metadata DERIVED)
DERIVED = frozenset(f.name for kind in SPECS.values() for f in dataclasses.fields(kind) if f.metadata.get("derived"))
LINK_KEYS = frozenset(k for k, _ in LINKS)


@record
class Change:
    """A card's change: one field per mechanism key (None: not set), in the registry's order, and the facts the
    later layers read, computed once from the registry (``resolve``)."""

    # -- the mechanisms (inputs/mechanisms.yaml), in the order they apply
    distill_to: str | None = None
    kv_heads: int | None = None
    kv_latent: KvLatent | None = None
    kv_bytes: float | None = None
    kv_quant: KvQuant | None = None
    kv_tokens: TokenKeep | None = None
    streaming_heads: StreamingHeads | None = None
    kv_read: KvRead | None = None
    prefix_hit: float | None = None
    memory_waste: float | None = None
    attention_flops: float | None = None
    sparse_attention: SparseAttention | None = None
    attention_dtype: str | None = None
    prefill_attention_flops: float | None = None
    score_bytes: float | None = None
    split_kv: bool | None = None
    weight_bytes: float | None = None
    weight_quant: WeightQuant | None = None
    sparsity: Sparsity | None = None
    compute_dtype: str | None = None
    linear_flops: float | None = None
    hadamard: Hadamard | None = None
    low_rank: LowRank | None = None
    speculative: Speculative | None = None
    tp: int | None = None
    batching: Batching | None = None
    scheduler: SchedulerKeys | None = None
    dequant_ops: DequantOps | None = None
    # -- the facts (resolve)
    keys: tuple[str, ...] = ()                      # the keys set, in the registry's order
    order: tuple[str, ...] = field(default=(), compare=False)   # the same, in the card's order (words and echo)
    kinds: frozenset[str] = frozenset()             # what the gain is made of (the registry's `carries`)
    acting: tuple[tuple[str, frozenset[str]], ...] = ()   # each key's phases (sparse_attention: its own)
    group_phases: tuple[tuple[str, frozenset[str]], ...] = ()   # groups whose kernels it replaces, and where
    groups: frozenset[str] = frozenset()            # those groups
    reverts: frozenset[str] = frozenset()           # step inputs that keep the baseline's value without a kernel
    changes_format: bool = False                    # a storage format changes (so a missing kernel matters)
    kv_format: bool = False                         # what the KV cache holds changes (every backend must read it)
    outside_the_step: bool = False                  # part of the gain is batch slots, capacity or the queue
    switchable: bool = False                        # every mechanism is one an operator switches per deployment
    unsimulated: tuple[str, ...] = ()               # keys the serving simulation does not model
    growing: tuple[tuple[str, float], ...] = ()     # multipliers set above 1 (a saving written upside down)
    classes: tuple[str, ...] = ()                   # its mechanism classes, in registry order
    kv_bits: float | None = None                    # bits per value it declares for the KV, weights, activations
    weight_bits: float | None = None
    activation_bits: float | None = None
    incumbents: tuple[MechanismClass, ...] = ()     # classes whose shipped incumbent it must beat (fewer bits)
    needs: tuple[str, ...] = ()                     # evidence a lossy method of its kind must show




def _element_bits(spec: Mapping[str, Any]) -> float:
    return float(float_formats()[spec["format"]].bits) if "format" in spec else float(spec["bits"])


def _spec(key: str, value: Any) -> Value:
    """One key's schema-valid value -> its typed value."""
    if key == "scheduler":
        return keys(dict(value))
    if key == "dequant_ops":
        if isinstance(value, Mapping):
            return DequantOps(value.get("kv"), value.get("weights"))      # as written: 2 stays 2
        return DequantOps(value, value, single=True)
    kind = SPECS.get(key)
    if kind is None:
        return value
    fields = dict(value)
    if kind in (KvQuant, WeightQuant):
        fields["element_bits"] = _element_bits(value)
    if kind is SparseAttention:
        fields["phases"] = tuple(fields["phases"])
    if kind is Speculative:
        fields["by_domain"] = tuple((str(k), float(v)) for k, v in fields.get("by_domain", {}).items())
    return kind(**fields)


def parse(raw: Mapping[str, Any], written: Mapping[str, Any] | None = None) -> Change:
    """A schema-valid `change` section (its scheduler links already in base units; ``written``: the section as
    the card wrote it, whose link quantities the echo keeps) -> Change."""
    typed = {key: _spec(key, value) for key, value in raw.items()}
    sched = typed.get("scheduler")
    if isinstance(sched, SchedulerKeys) and written is not None:
        text = tuple((k, str(v)) for k, v in written.get("scheduler", {}).items() if k in LINK_KEYS)
        typed["scheduler"] = dataclasses.replace(sched, written=text)
    return resolve(typed)


def values(change: Change) -> dict[str, Value]:
    """The keys a change sets and their typed values, in the registry's order (to compose or vary it)."""
    return {key: getattr(change, key) for key in change.keys}


def _declared(values: Mapping[str, Value], klass: str) -> float | None:
    """The bits per value a change declares for a quantization class: its format's element bits (e3m2 -> 6), a
    dtype's, or a multiplier of 16-bit bytes alone (kv_bytes, weight_bytes) as ⌊16·m⌋ bits, scales included
    (0.27 -> 4); None where the class declares no width."""
    fmt = {"kv-quantization": ("kv_quant", "kv_bytes"), "weight-quantization": ("weight_quant", "weight_bytes"),
           "activation-quantization": ("compute_dtype", None)}.get(klass)
    if fmt is None:
        return None
    declared, multiplier = fmt
    value = values.get(declared)
    if isinstance(value, (KvQuant, WeightQuant)):
        return value.element_bits
    if isinstance(value, str):
        return float(DTYPE_BITS[value])
    m = values.get(multiplier) if multiplier else None
    return float(math.floor(16 * m + 1e-9)) if isinstance(m, (int, float)) else None


def _acting(key: str, value: Value) -> frozenset[str]:
    """The phases a key acts on: the registry's, or those its value names (sparse_attention)."""
    return frozenset(value.phases) if isinstance(value, SparseAttention) else frozenset(registry()[key].phases)


def _group_phases(values: Mapping[str, Value]) -> dict[str, set[str]]:
    """Operator groups whose kernels the change replaces, each with the phases a mechanism replaces it in;
    dequantization runs where a changed format is read (KV, weights or both)."""
    table = registry()
    out: dict[str, set[str]] = {}
    for key, value in values.items():
        if key != "dequant_ops":
            for g in table[key].groups:
                out.setdefault(g, set()).update(_acting(key, value))
    ops = values.get("dequant_ops")
    if isinstance(ops, DequantOps):
        for group, read, formats in (("attention", ops.kv, KV_FORMATS), ("linear", ops.weights, WEIGHT_FORMATS)):
            for k in formats & set(values) if read else ():
                out.setdefault(group, set()).update(_acting(k, values[k]))
    return out


def _needs(values: Mapping[str, Value]) -> tuple[str, ...]:
    """The evidence a lossy method of this kind must show, read from its declared format: token eviction,
    sparse KV reads or KV at 4 bits or fewer need long-context retrieval; weights at 4 bits or fewer need
    perplexity and a downstream task (an exact method needs neither: model/verdicts.py)."""
    needed = []
    kv = _declared(values, "kv-quantization")
    if "kv_tokens" in values or "kv_read" in values or (kv is not None and kv <= LOW_BITS):
        needed.append(LONG_CONTEXT)
    weights = _declared(values, "weight-quantization")
    if weights is not None and weights <= LOW_BITS:
        needed.append(PERPLEXITY_AND_TASK)
    return tuple(needed)


def resolve(chosen: Mapping[str, Value]) -> Change:
    """Typed values by key (in the card's order) -> Change, its facts computed from the registry."""
    table = registry()
    ordered = {key: chosen[key] for key in table if key in chosen}
    info = [table[key] for key in ordered]
    phases = _group_phases(ordered)
    klasses = tuple(dict.fromkeys(i.klass for i in info))
    incumbents = []
    for klass in klasses:
        c, bits = classes()[klass], _declared(ordered, klass)
        if c.incumbent is not None and bits is not None and bits < c.incumbent.bits:
            incumbents.append(c)
    return Change(
        **ordered,  # type: ignore[arg-type]
        keys=tuple(ordered),
        order=tuple(chosen),
        kinds=frozenset(i.carries for i in info),
        acting=tuple((key, _acting(key, value)) for key, value in ordered.items()),
        group_phases=tuple((g, frozenset(p)) for g, p in phases.items()),
        groups=frozenset(phases),
        reverts=frozenset(f for i in info for f in i.reverts),
        changes_format=any(i.reverts for i in info),
        kv_format=any(i.kv_format for i in info),
        outside_the_step=any(i.carries in OUTSIDE_THE_STEP for i in info),
        switchable=bool(info) and all(i.optional for i in info),
        unsimulated=tuple(i.key for i in info if i.carries in UNSIMULATED),
        growing=tuple((i.key, float(v)) for i, v in zip(info, ordered.values(), strict=True)
                      if i.multiplies is not None and isinstance(v, (int, float)) and not isinstance(v, bool)
                      and v > 1),
        classes=klasses,
        kv_bits=_declared(ordered, "kv-quantization"),
        weight_bits=_declared(ordered, "weight-quantization"),
        activation_bits=_declared(ordered, "activation-quantization"),
        incumbents=tuple(incumbents),
        needs=_needs(ordered),
    )


def plain(value: Value) -> Any:
    """A typed value as the card wrote it (a spec's set fields, derived ones left out), for JSON and words."""
    if isinstance(value, DequantOps) and value.single:
        return value.kv
    out = written(value)
    if isinstance(value, Speculative):
        out.pop("by_domain")
        if value.by_domain:
            out["by_domain"] = dict(value.by_domain)
    if isinstance(value, SchedulerKeys):
        out.update(value.written)
    return out


def to_json(change: Change) -> dict[str, Any]:
    """The change as the card wrote it, in its order."""
    return {key: plain(getattr(change, key)) for key in change.order}


@cache
def incumbent_candidates(klass: str) -> tuple[Change, ...]:
    """The configurations an engine ships in a class's place (classes.yaml), each a Change."""
    c = classes()[klass]
    return tuple(parse(part) for part in c.incumbent.candidates) if c.incumbent is not None else ()


def combine(parts: Iterable[Change]) -> Change:
    """One Change setting every key of ``parts`` (an incumbent per class the method spans)."""
    return resolve({k: v for part in parts for k, v in values(part).items()})
