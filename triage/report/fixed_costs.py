"""A step's fixed costs in words: what each one is paid per, and a set of them in one phrase (the memo's
assumptions, the catalog's engine table, the calibration report)."""

from __future__ import annotations

from collections.abc import Mapping

from ..inputs import units
from ..inputs.catalog import FIXED_COSTS

PER = dict(zip(FIXED_COSTS, ("per step", "per layer of a step", "per prefill step", "per sequence of a step"),
               strict=True))


def phrase(values: Mapping[str, float]) -> str:
    """'overhead 1.54 ms per step, 0 s per layer of a step, …' from seconds keyed as Settings.engine_values
    keys them (f'{cost}_s'); a cost the mapping lacks is 0."""
    return "overhead " + ", ".join(f"{units.fmt_time(values.get(f'{k}_s', 0.0))} {per}" for k, per in PER.items())
