"""The pipeline: card + matrix → cost model → gaps → verdicts, as one call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import cards, catalog, gaps, papercheck, verdict, workloads
from .result import Result


def evaluate(card: str | Path | dict[str, Any] | cards.Claim,
             workloads_: str | Path | dict[str, Any] | workloads.Matrix | None = None,
             model: str | None = None) -> Result:
    """Evaluate a claim card over a workload matrix (default: the shipped one).

    ``card`` and ``workloads_`` are paths or already-parsed dicts; ``model`` (a
    catalog name or a config.json path) replaces every workload's model. Bad
    input raises triage.UserError listing every problem.
    """
    cat = catalog.load()
    claim = card if isinstance(card, cards.Claim) else cards.load(card, cat)
    matrix = workloads_ if isinstance(workloads_, workloads.Matrix) else workloads.load(workloads_, cat, model=model)
    g = gaps.compute(matrix, claim, cat.models)
    v = verdict.decide(matrix, claim, g)
    return Result(claim, matrix, g, v, papercheck.check(claim, cat))
