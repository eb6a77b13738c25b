"""The paper check's words and JSON (analysis/papercheck.py computes it): why no bound, what the bound assumed,
which setting gave it, where a gain beyond it usually comes from."""

from __future__ import annotations

from typing import Any

from ..analysis.papercheck import NO_BOUND, Item, PaperCheck, PaperSetting
from ..inputs import units
from . import notices

_NO_BOUND = {
    "no-setting": "the card states no setting",
    "no-speedup": "the card reports no speedup",
    "training": "the reported number is a training number: it says nothing about inference, and no inference "
                "bound is priced for it",
    "serving": "the reported number is a serving number (capacity or goodput under a latency target over a request "
               "trace): a scheduler's gain, which one step's roofline cannot bound",
    "no-model": "the card's setting names no model: no bound can be computed",
    "nothing-fits": "in no searched setting do both the paper's baseline and the method fit in memory: state the "
                    "GPUs the paper used (claim.setting.tp, pipeline) or its offloading (claim.setting.offload)",
}
_SCOPES = {"kernel": "the operators the change touches", "attention": "the attention operator"}
assert set(_NO_BOUND) == set(NO_BOUND)


def _assumed(a: Item) -> str:
    if a.code == "hardware":
        return f"hardware not stated: computed on {a.values[0]}"
    if a.code == "phase":
        return (f"phase not stated: bounded at {a.values[0]}, the only phase the change acts on (a request that "
                f"also decodes gains less)")
    if a.code == "batch":
        return f"batch not stated: searched {', '.join(map(str, a.values))} where both sides fit"
    if a.code == "context":
        window, *contexts = a.values
        return (f"context not stated: searched {', '.join(f'{c:,}' for c in contexts)} tokens where both sides "
                f"fit, " + (f"up to the model's {window:,}-token window (its trained context: a longer one that "
                            f"fits is not one it serves)" if window else "the longest that fits included"))
    assert a.code == "speculative-assumption", a.code
    return (f"the bound rests on the card's own assumption ({', '.join(map(str, a.values))}), not on a number "
            f"the paper reports: it cannot falsify the card")


def _source(s: Item) -> str:
    if s.code == "offload":
        return ("an offloading baseline: its weights cross the host link every step, so whatever lets a step "
                "carry more sequences (a larger batch) multiplies throughput")
    if s.code == "weak-baseline":
        baseline = s.values[0]
        return ("a weak baseline" + (f" (the card: {baseline})" if baseline else "")
                + ": the gain is measured against a system slower than a good implementation of the same step")
    if s.code == "capacity-bound":
        return (f"a larger batch made possible by the freed memory: with each side at its largest batch the "
                f"throughput bound is {s.values[0]:.2f}×")
    if s.code == "batch-beyond-memory":
        return (f"a batch beyond what the GPU holds: the bound already runs each side at its largest batch "
                f"({s.values[0]:,} against {s.values[1]:,}); more needs the KV kept elsewhere (host memory) or "
                f"a different batch for the baseline than its memory allowed")
    if s.code == "batch-sizes":
        return "a larger batch made possible by freed memory (throughput measured at different batch sizes)"
    if s.code == "kernel":
        return "a kernel better than the baseline's: part of the gain is implementation, not the method"
    assert s.code == "metric", s.code
    return ("a different metric: kernel-only or attention-only time, training throughput, or memory "
            "reported as speed (state claim.scope)")


def _kind(k: Item) -> str:
    if k.code == "equal-batch":
        return "equal batch"
    if k.code == "end-to-end":
        return (f"end to end: the baseline at batch {k.values[0]:,}, all it fits, the method at batch "
                f"{k.values[1]:,}")
    if k.code == "scope":
        return f"{k.values[0]} only: {_SCOPES[str(k.values[0])]}, not the whole step"
    assert k.code == "capacity", k.code
    return "capacity: each side at its largest batch that fits"


def _misfit(m: Item) -> str:
    if m.code == "weights":
        return (f"the paper's baseline does not fit in memory in its stated setting: its weights alone need "
                f"{m.values[0]} GPUs of this kind (claim.setting.tp or pipeline) or offloading "
                f"(claim.setting.offload); the bound assumes it ran")
    assert m.code == "kv", m.code
    batch, context, fits = m.values
    return (f"the paper's baseline does not fit in memory in its stated setting: its weights fit, but not the KV "
            f"of batch {batch:,} at {context:,} tokens (it fits {fits:,} sequences); the bound assumes it ran")


def setting_words(s: PaperSetting) -> str:
    """Which setting gave the bound, saying what the card stated and what the search chose."""
    tp, pipeline = int(s.get("tp", 1)), int(s.get("pipeline", 1))          # type: ignore[call-overload]
    gpus = [f"tp {tp}" if tp > 1 else "", f"pipeline {pipeline}" if pipeline > 1 else ""]
    parts = [" × ".join(g for g in gpus if g), s.phase]
    parts += [f"{key} {getattr(s, key):,}" + (" (searched)" if key in s.searched else "")
              for key in ("batch", "context")]
    offload = s.get("offload")
    if isinstance(offload, dict):
        parts.append(f"{units.fmt_percent(offload['weights'], 0)} of the weights offloaded over {offload['link']}")
    if s.get("baseline_model") is not None:
        parts.append(f"baseline model {s.get('baseline_model')}")
    if s.get("domain") is not None:
        parts.append(f"domain {s.get('domain')}")
    return f"{s.model} on {s.hardware}, " + ", ".join(p for p in parts if p)


def as_json(c: PaperCheck, evidence: dict[str, Any]) -> dict[str, Any]:
    """The JSON's ``paper_check`` (its keys a contract): the numbers, and each code in words."""
    assumed = [_assumed(a) for a in c.assumed]
    if c.no_bound is not None:
        return {"reported": c.reported, "bound": None, "exceeds_bound": None, "assumed": assumed,
                "evidence": evidence, "note": _NO_BOUND[c.no_bound]}
    s = c.setting
    assert s is not None and c.bound is not None
    return {
        "reported": c.reported, "bound": c.bound, "exceeds_bound": c.exceeds_bound, "tolerance": c.tolerance,
        "metric": c.metric, "scope": c.scope, "bound_kind": _kind(c.kind),
        "setting": {**dict(s.stated), "model": s.model, "hardware": s.hardware, "phase": s.phase, "batch": s.batch,
                    "context": s.context},
        "setting_words": setting_words(s),
        "baseline_fits": c.baseline_fits, "capacity_bound": c.capacity_bound,
        "capacity_batches": list(c.capacity_batches) if c.capacity_batches else None,
        "assumed": assumed, "likely_sources": [_source(x) for x in c.likely_sources],
        "note": _misfit(c.misfit) if c.misfit is not None else "", "evidence": evidence,
        "warnings": notices.as_json(c.warnings),
        "stated_batch_replaced": _replaced(c) if c.stated_batch is not None else "",
        "predicted_end_to_end": c.predicted, "predicted_above_reported": c.predicted_above,
        "prediction": _prediction(c, s),
    }


def _replaced(c: PaperCheck) -> str:
    """Why the bound is not at the batch the card states (a throughput claim's capacity bound)."""
    assert c.stated_batch is not None and c.capacity_batches is not None
    batch, at_stated = c.stated_batch
    return (f"the card states batch {batch:,}; a throughput gain can also come from the larger batch the freed "
            f"memory allows, so the bound is taken with each side at its largest batch that fits "
            f"({c.capacity_batches[0]:,} against {c.capacity_batches[1]:,}); at the stated batch {batch:,} it is "
            f"{units.fmt_ratio(at_stated)}")


def _prediction(c: PaperCheck, s: PaperSetting) -> str:
    """triage's own end-to-end price in the same setting beside the paper's measurement, and what it means when
    it is the higher (a prediction above a measurement is optimistic, not a finding)."""
    if c.predicted is None:
        return ""
    at = f"batch {s.batch:,}, context {s.context:,} tokens"
    if not c.predicted_above:
        return (f"triage predicts {units.fmt_ratio(c.predicted)} end to end at {at} (the shipped engine defaults, "
                f"the card's kernel), not above the paper's measured {units.fmt_ratio(c.reported or 0.0)}")
    return (f"triage predicts {units.fmt_ratio(c.predicted)} end to end at {at} (the shipped engine defaults, the "
            f"card's kernel), above the paper's own measured {units.fmt_ratio(c.reported or 0.0)}: the memo's gains "
            f"are likely optimistic for this method (its kernel reaches less than the card states, or the "
            f"paper's stack differs from the defaults); read them as upper estimates, or state the kernel's "
            f"measured efficiency (implementation.bandwidth_efficiency) from the paper")
