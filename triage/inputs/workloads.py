"""Workload files (or the shipped default) resolved into blocks of settings, each with its axes.

Each explicit workload is one block over its model and hardware lists; a grid
is one block per phase over context × batch. The model layer turns the blocks
into numpy columns (model/matrix.py). Defaults come from the shipped
catalog/workloads.yaml and nowhere else: a user file's defaults merge over them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from ..defaults import LIMITS
from ..errors import NEAR, Problem, UserError
from ..io.resources import catalog_file
from ..io.yamlio import Document, document, load_file
from ..records import record
from . import catalog as catalog_mod
from . import traffic as traffic_mod
from .claim import Setting, stated
from .hfconfig import load_model
from .specs import Model, is_config_path
from .validation import validate

_QUANTITY_KINDS = {**{k: "time" for k in catalog_mod.FIXED_COSTS}, "reserve": "bytes"}


@record
class Settings:
    """Everything that fixes one block of cells, resolved from defaults and the workload."""

    name: str
    description: str
    models: tuple[str, ...]
    hardware: tuple[str, ...]
    phase: str
    context: int
    batch: int
    precision: dict[str, str]
    bandwidth_efficiency: float
    compute_efficiency: float
    overhead_s: float
    request_overhead_s: float         # a prefill step's fixed cost (admission, setup), once for all its prompts
    layer_overhead_s: float           # a step's fixed cost per layer (kernel launches)
    sequence_overhead_s: float        # a step's fixed cost per sequence it carries (sampling, detokenizing, scheduling)
    slo_tpot_s: float | None
    slo_ttft_s: float | None
    quality_gate: float
    min_gain: float
    reserve_bytes: float
    memory_waste: float
    attention: str
    tp: int
    batch_utilization: float
    output_tokens: int                # a decode request's steps; a prefill request is one prompt
    stack: tuple[str, ...]            # serving features the workload's stack uses
    domain: str | None                # what the requests are (chat, code …): speculative acceptance differs
    beyond_window: str                # a context past the model's trained window: "warn" or "refuse"

    def engine_values(self, hardware: str, fitted: bool = True) -> dict[str, float]:
        """Bandwidth and compute efficiency and the fixed costs on a chip: the workload's own where it gives
        them, else its engine profile's for that chip (its default where ``fitted`` is False: a cell outside the
        chip entry's range), else the shipped defaults."""
        own = {"bandwidth": self.bandwidth_efficiency, "compute": self.compute_efficiency,
               **{f"{k}_s": getattr(self, f"{k}_s") for k in catalog_mod.FIXED_COSTS}}
        if self.engine is None:
            return own
        profile = self.engine.values(hardware, fitted)
        out = {k: own[k] if k in self.explicit else profile.get(k, own[k]) for k in own}
        # a calibrated profile's standard errors travel with the values taken from it
        out.update({f"{k}_se": profile[f"{k}_se"] for k in own if k not in self.explicit and f"{k}_se" in profile})
        return out
    long_context: bool | None
    share: float | None
    engine: catalog_mod.Engine | None = None      # the serving engine's profile, if named
    explicit: frozenset[str] = frozenset()        # bandwidth/compute/overhead_s the workload gives (beat a profile)
    traffic: traffic_mod.Traffic | None = None     # a serving simulation's request stream
    scheduler: traffic_mod.SchedulerKeys = field(default_factory=traffic_mod.SchedulerKeys)   # its engine's keys
    traffic_at: Problem | None = None      # where its traffic block stands (file, line, path): serving errors' address


@record
class Block:
    """One workload (or one phase of a grid): its settings and, for a grid, its context and batch axes."""

    settings: Settings
    contexts: tuple[float, ...] | None = None      # a grid's axes; None: the settings' one context and batch
    batches: tuple[float, ...] | None = None


@record
class Workloads:
    """A resolved workload file: its blocks, the catalog its names resolve in, where it came from."""

    blocks: tuple[Block, ...]
    catalog: catalog_mod.Catalog
    source: str = field(default="triage/inputs/catalog/workloads.yaml")


def _parse_settings(doc: Document, path: tuple[Any, ...], problems: list[Problem]) -> dict[str, Any]:
    """The settings present at ``path``, typed (quantities in base units)."""
    raw = doc.data
    for part in path:
        raw = raw[part]
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _QUANTITY_KINDS:
            out[key] = catalog_mod.quantity(doc, path + (key,), _QUANTITY_KINDS[key], problems, allow_zero=True)
        elif key == "slo":
            out[key] = {k: catalog_mod.quantity(doc, path + ("slo", k), "time", problems) for k in value}
        elif key in ("model", "hardware"):
            out[key] = (value,) if isinstance(value, str) else tuple(value)
        elif key in ("precision", "efficiency"):
            out[key] = dict(value)
        elif key == "traffic":
            out[key] = traffic_mod.parse(doc, path + (key,), _base_dir(doc), problems)
        elif key == "scheduler":
            out[key] = traffic_mod.parse_scheduler(doc, path + (key,), problems)
        else:
            out[key] = value
    return out


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key in ("precision", "efficiency", "slo", "scheduler") and key in out:
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


def _engine(name: str, doc: Document, where: tuple[Any, ...], cat: catalog_mod.Catalog,
            problems: list[Problem], files: dict[str, catalog_mod.Engine | None]) -> catalog_mod.Engine | None:
    """An engine named in the catalog, or a path to a YAML file holding one profile under engines: (each file
    read once per workload file, however many workloads name it: ``files``)."""
    if name in cat.engines:
        return cat.engines[name]
    if name in files:
        return files[name]
    files[name] = _engine_file(name, doc, where, cat, problems)
    return files[name]


def _engine_file(name: str, doc: Document, where: tuple[Any, ...], cat: catalog_mod.Catalog,
                 problems: list[Problem]) -> catalog_mod.Engine | None:
    """The one profile of a YAML file, or a problem (the name is neither a profile nor such a file)."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name) if Path(name).is_absolute() else _base_dir(doc) / name
        try:
            profile_doc = load_file(path)
            found = validate(profile_doc, "workloads")
            if found:
                raise UserError(found)
            profiles = catalog_mod.definitions(profile_doc, catalog_mod.Catalog({}, {}), problems).engines
        except UserError as err:
            problems += err.problems
            return None
        if len(profiles) == 1:
            return next(iter(profiles.values()))
        problems.append(doc.problem(where, f"the file holds {len(profiles)} engine profiles: one is needed"))
        return None
    problems.append(doc.problem(where, f"unknown engine{NEAR} (triage catalog engines; or a path to a profile "
                                       f"file)", near=(name, cat.engines)))
    return None


def _explicit(layer: dict[str, Any], user_defaults: dict[str, Any], override: dict[str, Any],
              own_engine: bool) -> frozenset[str]:
    """The values a workload states itself, each on its own (efficiency.bandwidth, .compute, overhead): they beat
    its engine profile's. A workload that names its own engine takes the profile over the file's defaults."""
    layers = [layer, override] if own_engine else [layer, user_defaults, override]
    out = set()
    for source in layers:
        out |= {k for k in ("bandwidth", "compute") if k in source.get("efficiency", {})}
        out |= {f"{k}_s" for k in catalog_mod.FIXED_COSTS if k in source}
    return frozenset(out)


def _settings(merged: dict[str, Any], name: str, description: str, engine: catalog_mod.Engine | None = None,
              explicit: frozenset[str] = frozenset()) -> Settings:
    """Settings from defaults merged over by the workload: every key the shipped defaults give is present."""
    slo, eff, prec = merged["slo"], merged["efficiency"], merged["precision"]
    return Settings(
        engine=engine, explicit=explicit,
        name=name,
        description=description,
        models=merged["model"],
        hardware=merged["hardware"],
        phase=merged["phase"],
        context=merged.get("context", 0),
        batch=merged["batch"],
        precision={"weights": prec["weights"], "kv": prec["kv"], "activations": prec["activations"],
                   "compute": prec["compute"]},
        bandwidth_efficiency=eff["bandwidth"],
        compute_efficiency=eff["compute"],
        overhead_s=merged["overhead"],
        request_overhead_s=merged["request_overhead"],
        layer_overhead_s=merged["layer_overhead"],
        sequence_overhead_s=merged["sequence_overhead"],
        slo_tpot_s=slo.get("tpot"),
        slo_ttft_s=slo.get("ttft"),
        quality_gate=merged["quality_gate"],
        min_gain=merged["min_gain"],
        reserve_bytes=merged["reserve"],
        memory_waste=merged["memory_waste"],
        attention=merged["attention"],
        tp=merged["tp"],
        batch_utilization=merged["batch_utilization"],
        output_tokens=merged["output_tokens"],
        stack=tuple(merged.get("stack", ())),
        domain=merged.get("domain"),
        beyond_window=merged["beyond_window"],
        traffic=merged.get("traffic"),
        scheduler=traffic_mod.keys(merged.get("scheduler")),
        long_context=merged.get("long_context"),
        share=merged.get("share"),
    )


def _check_names(doc: Document, path: tuple[Any, ...], layer: dict[str, Any], merged: dict[str, Any],
                 inherited: dict[str, tuple[Any, ...]], cat: catalog_mod.Catalog, problems: list[Problem]) -> None:
    """Every model and hardware name of ``merged`` exists, addressed where it was written (the list item, in a
    list), the name itself not repeated."""
    for key, table, section in (("model", cat.models, "models"), ("hardware", cat.hardware, "hardware")):
        where = path + (key,) if key in layer else inherited.get(key, path)
        written = _at(doc, where)
        for name in merged.get(key, ()):
            if name not in table:
                at = where + (written.index(name),) if isinstance(written, list) and name in written else where
                problems.append(doc.problem(at, (
                    f"unknown {key}{NEAR} (see triage/inputs/catalog/{section}.yaml, or define it under "
                    f"{section}:)"), near=(name, table)))


def _refuse_beyond_window(doc: Document, path: tuple[Any, ...], entry: dict[str, Any], settings: Settings,
                          contexts: tuple[float, ...] | None, cat: catalog_mod.Catalog,
                          problems: list[Problem]) -> None:
    """A workload that says ``beyond_window: refuse`` prices no context past a model's trained window
    (max_position_embeddings): each such context is a problem addressed to where it was written."""
    where = path + ("context",) if "context" in entry else ("defaults", "context")
    for name in settings.models:
        window = cat.models[name].window
        for c in contexts or (settings.context,):
            if c > window:
                problems.append(doc.problem(where, (
                    f"context {int(c):,} tokens is beyond {name}'s trained window of {int(window):,} "
                    f"(max_position_embeddings), and this workload says beyond_window: refuse")))
                break


def _at(doc: Document, path: tuple[Any, ...]) -> Any:
    """The value at ``path`` of ``doc`` (None where there is none: a name that came from --model)."""
    node: Any = doc.data
    for part in path:
        if not isinstance(node, (dict, list)) or (isinstance(node, dict) and part not in node):
            return None
        node = node[part]
    return node


Source = str | Path | Mapping[str, Any] | Document | None


def open_source(source: Source) -> Document | None:
    """A workload file (path), a parsed dict or an opened Document -> its Document (None: the shipped default)."""
    if source is None or isinstance(source, Document):
        return source
    if isinstance(source, Mapping):
        return document("<workloads>", dict(source))
    return load_file(source)


def _base_dir(doc: Document) -> Path:
    """Where a workload file's config.json and trace paths are relative to (the working directory for a dict;
    the installed catalog's folder for the shipped default, whose label is not a path)."""
    if doc.file == catalog_mod.default_workloads().file:
        return catalog_file("workloads.yaml").parent
    return Path(".") if doc.file.startswith("<") else Path(doc.file).parent


@record
class Opened:
    """A workload document checked against its schema (once), and ``catalog`` with the hardware and models it
    defines: the names a claim card may use beside the catalog's. ``doc`` None: the shipped default."""

    doc: Document | None
    catalog: catalog_mod.Catalog


def definitions(source: Source | Opened, cat: catalog_mod.Catalog) -> Opened:
    """The workload file opened and validated, with ``cat`` holding the hardware and models it defines (inline
    entries and config.json paths). An ``Opened`` is returned as it is: it already holds its catalog."""
    if isinstance(source, Opened):
        return source
    doc = open_source(source)
    if doc is None:
        return Opened(None, cat)
    problems = validate(doc, "workloads")
    if problems:
        raise UserError(problems)
    merged = catalog_mod.definitions(doc, cat, problems)
    if problems:
        raise UserError(problems)
    return Opened(doc, merged.merged({}, _config_models(_model_names(doc.data) - set(merged.models),
                                                         _base_dir(doc))))


def _config_models(names: set[str], base: Path) -> dict[str, Model]:
    """Models named by a path to a Hugging Face config.json, relative to ``base``."""
    out = {}
    for name in sorted(n for n in names if is_config_path(n)):
        path = Path(name) if Path(name).is_absolute() else base / name
        out[name] = load_model(path, key=name)
    return out


def _model_names(data: dict[str, Any]) -> set[str]:
    """Every model name a workload document mentions (defaults, workloads, grid)."""
    names: set[str] = set()
    for section in [data.get("defaults", {}), *data.get("workloads", []), data.get("grid", {})]:
        value = section.get("model", ())
        names.update([value] if isinstance(value, str) else value)
    return names


def load(source: Source | Opened = None, catalog: catalog_mod.Catalog | None = None,
         model: str | None = None, baseline: Setting | None = None, sweep: bool = False) -> Workloads:
    """Resolve a workload file (path, parsed dict or Document; None for the shipped default) into blocks.

    An ``Opened`` source was validated when it was opened, and ``catalog`` (its own by default) already holds
    its definitions: it is not checked again. ``baseline``: the keys of a card's paper setting (--baseline paper)
    that replace every workload's. ``model`` (a catalog name or a path to a config.json) replaces the
    model of every workload. ``sweep``: the cells are streamed a chunk at a time (`triage sweep`), so the sweep's
    cell limit applies, not a run's.
    """
    base_doc = catalog_mod.default_workloads()
    if isinstance(source, Opened):
        user_doc, cat = source.doc, catalog or source.catalog
    else:
        opened = definitions(source, catalog or catalog_mod.load())
        user_doc, cat = opened.doc, opened.catalog
    doc = user_doc or base_doc
    problems: list[Problem] = []
    if model is not None:
        if is_config_path(model):
            cat = cat.merged({}, _config_models({model}, Path(".")))
        elif model not in cat.models:
            raise UserError([Problem("--model", path="", message=f"unknown model {model!r}{NEAR}",
                                     near=(model, cat.models))])

    base_defaults = _parse_settings(base_doc, ("defaults",), problems)
    user_defaults = _parse_settings(doc, ("defaults",), problems) if user_doc and "defaults" in doc.data else {}
    defaults = _merge(base_defaults, user_defaults)
    inherited = {k: ("defaults", k) for k in ("model", "hardware") if k in user_defaults or user_doc is None}
    # --baseline paper: the card's setting replaces every workload's baseline keys (attention, precision, …)
    override = {**({"model": (model,)} if model is not None else {}), **(stated(baseline) if baseline else {})}

    blocks: list[tuple[Block, tuple[Any, ...]]] = []
    engine_files: dict[str, catalog_mod.Engine | None] = {}
    for i, entry in enumerate(doc.data.get("workloads", [])):
        layer = _parse_settings(doc, ("workloads", i), problems)
        merged = _merge(defaults, layer, override)
        if "context" not in merged and merged.get("traffic") is not None:
            merged["context"] = merged["traffic"].step_context()      # its step-level cell: the traffic's lengths
        if "context" not in merged:
            problems.append(doc.problem(("workloads", i), "this workload needs 'context' (here or under "
                                                          "defaults:)"))
        _check_names(doc, ("workloads", i), layer, merged, inherited, cat, problems)
        if "output_tokens" in layer and merged["phase"] == "prefill":
            problems.append(doc.problem(("workloads", i, "output_tokens"), (
                "a prefill workload's request is its prompt: output_tokens does not apply (give it to a decode "
                "workload)")))
        engine = _engine(merged["engine"], doc, ("workloads", i, "engine") if "engine" in layer else
                         ("defaults", "engine"), cat, problems, engine_files) if merged.get("engine") else None
        explicit = _explicit(layer, user_defaults, override, "engine" in layer)
        settings = _settings(merged, entry["name"], entry.get("description", ""), engine, explicit)
        if settings.traffic is not None:
            at = ("workloads", i, "traffic") if "traffic" in layer else ("defaults", "traffic")
            traffic = settings.traffic
            if not traffic.own_slo:             # no traffic: slo: the workload's slo: bounds the simulation too
                traffic = replace(traffic, slo_ttft_s=settings.slo_ttft_s, slo_tpot_s=settings.slo_tpot_s)
            settings = replace(settings, traffic=traffic, traffic_at=doc.problem(at, ""))
        blocks.append((Block(settings), ("workloads", i)))
    names = [b.settings.name for b, _ in blocks]
    for i, name in enumerate(names):
        if name in names[:i]:
            problems.append(doc.problem(("workloads", i, "name"), (
                f"this workload name is also $.workloads[{names.index(name)}]'s: each needs its own")))

    grid = doc.data.get("grid")
    if grid:
        merged = _merge(defaults, {k: tuple(grid[k]) for k in ("model", "hardware") if k in grid}, override)
        _check_names(doc, ("grid",), grid, merged, inherited, cat, problems)
        phases = grid.get("phase", [merged["phase"]])
        contexts = grid.get("context", [merged["context"]] if "context" in merged else [])
        batches = grid.get("batch", [merged["batch"]])
        if not contexts:
            problems.append(doc.problem(("grid",), "grid needs a context axis (or a context under defaults:)"))
        gname = grid.get("name", "grid")
        if gname in names:
            problems.append(doc.problem(("grid", "name"), (
                f"the grid's name is also $.workloads[{names.index(gname)}]'s: each needs its own")))
        engine = _engine(merged["engine"], doc, ("defaults", "engine"), cat, problems, engine_files) \
            if merged.get("engine") else None
        explicit = _explicit({}, user_defaults, override, False)
        for phase in phases:
            share = grid.get("share", 0.0) / len(phases)          # the grid's share, split over its phases
            blocks.append((Block(_settings({**merged, "phase": phase, "share": share}, gname,
                                           "Cartesian sweep", engine, explicit),
                                 tuple(map(float, contexts)), tuple(map(float, batches))), ("grid",)))
    if not blocks:
        problems.append(doc.problem((), "no workloads: give workloads: or grid:"))
    if problems:
        raise UserError(problems)
    cells = sum(len(b.settings.models) * len(b.settings.hardware) * len(b.contexts or (0,)) * len(b.batches or (0,))
                for b, _ in blocks)
    where = ("grid",) if grid else ("workloads",)
    if sweep and cells > LIMITS.sweep_cells:
        raise UserError([doc.problem(where, f"{cells:,} cells; one sweep prices at most {LIMITS.sweep_cells:,} "
                                            f"(limit sweep_cells): split the grid into several sweeps")])
    if not sweep and cells > LIMITS.cells:
        raise UserError([doc.problem(where, f"{cells:,} cells; one run prices at most {LIMITS.cells:,} (limit cells): "
                                            f"`triage sweep` streams up to {LIMITS.sweep_cells:,}")])

    for block, path in blocks:
        settings = block.settings
        entry = doc.data
        for part in path:
            entry = entry[part]
        where = path if "precision" in entry else ("defaults",)
        if settings.beyond_window == "refuse":
            _refuse_beyond_window(doc, path, entry, settings, block.contexts, cat, problems)
        for hw in settings.hardware:
            try:
                cat.hardware[hw].peak(settings.precision["compute"])
            except KeyError:
                problems.append(doc.problem(where + ("precision", "compute"), (
                    f"hardware {hw!r} has no dense {settings.precision['compute']} peak; it lists "
                    f"{', '.join(cat.hardware[hw].compute_flops_per_s)}")))
    if problems:
        raise UserError(problems)
    label = doc.file if user_doc is not None else Workloads.source
    return Workloads(tuple(b for b, _ in blocks), cat, label)


# the paper setting's keys a workload prices (beside model, hardware, phase, batch and context)
PAPER_KEYS = ("attention", "memory_waste", "tp", "batch_utilization", "precision", "domain")


def paper_setting(catalog: catalog_mod.Catalog, model: str, hardware: str, phase: str,
                  batches: Sequence[int], contexts: Sequence[int], setting: Setting,
                  bound: bool = True) -> Workloads:
    """A card's paper setting as workloads, one per batch × context (batches outer), priced as a bound (full
    efficiency, no fixed cost, no reserve) or, ``bound=False``, as the memo prices a workload (the shipped
    defaults' efficiencies and fixed costs: the prediction set beside the paper's measurement); the setting's
    PAPER_KEYS over the shipped defaults."""
    ideal = {"efficiency": {"bandwidth": 1.0, "compute": 1.0}, **{k: 0 for k in catalog_mod.FIXED_COSTS},
             "reserve": 0} if bound else {}
    given = stated(setting)
    defaults = {"model": model, "hardware": hardware, **ideal, **{k: given[k] for k in PAPER_KEYS if k in given}}
    cells = [{"name": f"paper-{i}", "phase": phase, "context": c, "batch": b}
             for i, (b, c) in enumerate(itertools.product(batches, contexts))]
    return load({"defaults": defaults, "workloads": cells}, catalog)


def regrid(w: Workloads, batches: Sequence[int], contexts: Sequence[int]) -> Workloads:
    """``w`` (a paper setting) over other batches and contexts: its first workload's settings, one per
    batch × context, as paper_setting would resolve them."""
    template = w.blocks[0].settings
    blocks = tuple(Block(replace(template, name=f"paper-{i}", context=c, batch=b))
                   for i, (b, c) in enumerate(itertools.product(batches, contexts)))
    return replace(w, blocks=blocks)
