"""The pipeline, explicit: load → build → price → judge → analyse, once, into a frozen Evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..inputs import cards, catalog, workloads
from ..inputs.claim import Claim
from ..inputs.stack import stack
from ..model import layers, matrix, verdicts
from . import decision, papercheck, regions
from .evaluation import Evaluation

Card = str | Path | dict[str, Any] | Claim
Source = str | Path | dict[str, Any] | matrix.Matrix | None


def load_claim(card: Card | list[Card], cat: catalog.Catalog) -> Claim:
    """One card, or several stacked into one claim."""
    if isinstance(card, list):
        return stack([load_claim(c, cat) for c in card])
    return card if isinstance(card, Claim) else cards.load(card, cat)


def load_matrix(source: Source, cat: catalog.Catalog,
                model: str | None = None) -> tuple[matrix.Matrix, catalog.Catalog]:
    """The workload matrix (a built Matrix passes through) and the catalog its names resolved in."""
    if isinstance(source, matrix.Matrix):
        return source, cat.merged({h.key: h for h in source.hardware}, {m.key: m for m in source.models})
    resolved = workloads.load(source, cat, model=model)
    return matrix.build(resolved), resolved.catalog


def _check_physical(g: layers.Gaps) -> None:
    """Inputs are bounded, so every time, byte and FLOP count is finite and >= 0; anything else is a bug in
    triage (exit 3), never a 'nan' or 'inf' printed in a memo."""
    for side in (g.base, g.claim):
        for name, a in (("time", side.time_theoretical), ("time", side.time_implementation),
                        ("time", side.time_end_to_end), ("bytes", side.cost.total_bytes),
                        ("FLOPs", side.cost.total_flops), ("memory", side.memory_bytes)):
            if not (np.isfinite(a).all() and (a >= 0).all()):
                raise RuntimeError(f"internal inconsistency: a non-finite or negative {name} was computed")


def evaluate(card: Card | list[Card], source: Source = None, model: str | None = None,
             analyse: bool = True) -> Evaluation:
    """Evaluate a claim card (or a list of cards, stacked) over a workload matrix (default: the shipped one).

    ``card`` and ``source`` are paths or already-parsed dicts; ``model`` (a catalog name or a config.json
    path) replaces every workload's model; ``analyse=False`` skips crossover, SLO and sensitivity (a sweep
    needs none). Bad input raises triage.UserError listing every problem.
    """
    cat = catalog.load()
    claim = load_claim(card, cat)                                   # load
    m, resolved = load_matrix(source, cat, model)                   # build
    models = resolved.models
    g = layers.compute(m, claim, models)                            # price
    _check_physical(g)
    v = verdicts.decide(m, claim, g)                                # judge
    d = decision.decide(m, claim, g, v)
    parts = tuple((c, layers.compute(m, c, models)) for c in claim.stacked)
    return Evaluation(claim, m, g, v, d, papercheck.check(claim, cat), models, parts,   # analyse
                      regions.analyse(claim, m, models) if analyse else None)
