"""Mechanisms that cannot act where they are priced, as warnings: never a quiet 1.00× (a dtype the chip
lacks, a mechanism on a phase it does not touch, a workload where the change moves nothing)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..inputs.registry import acting_phases
from ..inputs.specs import Hardware

# change keys that name a dtype, and what would run in it ("the ... there keep(s) the workload's rate")
DTYPE_KEYS = {"compute_dtype": "linear layers there keep", "attention_dtype": "attention there keeps"}
SAME = 1e-9          # a ratio this close to 1 is no change


def _names(names: list[str]) -> str:
    return ", ".join(names[:6]) + (" …" if len(names) > 6 else "")


def warnings(change: dict[str, Any], hardware: Iterable[Hardware], workloads: Iterable[tuple[str, str]],
             domains: Iterable[str | None] | None = ()) -> list[dict[str, str]]:
    """[{code, message}] for ``change`` priced on ``hardware`` over (workload name, phase) pairs whose requests
    are of ``domains`` (None: not checked, as for the paper's one setting)."""
    out = []
    chips = list(hardware)
    workloads = list(workloads)
    spec = change.get("speculative")
    by_domain = spec.get("by_domain", {}) if isinstance(spec, dict) else {}
    unused = sorted(set(by_domain) - set(domains)) if domains is not None else []
    if unused:
        out.append({"code": "domain-unused", "message": (
            f"speculative.by_domain gives {', '.join(unused)}, which no workload states (workloads: domain:): "
            f"{'they are' if len(unused) > 1 else 'it is'} not priced; every workload gets the card's default")})
    for key, operators in DTYPE_KEYS.items():
        dtype = change.get(key)
        lacking = sorted({h.key for h in chips if dtype and not h.has_peak(dtype)})
        if lacking:
            out.append({"code": "dtype-missing", "message": (
                f"{key} {dtype}: {', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no dense {dtype} "
                f"peak, so the {operators} the workload's rate (no gain from the dtype)")})
    for key, value in change.items():
        phases = acting_phases(key, value)
        idle = list(dict.fromkeys(name for name, phase in workloads if phase not in phases))
        if idle:
            alone = len(change) == 1
            out.append({"code": "phase-untouched", "message": (
                f"{key} acts at {' and '.join(sorted(phases))} only: {_names(idle)} "
                f"{'is' if len(idle) == 1 else 'are'} priced " + ("unchanged (1.00×)" if alone else "without it"))})
    return out


def _hint(change: dict[str, Any], settings: Any, context: float) -> str:
    """Why a change moves nothing on a workload, where the reason is known."""
    if "score_bytes" in change and settings.attention != "eager":
        return f"its attention is already {settings.attention}: no score traffic to save"
    if "split_kv" in change and settings.attention == "split":
        return "its decode attention already splits the KV"
    if change.get("compute_dtype") == settings.precision["compute"]:
        return f"it already computes in {settings.precision['compute']}"
    sparse = change.get("sparse_attention")
    if isinstance(sparse, dict) and sparse["budget"] >= context:
        return f"the budget of {sparse['budget']:,} keys covers its {context:,.0f}-token context"
    return "its bytes, FLOPs and kernels are the same with the change"


def no_effect(change: dict[str, Any], blocks: tuple[Any, ...], block_idx: np.ndarray, context: np.ndarray,
              ratios: tuple[np.ndarray, ...]) -> list[dict[str, str]]:
    """Workloads on which every cell keeps its bytes, FLOPs and every layer's time exactly (``ratios``: claim
    over baseline, cells that do not fit aside) while some key's phase is theirs: the change cannot act there,
    which the memo must say rather than show a bare 1.00×. (A change that saves bytes on a compute-bound step
    did act: its reasons say why the time stays; a phase no key touches is phase-untouched's warning.)"""
    dtype = change.get("compute_dtype") or change.get("attention_dtype")
    if not change or (set(change) <= set(DTYPE_KEYS) and dtype not in {b.precision["compute"] for b in blocks}):
        # a dtype acts on peaks, not on bytes or FLOPs: a memory-bound 1.00x is for its reasons to explain, a chip
        # without the dtype is dtype-missing's warning; only a workload already in that dtype is news here
        return []
    acting = set().union(*(acting_phases(k, v) for k, v in change.items()))
    moved = np.zeros(block_idx.shape, dtype=bool)
    for s in ratios:
        moved |= np.abs(np.nan_to_num(np.asarray(s, dtype=float), nan=1.0) - 1.0) > SAME
    any_moved = np.bincount(block_idx, weights=moved, minlength=len(blocks)) > 0
    first = np.zeros(len(blocks), dtype=np.int64)
    first[block_idx[::-1]] = np.arange(len(block_idx))[::-1]          # each block's first cell
    idle: dict[str, str] = {}
    for b in np.flatnonzero(~any_moved & (np.bincount(block_idx, minlength=len(blocks)) > 0)):
        if blocks[b].phase in acting:
            idle.setdefault(blocks[b].name, _hint(change, blocks[b], float(context[first[b]])))
    by_reason: dict[str, list[str]] = {}
    for name, why in idle.items():
        by_reason.setdefault(why, []).append(name)
    return [{"code": "no-effect", "message": f"the change does not act on {_names(names)}: priced 1.00× there "
                                             f"({why})"} for why, names in by_reason.items()]
