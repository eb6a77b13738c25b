"""Mechanisms that cannot act where they are priced, as notices: never a quiet 1.00× (a dtype the chip
lacks, a mechanism on a phase it does not touch, a workload where the change moves nothing); and a saving's
multiplier above 1, which acts the wrong way (never a quiet NO-GO); and a key the serving simulation does not
model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from ..inputs import traffic
from ..inputs.change import Change
from ..inputs.specs import Hardware
from ..records import written
from .notices import Notice

DTYPE_KEYS = ("compute_dtype", "attention_dtype")       # change keys that name a dtype
SAME = 1e-9          # a ratio this close to 1 is no change


def warnings(change: Change, hardware: Iterable[Hardware], workloads: Iterable[tuple[str, str]],
             domains: Iterable[str | None] | None = ()) -> list[Notice]:
    """Notices for ``change`` priced on ``hardware`` over (workload name, phase) pairs whose requests are of
    ``domains`` (None: not checked, as for the paper's one setting)."""
    out = growth(change)
    chips = list(hardware)
    workloads = list(workloads)
    by_domain = dict(change.speculative.by_domain) if change.speculative is not None else {}
    unused = sorted(set(by_domain) - set(domains)) if domains is not None else []
    if unused:
        out.append(Notice("domain-unused", tuple(unused)))
    for key, dtype in (("compute_dtype", change.compute_dtype), ("attention_dtype", change.attention_dtype)):
        lacking = sorted({h.key for h in chips if dtype and not h.has_peak(dtype)})
        if lacking:
            out.append(Notice("dtype-missing", tuple(lacking), key, str(dtype)))
    for key, phases in change.acting:
        idle = list(dict.fromkeys(name for name, phase in workloads if phase not in phases))
        if idle:
            out.append(Notice("phase-untouched", tuple(idle), key, phases=tuple(sorted(phases)),
                              alone=len(change.keys) == 1))
    return out


def growth(change: Change) -> list[Notice]:
    """A notice for each multiplier of a baseline quantity set above 1 (kv_bytes: 2): it grows what a saving
    shrinks, so the verdict must say why (a method may truly grow it: a warning, not a refusal)."""
    return [Notice("multiplier-grows", key=key, numbers=(value,)) for key, value in change.growing]


def unsimulated(change: Change, served: list[str]) -> list[Notice]:
    """What the serving simulation of the ``served`` workloads leaves out (a step of several tokens: priced at the
    steps' level only), or, with none served, that a scheduling change found no traffic to act on."""
    if served and change.unsimulated:
        return [Notice("serving-unpriced", tuple(dict.fromkeys(served)), key=", ".join(change.unsimulated))]
    return [Notice("scheduler-unpriced")] if change.scheduler is not None and not served else []


def _hint(change: Change, settings: Any, context: float) -> tuple[str, str, tuple[float, ...]]:
    """Why a change moves nothing on a workload, where the reason is known: (a code of notices.HINTS, the value
    its words name, the numbers they state)."""
    ships = _already_run(change, settings)
    if ships:
        return "already-in-stack", ships, ()
    if change.score_bytes is not None and settings.attention != "eager":
        return "already-fused", settings.attention, ()
    if change.split_kv is not None and settings.attention == "split":
        return "already-split", "", ()
    if change.compute_dtype == settings.precision["compute"]:
        return "same-dtype", settings.precision["compute"], ()
    sparse = change.sparse_attention
    if sparse is not None and sparse.budget >= context:
        return "budget-covers", "", (float(sparse.budget), context)
    return "same-step", "", ()


def _already_run(change: Change, settings: Any) -> str:
    """What of a batching, allocation or scheduling change the workload already runs, in words ('' where the
    change sets something it does not): the change's batch-slot share, a fragmentation no lower than the
    workload's, and its scheduler keys laid over the workload's giving the workload's own scheduler. A mechanism
    in today's stack is its baseline, not a saving (issue 42, item 3)."""
    own = [k for k in change.keys if k not in ("batching", "scheduler", "memory_waste")]
    if own or not change.keys:
        return ""
    said = []
    if change.memory_waste is not None:           # an allocator never adds waste: no less than the workload's
        if change.memory_waste < settings.memory_waste:
            return ""
        said.append(f"KV fragmentation {settings.memory_waste * 100:g} %")
    if change.batching is not None:
        if change.batching.utilization != settings.batch_utilization:
            return ""
        said.append(f"batch slots {change.batching.utilization * 100:g} % useful")
    if change.scheduler is not None:
        keys = written(change.scheduler)
        if traffic.scheduler(replace(settings.scheduler, **keys)) != traffic.scheduler(settings.scheduler):
            return ""
        said.append("scheduler " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in keys.items()))
    return ", ".join(said)


def no_effect(change: Change, blocks: tuple[Any, ...], block_idx: np.ndarray, context: np.ndarray,
              ratios: tuple[np.ndarray, ...]) -> list[Notice]:
    """Workloads on which every cell keeps its bytes, FLOPs and every layer's time exactly (``ratios``: claim
    over baseline, cells that do not fit aside) while some key's phase is theirs: the change cannot act there,
    which the memo must say rather than show a bare 1.00×. (A change that saves bytes on a compute-bound step
    did act: its reasons say why the time stays; a phase no key touches is phase-untouched's warning.)"""
    dtype = change.compute_dtype or change.attention_dtype
    if not change.keys or (set(change.keys) <= set(DTYPE_KEYS)
                           and dtype not in {b.precision["compute"] for b in blocks}):
        # a dtype acts on peaks, not on bytes or FLOPs: a memory-bound 1.00x is for its reasons to explain, a chip
        # without the dtype is dtype-missing's warning; only a workload already in that dtype is news here
        return []
    acting = set().union(*(phases for _, phases in change.acting))
    moved = np.zeros(block_idx.shape, dtype=bool)
    for s in ratios:
        moved |= np.abs(np.nan_to_num(np.asarray(s, dtype=float), nan=1.0) - 1.0) > SAME
    any_moved = np.bincount(block_idx, weights=moved, minlength=len(blocks)) > 0
    first = np.zeros(len(blocks), dtype=np.int64)
    first[block_idx[::-1]] = np.arange(len(block_idx))[::-1]          # each block's first cell
    idle: dict[str, tuple[str, str, tuple[float, ...]]] = {}
    for b in np.flatnonzero(~any_moved & (np.bincount(block_idx, minlength=len(blocks)) > 0)):
        if blocks[b].phase in acting:
            idle.setdefault(blocks[b].name, _hint(change, blocks[b], float(context[first[b]])))
    by_reason: dict[tuple[str, str, tuple[float, ...]], list[str]] = {}
    for name, why in idle.items():
        by_reason.setdefault(why, []).append(name)
    return [Notice("no-effect", tuple(names), value=value, key=hint, numbers=numbers)
            for (hint, value, numbers), names in by_reason.items()]
