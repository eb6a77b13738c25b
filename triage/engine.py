"""The pipeline: card + matrix → cost model → gaps → verdicts, as one call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import cards, catalog, gaps, papercheck, verdict, workloads
from .result import Result

Card = str | Path | dict[str, Any] | cards.Claim


def load_claim(card: Card | list[Card], cat: catalog.Catalog) -> cards.Claim:
    """One card, or several stacked into one claim."""
    if isinstance(card, list):
        from .stack import stack

        return stack([load_claim(c, cat) for c in card])
    return card if isinstance(card, cards.Claim) else cards.load(card, cat)


def evaluate(card: Card | list[Card], workloads_: str | Path | dict[str, Any] | workloads.Matrix | None = None,
             model: str | None = None) -> Result:
    """Evaluate a claim card (or a list of cards, stacked) over a workload matrix (default: the shipped one).

    ``card`` and ``workloads_`` are paths or already-parsed dicts; ``model`` (a
    catalog name or a config.json path) replaces every workload's model. Bad
    input raises triage.UserError listing every problem.
    """
    cat = catalog.load()
    claim = load_claim(card, cat)
    matrix = workloads_ if isinstance(workloads_, workloads.Matrix) else workloads.load(workloads_, cat, model=model)
    g = gaps.compute(matrix, claim, cat.models)
    v = verdict.decide(matrix, claim, g)
    parts = [(c, gaps.compute(matrix, c, cat.models)) for c in claim.stacked]
    return Result(claim, matrix, g, v, papercheck.check(claim, cat), parts, cat.models)
