"""Mechanisms that cannot act where they are priced, as warnings: never a quiet 1.00× (a dtype the chip
lacks, a mechanism on a phase it does not touch)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..inputs.registry import acting_phases
from ..inputs.specs import Hardware

# change keys that name a dtype, and the operators that would run in it
DTYPE_KEYS = {"compute_dtype": "linear layers", "attention_dtype": "attention"}


def warnings(change: dict[str, Any], hardware: Iterable[Hardware],
             workloads: Iterable[tuple[str, str]], domains: Iterable[str | None] = ()) -> list[dict[str, str]]:
    """[{code, message}] for ``change`` priced on ``hardware`` over (workload name, phase) pairs whose requests
    are of ``domains``."""
    out = []
    chips = list(hardware)
    workloads = list(workloads)
    by_domain = change.get("speculative", {}).get("by_domain", {}) if isinstance(change.get("speculative"),
                                                                                   dict) else {}
    unused = sorted(set(by_domain) - set(domains))
    if unused:
        out.append({"code": "domain-unused", "message": (
            f"speculative.by_domain gives {', '.join(unused)}, which no workload states (workloads: domain:): "
            f"{'they are' if len(unused) > 1 else 'it is'} not priced; every workload gets the card's default")})
    for key, operators in DTYPE_KEYS.items():
        dtype = change.get(key)
        lacking = sorted({h.key for h in chips if dtype and not h.has_peak(dtype)})
        if lacking:
            out.append({"code": "dtype-missing", "message": (
                f"{key} {dtype}: {', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no dense {dtype} "
                f"peak, so the {operators} there keep the workload's rate (no gain from the dtype)")})
    acting = set().union(*(acting_phases(k, v) for k, v in change.items())) if change else set()
    idle = list(dict.fromkeys(name for name, phase in workloads if phase not in acting))
    if change and idle:
        keys = ", ".join(sorted(change))
        phases = " and ".join(sorted(acting))
        out.append({"code": "phase-untouched", "message": (
            f"{keys} act{'s' if len(change) == 1 else ''} at {phases} only: {', '.join(idle[:6])}"
            f"{' …' if len(idle) > 6 else ''} {'is' if len(idle) == 1 else 'are'} priced unchanged (1.00×)")})
    return out
