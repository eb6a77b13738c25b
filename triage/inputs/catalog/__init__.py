"""The shipped catalog (hardware.yaml, models.yaml, workloads.yaml) and the parsers that turn
YAML entries, shipped or user-written, into specs."""

from __future__ import annotations

import math
import os
import re
from dataclasses import field, replace
from functools import cache
from pathlib import Path
from typing import Any

from ...errors import Problem, UserError
from ...io.resources import catalog_file
from ...io.yamlio import Document, load_file
from ...records import record
from .. import units
from ..specs import Hardware, Model
from ..validation import validate


def quantity(doc: Document, path: tuple[Any, ...], kind: str, problems: list[Problem],
             allow_zero: bool = False) -> float:
    """Parse the quantity at ``path`` of ``doc`` as ``kind``; record a Problem on failure."""
    value: Any = doc.data
    for part in path:
        value = value[part]
    try:
        return units.parse(value, kind, allow_zero)
    except units.UnitError as exc:
        problems.append(doc.problem(path, str(exc) if _quotable(value) else (
            f"expected a {units.NOUNS[kind]} like {units.EXAMPLES[kind]}, got other text")))
        return float("nan")


# a quantity as units' messages may quote it: a number with at most a unit's few letters ('80 GiBs'), not text
# that could be anything (a password under memory:)
_QUANTITY = re.compile(r"\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*[A-Za-zµ/]{0,7}\s*")


def _quotable(value: Any) -> bool:
    """Whether an error may quote ``value``: anything but text, and text that is a number and a short unit."""
    return not isinstance(value, str) or _QUANTITY.fullmatch(value) is not None


def _sources(entry: dict[str, Any], default: str) -> dict[str, str]:
    src = entry.get("source")
    if isinstance(src, dict):
        return dict(src)
    return {"all": src if isinstance(src, str) else default}


def parse_hardware(doc: Document, path: tuple[Any, ...], key: str, problems: list[Problem]) -> Hardware:
    """A schema-valid hardware entry at ``path`` -> Hardware."""
    entry = doc.data
    for part in path:
        entry = entry[part]
    compute = {dt: quantity(doc, path + ("compute", dt), "compute", problems) for dt in entry["compute"]}
    link = entry.get("interconnect") or {}
    return Hardware(
        key=key,
        name=entry.get("name", key),
        memory_bytes=quantity(doc, path + ("memory",), "bytes", problems),
        bandwidth_bytes_per_s=quantity(doc, path + ("bandwidth",), "bandwidth", problems),
        compute_flops_per_s=compute,
        interconnect_kind=link.get("kind"),
        interconnect_bytes_per_s=(quantity(doc, path + ("interconnect", "bandwidth"), "bandwidth", problems)
                                  if "bandwidth" in link else None),
        interconnect_latency_s=(quantity(doc, path + ("interconnect", "latency"), "time", problems, allow_zero=True)
                                if "latency" in link else 0.0),
        sms=entry.get("sms"),
        source=_sources(entry, f"user-supplied in {doc.file}"),
    )


def parse_model(doc: Document, path: tuple[Any, ...], key: str, problems: list[Problem]) -> Model:
    """A schema-valid model entry at ``path`` -> Model; names the keys a derivation lacks."""
    entry = doc.data
    for part in path:
        entry = entry[part]
    heads = entry["num_attention_heads"]
    hidden = entry.get("hidden_size")
    head_dim = entry.get("head_dim") or (hidden // heads if hidden else None)
    needed = ["hidden_size"] if hidden is None else []
    if head_dim is None:
        needed.append("head_dim")
    if "params" not in entry:
        needed += [k for k in ("intermediate_size", "vocab_size") if k not in entry]
    for k in needed:
        why = "" if k in ("hidden_size", "head_dim") else " (or give params)"
        problems.append(doc.problem(path, f"the model needs {k!r}{why}"))
    if hidden and not entry.get("head_dim") and hidden % heads:
        problems.append(doc.problem(path + ("hidden_size",), (
            f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}: give head_dim")))
    kv_heads = entry.get("num_key_value_heads", heads)
    if heads % kv_heads:
        problems.append(doc.problem(path + ("num_key_value_heads",),
                                    f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"))
    experts, top_k = entry.get("num_experts", 0), entry.get("num_experts_per_tok")
    if experts and not (top_k and top_k <= experts):
        problems.append(doc.problem(path, f"the model has {experts} experts: num_experts_per_tok must be "
                                          f"between 1 and {experts}"))
    if "kv_lora_rank" in entry:
        problems += [doc.problem(path, f"the model uses MLA (kv_lora_rank): it needs {k!r}")
                     for k in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim") if k not in entry]
    if entry.get("first_k_dense_replace", 0) > entry["num_hidden_layers"]:
        problems.append(doc.problem(path + ("first_k_dense_replace",), "more dense layers than layers"))
    if entry.get("sliding_window_layers", 0) > entry["num_hidden_layers"]:
        problems.append(doc.problem(path + ("sliding_window_layers",), "more sliding-window layers than layers"))
    src = entry.get("source")
    if isinstance(src, dict):
        src = "; ".join(f"{k}: {v}" for k, v in src.items())
    return Model(
        key=key,
        name=entry.get("name", key),
        num_hidden_layers=entry["num_hidden_layers"],
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim or 1,
        hidden_size=hidden or 1,
        intermediate_size=entry.get("intermediate_size"),
        vocab_size=entry.get("vocab_size"),
        tie_word_embeddings=entry.get("tie_word_embeddings", False),
        attention_bias=entry.get("attention_bias", False),
        qkv_bias=entry.get("qkv_bias", False),
        gated_mlp=entry.get("gated_mlp", True),
        mlp_bias=entry.get("mlp_bias", False),
        norm_bias=entry.get("norm_bias", False),
        position_embeddings=entry.get("position_embeddings", 0),
        max_context=entry.get("max_position_embeddings"),
        num_experts=entry.get("num_experts", 0),
        num_experts_per_tok=entry.get("num_experts_per_tok", 0) if entry.get("num_experts") else 0,
        moe_intermediate_size=entry.get("moe_intermediate_size"),
        shared_expert_intermediate_size=entry.get("shared_expert_intermediate_size", 0),
        first_k_dense_replace=entry.get("first_k_dense_replace", 0),
        q_lora_rank=entry.get("q_lora_rank"),
        kv_lora_rank=entry.get("kv_lora_rank"),
        qk_rope_head_dim=entry.get("qk_rope_head_dim", 0),
        qk_nope_head_dim=entry.get("qk_nope_head_dim", 0),
        v_head_dim=entry.get("v_head_dim", 0),
        sliding_window=entry.get("sliding_window"),
        sliding_window_layers=entry.get("sliding_window_layers"),
        params_override=entry.get("params"),
        published_params=entry.get("published_params"),
        source=src if isinstance(src, str) else f"user-supplied in {doc.file}",
    )


# a step's fixed costs, as workload and engine-profile keys: per step, per layer of a step, per step that starts
# requests (a prefill step, once however many prompts it takes: TTFT), per sequence a step carries
FIXED_COSTS = ("overhead", "layer_overhead", "request_overhead", "sequence_overhead")


@record
class FittedRange:
    """The regime a per-chip entry's rows span: a cell outside it takes the profile's default values."""

    phases: tuple[str, ...]
    batch: tuple[float, float]
    context: tuple[float, float]
    weights: tuple[str, ...]                  # empty: any
    tp: tuple[float, float] = (1.0, math.inf)  # tensor-parallel degrees its rows ran at (a cell at another is
                                               # priced with the entry and warned about: bench/serving.py found
                                               # the entries transfer across tp better than the default does)

    def covers_weights(self, fmt: str) -> bool:
        """Whether the rows' weight formats include ``fmt`` (bf16 and fp16 are one format: same bytes, same
        kernels' speed)."""
        same = {"bf16": "fp16"}
        return not self.weights or same.get(fmt, fmt) in {same.get(w, w) for w in self.weights}

    def covers_tp(self, tp: float) -> bool:
        """Whether the rows ran at this tensor-parallel degree (within their lowest and highest)."""
        return self.tp[0] <= tp <= self.tp[1]

    def contains(self, decode: Any, batch: Any, context: Any, weights: str) -> Any:
        """Whether cells (decode flag, batch, context; arrays or numbers) lie in the regime: what the matrix asks
        of every cell, and bench/fidelity.py of every held-out row."""
        if not self.covers_weights(weights):
            return decode & False                        # False, in the shape of the cells
        phase = (decode & ("decode" in self.phases)) | (~decode & ("prefill" in self.phases))
        return (phase & (batch >= self.batch[0]) & (batch <= self.batch[1])
                & (context >= self.context[0]) & (context <= self.context[1]))


@record
class Engine:
    """An engine profile: achieved efficiencies and per-step overhead, by default and per chip."""

    key: str
    default: dict[str, float]                 # bandwidth, compute and each of FIXED_COSTS in seconds (key_s)
    hardware: dict[str, dict[str, float]]
    description: str = ""
    source: str = ""
    file: str = ""                            # the file it was read from (the shipped catalog, a profile file)
    ranges: dict[str, FittedRange] = field(default_factory=dict)     # per chip, where the entry states one

    def values(self, hardware: str, fitted: bool = True) -> dict[str, float]:
        """The profile's values for a chip: its own where fitted (and ``fitted``: the cell lies in the entry's
        range), else the profile's default."""
        return {**self.default, **(self.hardware.get(hardware, {}) if fitted else {})}


def parse_engine(doc: Document, path: tuple[Any, ...], key: str, problems: list[Problem]) -> Engine:
    """A schema-valid engine entry at ``path`` -> Engine (overhead in seconds)."""
    entry = doc.data
    for part in path:
        entry = entry[part]

    def values(sub: tuple[Any, ...], raw: dict[str, Any]) -> dict[str, float]:
        out: dict[str, float] = {k: float(raw[k]) for k in ("bandwidth", "compute") if k in raw}
        for key in FIXED_COSTS:
            if key in raw:
                out[f"{key}_s"] = quantity(doc, path + sub + (key,), "time", problems, allow_zero=True)
        se = raw.get("uncertainty", {})                 # a calibrated profile's standard errors
        out.update({f"{k}_se": float(se[k]) for k in ("bandwidth", "compute") if k in se})
        for key in FIXED_COSTS:
            if key in se:
                out[f"{key}_s_se"] = quantity(doc, path + sub + ("uncertainty", key), "time", problems,
                                              allow_zero=True)
        return out

    if "range" in entry["default"]:
        problems.append(doc.problem(path + ("default", "range"), "a range belongs to a per-chip entry (the regime "
                                                                 "its rows span); the default covers every cell"))

    def fitted(raw: dict[str, Any]) -> FittedRange:
        r = raw["range"]
        return FittedRange(tuple(r.get("phases", ("decode", "prefill"))),
                           (float(r["batch"][0]), float(r["batch"][1])) if "batch" in r else (1.0, math.inf),
                           (float(r["context"][0]), float(r["context"][1])) if "context" in r else (1.0, math.inf),
                           tuple(r.get("weights", ())),
                           (float(r["tp"][0]), float(r["tp"][1])) if "tp" in r else (1.0, math.inf))

    chips = entry.get("hardware", {})
    for hw, v in chips.items():
        for axis in ("batch", "context", "tp"):
            lo_hi = v.get("range", {}).get(axis)
            if lo_hi and lo_hi[0] > lo_hi[1]:
                problems.append(doc.problem(path + ("hardware", hw, "range", axis), (
                    f"a range runs from its lowest to its highest value: [{lo_hi[1]:g}, {lo_hi[0]:g}]?")))
    default = values(("default",), entry["default"])
    if any(f"{k}_s" in default for k in FIXED_COSTS):
        # a profile's fixed costs are fitted together: one it leaves out is 0, not the workload's (a profile
        # written before sequence_overhead existed holds that work in its per-step overhead already)
        default = {**{f"{k}_s": 0.0 for k in FIXED_COSTS}, **default}
    return Engine(key, default,
                  {hw: values(("hardware", hw), v) for hw, v in chips.items()},
                  entry.get("description", ""), entry.get("source", f"user-supplied in {doc.file}"), doc.file,
                  {hw: fitted(v) for hw, v in chips.items() if "range" in v})


@record
class Catalog:
    """Named hardware, models and engine profiles."""

    hardware: dict[str, Hardware]
    models: dict[str, Model]
    engines: dict[str, Engine] = field(default_factory=dict)

    def pooled(self, hardware: str, stages: int) -> Catalog:
        """Pipeline (layer-split) stages hold the model in sequence: ``stages`` GPUs' memory, one GPU's time per
        token."""
        if stages == 1 or hardware not in self.hardware:
            return self
        hw = self.hardware[hardware]
        return self.merged({hardware: replace(hw, memory_bytes=hw.memory_bytes * stages)}, {})

    def merged(self, hardware: dict[str, Hardware], models: dict[str, Model],
               engines: dict[str, Engine] | None = None) -> Catalog:
        """This catalog with user entries added or replacing same-named ones."""
        return Catalog({**self.hardware, **hardware}, {**self.models, **models}, {**self.engines, **(engines or {})})


def _section(file: str) -> Document:
    return load_file(catalog_file(file), f"triage/inputs/catalog/{file}", trusted=True)


def _parse_section(doc: Document, parse: Any) -> dict[str, Any]:
    problems: list[Problem] = []
    out = {key: parse(doc, (key,), key, problems) for key in doc.data}
    if problems:
        raise UserError(problems)
    return out


@cache
def load() -> Catalog:
    """The shipped catalog, parsed once per process (its schema and sources are checked by ``check_shipped``
    in the test suite, not on every run)."""
    return Catalog(_parse_section(_section("hardware.yaml"), parse_hardware),
                   _parse_section(_section("models.yaml"), parse_model),
                   _parse_section(_section("engines.yaml"), parse_engine))


def check_shipped() -> list[Problem]:
    """Every problem of the shipped catalog: schema errors, and entries without a source."""
    problems: list[Problem] = []
    for file, section in (("hardware.yaml", "hardware"), ("models.yaml", "models"), ("engines.yaml", "engines")):
        doc = _section(file)
        problems += validate(doc, "workloads", prefix=(section,))
        problems += [doc.problem((key,), "catalog entry without a source") for key in doc.data
                     if "source" not in doc.data[key]]
    problems += validate(default_workloads(), "workloads")
    return problems


ENVIRONMENT = "TRIAGE_CATALOG"    # a user catalog file used when no --catalog is given
SECTIONS = ("hardware", "models", "engines")


def definitions(doc: Document, cat: Catalog, problems: list[Problem]) -> Catalog:
    """``cat`` with the hardware, models and engine profiles a document defines (a user catalog or a workload
    file) added."""
    hardware = {k: parse_hardware(doc, ("hardware", k), k, problems) for k in doc.data.get("hardware", {})}
    models = {k: parse_model(doc, ("models", k), k, problems) for k in doc.data.get("models", {})}
    engines = {k: parse_engine(doc, ("engines", k), k, problems) for k in doc.data.get("engines", {})}
    return cat.merged(hardware, models, engines)


def resolve(user: str | Path | None = None) -> Catalog:
    """The catalog names resolve in: the shipped one, merged over by a user catalog file (``user``, the
    --catalog option; else the file $TRIAGE_CATALOG names). A user catalog holds ``hardware:``, ``models:``
    and ``engines:`` entries in the workload file's format (what `triage catalog import -o` writes)."""
    path = user if user is not None else os.environ.get(ENVIRONMENT) or None
    if path is None:
        return load()
    doc = load_file(path)
    problems = validate(doc, "workloads")
    if problems:
        raise UserError(problems)
    problems = [doc.problem((k,), f"a catalog file holds {', '.join(SECTIONS)} only; {k!r} belongs in a "
                                  f"workload file (--workloads)", key=True) for k in doc.data if k not in SECTIONS]
    cat = definitions(doc, load(), problems)
    if problems:
        raise UserError(problems)
    return cat


@cache
def default_workloads() -> Document:
    """The shipped default workload matrix, parsed once (a workload file's defaults merge over it)."""
    return _section("workloads.yaml")
