"""What each change key of a card is, as data: the groups it touches, what a missing kernel takes back, how
two stacked cards combine it (mechanisms.yaml). The model layer binds each key to its function."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ..io.yamlio import load_file

COMPOSE = ("product", "exclusive")


@dataclass(frozen=True)
class MechanismInfo:
    """One change key: operator groups, reverted step inputs, composition rule, what the gain is made of."""

    key: str
    groups: tuple[str, ...]
    reverts: tuple[str, ...]
    compose: str
    carries: str
    directions: tuple[str, ...] = ()
    example: object = None


@cache
def registry() -> dict[str, MechanismInfo]:
    """Every mechanism, in the order they apply."""
    path = Path(str(resources.files("triage").joinpath("inputs").joinpath("mechanisms.yaml")))
    data = load_file(path, "triage/inputs/mechanisms.yaml", trusted=True).data
    return {key: MechanismInfo(key, tuple(v["groups"]), tuple(v.get("reverts", ())), v["compose"], v["carries"],
                               tuple(v.get("directions", ())), v.get("example"))
            for key, v in data.items()}


def touched_groups(change: dict[str, object]) -> set[str]:
    """Operator groups whose kernels the change replaces."""
    table = registry()
    return {g for key in change for g in table[key].groups}


def changes_format(change: dict[str, object]) -> bool:
    """Whether any mechanism changes a storage format (so a missing kernel matters)."""
    table = registry()
    return any(table[key].reverts for key in change)


OUTSIDE_THE_STEP = ("utilization", "capacity")


def outside_the_step(change: dict[str, object]) -> bool:
    """Whether part of the change's gain lies outside one step (batch slots, memory capacity): the end-to-end
    layer, not the step's bound, then decides."""
    table = registry()
    return any(table[key].carries in OUTSIDE_THE_STEP for key in change)
