"""Stacking: several cards applied together as one claim.

Byte savings of different components add up; they do not multiply (the
course's int8 weights + int8 KV at 128k: 2.0x, not 1.09 x 1.71). The same
multiplier in two cards composes by product; any other key set by two cards is
ambiguous and refused. Each key's rule is the registry's (inputs/mechanisms.yaml).
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import Problem, UserError
from .change import Value, resolve, values
from .claim import KERNEL_PLACES, Claim, Paper, Statement
from .registry import registry


def stack(claims: list[Claim], card_id: str | None = None, title: str | None = None) -> Claim:
    """One claim with every card's change; implementation at the weakest card's; quality risks multiplied."""
    if len(claims) < 2:
        raise UserError([Problem("--stack", path="", message="stacking needs at least two cards")])
    ids = [c.id for c in claims]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        raise UserError([Problem(c.file, path="$.id", message=f"two stacked cards have the id {dup!r}: give each "
                                                              f"its own") for c in claims if c.id == dup])
    change: dict[str, Value] = {}
    owner: dict[str, str] = {}
    problems = []
    rules = registry()
    for c in claims:
        for key, value in values(c.change).items():
            if key not in change:
                change[key], owner[key] = value, c.id
            elif rules[key].compose == "product":
                change[key] = float(change[key]) * float(value)  # type: ignore[arg-type]
            else:
                problems.append(Problem(c.file, path=f"$.change.{key}", message=(
                    f"{owner[key]!r} and {c.id!r} both set {key}: stacking them is ambiguous")))
    if problems:
        raise UserError(problems)
    retained = None
    if all(c.quality_retained is not None for c in claims):
        retained = 1.0
        for c in claims:
            retained *= c.quality_retained  # type: ignore[operator]
    hours = [c.gpu_hours for c in claims]
    first = claims[0]
    return replace(
        first,
        id=card_id or "+".join(c.id for c in claims),
        title=title or " + ".join(c.title for c in claims),
        file=" + ".join(c.file for c in claims),
        change=resolve(change),
        paper=Paper(title="stack of " + ", ".join(c.id for c in claims), order=("title",)),
        claim=Statement(text="the cards applied together: " + "; ".join(c.claim.text or c.title for c in claims),
                        order=("text",)),
        kernel=all(c.kernel for c in claims),
        kernel_in=min((c.kernel_in for c in claims), key=KERNEL_PLACES.index),   # the weakest card's
        bandwidth_efficiency=min(c.bandwidth_efficiency for c in claims),
        compute_efficiency=min(c.compute_efficiency for c in claims),
        quality_retained=retained,
        figures=tuple(f for c in claims for f in c.figures),      # each card's figures, each gated on its own
        evaluated_on=tuple(sorted({e for c in claims for e in c.evaluated_on})),
        long_context_tested=all(c.long_context_tested for c in claims),
        gpus=None, weeks=None,
        gpu_hours_total=sum(h for h in hours if h is not None) if any(h is not None for h in hours) else None,
        stacked=tuple(claims),
        requires=tuple(sorted({r for c in claims for r in c.requires})),
        conflicts=tuple(sorted({x for c in claims for x in c.conflicts})),
        models={k: v for c in claims for k, v in c.models.items()},
        evidence={},                       # the parts' numbers are theirs, not the stack's
    )
