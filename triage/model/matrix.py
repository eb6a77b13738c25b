"""The workload matrix as numpy columns: resolved blocks expanded into cells, block by block.

Each block expands over its models × hardware (× context × batch for a grid)
with numpy, so a million-cell grid costs no Python loop per cell.
"""

from __future__ import annotations

import math
from functools import cached_property
from itertools import product
from typing import Any

import numpy as np

from ..defaults import LONG_CONTEXT_TOKENS
from ..inputs.specs import Hardware, Model, bytes_per_element
from ..inputs.workloads import Block, Settings, Workloads
from ..records import record


@record
class Matrix:
    """All cells as numpy columns (SI base units) plus the specs and settings they index."""

    models: tuple[Model, ...]
    hardware: tuple[Hardware, ...]
    blocks: tuple[Settings, ...]
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

    @cached_property
    def outside_fit(self) -> dict[tuple[int, int], np.ndarray]:
        """Per (block, chip) whose engine profile has an entry for the chip stating the regime its rows span
        (phases, batch, context, weight formats): the cells outside it, which take the profile's default values
        rather than an entry fitted on other steps. Found once a matrix: every pricing pass and the evaluation's
        notice read it."""
        out: dict[tuple[int, int], np.ndarray] = {}
        for b, s in enumerate(self.blocks):
            for h, hw in enumerate(self.hardware):
                r = s.engine.ranges.get(hw.key) if s.engine is not None else None
                if r is None:
                    continue
                ok = np.broadcast_to(r.contains(self.decode, self.batch, self.context, s.precision["weights"]),
                                     self.batch.shape)
                mask = (self.block_idx == b) & (self.hardware_idx == h) & ~ok
                if mask.any():
                    out[(b, h)] = mask
        return out

    def column(self, attr: str, table: str = "blocks") -> np.ndarray:
        """A per-block (or per-model, per-hardware) attribute as a cell column, 0-d when shared by all."""
        entries: tuple[Any, ...]
        if table == "blocks":
            entries, idx = self.blocks, self.block_idx
        elif table == "models":
            entries, idx = self.models, self.model_idx
        else:
            entries, idx = self.hardware, self.hardware_idx
        return compact(np.array([_get(v, attr) for v in entries], dtype=float), idx)

    def per_model(self, fn: Any) -> np.ndarray:
        """``fn(model)`` for each cell's model, as a column (0-d when one model serves every cell)."""
        return compact(np.array([fn(mod) for mod in self.models], dtype=float), self.model_idx)

    def per_block_hardware(self, fn: Any) -> np.ndarray:
        """``fn(settings, hardware)`` for each cell's block and chip, as a column (0-d when all cells agree)."""
        table = np.array([[fn(s, h) for h in self.hardware] for s in self.blocks], dtype=float)
        flat_idx = self.block_idx * len(self.hardware) + self.hardware_idx
        return compact(table.ravel(), flat_idx)

    def labels(self, table: str, idx: slice = slice(None)) -> np.ndarray:
        """The workload name, model key or hardware key of the cells ``idx`` (all by default; a numpy string
        column)."""
        if table == "blocks":
            return np.array([b.name for b in self.blocks])[self.block_idx[idx]]
        if table == "models":
            return np.array([m.label for m in self.models])[self.model_idx[idx]]
        return np.array([h.key for h in self.hardware])[self.hardware_idx[idx]]


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


def _block_cells(block: Block) -> tuple[int, int]:
    """(cells per model × chip pair, model × chip pairs) of a resolved block."""
    per = len(block.contexts) * len(block.batches) if block.contexts is not None and block.batches is not None \
        else 1
    return per, len(block.settings.models) * len(block.settings.hardware)


def size(workloads: Workloads) -> int:
    """How many cells ``build`` makes of the workloads, without making them."""
    return sum(per * pairs for per, pairs in map(_block_cells, workloads.blocks))


def build(workloads: Workloads, start: int = 0, stop: int | None = None) -> Matrix:
    """The cells ``start`` to ``stop`` (all by default) of the blocks, concatenated into columns; shares split
    evenly within a block and normalised over every cell, so a sweep built a range at a time (a chunk of a
    grid too large to hold) has the same cells and shares as the whole (to the last bit of rounding). A cell's
    place is arithmetic (block, then model × chip, then context, then batch), so a range costs its own size,
    not the grid's."""
    blocks = workloads.blocks
    cat = workloads.catalog
    model_keys = sorted({m for b in blocks for m in b.settings.models})
    hw_keys = sorted({h for b in blocks for h in b.settings.hardware})
    m_index = {k: i for i, k in enumerate(model_keys)}
    h_index = {k: i for i, k in enumerate(hw_keys)}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                         ("model", "hardware", "block", "decode", "context", "batch", "share", "long")}
    explicit_share = any(b.settings.share for b in blocks)
    sizes = [_block_cells(b) for b in blocks]
    totals = [(b.settings.share or 0.0) if explicit_share else float(per * pairs)   # no shares: every cell alike
              for b, (per, pairs) in zip(blocks, sizes, strict=True)]
    total = sum(totals)
    stop = size(workloads) if stop is None else stop
    offset = 0
    for n_block, (block, (per, pairs), share_total) in enumerate(zip(blocks, sizes, totals, strict=True)):
        n = per * pairs
        lo, hi = max(start - offset, 0), min(stop - offset, n)
        offset += n
        if lo >= hi:
            continue
        s = block.settings
        i = np.arange(lo, hi)
        pair, k = np.divmod(i, per)
        if block.contexts is not None and block.batches is not None:
            c, b = np.divmod(k, len(block.batches))                # contexts outer, batches inner
            ctx = np.asarray(block.contexts, float)[c]
            bat = np.asarray(block.batches, float)[b]
        else:
            ctx, bat = np.full(i.size, float(s.context)), np.full(i.size, float(s.batch))
        combos = list(product(s.models, s.hardware))
        cols["model"].append(np.array([m_index[m] for m, _ in combos])[pair])
        cols["hardware"].append(np.array([h_index[h] for _, h in combos])[pair])
        cols["block"].append(np.full(i.size, n_block))
        cols["decode"].append(np.full(i.size, s.phase == "decode"))
        cols["context"].append(ctx)
        cols["batch"].append(bat)
        cols["share"].append(np.full(i.size, share_total / n))
        cols["long"].append(ctx >= LONG_CONTEXT_TOKENS if s.long_context is None else np.full(i.size, s.long_context))
    # one block's column is its own array (a copy of a million cells is 8 MB of fresh pages), several joined
    arrays = {k: (v[0] if len(v) == 1 else np.concatenate(v)) if v else np.zeros(0) for k, v in cols.items()}
    share = arrays["share"]
    if start <= 0 and stop >= offset:
        total = share.sum()               # the whole matrix: normalised by its own sum, as it always was
    share = share / total if total > 0 else np.full(share.shape, 1.0 / max(offset, 1))
    return Matrix(
        models=tuple(cat.models[k] for k in model_keys),
        hardware=tuple(cat.hardware[k] for k in hw_keys),
        blocks=tuple(b.settings for b in blocks),
        model_idx=arrays["model"].astype(np.intp, copy=False),
        hardware_idx=arrays["hardware"].astype(np.intp, copy=False),
        block_idx=arrays["block"].astype(np.intp, copy=False),
        decode=arrays["decode"].astype(bool, copy=False),
        context=arrays["context"].astype(float, copy=False),
        batch=arrays["batch"].astype(float, copy=False),
        share=share,
        long_context=arrays["long"].astype(bool, copy=False),
        source=workloads.source,
    )


def precision_bytes(matrix: Matrix, which: str) -> np.ndarray:
    """Bytes per element of the ``which`` precision ('weights', 'kv', 'activations') per cell."""
    per_block = np.array([bytes_per_element(s.precision[which]) for s in matrix.blocks])
    return compact(per_block, matrix.block_idx)


def peak_flops(matrix: Matrix) -> np.ndarray:
    """Dense peak FLOP/s of each cell's hardware at its compute precision."""
    return matrix.per_block_hardware(lambda s, hw: hw.peak(s.precision["compute"])
                                     if hw.has_peak(s.precision["compute"]) else np.nan)
