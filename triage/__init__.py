"""triage: turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    >>> import triage
    >>> result = triage.evaluate("claims/kv2x.yaml")           # doctest: +SKIP
    >>> len(result), result.to_dict()["decision"]["verdict"]    # doctest: +SKIP

The package is layered, each folder importing only the ones below it:
io → inputs → model → analysis → report → cli (an import-linter contract in CI).
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
    from .report.result import evaluate as _evaluate  # numpy and the pipeline load here, not on `import triage`

    return _evaluate(card, workloads, model, analyse, baseline, catalog)
