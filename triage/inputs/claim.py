"""A validated claim card as a frozen value: what the paper claims and the change it makes."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..records import DERIVED, record, written
from .change import Change, to_json
from .specs import Model

HOURS_PER_WEEK = 7 * 24


KERNEL_PLACES = ("none", "paper", "engine")    # where a kernel exists, weakest first (the schema's enum)
QUALITY_KINDS = ("perplexity", "accuracy", "pass@k", "retrieval")   # the schema's enum; perplexity: lower is better


@record
class QualityFigure:
    """One quality figure of the paper: a task's baseline and claim values, measured on a model of ``params``."""

    kind: str
    task: str
    model: str
    baseline: float
    claim: float
    params: float

    @property
    def lower_is_better(self) -> bool:
        return self.kind == "perplexity"

    @property
    def retained(self) -> float:
        """claim ÷ baseline for a higher-is-better score; for perplexity, baseline ÷ claim (below 1 = worse)."""
        return self.baseline / self.claim if self.lower_is_better else self.claim / self.baseline

    @property
    def increase(self) -> float:
        """A perplexity's relative increase, claim ÷ baseline − 1 (0.024 = +2.4 %)."""
        return self.claim / self.baseline - 1.0


@record
class Paper:
    """The card's paper: what it is and where to read it."""

    title: str | None = None
    authors: tuple[str, ...] | None = None
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    order: tuple[str, ...] = field(default=(), compare=False, metadata=DERIVED)   # the card's key order (its echo)


@record
class Precision:
    """A setting's dtypes: weights, KV, activations and the GEMMs' compute."""

    weights: str | None = None
    kv: str | None = None
    activations: str | None = None
    compute: str | None = None
    order: tuple[str, ...] = field(default=(), compare=False, metadata=DERIVED)   # the card's key order (its echo)


@record
class Offload:
    """Weights the paper's setting streams from host memory: their share and the link (as written, and in
    bytes/s)."""

    weights: float
    link: str | float
    link_bytes_per_s: float = field(metadata=DERIVED)


@record
class Setting:
    """The setting the paper measured in (claim.setting): what it names, None where it is silent."""

    model: str | None = None
    hardware: str | None = None
    phase: str | None = None
    batch: int | None = None
    context: int | None = None
    attention: str | None = None
    memory_waste: float | None = None
    tp: int | None = None
    precision: Precision | None = None
    batch_utilization: float | None = None
    pipeline: int | None = None
    offload: Offload | None = None
    baseline_model: str | None = None
    domain: str | None = None
    order: tuple[str, ...] = field(default=(), compare=False, metadata=DERIVED)   # the card's key order (its echo)


@record
class Statement:
    """The card's claim section: the paper's headline, its number, what it measured against and where."""

    text: str | None = None
    speedup: float | None = None
    metric: str | None = None
    baseline: str | None = None
    source: str | None = None
    setting: Setting | None = None
    scope: str | None = None
    order: tuple[str, ...] = field(default=(), compare=False, metadata=DERIVED)   # the card's key order (its echo)


def stated(section: Paper | Precision | Offload | Setting | Statement) -> dict[str, Any]:
    """A section's fields the card set, as it wrote them (for JSON, the workloads a setting builds, words)."""
    return dict(written(section))


@record
class Claim:
    """A validated claim card."""

    id: str
    title: str
    direction: str
    file: str
    change: Change
    paper: Paper = field(default_factory=Paper)
    claim: Statement = field(default_factory=Statement)
    kernel: bool = True
    kernel_in: str = "paper"                    # engine | paper | none: where a kernel that runs it exists
    bandwidth_efficiency: float = 1.0
    compute_efficiency: float = 1.0
    quality_retained: float | None = None
    figures: tuple[QualityFigure, ...] = ()     # the paper's figures by kind, one per task
    evaluated_on: tuple[str, ...] = ()
    long_context_tested: bool = False
    gpus: int | None = None
    weeks: float | None = None
    requires: tuple[str, ...] = ()             # from the serving stack: attention_scores
    conflicts: tuple[str, ...] = ()            # serving features it cannot run beside
    gpu_hours_total: float | None = None       # a stack: the sum of its cards'
    stacked: tuple[Claim, ...] = ()            # the cards a stack composes
    models: dict[str, Model] = field(default_factory=dict)   # models the card names by config.json path
    evidence: dict[str, dict[str, str]] = field(default_factory=dict)   # number's path -> {quote, where}

    @property
    def gpu_hours(self) -> float | None:
        """Reproduction cost: GPUs × weeks × 168 h (the course: 8 × 2 weeks = 2688)."""
        if self.gpu_hours_total is not None:
            return self.gpu_hours_total
        if self.gpus is None or self.weeks is None:
            return None
        return self.gpus * self.weeks * HOURS_PER_WEEK

    @property
    def exact(self) -> bool:
        """Quality retained 1.0 by construction (exact attention, lossless speculation, scheduling)."""
        return self.quality_retained == 1.0 and not self.figures

    @property
    def kernel_gain(self) -> bool:
        """The card claims its kernels run faster than the baseline's (a kernel-efficiency paper)."""
        return self.compute_efficiency > 1.0 or self.bandwidth_efficiency > 1.0

    @property
    def claimed_speedup(self) -> float | None:
        return self.claim.speedup

    def acting_phases(self) -> frozenset[str]:
        """The phases the card's change acts on (each key's own; sparse_attention's named ones)."""
        return frozenset().union(*(phases for _, phases in self.change.acting))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "direction": self.direction, "file": self.file,
            "paper": stated(self.paper), "claim": stated(self.claim), "change": to_json(self.change),
            "implementation": {"kernel": self.kernel, "kernel_in": self.kernel_in,
                               "bandwidth_efficiency": self.bandwidth_efficiency,
                               "compute_efficiency": self.compute_efficiency},
            "quality": {"retained": self.quality_retained,
                        "figures": [{"kind": f.kind, "task": f.task, "model": f.model, "baseline": f.baseline,
                                     "claim": f.claim, "params": f.params} for f in self.figures],
                        "evaluated_on": list(self.evaluated_on),
                        "long_context_tested": self.long_context_tested},
            "cost": {"gpus": self.gpus, "weeks": self.weeks, "gpu_hours": self.gpu_hours},
            "requires": list(self.requires), "conflicts": list(self.conflicts),
            "stacked": [c.id for c in self.stacked], "evidence": self.evidence,
        }
