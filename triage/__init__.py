"""triage: turn an LLM-inference paper's claim into workload-aware GO / NO-GO verdicts.

    >>> import triage
    >>> result = triage.evaluate("claims/kv2x.yaml")           # doctest: +SKIP
    >>> len(result), result.to_dict()["decision"]["verdict"]    # doctest: +SKIP

Heavy modules (numpy, jsonschema, jinja2) load on first use, not on import.
"""

from __future__ import annotations

from typing import Any

from .errors import Problem, UserError

__version__ = "0.1.0"
__all__ = ["evaluate", "Problem", "UserError", "__version__"]


def evaluate(card: Any, workloads: Any = None, model: str | None = None) -> Any:
    """Evaluate a claim card (path or dict) over a workload matrix (path, dict or None for the default).

    ``model`` (a catalog name or a path to a Hugging Face config.json) replaces
    every workload's model. Returns a triage.result.Result: ``len(result)``
    cells, ``result.to_dict()`` is exactly the JSON of ``triage run --format json``.
    """
    from .engine import evaluate as _evaluate

    return _evaluate(card, workloads, model)
