"""A validated claim card as a frozen value: what the paper claims and the change it makes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .specs import Model

HOURS_PER_WEEK = 7 * 24


@dataclass(frozen=True)
class Claim:
    """A validated claim card."""

    id: str
    title: str
    direction: str
    file: str
    change: dict[str, Any]
    paper: dict[str, Any] = field(default_factory=dict)
    claim: dict[str, Any] = field(default_factory=dict)
    kernel: bool = True
    bandwidth_efficiency: float = 1.0
    compute_efficiency: float = 1.0
    quality_retained: float | None = None
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
    def claimed_speedup(self) -> float | None:
        return self.claim.get("speedup")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "direction": self.direction, "file": self.file,
            "paper": self.paper, "claim": self.claim, "change": self.change,
            "implementation": {"kernel": self.kernel, "bandwidth_efficiency": self.bandwidth_efficiency,
                               "compute_efficiency": self.compute_efficiency},
            "quality": {"retained": self.quality_retained, "evaluated_on": list(self.evaluated_on),
                        "long_context_tested": self.long_context_tested},
            "cost": {"gpus": self.gpus, "weeks": self.weeks, "gpu_hours": self.gpu_hours},
            "requires": list(self.requires), "conflicts": list(self.conflicts),
            "stacked": [c.id for c in self.stacked], "evidence": self.evidence,
        }
