"""Quality by kind, per cell: each figure judged by its kind's gate and band (defaults.py), the worst task deciding,
and whether the figures were measured on a model far larger than the cell's."""

from __future__ import annotations

import numpy as np

from ..defaults import ACCURACY_BAND, FAR_MODEL_FACTOR, PERPLEXITY_BAND, PERPLEXITY_GATE
from ..inputs.claim import Claim, QualityFigure
from ..records import record

PASS, BAND, FAIL, UNREPORTED = 0, 1, 2, 3


@record
class QualityStanding:
    """Per cell: PASS, BAND (CONDITIONAL), FAIL (NO-GO) or UNREPORTED; the figure that decided, if any; and the
    cells whose model is far smaller than the one the figures were measured on."""

    status: np.ndarray
    perplexity: QualityFigure | None      # the worst perplexity figure (largest increase)
    task: QualityFigure | None            # the worst higher-is-better figure (lowest retained)
    far_model: np.ndarray
    measured_params: float                # the largest model a figure was measured on (0: none given)


def _grade(value: np.ndarray, gate: np.ndarray | float, band: np.ndarray | float, higher: bool) -> np.ndarray:
    ok = value >= gate if higher else value <= gate
    near = value >= band if higher else value <= band
    return np.where(ok, PASS, np.where(near, BAND, FAIL))


def standing(claim: Claim, gate: np.ndarray, cell_params: np.ndarray, shape: tuple[int, ...],
             measured_quality: np.ndarray | None = None) -> QualityStanding:
    """Each cell's quality standing: the worst task of each kind against its gate; a measured quality
    (claim ÷ baseline, --measured) replaces the card's on its cells."""
    tasks = [f for f in claim.figures if not f.lower_is_better]
    ppl = [f for f in claim.figures if f.lower_is_better]
    worst_task = min(tasks, key=lambda f: f.retained) if tasks else None
    worst_ppl = max(ppl, key=lambda f: f.increase) if ppl else None
    # the card's figures are one value each: graded once against the gate (one value where every workload
    # shares it, a column where they differ) and broadcast to ``shape`` at the end, not a column per figure
    status: np.ndarray = np.asarray(UNREPORTED)
    if worst_task is not None or worst_ppl is not None:
        status = np.asarray(PASS)
        if worst_task is not None:
            status = np.maximum(status, _grade(np.asarray(worst_task.retained), gate, ACCURACY_BAND, True))
        if worst_ppl is not None:
            status = np.maximum(status, _grade(np.asarray(worst_ppl.increase), PERPLEXITY_GATE, PERPLEXITY_BAND,
                                               False))
    elif claim.quality_retained is not None:          # one summary figure: an accuracy-like retained fraction
        status = _grade(np.asarray(claim.quality_retained), gate, ACCURACY_BAND, True)
    mq = measured_quality if measured_quality is not None and np.isfinite(measured_quality).any() else None
    if mq is not None:
        with np.errstate(invalid="ignore"):
            status = np.where(np.isfinite(mq), _grade(mq, gate, ACCURACY_BAND, True), status)
    measured = max((f.params for f in claim.figures), default=0.0)
    far = (measured > FAR_MODEL_FACTOR * cell_params) & (status != UNREPORTED)
    if mq is not None:
        far = far & ~np.isfinite(mq)
    return QualityStanding(np.broadcast_to(status, shape), worst_ppl, worst_task, np.broadcast_to(far, shape),
                           measured)
