"""The words behind each cell's verdict and behind the decision (only for what is rendered)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..analysis.decision import Decision
from ..defaults import ACCURACY_BAND, FAR_MODEL_FACTOR, PERPLEXITY_BAND, PERPLEXITY_GATE, REGRESSION_TOLERANCE
from ..inputs.claim import Claim, QualityFigure
from ..inputs.registry import LONG_CONTEXT, classes
from ..inputs.units import fmt_bytes, fmt_gib, fmt_pair, fmt_percent, fmt_ratio, fmt_time
from ..model.evidence import Gaps
from ..model.matrix import Matrix
from ..model.mechanisms import speculative_plan
from ..model.quality import QualityStanding
from ..model.verdicts import Conflict, Verdicts, conflicts, simulated
from .rules import rule_words


def _incumbent_name(claim: Claim) -> str:
    return " + ".join(c.incumbent.name for c in claim.change.incumbents if c.incumbent is not None)

_FIELDS = {
    "batch": lambda m, g, v: m.batch, "decode": lambda m, g, v: m.decode,
    "base_bytes": lambda m, g, v: g.base.cost.total_bytes, "claim_bytes": lambda m, g, v: g.claim.cost.total_bytes,
    "base_flops": lambda m, g, v: g.base.cost.total_flops, "claim_flops": lambda m, g, v: g.claim.cost.total_flops,
    "base_memory": lambda m, g, v: g.base.memory_bytes, "claim_memory": lambda m, g, v: g.claim.memory_bytes,
    "base_impl": lambda m, g, v: g.base.time_implementation, "claim_impl": lambda m, g, v: g.claim.time_implementation,
    "claim_e2e": lambda m, g, v: g.claim.time_end_to_end * g.claim.inputs.utilization,
    "claim_fits": lambda m, g, v: g.claim.fits,
    "claim_max_batch": lambda m, g, v: g.claim.max_batch, "bound": lambda m, g, v: g.base.compute_bound_fraction,
    "capacity": lambda m, g, v: g.capacity, "theo": lambda m, g, v: g.speedup_theoretical,
    "impl": lambda m, g, v: g.speedup_implementation, "e2e": lambda m, g, v: g.speedup_end_to_end,
    "e2e_batch": lambda m, g, v: g.e2e_baseline_batch, "slo": lambda m, g, v: g.slo,
    "min_gain": lambda m, g, v: v.min_gain, "gate": lambda m, g, v: v.gate, "enables": lambda m, g, v: v.enables,
    "quality_fail": lambda m, g, v: v.quality_fail, "theory_low": lambda m, g, v: v.theory_low,
    "kernel_missing": lambda m, g, v: v.kernel_missing, "e2e_low": lambda m, g, v: v.e2e_low,
    "long_untested": lambda m, g, v: v.long_untested, "slo_missed": lambda m, g, v: v.slo_missed,
    "measured_quality": lambda m, g, v: v.measured_quality, "measured_claim_s": lambda m, g, v: v.measured_claim_s,
    "base_util": lambda m, g, v: g.base.inputs.utilization, "claim_util": lambda m, g, v: g.claim.inputs.utilization,
    "base_tp": lambda m, g, v: g.base.inputs.tp, "claim_tp": lambda m, g, v: g.claim.inputs.tp,
    "switched_on": lambda m, g, v: g.switched_on, "when_on": lambda m, g, v: g.speedup_when_on,
    "evidence_gap": lambda m, g, v: v.evidence_missing, "long_context": lambda m, g, v: m.long_context,
    "quality_band": lambda m, g, v: v.quality_band, "far_model": lambda m, g, v: v.far_model,
    "integration": lambda m, g, v: v.integration, "beyond_window": lambda m, g, v: v.beyond_window,
    "incumbent_low": lambda m, g, v: v.incumbent_low, "over_incumbent": lambda m, g, v: v.over_incumbent,
    "unproven": lambda m, g, v: v.unproven_integration, "no_regret": lambda m, g, v: v.no_regret,
    "simulated": lambda m, g, v: simulated(m),
    "base_gpus": lambda m, g, v: g.base_gpus,
    "base_req": lambda m, g, v: g.base_request_s, "claim_req": lambda m, g, v: g.claim_request_s,
    "context": lambda m, g, v: m.context,
    "params": lambda m, g, v: m.per_model(lambda mod: mod.params),
    "window": lambda m, g, v: m.per_model(lambda mod: mod.window),
}


def _conflict_words(c: Conflict) -> str:
    if c.kind == "needs":
        return f"needs {c.feature.replace('_', ' ')}, which {c.attention} attention never writes to memory"
    assert c.kind == "beside", c.kind
    return f"cannot run beside {c.feature.replace('_', ' ')}, which this stack uses"


def _conflict_text(m: Matrix, claim: Claim) -> list[str]:
    """Per block: the incompatibility sentence, or ''."""
    return ["; ".join(_conflict_words(c) for c in conflicts(claim, b.attention, b.stack)) for b in m.blocks]


def reasons(idx: slice, m: Matrix, claim: Claim, g: Gaps, v: Verdicts) -> list[list[str]]:
    """The sentences that explain each verdict of the cells ``idx``, most decisive first.

    Every array is converted to Python values once for the block, not indexed cell by cell.
    """
    cols = {k: np.broadcast_to(np.asarray(f(m, g, v)), m.batch.shape)[idx].tolist() for k, f in _FIELDS.items()}
    cols["conflict"] = np.asarray(_conflict_text(m, claim))[m.block_idx][idx].tolist()
    keys = list(cols)
    integration = _integration_text(claim)           # the card's words, made once for every cell
    return [_reasons(dict(zip(keys, values, strict=True)), claim, v, integration)
            for values in zip(*cols.values(), strict=True)]


def _integration_text(claim: Claim) -> str:
    """Why a KV format is integration work, in the card's own classes' words."""
    words = " and ".join(classes()[k].words for k in claim.change.classes if classes()[k].attention_backends)
    return (f"integration: a {words or 'KV-cache'} format must be read by every attention backend an engine "
            f"runs (paged KV, prefix caching, chunked prefill), and its kernel is in the "
            f"{claim.kernel_in if claim.kernel_in != 'none' else 'no'} code only")


def _figure(f: QualityFigure) -> str:
    if f.lower_is_better:
        return (f"{f.task} perplexity {fmt_pair(f.baseline, f.claim)} ({'+' if f.increase >= 0 else ''}"
                f"{fmt_percent(f.increase)}) on {f.model}")
    return f"{f.task} {f.kind} {fmt_pair(f.baseline, f.claim)} ({fmt_percent(f.retained)} retained) on {f.model}"


def quality_words(claim: Claim, q: QualityStanding | None, gate: float) -> str:
    """The figure(s) the quality gate read, each against its kind's gate and band."""
    parts = []
    if q is not None and q.perplexity is not None:
        parts.append(f"worst perplexity: {_figure(q.perplexity)}, against +{fmt_percent(PERPLEXITY_GATE)} (GO) and "
                     f"+{fmt_percent(PERPLEXITY_BAND)} (CONDITIONAL)")
    if q is not None and q.task is not None:
        parts.append(f"worst task: {_figure(q.task)}, against {fmt_percent(gate)} (GO) and "
                     f"{fmt_percent(ACCURACY_BAND)} (CONDITIONAL)")
    if not parts and claim.quality_retained is not None:
        parts.append(f"quality retained {fmt_percent(claim.quality_retained)} (the card's one figure, a task "
                     f"average), against {fmt_percent(gate)} (GO) and {fmt_percent(ACCURACY_BAND)} (CONDITIONAL)")
    return "; ".join(parts)


def _step_reason(r: dict[str, Any], claim: Claim, below: str) -> str:
    """What carries the step's gain, with the numbers that matter for that mechanism (the registry's
    'carries': bytes, FLOPs and compute dtype, tokens per step, kernel occupancy, parallelism)."""
    carries = claim.change.kinds
    theo = r["theo"]
    bound = f"the bound is {fmt_ratio(theo)}" + below
    saved_bytes = r["base_bytes"] - r["claim_bytes"]
    bytes_part = (f"saves {fmt_percent(saved_bytes / r['base_bytes'])} of the bytes read per step "
                  f"({fmt_bytes(saved_bytes)} of {fmt_bytes(r['base_bytes'])})")
    spec = claim.change.speculative
    if "tokens_per_step" in carries and spec is not None:
        plan = speculative_plan(spec)
        source = ("the card's assumed tokens per step" if spec.tokens_per_step is not None
                  else f"{plan.draft_passes:g} drafted at acceptance {spec.acceptance:g}")
        return (f"speculative decoding: {plan.expected_tokens:.2f} tokens per step ({source}), each step a draft "
                f"plus a verification of {plan.verify_tokens:g} tokens per sequence: {bound}")
    if "kernel" in carries and theo == 1.0:
        return (f"an implementation gain, not a saving: the bytes and FLOPs are the same (bound 1.000×); the kernel "
                f"runs at {fmt_ratio(r['impl'])} of the baseline's speed on this cell")
    if "parallelism" in carries:
        return f"tensor parallel over {r['claim_tp']:g} GPUs (from {r['base_tp']:g}): {bytes_part} per GPU, {bound}"
    if "dtype" in carries and (r["bound"] > 0.5 or saved_bytes == 0):
        effect = "pays" if theo > 1 else "barely moves it"
        what = ", ".join(f"{where} computed in {dtype}" for where, dtype in
                         (("linear layers", claim.change.compute_dtype), ("attention", claim.change.attention_dtype))
                         if dtype is not None)
        return (f"{what}: the step is {fmt_percent(r['bound'])} compute-bound, so a faster dtype {effect}; "
                f"{bound}")
    if carries & {"flops"} and r["base_flops"] != r["claim_flops"] and (saved_bytes == 0 or r["bound"] > 0.5):
        saved = r["base_flops"] - r["claim_flops"]
        return f"saves {fmt_percent(saved / r['base_flops'])} of the FLOPs per step: {bound}"
    if r["bound"] > 0.5:
        return (f"the step is compute-bound ({fmt_percent(r['bound'])} of its time): saving "
                f"{fmt_percent(saved_bytes / r['base_bytes'])} of the bytes ({fmt_bytes(saved_bytes)}) barely "
                f"moves it; {bound}")
    return f"{bytes_part}: {bound}"


def _reasons(r: dict[str, Any], claim: Claim, v: Verdicts, integration: str) -> list[str]:
    quality_untested, missing = v.quality_untested, v.missing_evidence
    out: list[str] = []
    if r["conflict"]:
        out.append(f"incompatible with this stack: {r['conflict']}")
    if r["evidence_gap"]:
        relevant = [e for e in missing if e != LONG_CONTEXT or r["long_context"]]
        out.append("evidence missing: " + "; ".join(relevant))
    base_bytes, claim_bytes = r["base_bytes"], r["claim_bytes"]
    saved = base_bytes - claim_bytes
    mg = r["min_gain"]
    batch = int(r["batch"])
    below = f", below the {fmt_ratio(mg, 2)} threshold" if r["theory_low"] else ""
    if not r["claim_fits"]:
        most = int(r["claim_max_batch"])
        out.append(f"does not fit at batch {batch}: needs {fmt_gib(r['claim_memory'])} of "
                   f"{fmt_gib(r['capacity'])}; " + (f"the claim fits at most batch {most}" if most
                                                    else "the claim does not fit even one sequence"))
    measured_q = r["measured_quality"]
    if r["quality_fail"]:
        if math.isfinite(measured_q):
            out.append(f"measured quality retained {fmt_percent(measured_q)} (claim ÷ baseline, from the "
                       f"measurements) is below the {fmt_percent(r['gate'])} gate")
        else:
            out.append(f"quality beyond its band: {quality_words(claim, v.quality, r['gate'])}")
    elif r["quality_band"]:
        out.append(f"quality between its gate and its band (opt-in, as engines ship lossy formats): "
                   f"{quality_words(claim, v.quality, r['gate'])}")
    if r["incumbent_low"]:
        over = r["over_incumbent"]
        own = r["e2e"] / over if over else math.nan
        out.append(f"the shipped alternative ({_incumbent_name(claim)}) already gives {fmt_ratio(own)} here; this "
                   f"adds {fmt_ratio(over)} over it, below the {fmt_ratio(mg, 2)} threshold")
    elif math.isfinite(r["over_incumbent"]):
        out.append(f"over the shipped alternative ({_incumbent_name(claim)}): {fmt_ratio(r['over_incumbent'])}")
    untouched = (saved == 0.0 and r["base_flops"] == r["claim_flops"] and r["base_memory"] == r["claim_memory"]
                 and r["base_impl"] == r["claim_impl"])
    if not r["switched_on"] and r["when_on"] < 1.0:
        on = f" (on, it would run at {fmt_ratio(r['when_on'])})" if math.isfinite(r["when_on"]) else ""
        out.append(f"left off here: an operator enables {' and '.join(claim.change.order)} per deployment, and on this "
                   f"workload it would be slower than the baseline{on}, so it is priced off (1.000×)")
    elif r["base_util"] != r["claim_util"]:
        out.append(f"the gain lies outside the step: {fmt_percent(r['base_util'], 0)} → "
                   f"{fmt_percent(r['claim_util'], 0)} of batch slots do useful work, so the end-to-end layer "
                   f"decides: {fmt_ratio(r['e2e'])}")
    elif untouched:
        out.append("the change does not touch this workload's step (for example a fix this baseline already has, "
                   "or a phase the change does not act on): no gain")
    else:
        out.append(_step_reason(r, claim, below))
    if r["base_gpus"] > r["base_tp"]:
        out.append(f"capacity: the baseline holds not one sequence on {r['base_tp']:g} GPU(s) "
                   f"({fmt_gib(r['base_memory'])} of {fmt_gib(r['capacity'])}); it needs {r['base_gpus']:g}, the "
                   f"claim serves on {r['claim_tp']:g}: end-to-end is GPU-time for the same requests, "
                   f"{fmt_ratio(r['e2e'])}")
    elif r["enables"]:
        b0 = r["e2e_batch"]
        tail = (f"end-to-end compares throughput at batch {batch} with the baseline at batch {int(b0)}"
                if math.isfinite(b0) else "the baseline cannot run at all")
        out.append(f"the baseline does not fit at batch {batch} ({fmt_gib(r['base_memory'])} of "
                   f"{fmt_gib(r['capacity'])}); the claim does: {tail}")
    if r["kernel_missing"]:
        out.append(f"no kernel reads the new format in place: reads cost the old bytes, so the "
                   f"implementation gain is {fmt_ratio(r['impl'])}")
    if r["e2e_low"] and not r["theory_low"] and not r["kernel_missing"]:
        why = ("switched off where it does not pay" if not r["switched_on"] else
               "no gain outside the step either" if r["base_util"] == r["claim_util"] and untouched
               else "kernel efficiency and overhead eat the bound")
        if r["no_regret"]:
            out.append(f"end-to-end gain {fmt_ratio(r['e2e'])}: no gain the model resolves here (an exact change "
                       f"an engine ships needs only more than 1.00×)")
        elif r["claim_tp"] > r["base_tp"]:
            out.append(f"GPU-time per request gains {fmt_ratio(r['base_req'] / r['claim_req'])}, below the "
                       f"{fmt_ratio(mg, 2)} threshold: the step is {fmt_ratio(r['e2e'])} faster on "
                       f"{r['claim_tp'] / r['base_tp']:g}× the GPUs")
        else:
            out.append(f"end-to-end gain {fmt_ratio(r['e2e'])} is below the {fmt_ratio(mg, 2)} threshold ({why})")
    if r["no_regret"] and not r["e2e_low"] and not r["theory_low"] and r["e2e"] < mg:
        out.append(f"end-to-end gain {fmt_ratio(r['e2e'])} is below the {fmt_ratio(mg, 2)} a reproduction must "
                   f"clear, but the change is exact and its kernel ships in an engine: nothing to reproduce, "
                   f"nothing to lose (no regret)")
    if r["simulated"] and math.isfinite(r["e2e"]) and abs(r["e2e"] - 1.0) <= REGRESSION_TOLERANCE \
            and r["e2e"] != 1.0:
        out.append(f"the simulated {fmt_ratio(r['e2e'])} is within the serving simulation's resolution "
                   f"(±{REGRESSION_TOLERANCE * 100:g} % of the rate at the SLO): no change")
    if quality_untested and not math.isfinite(measured_q):
        out.append("the card reports no quality retained: the quality gate cannot be checked")
    if r["far_model"]:
        out.append(f"the quality figures were measured on a {v.quality.measured_params / 1e9:,.0f}B model, over "
                   f"{FAR_MODEL_FACTOR:g}× this workload's {r['params'] / 1e9:,.1f}B: quantization error grows as "
                   f"models shrink, so verify quality on this model" if v.quality else "")
    if r["integration"]:
        out.append(integration + ("; with no quality figure, that work buys an unknown loss: NO-GO" if r["unproven"]
                                  else ""))
    if r["beyond_window"]:
        out.append(f"context {int(r['context']):,} tokens is beyond the model's trained window of "
                   f"{int(r['window']):,}: its quality there is unknown")
    if r["long_untested"]:
        out.append("long-context workload, but the card reports no long-context evaluation "
                   "(needle-in-a-haystack): average scores can hide the drop")
    slo = r["slo"]
    if math.isfinite(slo):
        verb = "misses" if r["slo_missed"] else "meets"
        metric = "TPOT" if r["decode"] else "TTFT"
        measured_t = r["measured_claim_s"]
        t, how = (measured_t, "measured") if math.isfinite(measured_t) else (r["claim_e2e"], "predicted")
        out.append(f"{metric} {fmt_time(t)} ({how}) with the claim {verb} the {fmt_time(slo)} SLO")
    return out


def decision_reasons(d: Decision, claim: Claim) -> list[str]:
    """Why the decision is what it is: the traffic each verdict carries, the rule, the reproduction cost."""
    why = [f"{d.verdict} by the rule: {rule_words(d.rule)}"]
    if d.incumbent is not None and d.weighted_over_incumbent is not None:
        why.append(f"over the shipped alternative ({d.incumbent}) the fleet gains "
                   f"{fmt_ratio(d.weighted_over_incumbent)}"
                   f" (GPU-time over GPU-time)")
    why += [f"{label} on {fmt_percent(share)} of the requests" for label, share in d.shares.items() if share > 0]
    if d.share_only_claim_serves > 0:
        why.append(f"{fmt_percent(d.share_only_claim_serves)} of the requests only the claim can serve")
    if d.share_claim_cannot_serve > 0:
        why.append(f"{fmt_percent(d.share_claim_cannot_serve)} of the requests the claim cannot serve at their batch")
    hours = claim.gpu_hours
    if hours is not None and d.weighted_end_to_end is not None:
        why.append(f"reproduction costs {hours:,.0f} GPU-hours for a fleet gain of "
                   f"{fmt_ratio(d.weighted_end_to_end)} (GPU-time for the same requests)")
    return why
