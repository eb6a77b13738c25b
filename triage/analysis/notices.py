"""What a memo must say beside its numbers, as a code and the values its words need (report/notices.py words
each): a mechanism that cannot act somewhere (never a quiet 1.00×), a context beyond the model's trained window,
an engine profile's chip entry outside the range its rows span (or at a tensor-parallel degree they did not run
at), a change the serving simulation does not model, a saving's multiplier that grows what it names, a price
in the paper's own setting above the paper's measurement."""

from __future__ import annotations

from ..records import record

# every code, in the order a memo lists them
CODES = ("prediction-above", "prediction-below", "multiplier-grows", "domain-unused", "dtype-missing",
         "phase-untouched", "no-effect", "beyond-window", "profile-range", "profile-tp", "serving-unpriced",
         "scheduler-unpriced")
# why a change moves nothing on a workload (no-effect), where the reason is known
HINTS = ("already-in-stack", "already-fused", "already-split", "same-dtype", "budget-covers", "same-step")


@record
class Notice:
    """One notice: its code (CODES) and its subjects and quantities, each field used by the codes named."""

    code: str
    names: tuple[str, ...] = ()       # workloads (no-effect, phase-untouched, profile-range, serving-unpriced),
    #                                   chips (dtype-missing), domains (domain-unused), change keys (serving-unpriced)
    key: str = ""                     # the change key (dtype-missing, phase-untouched, multiplier-grows), the
    #                                   engine (profile-*) or the hint (no-effect: a code of HINTS)
    value: str = ""                   # a dtype (dtype-missing), a chip (profile-*), what the hint names (no-effect:
    #                                   the attention kind or the dtype the workload already runs)
    phases: tuple[str, ...] = ()      # the phases it acts on (phase-untouched) or was fitted on (profile-range)
    numbers: tuple[float, ...] = ()   # prediction-above: (predicted, measured); prediction-below: (predicted,
    #                                   measured, bound, 1 if the measurement is beyond it); multiplier-grows:
    #                                   (the card's value,); no-effect budget-covers: (budget,
    #                                   context); profile-range: (batch lo, hi, context lo, hi, cells outside);
    #                                   profile-tp: (rows' tp lo, hi, the workload's or the claim's tp, 1 if the
    #                                   claim's)
    weights: tuple[str, ...] = ()     # profile-range: the weight formats its rows span
    alone: bool = False               # phase-untouched: the change's only key (the workload is priced 1.00×)
    cells: tuple[tuple[str, str, int, int], ...] = ()   # beyond-window: (workload, model, context, window)
