"""Claim cards: load, validate (schema, then meaning), and hold as a frozen Claim."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import catalog as catalog_mod
from .errors import Problem, UserError
from .validation import did_you_mean, validate
from .yamlio import Document, load_file

HOURS_PER_WEEK = 7 * 24

DIRECTIONS: dict[str, tuple[str, str, str]] = {
    # direction: (the course's question, its number, its failure mode) — course §2.4
    "attention": ("Are the scores written back to HBM?",
                  "T=2048: T²·2 B = 8.4 MB per head; × B·H = 2.15 GB per layer at B=8",
                  "without fusion it stays bandwidth-bound, however many FLOPs are saved"),
    "cache": ("How many KV bytes per token?",
              "0.5 MiB per token (L=32, H=32, d=128, fp16)",
              "long context runs out of memory; concurrency cannot rise"),
    "weights": ("Does quantization save bytes or FLOPs?",
                "int8 takes 14 GB of weights to 7 GB",
                "compute-bound prefill gains ~0 and dequantization can make it slower"),
    "decoding": ("Is the speculative acceptance rate high enough?",
                 "each step pays a draft plus a verification forward",
                 "at a low acceptance rate it is slower than the baseline"),
    "system": ("Where is the bottleneck at high concurrency?",
               "16 concurrent × 4096 tokens = 32 GiB of KV",
               "memory fragmentation halves the usable batch"),
}


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
    gpu_hours_total: float | None = None       # a stack: the sum of its cards'
    stacked: tuple[Claim, ...] = ()            # the cards a stack composes

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
            "stacked": [c.id for c in self.stacked],
        }


def _semantic(doc: Document, cat: catalog_mod.Catalog) -> list[Problem]:
    """Checks the schema cannot express: names exist, a headline has its metric."""
    problems = []
    data = doc.data
    setting = data.get("claim", {}).get("setting", {})
    for key, table in (("model", cat.models), ("hardware", cat.hardware)):
        name = setting.get(key)
        if key == "model" and isinstance(name, str) and name.endswith(".json"):
            from .hfconfig import load_model

            config = Path(name) if Path(name).is_absolute() else Path(doc.file).parent / name
            try:
                load_model(config, key=name)
            except UserError as err:
                problems += err.problems
            continue
        if name is not None and name not in table:
            problems.append(doc.problem(("claim", "setting", key),
                                        f"unknown {key} {name!r}{did_you_mean(name, table)}"))
    change = data.get("change", {})
    named = [(("change", "distill_to"), change.get("distill_to")),
             (("change", "speculative", "draft_model"), change.get("speculative", {}).get("draft_model"))]
    for where, name in named:
        if name is not None and name not in cat.models:
            problems.append(doc.problem(where, f"unknown model {name!r}{did_you_mean(name, cat.models)}"))
    spec = change.get("speculative")
    if spec is not None and ("draft_model" in spec) == ("draft_cost" in spec):
        problems.append(doc.problem(("change", "speculative"), "give a draft_model or a draft_cost (not both)"))
    claim = data.get("claim", {})
    if "speedup" in claim and "metric" not in claim:
        problems.append(doc.problem(("claim",), "a speedup needs its metric (tpot, ttft, throughput or memory)"))
    return problems


def load(source: str | Path | dict[str, Any], catalog: catalog_mod.Catalog | None = None,
         _seen: tuple[str, ...] = ()) -> Claim:
    """Read and validate a card (a path, or an already-parsed dict); raise UserError listing every problem.

    A card with ``stack: [a.yaml, b.yaml]`` composes those cards (paths relative to it).
    """
    doc = Document("<card>", source) if isinstance(source, dict) else load_file(source)
    claim = from_document(doc, catalog)
    if isinstance(doc.data, dict) and "stack" in doc.data:
        from .stack import stack

        here = Path(doc.file).parent if not isinstance(source, dict) else Path(".")
        parts = []
        for i, name in enumerate(doc.data["stack"]):
            path = (here / name).resolve()
            if str(path) in _seen:
                raise UserError([doc.problem(("stack", i), f"{name} stacks itself (a cycle)")])
            parts.append(load(path, catalog, _seen + (str(Path(doc.file).resolve()), str(path))))
        stacked = stack(parts, claim.id, claim.title)
        return replace(stacked, file=claim.file, direction=claim.direction, paper=claim.paper or stacked.paper,
                       claim={**stacked.claim, **claim.claim})
    return claim


def from_document(doc: Document, catalog: catalog_mod.Catalog | None = None) -> Claim:
    """A parsed card document -> Claim, or UserError listing every problem."""
    problems = validate(doc, "claim")
    if problems:
        raise UserError(problems)
    problems = _semantic(doc, catalog or catalog_mod.load())
    if problems:
        raise UserError(problems)
    d = doc.data
    impl, quality, cost = d.get("implementation", {}), d.get("quality", {}), d.get("cost", {})
    if "stack" in d and "change" not in d:
        d = {**d, "change": {}}
    return Claim(
        id=d["id"], title=d["title"], direction=d["direction"], file=doc.file,
        change=dict(d["change"]), paper=dict(d.get("paper", {})), claim=dict(d.get("claim", {})),
        kernel=impl.get("kernel", True),
        bandwidth_efficiency=impl.get("bandwidth_efficiency", 1.0),
        compute_efficiency=impl.get("compute_efficiency", 1.0),
        quality_retained=quality.get("retained"),
        evaluated_on=tuple(quality.get("evaluated_on", ())),
        long_context_tested=quality.get("long_context_tested", False),
        gpus=cost.get("gpus"), weeks=cost.get("weeks"),
    )
