"""The cells of the JSON document, built from columns: each quantity converted once for all cells.

``columns`` is the one source: the JSON's per-cell objects nest it, a sweep's
frame (CSV, parquet) writes it flat under the same dotted names. Only the
cells asked for are converted, and only they get reasons in words.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from ..analysis.evaluation import Evaluation
from ..analysis.where_it_pays import marginal
from ..model.evidence import E2E_METRICS, Variant
from ..model.roofline import GROUPS
from ..model.verdicts import LABELS
from . import serving as serving_words
from .reasons import reasons

Columns = dict[str, np.ndarray]


def _at(m: Any, idx: slice) -> Any:
    """The cells ``idx`` of a per-cell (or broadcast) array, sliced before anything is computed on it: a window
    of cells costs its own size, not the matrix's (the JSON is written a window at a time)."""
    def at(a: Any) -> np.ndarray:
        return np.asarray(np.broadcast_to(np.asarray(a), m.batch.shape)[idx], dtype=float)
    return at


def _variant(prefix: str, v: Variant, m: Any, idx: slice, request_s: np.ndarray) -> Columns:
    at = _at(m, idx)
    tokens = np.where(m.decode[idx], 1.0, m.context[idx]) * m.batch[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        tokens_per_s = tokens / at(v.time_end_to_end)
    cols: Columns = {
        f"{prefix}.bytes_per_step": at(v.cost.total_bytes),
        f"{prefix}.flops_per_step": at(v.cost.total_flops),
        **{f"{prefix}.bytes_by_group.{g}": at(v.cost.bytes[g]) for g in GROUPS},
        **{f"{prefix}.flops_by_group.{g}": at(v.cost.flops[g]) for g in GROUPS},
        f"{prefix}.memory_bytes": at(v.memory_bytes),
        f"{prefix}.weights_bytes": at(v.mem.weights),
        f"{prefix}.kv_bytes": at(v.mem.kv_per_sequence) * m.batch[idx],
        f"{prefix}.fits": np.asarray(v.fits)[idx],
        f"{prefix}.max_batch": at(v.max_batch).astype(np.int64),
        f"{prefix}.time_s.theoretical": at(v.time_theoretical),
        f"{prefix}.time_s.implementation": at(v.time_implementation),
        f"{prefix}.time_s.end_to_end": at(v.time_end_to_end),
        f"{prefix}.tokens_per_s": tokens_per_s,
        f"{prefix}.compute_bound_fraction": at(v.compute_bound_fraction),
        f"{prefix}.time_per_request_s": at(request_s),
        # one step's end-to-end time by term: kernels, communication, step overhead, launch, request, sequences
        **{f"{prefix}.step_terms_s.{k}": at(t) for k, t in v.time_terms.items()},
    }
    return cols


def columns(ev: Evaluation, limit: int | None = None, start: int = 0) -> Columns:
    """Every JSON cell field except the reasons, as one array per dotted name, for the cells from ``start`` up
    to ``limit`` (the end when None)."""
    m, g, c = ev.matrix, ev.gaps, ev.claim
    stop = len(m) if limit is None else min(limit, len(m))
    idx = slice(start, stop)
    n = max(stop - start, 0)
    base, claim = g.base, g.claim
    at = _at(m, idx)
    with np.errstate(divide="ignore", invalid="ignore"):
        saved = {k: 1.0 - at(getattr(claim, f"time_{k}")) / at(getattr(base, f"time_{k}"))
                 for k in ("theoretical", "implementation", "end_to_end")}
        bytes_saved = 1.0 - at(claim.cost.total_bytes) / at(base.cost.total_bytes)
    # the paper's number only beside cells of its metric and phase: TPOT and throughput on decode, TTFT on
    # prefill (a memory ratio is not a speedup of any cell)
    metric = str(c.claim.metric or "")
    phase_fits = {"tpot": m.decode[idx], "throughput": m.decode[idx], "ttft": ~m.decode[idx]}.get(
        metric, np.zeros(n, dtype=bool))
    claimed = np.where(phase_fits, np.nan if c.claimed_speedup is None else float(c.claimed_speedup), np.nan)
    cols: Columns = {
        "claim": np.full(n, c.id),
        "workload": m.labels("blocks", idx),
        "model": m.labels("models", idx),
        "hardware": m.labels("hardware", idx),
        "phase": np.where(m.decode[idx], "decode", "prefill"),
        "context": m.context[idx].astype(np.int64),
        "batch": m.batch[idx].astype(np.int64),
        "share": m.share[idx],
        "long_context": m.long_context[idx],
        **_variant("baseline", base, m, idx, g.base_request_s),
        **_variant("claim", claim, m, idx, g.claim_request_s),
        "bytes_saved_fraction": bytes_saved,
        **{f"time_saved_fraction.{k}": v for k, v in saved.items()},
        "speedup.claimed": claimed,
        "speedup.theoretical": g.speedup_theoretical[idx],
        "speedup.implementation": g.speedup_implementation[idx],
        "speedup.end_to_end": g.speedup_end_to_end[idx],
        "end_to_end_metric": np.asarray(E2E_METRICS)[np.broadcast_to(g.e2e_metric, m.batch.shape)[idx]],
        "end_to_end_baseline_batch": g.e2e_baseline_batch[idx],
        "baseline_gpus": g.base_gpus[idx],
        "slo_s": g.slo[idx],
    }
    if ev.incumbent is not None:                     # the shipped alternative: its gain, and the claim's over it
        cols["incumbent.speedup"] = np.broadcast_to(ev.incumbent.speedup, m.batch.shape)[idx]
        cols["speedup.over_incumbent"] = np.broadcast_to(ev.verdicts.over_incumbent, m.batch.shape)[idx]
    if ev.parts:
        alone = {part.id: pg.speedup_theoretical[idx] for part, pg in ev.parts}
        product = np.prod(np.nan_to_num(np.stack(list(alone.values())), nan=1.0), axis=0)
        cols.update({f"stack.individual_theoretical.{k}": v for k, v in alone.items()})
        cols["stack.product"] = product
        cols["stack.combined"] = g.speedup_theoretical[idx]
    for layer, (low, high) in ev.ranges.items():     # a calibrated profile's uncertainty, one standard error
        cols[f"speedup_range.{layer}.low"] = np.broadcast_to(low, m.batch.shape)[idx]
        cols[f"speedup_range.{layer}.high"] = np.broadcast_to(high, m.batch.shape)[idx]
    cols["verdict"] = np.asarray(LABELS)[ev.verdicts.code[idx]]
    if ev.analysis is not None:
        cols["marginal"] = marginal(m, g, ev.verdicts, ev.analysis.sensitivity, idx)
    return cols


def _values(name: str, a: np.ndarray, claimed: Any) -> list[Any]:
    """A column as JSON values: finite floats, None for NaN/inf, ints where counts, the card's own claimed.

    A column every cell shares (a model's weight bytes over a sweep) becomes one object referenced n times:
    no new Python object per cell.
    """
    if name == "speedup.claimed":                      # the card's own number, as written, where it applies
        return [claimed if np.isfinite(x) else None for x in a.tolist()] if claimed is not None else [None] * a.size
    if a.size > 1 and (a == a[0]).all():
        return [_values(name, a[:1], claimed)[0]] * a.size
    if a.dtype.kind in "biuU":
        return a.tolist()
    finite = np.isfinite(a)
    values = a.astype(np.int64) if name == "end_to_end_baseline_batch" and finite.all() else a
    if finite.all():
        return values.tolist()
    if name == "end_to_end_baseline_batch":
        values = np.where(finite, a, 0).astype(np.int64)
    return [v if ok else None for v, ok in zip(values.tolist(), finite.tolist(), strict=True)]


def _tree(names: list[str]) -> dict[str, Any]:
    """Dotted names → a nested dict of column indices, in first-seen order."""
    tree: dict[str, Any] = {}
    for n, name in enumerate(names):
        *parents, leaf = name.split(".", 2 if name.startswith("stack.individual_theoretical.") else -1)
        node = tree
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = n
    return tree


def _nest(tree: dict[str, Any], lists: list[list[Any]]) -> list[dict[str, Any]]:
    """One dict per cell for this node of the tree, built column-wise: children first, then dict(zip(keys, ...))."""
    keys = list(tree)
    children = [lists[v] if isinstance(v, int) else _nest(v, lists) for v in tree.values()]
    return [dict(zip(keys, values, strict=True)) for values in zip(*children, strict=True)]


def cells(ev: Evaluation, limit: int | None = None, start: int = 0) -> list[dict[str, Any]]:
    """The cells from ``start`` up to ``limit`` (the end when None) as the JSON contract describes them: a
    window, so the JSON can be written a window at a time (memo.write_json)."""
    n = len(ev.matrix) if limit is None else min(limit, len(ev.matrix))
    cols = columns(ev, n, start)
    del cols["claim"]                       # the document names its claim once, not in every cell
    names = list(cols)
    # millions of new containers (the values, the reasons, the cells) would trigger the cyclic collector over an
    # ever larger heap (quadratic); none of them can form a cycle, so it is paused while they are made
    enabled = gc.isenabled()
    gc.disable()
    try:
        lists = [_values(k, cols[k], ev.claim.claimed_speedup) for k in names]
        words = reasons(slice(start, n), ev.matrix, ev.claim, ev.gaps, ev.verdicts)
        out = _nest(_tree(names), lists)
        for cell, why in zip(out, words, strict=True):
            cell["reasons"] = why
        m = ev.matrix
        for (b, mi, hi), result in ev.serving.items():       # a workload's traffic: its simulation, one object
            served = serving_words.as_json(result)
            first = (f"the serving simulation decides: {result.gain:.3f}× in "
                     + serving_words.BASIS[result.basis]
                     + f" ({result.baseline.scheduler} → {result.claim.scheduler} scheduler); the step-level "
                       f"reasons follow")
            for i in np.flatnonzero((m.block_idx[start:n] == b) & (m.model_idx[start:n] == mi)
                                    & (m.hardware_idx[start:n] == hi)):
                out[i]["serving"] = served
                out[i]["reasons"] = [first, *out[i]["reasons"]]
    finally:
        if enabled:
            gc.enable()
    return out
