"""triage: turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    >>> import triage
    >>> result = triage.evaluate("claims/kv2x.yaml")           # doctest: +SKIP
    >>> len(result), result.to_dict()["decision"]["verdict"]    # doctest: +SKIP

The package is layered, each folder importing only the ones below it:
io → inputs → model → serving → analysis → report → cli (an import-linter contract in CI).
Heavy modules (numpy, jsonschema, jinja2) load on first use, not on import.
"""

from __future__ import annotations

from typing import Any

from .errors import Problem, UserError

__version__ = "0.2.0"
__all__ = ["evaluate", "Problem", "UserError", "__version__"]


def evaluate(card: Any, workloads: Any = None, model: str | None = None, analyse: bool = True,
             baseline: str = "current", catalog: Any = None) -> Any:
    """Evaluate a claim card (path or dict) over a workload matrix (path, dict or None for the default).

    ``model`` (a catalog name or a path to a Hugging Face config.json) replaces
    every workload's model; ``analyse=False`` skips the crossover, SLO and
    sensitivity analyses (a sweep); ``baseline="paper"`` prices against the stack
    the card's paper improved on; ``catalog`` is a user catalog file merged over
    the shipped one (default: the file $TRIAGE_CATALOG names). Returns a triage.report.result.Result:
    ``len(result)`` cells, ``result.to_dict()`` is exactly the JSON of
    ``triage run --format json``, ``result.to_frame()`` the cells as a pandas
    DataFrame (the ``frame`` extra).
    """
    _check_types(card, workloads, model, analyse, baseline, catalog)
    from .report.result import evaluate as _evaluate  # numpy and the pipeline load here, not on `import triage`

    return _evaluate(card, workloads, model, analyse, baseline, catalog)


def _check_types(card: Any, workloads: Any, model: Any, analyse: Any, baseline: Any, catalog: Any) -> None:
    """A wrong type for any argument is a UserError naming it, as bad input from a file is (never a TypeError
    from deep inside, never a silent reading: baseline=3 is not "current")."""
    import os

    path = (str, bytes, os.PathLike)
    cards = card if isinstance(card, (list, tuple)) and card else [card]
    wrong = [("card", "a path, a dict or a non-empty list of them")] if not all(
        isinstance(c, (*path, dict)) for c in cards) else []
    wrong += [("workloads", "a path, a dict or None")] if not (workloads is None or isinstance(
        workloads, (*path, dict))) else []
    wrong += [(name, "a path, a name or None") for name, value in (("model", model), ("catalog", catalog))
              if not (value is None or isinstance(value, path))]
    wrong += [("analyse", "True or False")] if not isinstance(analyse, bool) else []
    wrong += [("baseline", "'current' or 'paper'")] if baseline not in ("current", "paper") else []
    if wrong:
        raise UserError([Problem("triage.evaluate", path="", message=f"{name}: expected {what}")
                         for name, what in wrong])
