"""The workload matrix: a workload file (or the shipped default) resolved into numpy columns.

Each explicit workload expands over its model and hardware lists; a grid is a
Cartesian sweep over phase × context × batch × model × hardware. Cells are
built block by block with numpy, so a million-cell grid costs no Python loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog as catalog_mod
from .errors import Problem, UserError
from .specs import Hardware, Model, bytes_per_element
from .validation import did_you_mean, validate
from .yamlio import Document, load_file

LONG_CONTEXT_TOKENS = 32768  # a workload at or above this context needs long-context quality evidence

_QUANTITY_KINDS = {"overhead": "time", "reserve": "bytes"}


@dataclass(frozen=True)
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
    slo_tpot_s: float | None
    slo_ttft_s: float | None
    quality_gate: float
    min_gain: float
    reserve_bytes: float
    memory_waste: float
    attention: str
    tp: int
    batch_utilization: float
    long_context: bool | None
    share: float | None


@dataclass
class Matrix:
    """All cells as numpy columns (SI base units) plus the specs and settings they index."""

    models: list[Model]
    hardware: list[Hardware]
    blocks: list[Settings]
    model_idx: np.ndarray
    hardware_idx: np.ndarray
    block_idx: np.ndarray
    decode: np.ndarray          # bool: decode step (else prefill)
    context: np.ndarray         # tokens in the cache (decode) or in the prompt (prefill)
    batch: np.ndarray           # sequences per step
    share: np.ndarray           # traffic share, normalised to sum 1
    long_context: np.ndarray    # bool: needs long-context quality evidence
    source: str = "default"

    def __len__(self) -> int:
        return int(self.model_idx.shape[0])

    def take(self, idx: np.ndarray) -> Matrix:
        """The cells at ``idx`` as a matrix of their own (shares renormalised)."""
        share = self.share[idx]
        total = share.sum()
        return Matrix(self.models, self.hardware, self.blocks, self.model_idx[idx], self.hardware_idx[idx],
                      self.block_idx[idx], self.decode[idx], self.context[idx], self.batch[idx],
                      share / total if total > 0 else np.full(share.shape, 1.0 / share.size),
                      self.long_context[idx], self.source)

    def column(self, attr: str, table: str = "blocks") -> np.ndarray:
        """A per-block (or per-model, per-hardware) attribute as a cell column, 0-d when shared by all."""
        entries: list[Any]
        if table == "blocks":
            entries, idx = list(self.blocks), self.block_idx
        elif table == "models":
            entries, idx = list(self.models), self.model_idx
        else:
            entries, idx = list(self.hardware), self.hardware_idx
        return compact(np.array([_get(v, attr) for v in entries], dtype=float), idx)


def compact(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``values[idx]``, or the one value as a 0-d array when all entries agree (numpy broadcasts it)."""
    first = values.flat[0]
    if np.all((values == first) | (np.isnan(values) & np.isnan(first))):
        return np.asarray(first)
    return values[idx]


def _get(obj: Any, attr: str) -> float:
    value = obj
    for part in attr.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return math.nan if value is None else float(value)


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
        else:
            out[key] = value
    return out


def _merge(*layers: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if key in ("precision", "efficiency", "slo") and key in out:
                out[key] = {**out[key], **value}
            else:
                out[key] = value
    return out


def _settings(merged: dict[str, Any], name: str, description: str) -> Settings:
    slo = merged.get("slo", {})
    eff = merged.get("efficiency", {})
    prec = merged.get("precision", {})
    return Settings(
        name=name,
        description=description,
        models=merged["model"],
        hardware=merged["hardware"],
        phase=merged.get("phase", "decode"),
        context=merged.get("context", 0),
        batch=merged.get("batch", 1),
        precision={"weights": prec.get("weights", "fp16"), "kv": prec.get("kv", "fp16"),
                   "activations": prec.get("activations", "fp16"),
                   "compute": prec.get("compute", prec.get("activations", "fp16"))},
        bandwidth_efficiency=eff.get("bandwidth", 1.0),
        compute_efficiency=eff.get("compute", 1.0),
        overhead_s=merged.get("overhead", 0.0),
        slo_tpot_s=slo.get("tpot"),
        slo_ttft_s=slo.get("ttft"),
        quality_gate=merged.get("quality_gate", 0.99),
        min_gain=merged.get("min_gain", 1.10),
        reserve_bytes=merged.get("reserve", 0.0),
        memory_waste=merged.get("memory_waste", 0.0),
        attention=merged.get("attention", "split"),
        tp=merged.get("tp", 1),
        batch_utilization=merged.get("batch_utilization", 1.0),
        long_context=merged.get("long_context"),
        share=merged.get("share"),
    )


def _check_names(doc: Document, path: tuple[Any, ...], layer: dict[str, Any], merged: dict[str, Any],
                 inherited: dict[str, tuple[Any, ...]], cat: catalog_mod.Catalog, problems: list[Problem]) -> None:
    """Every model and hardware name of ``merged`` exists, addressed where it was written."""
    for key, table, section in (("model", cat.models, "models"), ("hardware", cat.hardware, "hardware")):
        where = path + (key,) if key in layer else inherited.get(key, path)
        for name in merged.get(key, ()):
            if name not in table:
                problems.append(doc.problem(where, (
                    f"unknown {key} {name!r}{did_you_mean(name, table)} "
                    f"(see triage/catalog/{section}.yaml, or define it under {section}:)")))


def _open(source: str | Path | dict[str, Any] | None) -> Document | None:
    if source is None:
        return None
    if isinstance(source, dict):
        return Document("<workloads>", source)
    return load_file(source)


def _config_models(names: set[str], base: Path) -> dict[str, Model]:
    """Models named by a path to a Hugging Face config.json, relative to ``base``."""
    from .hfconfig import is_config_path, load_model

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


def load(source: str | Path | dict[str, Any] | None = None, catalog: catalog_mod.Catalog | None = None,
         model: str | None = None) -> Matrix:
    """Resolve a workload file (path or parsed dict; None for the shipped default) into a Matrix.

    ``model`` (a catalog name or a path to a config.json) replaces the model of every workload.
    """
    cat = catalog or catalog_mod.load()
    base_doc = catalog_mod.default_workloads()
    user_doc = _open(source)
    doc = user_doc or base_doc
    problems = validate(doc, "workloads")
    if problems:
        raise UserError(problems)

    hardware = {k: catalog_mod.parse_hardware(doc, ("hardware", k), k, problems)
                for k in doc.data.get("hardware", {})}
    models = {k: catalog_mod.parse_model(doc, ("models", k), k, problems) for k in doc.data.get("models", {})}
    base_dir = Path(doc.file).parent if user_doc is not None and not isinstance(source, dict) else Path(".")
    models.update(_config_models(_model_names(doc.data) - set(models), base_dir))
    if model is not None:
        if model.endswith(".json"):
            models.update(_config_models({model}, Path(".")))
        elif model not in cat.models and model not in models:
            raise UserError([Problem("--model", path="", message=(
                f"unknown model {model!r}{did_you_mean(model, [*cat.models, *models])}"))])
    cat = cat.merged(hardware, models)

    base_defaults = _parse_settings(base_doc, ("defaults",), problems)
    user_defaults = _parse_settings(doc, ("defaults",), problems) if user_doc and "defaults" in doc.data else {}
    defaults = _merge(base_defaults, user_defaults)
    inherited = {k: ("defaults", k) for k in ("model", "hardware") if k in user_defaults or user_doc is None}
    override = {"model": (model,)} if model is not None else {}

    blocks: list[tuple[Settings, dict[str, Any]]] = []
    for i, entry in enumerate(doc.data.get("workloads", [])):
        layer = _parse_settings(doc, ("workloads", i), problems)
        merged = _merge(defaults, layer, override)
        if "context" not in merged:
            problems.append(doc.problem(("workloads", i), f"workload {entry['name']!r} needs 'context' "
                                                          f"(here or under defaults:)"))
        _check_names(doc, ("workloads", i), layer, merged, inherited, cat, problems)
        blocks.append((_settings(merged, entry["name"], entry.get("description", "")), {"_path": ("workloads", i)}))
    names = [s.name for s, _ in blocks]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(doc.problem(("workloads",), f"workload name {name!r} is used twice"))

    grid = doc.data.get("grid")
    if grid:
        merged = _merge(defaults, {k: tuple(grid[k]) for k in ("model", "hardware") if k in grid}, override)
        _check_names(doc, ("grid",), grid, merged, inherited, cat, problems)
        phases = grid.get("phase", [merged.get("phase", "decode")])
        contexts = grid.get("context", [merged["context"]] if "context" in merged else [])
        batches = grid.get("batch", [merged.get("batch", 1)])
        if not contexts:
            problems.append(doc.problem(("grid",), "grid needs a context axis (or a context under defaults:)"))
        gname = grid.get("name", "grid")
        if gname in names:
            problems.append(doc.problem(("grid", "name"), f"grid name {gname!r} is also a workload's name"))
        for phase in phases:
            blocks.append((_settings({**merged, "phase": phase, "share": grid.get("share", 0.0)}, gname,
                                     "Cartesian sweep"), {"context": contexts, "batch": batches, "_path": ("grid",)}))
    if not blocks:
        problems.append(doc.problem((), "no workloads: give workloads: or grid:"))
    if problems:
        raise UserError(problems)

    for settings, axes in blocks:
        entry = doc.data
        for part in axes["_path"]:
            entry = entry[part]
        where = axes["_path"] if "precision" in entry else ("defaults",)
        for hw in settings.hardware:
            try:
                cat.hardware[hw].peak(settings.precision["compute"])
            except KeyError:
                problems.append(doc.problem(where + ("precision", "compute"), (
                    f"hardware {hw!r} has no dense {settings.precision['compute']} peak; it lists "
                    f"{', '.join(cat.hardware[hw].compute_flops_per_s)}")))
    if problems:
        raise UserError(problems)
    matrix = _build(blocks, cat)
    matrix.source = str(source) if source is not None and not isinstance(source, dict) else (
        "<workloads>" if isinstance(source, dict) else "triage/catalog/workloads.yaml")
    return matrix


def _build(blocks: list[tuple[Settings, dict[str, Any]]], cat: catalog_mod.Catalog) -> Matrix:
    """Concatenate the blocks' cells into columns; shares split evenly within a block."""
    model_keys = sorted({m for s, _ in blocks for m in s.models})
    hw_keys = sorted({h for s, _ in blocks for h in s.hardware})
    m_index = {k: i for i, k in enumerate(model_keys)}
    h_index = {k: i for i, k in enumerate(hw_keys)}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                         ("model", "hardware", "block", "decode", "context", "batch", "share", "long")}
    settings_list: list[Settings] = []
    explicit_share = any(s.share for s, _ in blocks)
    for b, (s, axes) in enumerate(blocks):
        settings_list.append(s)
        combos = list(product(s.models, s.hardware))
        if "context" in axes:
            ctx, bat = np.meshgrid(np.asarray(axes["context"], float), np.asarray(axes["batch"], float),
                                   indexing="ij")
            ctx, bat = ctx.ravel(), bat.ravel()
        else:
            ctx, bat = np.array([float(s.context)]), np.array([float(s.batch)])
        per = ctx.size
        n = per * len(combos)
        share_total = (s.share or 0.0) if explicit_share else 1.0
        cols["model"].append(np.repeat([m_index[m] for m, _ in combos], per))
        cols["hardware"].append(np.repeat([h_index[h] for _, h in combos], per))
        cols["block"].append(np.full(n, b))
        cols["decode"].append(np.full(n, s.phase == "decode"))
        cols["context"].append(np.tile(ctx, len(combos)))
        cols["batch"].append(np.tile(bat, len(combos)))
        cols["share"].append(np.full(n, share_total / n))
        if s.long_context is None:
            cols["long"].append(np.tile(ctx >= LONG_CONTEXT_TOKENS, len(combos)))
        else:
            cols["long"].append(np.full(n, s.long_context))
    cat_arrays = {k: np.concatenate(v) for k, v in cols.items()}
    share = cat_arrays["share"]
    total = share.sum()
    share = share / total if total > 0 else np.full(share.shape, 1.0 / share.size)
    return Matrix(
        models=[cat.models[k] for k in model_keys],
        hardware=[cat.hardware[k] for k in hw_keys],
        blocks=settings_list,
        model_idx=cat_arrays["model"].astype(np.intp),
        hardware_idx=cat_arrays["hardware"].astype(np.intp),
        block_idx=cat_arrays["block"].astype(np.intp),
        decode=cat_arrays["decode"].astype(bool),
        context=cat_arrays["context"],
        batch=cat_arrays["batch"],
        share=share,
        long_context=cat_arrays["long"].astype(bool),
    )


def precision_bytes(matrix: Matrix, which: str) -> np.ndarray:
    """Bytes per element of the ``which`` precision ('weights', 'kv', 'activations') per cell."""
    per_block = np.array([bytes_per_element(s.precision[which]) for s in matrix.blocks])
    return compact(per_block, matrix.block_idx)


def peak_flops(matrix: Matrix) -> np.ndarray:
    """Dense peak FLOP/s of each cell's hardware at its compute precision."""
    table = np.array([[hw.peak(s.precision["compute"]) if _has(hw, s.precision["compute"]) else np.nan
                       for hw in matrix.hardware] for s in matrix.blocks])
    if np.all(table == table.flat[0]):
        return np.asarray(table.flat[0])
    return table[matrix.block_idx, matrix.hardware_idx]


def _has(hw: Hardware, dtype: str) -> bool:
    try:
        hw.peak(dtype)
    except KeyError:
        return False
    return True
