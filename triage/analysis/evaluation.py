"""The frozen result of the pipeline: arrays and analyses, computed once; the report renders it."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..inputs.claim import Claim, Setting
from ..inputs.specs import Model
from ..model.evidence import Gaps
from ..model.incumbent import IncumbentPrice
from ..model.matrix import Matrix
from ..model.verdicts import Verdicts
from ..records import record
from .decision import Decision
from .notices import Notice
from .papercheck import PaperCheck
from .serving import Results
from .where_it_pays import Analysis

# which layer lost the gain between the bound and the measurement (report/result.py words each)
LOSSES = ("nothing", "implementation", "end-to-end")


@record
class Comparison:
    """One measured workload: predicted against measured, and the layer that lost the gain (a code of LOSSES;
    None where only one side was measured)."""

    workload: str
    hardware: str
    metric: str
    theoretical: float
    implementation: float
    baseline_s: float
    claim_s: float
    measured_baseline_s: float | None
    measured_claim_s: float | None
    speedup: float | None
    quality_ratio: float | None
    lost_in: str | None


@record
class Measured:
    """The measurements a run applied (--measured) and each workload's comparison."""

    source: str
    workloads: tuple[Comparison, ...]


@record
class Evaluation:
    """Everything `triage run` knows about one claim on one matrix."""

    claim: Claim
    matrix: Matrix
    gaps: Gaps
    verdicts: Verdicts
    decision: Decision
    paper_check: PaperCheck
    models: dict[str, Model]                                  # the catalog's and the workload file's
    parts: tuple[tuple[Claim, Gaps], ...] = ()                # a stack's cards, each alone
    analysis: Analysis | None = None                          # None when the caller asked for none (a sweep)
    measured: Measured | None = None                           # filled by measured.apply
    baseline: Setting | None = None                           # --baseline paper: the setting keys applied
    current_fleet_gain: float | None = None                   # --baseline paper: the gain on today's stack
    warnings: tuple[Notice, ...] = ()                         # what the memo must say beside the numbers
    # a calibrated engine profile's uncertainty: the gains with its values one standard error slower and faster
    # (layer -> (low, high) arrays); empty without one
    ranges: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    # workloads with traffic: the serving simulation per (block, model, hardware) index, baseline and claim
    serving: Results = field(default_factory=dict)
    incumbent: IncumbentPrice | None = None                   # the shipped alternative, where the class has one

    def __len__(self) -> int:
        return len(self.matrix)
