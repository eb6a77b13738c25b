"""The paper-setting check: the card's own setting, priced by the roofline, against its reported gain.

A reported gain more than 5 % above the theoretical bound of the stated
mechanism in the paper's own setting cannot come from that mechanism alone:
it is an IOU until the setting explains it (course module 12.4: a number the
roofline forbids). Setting details the card does not give are searched, but
only over settings in which the paper's baseline and method both fit in
memory (a bound taken where nothing runs proves nothing); the largest context
that fits is searched too, and the check says which setting gave the bound.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import PAPER_BATCHES as BATCHES
from ..defaults import PAPER_CONTEXTS as CONTEXTS
from ..defaults import PAPER_HARDWARE as DEFAULT_HARDWARE
from ..defaults import PAPER_TOLERANCE as TOLERANCE
from ..inputs import units, workloads
from ..inputs.catalog import Catalog
from ..inputs.claim import Claim
from ..inputs.registry import acting_phases, carried, outside_the_step, touched_groups
from ..inputs.specs import Model, is_config_path
from ..model import layers, matrix
from ..model.roofline import GROUPS, group_times, step_cost, step_time
from . import noops

# setting keys the check prices as workload keys (beside model, hardware, phase, batch, context)
PRICED = ("attention", "memory_waste", "tp", "batch_utilization", "precision", "domain")
# reported numbers a scope bounds: the touched operator groups, or attention alone
MAX_CONTEXT = 100_000_000        # the longest context a workload may state (the schema's limit)
SCOPES = {"kernel": "the operators the change touches", "attention": "the attention operator"}


def _sources(claim: Claim, metric: str, capacity_bound: float | None, bound: float,
             batches: tuple[int, int] | None = None) -> list[str]:
    """Where a gain beyond the bound usually comes from, most likely first."""
    setting = claim.claim.get("setting", {})
    out = []
    if "offload" in setting:
        out.append("an offloading baseline: its weights cross the host link every step, so whatever lets a step "
                   "carry more sequences (a larger batch) multiplies throughput")
    baseline = claim.claim.get("baseline", "")
    out.append("a weak baseline" + (f" (the card: {baseline})" if baseline else "")
               + ": the gain is measured against a system slower than a good implementation of the same step")
    if capacity_bound is not None and capacity_bound > bound * TOLERANCE:
        out.append(f"a larger batch made possible by the freed memory: with each side at its largest batch the "
                   f"throughput bound is {capacity_bound:.2f}×")
    elif batches is not None and capacity_bound == bound:
        out.append(f"a batch beyond what the GPU holds: the bound already runs each side at its largest batch "
                   f"({batches[0]:,} against {batches[1]:,}); more needs the KV kept elsewhere (host memory) or "
                   f"a different batch for the baseline than its memory allowed")
    elif metric == "throughput":
        out.append("a larger batch made possible by freed memory (throughput measured at different batch sizes)")
    out.append("a kernel better than the baseline's: part of the gain is implementation, not the method")
    if "scope" not in claim.claim:
        out.append("a different metric: kernel-only or attention-only time, training throughput, or memory "
                   "reported as speed (state claim.scope)")
    return out


def _cells(batches: list[int], contexts: list[int], phase: str) -> list[dict[str, Any]]:
    return [{"name": f"paper-{i}", "phase": phase, "context": c, "batch": b}
            for i, (b, c) in enumerate(product(batches, contexts))]


def _largest_fitting_context(g: layers.Gaps, grid: matrix.Matrix) -> list[int]:
    """Per searched batch, the longest context at which the baseline still fits (its KV grows linearly)."""
    per_token = g.base.mem.kv_per_sequence / np.maximum(grid.context, 1.0)
    room = g.capacity - g.base.mem.weights
    fit = np.floor(room / (grid.batch * per_token * 1.0001))       # a hair below the edge: activations
    return sorted({int(c) for c in fit if np.isfinite(c) and 1 <= c <= MAX_CONTEXT})


def _window(models: tuple[Model, ...]) -> int:
    """The longest context the paper's models (method's and baseline's) were trained for
    (max_position_embeddings), else the limit."""
    known = [m.max_context for m in models if m.max_context]
    return min(known) if known else MAX_CONTEXT


def _setting_words(setting: dict[str, Any], stated: dict[str, Any]) -> str:
    """Which setting gave the bound, saying what the card stated and what the search chose."""
    gpus = [f"tp {setting['tp']}" if setting.get("tp", 1) > 1 else "",
            f"pipeline {setting['pipeline']}" if setting.get("pipeline", 1) > 1 else ""]
    parts = [" × ".join(g for g in gpus if g), setting["phase"]]
    parts += [f"{key} {setting[key]:,}" + ("" if key in stated else " (searched)") for key in ("batch", "context")]
    if "offload" in setting:
        parts.append(f"{units.fmt_percent(setting['offload']['weights'], 0)} of the weights offloaded over "
                     f"{setting['offload']['link']}")
    if "baseline_model" in setting:
        parts.append(f"baseline model {setting['baseline_model']}")
    if "domain" in setting:
        parts.append(f"domain {setting['domain']}")
    return f"{setting['model']} on {setting['hardware']}, " + ", ".join(p for p in parts if p)


class _Priced:
    """The grid priced once: equal-batch ratio, both sides' fit, the offload time added to each step."""

    def __init__(self, claim: Claim, grid: matrix.Matrix, g: layers.Gaps, base: layers.Variant,
                 setting: dict[str, Any], metric: str, models: tuple[Model, ...]) -> None:
        offload = setting.get("offload")
        # seconds a step spends streaming offloaded weights over the host link, each side its own weights
        self.extra: tuple[Any, Any] = (0.0, 0.0)
        self.rescued: Any = np.zeros(grid.batch.shape, dtype=bool)   # the end-to-end layer's batches gave it
        base_mem, claim_mem = base.mem, g.claim.mem
        if offload is not None:
            share = float(offload["weights"])
            link = units.parse(offload["link"], "bandwidth")
            self.extra = (share * base.mem.weights / link, share * g.claim.mem.weights / link)
            base_mem = replace(base.mem, weights=base.mem.weights * (1.0 - share))
            claim_mem = replace(g.claim.mem, weights=g.claim.mem.weights * (1.0 - share))
        waste = g.base.inputs.memory_waste
        self.max_batch = (base_mem.max_batch(g.capacity, waste, 0.0),
                          claim_mem.max_batch(g.capacity, g.claim.inputs.memory_waste, 0.0))
        self.fits = (grid.batch <= self.max_batch[0]) & (grid.batch <= self.max_batch[1])
        tb, tc = base.time_theoretical, g.claim.time_theoretical
        # tokens per step of the claim over the baseline's (speculation): the ratio the roofline gives back
        k = g.speedup_theoretical * tc / g.base.time_theoretical
        if metric == "memory":
            self.ratio = base.memory_bytes / g.claim.memory_bytes
        elif outside_the_step(claim.change):
            self.ratio = np.fmax(g.speedup_theoretical, g.speedup_end_to_end) * tb / g.base.time_theoretical
            self.rescued = g.speedup_end_to_end > g.speedup_theoretical
        else:
            self.ratio = k * (tb + self.extra[0]) / (tc + self.extra[1])
            if "speculative" in claim.change:
                # a step's all-reduces are amortized over its accepted tokens: a bound on speculation counts them
                # (the implementation layer, here at full efficiency, is the roofline plus the all-reduces)
                self.ratio = np.fmax(self.ratio, g.speedup_implementation * base.time_implementation
                                     / g.base.time_implementation)
        self.g, self.base, self.grid = g, base, grid
        self.mems = (base_mem, claim_mem)
        self.models = models                      # the paper's models, method's and baseline's

    def capacity_bound(self, i: int) -> tuple[float | None, tuple[int, int] | None]:
        """Throughput with each side at its largest batch that fits, claim ÷ baseline (None if either fits no
        sequence), and those batches."""
        b0, b1 = float(self.max_batch[0][i]), float(self.max_batch[1][i])
        if b0 < 1 or b1 < 1:
            return None, None
        hw = layers.machine(self.grid).take(np.array([i]))
        rates = []
        k = float(self.g.speedup_theoretical[i] * self.g.claim.time_theoretical[i] / self.g.base.time_theoretical[i])
        for inputs, batch, tokens, extra in ((self.base.inputs, b0, 1.0, self.extra[0]),
                                             (self.g.claim.inputs, b1, k, self.extra[1])):
            x = replace(inputs.take(np.array([i])), batch=np.array([batch]))
            t = step_time(step_cost(x), hw.peak, hw.bandwidth, vector_peak=hw.vector_peak)[0]
            rates.append(tokens * batch / (t + float(np.broadcast_to(extra, self.fits.shape)[i])))
        return float(rates[1] / rates[0]), (int(b0), int(b1))

    def scope_ratio(self, groups: tuple[str, ...]) -> np.ndarray:
        """The bound of a number that times only ``groups`` (a kernel, the attention operator)."""
        hw = layers.machine(self.grid)
        ones = {g: 1.0 for g in GROUPS}
        times = []
        for cost in (self.base.cost, self.g.claim.cost):
            t = group_times(cost, hw.peak, hw.bandwidth, ones, ones, hw.vector_peak)
            times.append(sum(np.maximum(*t[g]) for g in groups))
        return np.asarray(times[0] / times[1])


def _price(claim: Claim, catalog: Catalog, setting: dict[str, Any], cells: list[dict[str, Any]],
           defaults: dict[str, Any], metric: str) -> _Priced:
    resolved = workloads.load({"defaults": defaults, "workloads": cells}, catalog)
    grid = matrix.build(resolved)
    models = {**resolved.catalog.models, **claim.models}
    g = layers.compute(grid, claim, models, switch_optional=False)
    if "baseline_model" not in setting:
        return _Priced(claim, grid, g, g.base, setting, metric, grid.models)
    # the paper's baseline ran another model (MHA vs MLA)
    other = matrix.build(workloads.load({"defaults": {**defaults, "model": setting["baseline_model"]},
                                         "workloads": cells}, catalog))
    base = layers.compute(other, claim, models, switch_optional=False).base
    return _Priced(claim, grid, g, base, setting, metric, grid.models + other.models)


def _model_path(model: str, claim: Claim) -> str:
    if is_config_path(model) and not Path(model).is_absolute() and model not in claim.models:
        return str(Path(claim.file).parent / model)
    return model


def check(claim: Claim, catalog: Catalog) -> dict[str, Any]:
    """{reported, bound, exceeds_bound, ...}: all three None when the card gives no setting or no number."""
    setting = dict(claim.claim.get("setting", {}))
    reported = claim.claimed_speedup
    empty: dict[str, Any] = {"reported": reported, "bound": None, "exceeds_bound": None, "assumed": [],
                             "evidence": claim.evidence}
    if not setting or reported is None:
        return {**empty, "note": "the card states no setting" if not setting else "the card reports no speedup"}
    metric = claim.claim.get("metric", "tpot")
    scope = claim.claim.get("scope", "end-to-end")
    if scope == "training":
        return {**empty, "note": "the reported number is a training number: it says nothing about inference, and "
                                 "no inference bound is priced for it"}
    if scope == "serving":
        return {**empty, "note": "the reported number is a serving number (capacity or goodput under a latency "
                                 "target over a request trace): a scheduler's gain, which one step's roofline "
                                 "cannot bound"}
    phase = setting.get("phase", "prefill" if metric == "ttft" else "decode")
    acting = set().union(*(acting_phases(k, v) for k, v in claim.change.items())) if claim.change else set()
    if "phase" not in setting and metric not in ("tpot", "ttft") and acting and phase not in acting:
        # a throughput claim of a change that acts in one phase only: bounded where it acts, and said so
        phase = sorted(acting)[0]
        unstated_phase = True
    else:
        unstated_phase = False
    model = setting.get("model")
    if model is None:
        return {**empty, "note": "the card's setting names no model: no bound can be computed"}
    model = _model_path(model, claim)
    if "baseline_model" in setting:
        setting["baseline_model"] = _model_path(setting["baseline_model"], claim)
    assumed = []
    hardware = setting.get("hardware")
    if hardware is None:
        hardware = DEFAULT_HARDWARE
        assumed.append(f"hardware not stated: computed on {DEFAULT_HARDWARE}")
    cat = catalog.pooled(hardware, int(setting.get("pipeline", 1)))
    # a bound: full efficiency, no overhead, no reserve; what the setting states; the rest the shipped defaults
    defaults = {"model": model, "hardware": hardware, "efficiency": {"bandwidth": 1.0, "compute": 1.0},
                "overhead": 0, "reserve": 0, **{k: setting[k] for k in PRICED if k in setting}}
    batches = [setting["batch"]] if "batch" in setting else list(BATCHES)
    contexts = [setting["context"]] if "context" in setting else list(CONTEXTS)
    p = _price(claim, cat, setting, _cells(batches, contexts, phase), defaults, metric)
    if "context" not in setting:          # the longest context that fits, within the model's trained window
        window = _window(p.models)
        contexts = sorted(c for c in set(contexts) | set(_largest_fitting_context(p.g, p.grid)) if c <= window)
        contexts = contexts or [window]
        p = _price(claim, cat, setting, _cells(batches, contexts, phase), defaults, metric)
    ratios = p.scope_ratio(("attention",) if scope == "attention" else tuple(sorted(touched_groups(claim.change)))) \
        if scope in SCOPES else p.ratio
    searched = "batch" not in setting or "context" not in setting
    candidates = np.where(p.fits, ratios, np.nan) if searched else ratios
    if np.isnan(candidates).all():
        return {**empty, "assumed": assumed, "note": (
            "in no searched setting do both the paper's baseline and the method fit in memory: state the GPUs the "
            "paper used (claim.setting.tp, pipeline) or its offloading (claim.setting.offload)")}
    best = int(np.nanargmax(candidates))
    bound = float(candidates[best])
    if unstated_phase:
        assumed.append(f"phase not stated: bounded at {phase}, the only phase the change acts on (a request that "
                       f"also decodes gains less)")
    if "batch" not in setting:
        assumed.append(f"batch not stated: searched {', '.join(map(str, BATCHES))} where both sides fit")
    if "context" not in setting:
        window = _window(p.models)
        cut = window < MAX_CONTEXT and window in contexts
        assumed.append(f"context not stated: searched {', '.join(f'{c:,}' for c in contexts)} tokens where both "
                       f"sides fit, " + (f"up to the model's {window:,}-token window (its trained context: a longer "
                                         f"one that fits is not one it serves)" if cut
                                         else "the longest that fits included"))
    capacity_bound, capacity_batches = p.capacity_bound(best) if metric == "throughput" else (None, None)
    headline = "equal batch"
    if bool(p.rescued[best]):
        method = p.g.claim.max_batch[best] if "capacity" in carried(claim.change) else p.grid.batch[best]
        headline = (f"end to end: the baseline at batch {int(p.g.e2e_baseline_batch[best]):,}, all it fits, the "
                    f"method at batch {int(method):,}")
    if scope in SCOPES:
        headline = f"{scope} only: {SCOPES[scope]}, not the whole step"
    elif capacity_bound is not None and capacity_bound >= bound * (1 - 1e-9):     # a tie: the batch is the largest
        bound, headline = max(bound, capacity_bound), "capacity: each side at its largest batch that fits"
    chosen = {**{k: setting[k] for k in PRICED + ("pipeline", "offload", "baseline_model") if k in setting},
              "model": setting.get("model"),
              "hardware": hardware, "phase": phase, "batch": int(p.grid.batch[best]),
              "context": int(p.grid.context[best])}
    spec = claim.change.get("speculative")
    if isinstance(spec, dict):
        # the number that priced the bound: the setting's domain's, else the card's default
        domain = setting.get("domain")
        paths = [f"by_domain.{domain}"] if domain in spec.get("by_domain", {}) else \
            [k for k in ("tokens_per_step", "acceptance") if k in spec]
        quoted = [p for p in paths if "quote" in claim.evidence.get(f"change.speculative.{p}", {})]
        if not quoted:
            values = ", ".join(f"{p} {spec['by_domain'][domain] if p.startswith('by_domain') else spec[p]}"
                               for p in paths)
            assumed.append(f"the bound rests on the card's own assumption ({values}), not on a number the paper "
                           f"reports: it cannot falsify the card")
    out: dict[str, Any] = {
        "reported": reported, "bound": bound, "exceeds_bound": bool(reported > bound * TOLERANCE),
        "tolerance": TOLERANCE, "metric": metric, "scope": scope, "bound_kind": headline,
        "setting": chosen, "setting_words": _setting_words(chosen, setting),
        "baseline_fits": bool(p.max_batch[0][best] >= p.grid.batch[best]),
        "capacity_bound": capacity_bound,
        "capacity_batches": list(capacity_batches) if capacity_batches else None,
        "assumed": assumed, "likely_sources": [], "note": "", "evidence": claim.evidence,
        "warnings": noops.warnings(claim.change, [cat.hardware[hardware]], [("the paper's setting", phase)],
                                   domains=None),
    }
    if not out["baseline_fits"]:
        weights, room = float(p.mems[0].weights[best]), float(p.g.capacity[best])
        if weights >= room:
            gpus = int(np.ceil(weights * chosen.get("tp", 1) * chosen.get("pipeline", 1) / room))
            out["note"] = (f"the paper's baseline does not fit in memory in its stated setting: its weights alone "
                           f"need {gpus} GPUs of this kind (claim.setting.tp or pipeline) or offloading "
                           f"(claim.setting.offload); the bound assumes it ran")
        else:
            out["note"] = (f"the paper's baseline does not fit in memory in its stated setting: its weights fit, "
                           f"but not the KV of batch {chosen['batch']:,} at {chosen['context']:,} tokens (it "
                           f"fits {int(p.max_batch[0][best]):,} sequences); the bound assumes it ran")
    if out["exceeds_bound"]:
        out["likely_sources"] = _sources(claim, metric, capacity_bound, bound, capacity_batches)
    return out
