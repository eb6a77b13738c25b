"""Verdict codes per cell, vectorized, and the boolean facts each was decided from (the words are the report's)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from ..defaults import REGRESSION_TOLERANCE
from ..inputs.claim import Claim
from ..inputs.registry import LONG_CONTEXT, evidence_missing
from ..records import record
from . import quality
from .evidence import Gaps
from .matrix import Matrix
from .quality import QualityStanding

GO, CONDITIONAL, NO_GO, DOES_NOT_FIT = 0, 1, 2, 3
BOUND_KINDS = {"bytes", "flops", "dtype", "tokens_per_step", "model", "parallelism"}   # gains the step's bound sees
LABELS = ("GO", "CONDITIONAL", "NO-GO", "DOES-NOT-FIT")
FALSE, TRUE = np.asarray(False), np.asarray(True)   # a fact that holds on no cell, or on every one


def _none() -> np.ndarray:
    return np.zeros(0, dtype=bool)


@record
class Verdicts:
    """Per-cell verdict codes and the boolean facts they were decided from."""

    code: np.ndarray
    min_gain: np.ndarray
    gate: np.ndarray
    enables: np.ndarray
    quality_fail: np.ndarray
    theory_low: np.ndarray
    kernel_missing: np.ndarray
    e2e_low: np.ndarray
    quality_untested: bool
    long_untested: np.ndarray
    slo_missed: np.ndarray
    measured_quality: np.ndarray        # quality retained as measured (claim ÷ baseline), NaN where not measured
    measured_claim_s: np.ndarray        # the claim's TPOT/TTFT as measured, NaN where not measured
    evidence_missing: np.ndarray        # a required piece of evidence (missing_evidence) is missing on this cell
    missing_evidence: tuple[str, ...] = ()
    incompatible: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # cannot run in this stack
    quality: QualityStanding | None = None
    quality_band: np.ndarray = field(default_factory=_none)     # beyond the gate, within the band: opt-in
    far_model: np.ndarray = field(default_factory=_none)        # quality measured on a model far larger
    integration: np.ndarray = field(default_factory=_none)      # a KV format only the paper's kernel reads
    beyond_window: np.ndarray = field(default_factory=_none)    # context beyond the model's trained window
    incumbent_low: np.ndarray = field(default_factory=_none)    # the gain over the shipped alternative < min_gain
    over_incumbent: np.ndarray = field(default_factory=_none)   # end-to-end gain over it (NaN: none applies)
    unproven_integration: np.ndarray = field(default_factory=_none)  # integration left and no quality figure
    no_regret: np.ndarray = field(default_factory=_none)        # exact, engine kernel: any gain pays (floor 1.0)

    def fixed(self) -> np.ndarray:
        """Cells decided by a rule no gain can move (quality, missing evidence, the stack, an unproven
        integration): no fleet gain lifts them, and no ±5 % around min_gain makes them marginal."""
        out = np.zeros(self.code.shape, dtype=bool)
        for rule in (self.quality_fail, self.evidence_missing, self.incompatible, self.unproven_integration):
            if rule.size:                         # a fact the constructor left empty holds on no cell
                out |= rule
        return out


@record
class Conflict:
    """What keeps a method from running in a workload's stack (report/reasons.py words it): it ``needs`` what the
    stack's attention never writes (``feature``: attention_scores), or cannot run ``beside`` a feature it uses."""

    kind: str
    feature: str
    attention: str = ""


def conflicts(claim: Claim, attention: str, stack: tuple[str, ...]) -> list[Conflict]:
    """What keeps the method from running in a workload's stack: attention scores a fused kernel never writes,
    serving features the card says it cannot run beside."""
    out = [Conflict("needs", need, attention) for need in claim.requires
           if need == "attention_scores" and attention != "eager"]
    out += [Conflict("beside", feature) for feature in claim.conflicts if feature in stack]
    return out


def _per_block(m: Matrix, flags: list[bool]) -> np.ndarray:
    """A per-workload fact as a cell column, one 0-d value when every workload agrees."""
    return np.asarray(flags[0]) if len(set(flags)) == 1 else np.array(flags, dtype=bool)[m.block_idx]


def _incompatible(m: Matrix, claim: Claim) -> np.ndarray:
    return _per_block(m, [bool(conflicts(claim, b.attention, b.stack)) for b in m.blocks])


def integration_condition(claim: Claim) -> bool:
    """A KV-cache format that every attention backend of an engine must read (paged, prefix-cached, chunked
    prefill), with a kernel in the paper's code alone: the integration is the work left (registry kv_format)."""
    return claim.change.kv_format and claim.kernel_in != "engine"


def simulated(m: Matrix) -> np.ndarray:
    """Cells of a workload with traffic: judged by their serving simulation, whose gain is known to within
    REGRESSION_TOLERANCE (defaults.py)."""
    return _per_block(m, [b.traffic is not None for b in m.blocks])


def no_regret(claim: Claim) -> bool:
    """An exact change (quality retained 1.0) whose kernel an engine already ships: nothing to reproduce and
    nothing to lose, so ``min_gain`` — the bar a reproduction must clear (workloads.yaml) — does not apply;
    any gain the model can resolve pays."""
    return claim.exact and claim.kernel_in == "engine"


def beyond_window(m: Matrix) -> np.ndarray:
    """Cells whose context exceeds the model's trained window (max_position_embeddings)."""
    window = m.per_model(lambda mod: mod.window)
    return np.asarray(m.context > window, dtype=bool)


def decide(m: Matrix, claim: Claim, g: Gaps, measured_quality: np.ndarray | None = None,
           measured_claim_s: np.ndarray | None = None, incumbent_request_s: np.ndarray | None = None) -> Verdicts:
    """GO, CONDITIONAL, NO-GO or DOES-NOT-FIT for every cell, first matching rule wins.

    A measured quality replaces the card's for the gate on its cells, a measured time the predicted one
    for the SLO.

    DOES-NOT-FIT  the claim does not fit memory at the cell's batch;
    NO-GO         quality beyond its kind's band, or the bound (theoretical gain)
                  below min_gain for a change inside the step, or the end-to-end
                  gain below it with a kernel present (the only test for a change
                  outside the step: batch slots, capacity), or the gain over the
                  shipped alternative (the class's incumbent) below it;
    CONDITIONAL   the gain needs a kernel that reads the new format, or quality
                  is unreported, within the band, measured on a far larger model or
                  untested on long context, or a KV format only the paper's kernel
                  reads, or the SLO is still missed; that integration with no quality
                  figure at all is NO-GO (its cost is certain, its quality unknown);
    GO            otherwise.

    For an exact change whose kernel an engine ships (no_regret) the threshold is 1.0x, not min_gain.
    """
    shape = m.batch.shape
    # a fact that is one value for every cell (a card's property, a shared setting) stays one value until the
    # end: a million-cell matrix pays for the columns that vary, not for copies of a constant
    min_gain = m.column("min_gain")
    gate = m.column("quality_gate")
    enables = ~g.base.fits & g.claim.fits
    retained = claim.quality_retained
    nan = np.asarray(np.nan)                  # nothing measured: one value, broadcast (no column to allocate)
    mq = nan if measured_quality is None else measured_quality
    mt = nan if measured_claim_s is None else measured_claim_s
    has_mq = np.isfinite(mq)
    q = quality.standing(claim, gate, m.per_model(lambda mod: mod.params), shape, mq)
    quality_fail = q.status == quality.FAIL
    quality_band = q.status == quality.BAND
    # each layer judges what it can see: the bound what the step itself saves (bytes, FLOPs, dtype, tokens per
    # step); a kernel change is judged by the implementation layer, batch slots and capacity end to end
    change = claim.change
    judged_by_bound = bool(change.kinds & BOUND_KINDS) and not change.outside_the_step and not claim.kernel_gain
    # a workload with traffic is judged by its simulation (the requests' own contexts and batches), not by the
    # bound at its nominal cell
    traffic = simulated(m)
    # an exact change an engine already ships pays with any gain the model resolves: more than 1.0x, or more
    # than the simulation's resolution on a simulated workload
    free = no_regret(claim)
    bar = 1.0 + np.where(traffic, REGRESSION_TOLERANCE, 1e-9) if free else min_gain
    theory_low = ((g.speedup_theoretical < bar) & ~enables & ~traffic) if judged_by_bound else FALSE
    kernel_missing = ((g.speedup_implementation < min_gain) & ~theory_low) \
        if not claim.kernel and change.changes_format else FALSE
    e2e = np.where(np.isnan(g.speedup_end_to_end), np.inf, g.speedup_end_to_end)
    # the fleet's currency is GPU-time: a change that serves on more GPUs per replica (tensor parallelism) is
    # judged by GPU-seconds per request, not by its step's latency alone
    more_gpus = np.asarray(g.claim.inputs.tp) > np.asarray(g.base.inputs.tp)
    if more_gpus.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            e2e = np.where(more_gpus, np.nan_to_num(g.base_request_s / g.claim_request_s, nan=np.inf), e2e)
    e2e_low = (e2e < bar) & ~enables
    # evidence a lossy method class must show (Change.needs; an exact one needs none); long-context retrieval
    # matters on long-context cells, perplexity and a task everywhere. Without it: NO-GO, named.
    missing = evidence_missing(list(() if claim.exact else change.needs), claim.long_context_tested,
                               claim.evaluated_on)
    evidence_gap: np.ndarray = FALSE
    for item in missing:
        evidence_gap = evidence_gap | (m.long_context if item == LONG_CONTEXT else TRUE)
    # an untested long context is a condition only for a lossy change that touches the KV or attention
    touches_kv = "attention" in change.groups and not claim.exact
    long_untested = m.long_context if touches_kv and not claim.long_context_tested else FALSE
    with np.errstate(invalid="ignore"):
        # TPOT is a step's time (idle batch slots cost throughput, not latency); NaN SLO compares False
        utilization = np.asarray(g.claim.inputs.utilization)
        step = g.claim.time_end_to_end if utilization.ndim == 0 and float(utilization) == 1.0 \
            else g.claim.time_end_to_end * utilization
        slo_missed = (step if mt is nan else np.where(np.isfinite(mt), mt, step)) > g.slo

    if incumbent_request_s is None:
        over, incumbent_low = nan, FALSE
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = np.isfinite(incumbent_request_s) & np.isfinite(g.claim_request_s)
            over = np.where(ok, incumbent_request_s / g.claim_request_s, np.nan)
            incumbent_low = over < min_gain
    integration = np.asarray(integration_condition(claim))
    # every attention backend must be taught the format (cost certain) and no figure says what it keeps: NO-GO
    unproven = integration & (q.status == quality.UNREPORTED) & ~has_mq
    window = beyond_window(m)

    cond = ((q.status == quality.UNREPORTED) & ~has_mq) | long_untested | slo_missed | quality_band | q.far_model \
        | integration
    code = np.where(cond, CONDITIONAL, GO).astype(np.int8)
    code = np.where(e2e_low & ~kernel_missing, NO_GO, code)
    code = np.where(kernel_missing, CONDITIONAL, code)
    incompatible = _incompatible(m, claim)
    code = np.where(theory_low | quality_fail | evidence_gap | incompatible | incumbent_low | unproven, NO_GO, code)
    code = np.array(np.broadcast_to(np.where(~g.claim.fits, DOES_NOT_FIT, code), shape), dtype=np.int8)

    def column(a: Any) -> np.ndarray:
        return np.broadcast_to(a, shape)       # a read-only view where one value stands for every cell

    return Verdicts(code, column(min_gain), column(gate), enables, column(quality_fail), column(theory_low),
                    column(kernel_missing), column(e2e_low), retained is None and not claim.figures,
                    column(long_untested), column(slo_missed), column(mq), column(mt), column(evidence_gap),
                    tuple(missing), column(incompatible), q, column(quality_band), column(q.far_model),
                    column(integration), window, column(incumbent_low), column(over), column(unproven),
                    column(np.asarray(free)))
