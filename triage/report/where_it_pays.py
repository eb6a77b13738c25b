"""Where a claim pays, in words and as JSON: crossover ranges, throughput at the SLO, sensitivity."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from ..analysis.where_it_pays import INPUTS, Analysis, Crossover, Sensitivity


def _k(tokens: float) -> str:
    return f"{tokens / 1024:g}k" if tokens >= 1024 else f"{tokens:g}"


def ranges(contexts: np.ndarray, pays: np.ndarray) -> str:
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


def _crossover(x: Crossover) -> dict[str, Any]:
    rows = [{"batch": int(b), "theoretical": ranges(x.contexts, x.pays_theoretical[j]),
             "expected": ranges(x.contexts, x.pays_expected[j]),
             "first_context": int(x.contexts[np.flatnonzero(x.pays_theoretical[j])[0]])
             if x.pays_theoretical[j].any() else None}
            for j, b in enumerate(x.batches)]
    words = "; ".join(f"at batch {r['batch']} it pays {r['theoretical']} (expected: {r['expected']})" for r in rows)
    return {"model": x.model, "hardware": x.hardware, "min_gain": x.min_gain, "rows": rows, "text": words,
            "grid": {"contexts": x.contexts.tolist(), "batches": x.batches.tolist(),
                     "theoretical": x.theoretical.tolist()}}


def analysis_dict(a: Analysis) -> dict[str, Any]:
    """The analysis section of the JSON (the verification plan is added by the caller)."""
    return {"crossover": [_crossover(x) for x in a.crossover],
            "slo_throughput": [{"cell": t.cell, "baseline": asdict(t.baseline), "claim": asdict(t.claim),
                                "gain": t.gain, "slo_s": t.slo_s} for t in a.slo_throughput],
            "sensitivity": [{"input": INPUT_WORDS[s.input], "value": sensitivity_value(s),
                             "weighted_speedup": s.weighted_speedup, "decision": s.decision} for s in a.sensitivity]}


INPUT_WORDS = {"bandwidth_efficiency": "kernel bandwidth efficiency", "kernel": "kernel reads the new format",
               "acceptance": "acceptance rate", "quality_retained": "quality retained"}
assert set(INPUT_WORDS) == set(INPUTS)


def sensitivity_value(s: Sensitivity) -> str:
    """A moved input's value as the memo and the JSON print it."""
    if s.input == "kernel":
        return "yes" if s.value else "no"
    return f"{s.value:g}" if s.input == "bandwidth_efficiency" else f"{s.value:.2f}"
