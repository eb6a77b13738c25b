"""Where a claim pays: crossover over context × batch, throughput at the SLO, sensitivity to its unknowns.

All three re-evaluate the claim on small matrices derived from the memo's
cells (numpy, one call per table), never one cell at a time.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from . import gaps, mechanisms, verdict
from .cards import Claim
from .result import Result
from .workloads import Matrix

CONTEXTS = np.array(sorted({2 ** n for n in range(8, 21)} | {3 * 2 ** (n - 1) for n in range(8, 20)}))  # 256 … 1M
BATCHES = np.array([1, 4, 16, 64])
SLO_BATCHES = 2 ** np.arange(0, 12)                                                # 1 … 2048


def _replicate(m: Matrix, i: int, context: np.ndarray, batch: np.ndarray) -> Matrix:
    """Cell i's settings on new (context, batch) pairs."""
    sub = m.take(np.full(context.size, i))
    return replace(sub, context=context.astype(float), batch=batch.astype(float),
                   long_context=context >= 32768, share=np.full(context.size, 1.0 / context.size))


def _k(tokens: float) -> str:
    return f"{tokens / 1024:g}k" if tokens >= 1024 else f"{tokens:g}"


def _ranges(contexts: np.ndarray, pays: np.ndarray) -> str:
    """'above 24k tokens', 'below 8k', 'from 4k to 64k', 'at every context', 'at no context'."""
    if pays.all():
        return f"at every context from {_k(contexts[0])} to {_k(contexts[-1])} tokens"
    if not pays.any():
        return f"at no context up to {_k(contexts[-1])} tokens"
    first, last = np.flatnonzero(pays)[[0, -1]]
    if last == len(pays) - 1 and pays[first:].all():
        return f"above {_k(contexts[first])} tokens"
    if first == 0 and pays[: last + 1].all():
        return f"below {_k(contexts[last])} tokens"
    return f"from {_k(contexts[first])} to {_k(contexts[last])} tokens"


def crossover(result: Result, models: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model × hardware of the matrix (decode): where the bound and the expected gain reach min_gain."""
    m = result.matrix
    out = []
    decode = np.flatnonzero(m.decode)
    pairs = m.model_idx[decode] * len(m.hardware) + m.hardware_idx[decode]
    _, first = np.unique(pairs, return_index=True)          # the first decode cell of each model × hardware
    for i in decode[np.sort(first)]:
        key = (int(m.model_idx[i]), int(m.hardware_idx[i]))
        ctx, bat = np.meshgrid(CONTEXTS, BATCHES)
        grid = _replicate(m, i, ctx.ravel(), bat.ravel())
        g = gaps.compute(grid, result.claim, models)
        min_gain = float(m.blocks[m.block_idx[i]].min_gain)
        theo = (g.speedup_theoretical >= min_gain).reshape(ctx.shape)
        expected = ((g.speedup_implementation >= min_gain) & g.claim.fits).reshape(ctx.shape)
        rows = [{"batch": int(b), "theoretical": _ranges(CONTEXTS, theo[j]), "expected": _ranges(CONTEXTS, expected[j]),
                 "first_context": int(CONTEXTS[np.flatnonzero(theo[j])[0]]) if theo[j].any() else None}
                for j, b in enumerate(BATCHES)]
        words = "; ".join(f"at batch {r['batch']} it pays {r['theoretical']} (expected: {r['expected']})"
                          for r in rows)
        out.append({"model": m.models[key[0]].key, "hardware": m.hardware[key[1]].key, "min_gain": min_gain,
                    "rows": rows, "text": words,
                    "grid": {"contexts": CONTEXTS.tolist(), "batches": BATCHES.tolist(),
                             "theoretical": g.speedup_theoretical.reshape(ctx.shape).tolist()}})
    return out


def slo_throughput(result: Result, models: dict[str, Any], limit: int = 64) -> list[dict[str, Any]]:
    """Per cell: the largest batch that fits and meets the SLO, and its tokens/s, baseline vs claim."""
    m = result.matrix
    n, k = min(len(m), limit), SLO_BATCHES.size
    cells = np.repeat(np.arange(n), k)
    grid = replace(m.take(cells), batch=np.tile(SLO_BATCHES, n).astype(float), share=np.full(n * k, 1.0 / (n * k)))
    g = gaps.compute(grid, result.claim, models)
    out = []
    for i in range(n):
        rows = slice(i * k, (i + 1) * k)
        per_step = SLO_BATCHES * (1.0 if m.decode[i] else m.context[i])
        slo = g.slo[rows]
        sides: dict[str, dict[str, Any]] = {}
        for name, v in (("baseline", g.base), ("claim", g.claim)):
            t = v.time_end_to_end[rows]
            ok = v.fits[rows] & ~(t > slo)                        # a NaN SLO meets everything
            if ok.any():
                j = int(np.flatnonzero(ok)[-1])
                sides[name] = {"batch": int(SLO_BATCHES[j]), "tokens_per_s": float(per_step[j] / t[j]),
                               "time_s": float(t[j])}
            else:
                sides[name] = {"batch": 0, "tokens_per_s": 0.0, "time_s": None}
        base, claim = sides["baseline"]["tokens_per_s"], sides["claim"]["tokens_per_s"]
        out.append({"cell": i, "baseline": sides["baseline"], "claim": sides["claim"],
                    "gain": claim / base if base > 0 else None,
                    "slo_s": None if np.isnan(slo[0]) else float(slo[0])})
    return out


def sensitivity(result: Result, models: dict[str, Any]) -> list[dict[str, Any]]:
    """The share-weighted end-to-end gain and decision as the card's uncertain inputs move."""
    claim = result.claim
    variants: list[tuple[str, str, Claim]] = []
    for eff in (0.5, 0.75, 1.0):
        variants.append(("kernel bandwidth efficiency", f"{eff:g}", replace(claim, bandwidth_efficiency=eff)))
    if mechanisms.changes_format(claim.change):
        for kernel in (False, True):
            variants.append(("kernel reads the new format", "yes" if kernel else "no", replace(claim, kernel=kernel)))
    spec = claim.change.get("speculative", {})
    if "acceptance" in spec:
        for delta in (-0.2, -0.1, 0.0, 0.1):
            alpha = min(max(spec["acceptance"] + delta, 0.0), 1.0)
            change = {**claim.change, "speculative": {**spec, "acceptance": alpha}}
            variants.append(("acceptance rate", f"{alpha:.2f}", replace(claim, change=change)))
    for retained in (0.98, 0.99, 1.0):
        variants.append(("quality retained", f"{retained:.2f}", replace(claim, quality_retained=retained)))
    rows = []
    for name, value, variant in variants:
        g = gaps.compute(result.matrix, variant, models)
        v = verdict.decide(result.matrix, variant, g)
        d = verdict.decision(result.matrix, variant, g, v)
        rows.append({"input": name, "value": value, "weighted_speedup": d["weighted_speedup"]["end_to_end"],
                     "decision": d["verdict"]})
    return rows
