"""The paper-setting check: the card's own setting, priced by the roofline, against its reported gain.

A reported gain more than 5 % above the theoretical bound of the stated
mechanism in the paper's own setting cannot come from that mechanism alone:
it is an IOU until the setting explains it (course module 12.4: a number the
roofline forbids). Setting details the card does not give are searched, but
only over settings in which the paper's baseline and method both fit in
memory (a bound taken where nothing runs proves nothing); the largest context
that fits is searched too, and the check says which setting gave the bound.
Numbers and codes only: report/papercheck.py words them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import CARD_METRIC, CARD_SCOPE
from ..defaults import PAPER_BATCHES as BATCHES
from ..defaults import PAPER_CONTEXTS as CONTEXTS
from ..defaults import PAPER_HARDWARE as DEFAULT_HARDWARE
from ..defaults import PAPER_PREDICTED_BELOW as PREDICTED_BELOW
from ..defaults import PAPER_TOLERANCE as TOLERANCE
from ..inputs import workloads
from ..inputs.catalog import Catalog
from ..inputs.claim import Claim, Setting, stated
from ..inputs.specs import Model, is_config_path
from ..model import evidence, matrix
from ..model.roofline import GROUPS, group_times, step_cost, step_time
from ..records import record
from . import cannot_act
from .notices import Notice

PRICED = workloads.PAPER_KEYS       # setting keys the check prices as workload keys (beside model, hardware, …)
# reported numbers a scope bounds: the touched operator groups, or attention alone
MAX_CONTEXT = 100_000_000        # the longest context a workload may state (the schema's limit)
SCOPES = ("kernel", "attention")


# why no bound is priced (report/papercheck.py words each)
NO_BOUND = ("no-setting", "no-speedup", "training", "serving", "no-model", "nothing-fits")
# what the bound assumed where the card is silent
ASSUMED = ("hardware", "phase", "batch", "context", "speculative-assumption")
# where a gain beyond the bound usually comes from
SOURCES = ("offload", "weak-baseline", "capacity-bound", "batch-beyond-memory", "batch-sizes", "kernel", "metric")
# which setting of the step the bound compares
KINDS = ("equal-batch", "end-to-end", "scope", "capacity")
# why the paper's baseline does not fit in its stated setting
MISFITS = ("weights", "kv")

Value = str | int | float


@record
class Item:
    """One coded statement and the values its words need (an assumption, a likely source, the bound's kind, the
    baseline's misfit): ``code`` of the tuple its field names."""

    code: str
    values: tuple[Value, ...] = ()


@record
class PaperSetting:
    """The setting that gave the bound: the card's own keys the check priced (``stated``, in PRICED order, then
    pipeline, offload and baseline_model), the model it named, and what the search chose where it was silent."""

    stated: tuple[tuple[str, object], ...]
    model: str | None
    hardware: str
    phase: str
    batch: int
    context: int
    searched: tuple[str, ...]          # of batch and context: the ones the search chose

    def get(self, key: str, default: object = None) -> object:
        """A stated key's value (tp, pipeline, offload, baseline_model, domain), else ``default``."""
        return dict(self.stated).get(key, default)


@record
class PaperCheck:
    """The reported gain against the roofline bound of the stated change in the paper's own setting; without a
    bound, ``no_bound`` says why (a code of NO_BOUND)."""

    reported: float | None
    bound: float | None = None
    exceeds_bound: bool | None = None
    no_bound: str | None = None
    assumed: tuple[Item, ...] = ()
    tolerance: float = TOLERANCE
    metric: str = ""
    scope: str = ""
    kind: Item = Item("equal-batch")
    setting: PaperSetting | None = None
    baseline_fits: bool = True
    capacity_bound: float | None = None
    capacity_batches: tuple[int, int] | None = None
    likely_sources: tuple[Item, ...] = ()
    misfit: Item | None = None
    warnings: tuple[Notice, ...] = ()
    # the card stated a batch the capacity bound replaced: the stated batch and the equal-batch bound there
    stated_batch: tuple[int, float] | None = None
    # triage's own end-to-end prediction in the bound's setting (the shipped defaults' efficiencies and fixed
    # costs, the card's kernel), beside the paper's measurement; above it by the tolerance: an optimistic price
    predicted: float | None = None
    predicted_above: bool = False
    predicted_below: bool = False            # under PAPER_PREDICTED_BELOW of the measurement: a notice names causes


def _sources(claim: Claim, metric: str, capacity_bound: float | None, bound: float,
             batches: tuple[int, int] | None = None) -> tuple[Item, ...]:
    """Where a gain beyond the bound usually comes from, most likely first."""
    setting = claim.claim.setting or Setting()
    out = []
    if setting.offload is not None:
        out.append(Item("offload"))
    out.append(Item("weak-baseline", (claim.claim.baseline or "",)))
    if capacity_bound is not None and capacity_bound > bound * TOLERANCE:
        out.append(Item("capacity-bound", (capacity_bound,)))
    elif batches is not None and capacity_bound == bound:
        out.append(Item("batch-beyond-memory", batches))
    elif metric == "throughput":
        out.append(Item("batch-sizes"))
    out.append(Item("kernel"))
    if claim.claim.scope is None:
        out.append(Item("metric"))
    return tuple(out)


def _largest_fitting_context(g: evidence.Gaps, grid: matrix.Matrix) -> list[int]:
    """Per searched batch, the longest context at which the baseline still fits (its KV grows linearly)."""
    per_token = g.base.mem.kv_per_sequence / np.maximum(grid.context, 1.0)
    room = g.capacity - g.base.mem.weights
    fit = np.floor(room / (grid.batch * per_token * 1.0001))       # a hair below the edge: activations
    return sorted({int(c) for c in fit if np.isfinite(c) and 1 <= c <= MAX_CONTEXT})


def _window(models: tuple[Model, ...]) -> int:
    """The longest context the paper's models (method's and baseline's) were all trained for (Model.window),
    within the longest context a workload may state."""
    return int(min([m.window for m in models] + [MAX_CONTEXT]))


class _Priced:
    """The grid priced once: equal-batch ratio, both sides' fit, the offload time added to each step."""

    def __init__(self, claim: Claim, grid: matrix.Matrix, g: evidence.Gaps, base: evidence.Variant,
                 setting: Setting, metric: str, models: tuple[Model, ...]) -> None:
        offload = setting.offload
        # seconds a step spends streaming offloaded weights over the host link, each side its own weights
        self.extra: tuple[Any, Any] = (0.0, 0.0)
        self.rescued: Any = np.zeros(grid.batch.shape, dtype=bool)   # the end-to-end layer's batches gave it
        base_mem, claim_mem = base.mem, g.claim.mem
        if offload is not None:
            share, link = float(offload.weights), offload.link_bytes_per_s
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
        elif claim.change.outside_the_step:
            self.ratio = np.fmax(g.speedup_theoretical, g.speedup_end_to_end) * tb / g.base.time_theoretical
            self.rescued = g.speedup_end_to_end > g.speedup_theoretical
        else:
            self.ratio = k * (tb + self.extra[0]) / (tc + self.extra[1])
            if claim.change.speculative is not None:
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
        hw = evidence.machine(self.grid).take(np.array([i]))
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
        hw = evidence.machine(self.grid)
        ones = {g: 1.0 for g in GROUPS}
        times = []
        for cost in (self.base.cost, self.g.claim.cost):
            t = group_times(cost, hw.peak, hw.bandwidth, ones, ones, hw.vector_peak)
            times.append(sum(np.maximum(*t[g]) for g in groups))
        return np.asarray(times[0] / times[1])


def _price(claim: Claim, method: workloads.Workloads, baseline: workloads.Workloads | None,
           setting: Setting, metric: str) -> _Priced:
    """The paper's setting priced, the method's model and, where the paper's baseline ran another one (MHA
    against MLA), the baseline's."""
    grid = matrix.build(method)
    models = {**method.catalog.models, **claim.models}
    g = evidence.compute(grid, claim, models, switch_optional=False)
    if baseline is None:
        return _Priced(claim, grid, g, g.base, setting, metric, grid.models)
    other = matrix.build(baseline)
    base = evidence.compute(other, claim, models, switch_optional=False).base
    return _Priced(claim, grid, g, base, setting, metric, grid.models + other.models)


@record
class PaperInputs:
    """The card's paper setting, read in the load phase: the workloads of its search grid (the method's model,
    and the baseline's where the paper's baseline ran another), and what the card did not state."""

    setting: Setting
    reported: float
    metric: str
    scope: str
    phase: str
    unstated_phase: bool
    hardware: str
    assumed: tuple[Item, ...]
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    method: workloads.Workloads
    baseline: workloads.Workloads | None
    expected: workloads.Workloads | None = None     # the method's setting as a memo workload (paper_setting)


def _model_path(model: str, claim: Claim) -> str:
    if is_config_path(model) and not Path(model).is_absolute() and model not in claim.models:
        return str(Path(claim.file).parent / model)
    return model


def load(claim: Claim, catalog: Catalog) -> PaperInputs | PaperCheck:
    """The card's paper setting as workloads to price, read with the rest of the inputs; a PaperCheck without a
    bound (and why) when the card gives no setting or no number, or reports a number no step's roofline
    bounds."""
    setting = claim.claim.setting
    reported = claim.claimed_speedup
    if setting is None or setting == Setting():
        return PaperCheck(reported, no_bound="no-setting")
    if reported is None:
        return PaperCheck(reported, no_bound="no-speedup")
    metric = claim.claim.metric or CARD_METRIC
    scope = claim.claim.scope or CARD_SCOPE
    if scope in ("training", "serving"):
        return PaperCheck(reported, no_bound=scope)
    phase = setting.phase or ("prefill" if metric == "ttft" else "decode")
    acting = claim.acting_phases()
    # a throughput claim of a change that acts in one phase only: bounded where it acts, and said so
    unstated_phase = setting.phase is None and metric not in ("tpot", "ttft") and bool(acting) \
        and phase not in acting
    if unstated_phase:
        phase = sorted(acting)[0]
    model = setting.model
    if model is None:
        return PaperCheck(reported, no_bound="no-model")
    model = _model_path(model, claim)
    if setting.baseline_model is not None:
        setting = replace(setting, baseline_model=_model_path(setting.baseline_model, claim))
    assumed = []
    hardware = setting.hardware
    if hardware is None:
        hardware = DEFAULT_HARDWARE
        assumed.append(Item("hardware", (DEFAULT_HARDWARE,)))
    cat = catalog.pooled(hardware, int(setting.pipeline or 1))
    # a bound: full efficiency, no overhead, no reserve; what the setting states; the rest the shipped defaults
    batches = (setting.batch,) if setting.batch is not None else BATCHES
    contexts = (setting.context,) if setting.context is not None else CONTEXTS
    method = workloads.paper_setting(cat, model, hardware, phase, batches, contexts, setting)
    baseline = workloads.paper_setting(cat, setting.baseline_model, hardware, phase, batches, contexts, setting) \
        if setting.baseline_model is not None else None
    # the prediction beside the measurement: an end-to-end number of the whole step, on one model (one cell
    # read now, moved to the setting the bound chooses by regrid: the search grid is priced once, as the bound)
    expected = workloads.paper_setting(cat, model, hardware, phase, batches[:1], contexts[:1], setting,
                                       bound=False) \
        if scope not in SCOPES and metric != "memory" and baseline is None else None
    return PaperInputs(setting, reported, metric, scope, phase, unstated_phase, hardware, tuple(assumed),
                       tuple(batches), tuple(contexts), method, baseline, expected)


def check(claim: Claim, loaded: PaperInputs | PaperCheck) -> PaperCheck:
    """The bound of the card's reported number in its own setting (read by ``load``), searched where the card
    is silent over settings in which both sides fit."""
    if isinstance(loaded, PaperCheck):
        return loaded
    setting, reported, metric, scope, phase = loaded.setting, loaded.reported, loaded.metric, loaded.scope, \
        loaded.phase
    hardware, batches, contexts = loaded.hardware, list(loaded.batches), list(loaded.contexts)
    assumed = list(loaded.assumed)
    p = _price(claim, loaded.method, loaded.baseline, setting, metric)
    if setting.context is None:           # the longest context that fits, within the model's trained window
        window = _window(p.models)
        contexts = sorted(c for c in set(contexts) | set(_largest_fitting_context(p.g, p.grid)) if c <= window)
        contexts = contexts or [window]
        p = _price(claim, workloads.regrid(loaded.method, batches, contexts),
                   workloads.regrid(loaded.baseline, batches, contexts) if loaded.baseline else None, setting, metric)
    ratios = p.scope_ratio(("attention",) if scope == "attention" else tuple(sorted(claim.change.groups))) \
        if scope in SCOPES else p.ratio
    searched = setting.batch is None or setting.context is None
    candidates = np.where(p.fits, ratios, np.nan) if searched else ratios
    if np.isnan(candidates).all():
        return PaperCheck(reported, no_bound="nothing-fits", assumed=tuple(assumed))
    best = int(np.nanargmax(candidates))
    bound = float(candidates[best])
    if loaded.unstated_phase:
        assumed.append(Item("phase", (phase,)))
    if setting.batch is None:
        assumed.append(Item("batch", BATCHES))
    if setting.context is None:               # the window of the search above
        cut = window if window < MAX_CONTEXT and window in contexts else 0
        assumed.append(Item("context", (cut, *contexts)))
    capacity_bound, capacity_batches = p.capacity_bound(best) if metric == "throughput" else (None, None)
    kind = Item("equal-batch")
    if bool(p.rescued[best]):
        method = p.g.claim.max_batch[best] if "capacity" in claim.change.kinds else p.grid.batch[best]
        kind = Item("end-to-end", (int(p.g.e2e_baseline_batch[best]), int(method)))
    stated_batch = None
    if scope in SCOPES:
        kind = Item("scope", (scope,))
    elif capacity_bound is not None and capacity_bound >= bound * (1 - 1e-9):     # a tie: the batch is the largest
        if setting.batch is not None:       # the card's batch gives way: said, with the bound it had there
            stated_batch = (int(setting.batch), bound)
        bound, kind = max(bound, capacity_bound), Item("capacity")
    given = stated(setting)
    chosen = PaperSetting(tuple((k, given[k]) for k in PRICED + ("pipeline", "offload", "baseline_model")
                                if k in given),
                          setting.model, hardware, phase, int(p.grid.batch[best]), int(p.grid.context[best]),
                          tuple(k for k in ("batch", "context") if k not in given))
    spec = claim.change.speculative
    if spec is not None:
        # the number that priced the bound: the setting's domain's, else the card's default
        domain = setting.domain
        by_domain = dict(spec.by_domain)
        default = {k: v for k, v in (("tokens_per_step", spec.tokens_per_step), ("acceptance", spec.acceptance))
                   if v is not None}
        paths = {f"by_domain.{domain}": by_domain[domain]} if domain in by_domain else default
        quoted = [p for p in paths if "quote" in claim.evidence.get(f"change.speculative.{p}", {})]
        if not quoted:
            assumed.append(Item("speculative-assumption", tuple(f"{p} {v}" for p, v in paths.items())))
    baseline_fits = bool(p.max_batch[0][best] >= p.grid.batch[best])
    misfit = None
    if not baseline_fits:
        weights, room = float(p.mems[0].weights[best]), float(p.g.capacity[best])
        if weights >= room:
            tp, stages = setting.tp or 1, setting.pipeline or 1
            misfit = Item("weights", (int(np.ceil(weights * tp * stages / room)),))
        else:
            misfit = Item("kv", (chosen.batch, chosen.context, int(p.max_batch[0][best])))
    exceeds = bool(reported > bound * TOLERANCE)
    predicted = _predicted(claim, loaded, chosen)
    above = predicted is not None and predicted > reported * TOLERANCE
    below = predicted is not None and predicted < reported * PREDICTED_BELOW
    return PaperCheck(
        reported, bound, exceeds, assumed=tuple(assumed), metric=metric, scope=scope, kind=kind, setting=chosen,
        baseline_fits=baseline_fits, capacity_bound=capacity_bound,
        capacity_batches=tuple(capacity_batches) if capacity_batches else None,   # type: ignore[arg-type]
        likely_sources=_sources(claim, metric, capacity_bound, bound, capacity_batches) if exceeds else (),
        misfit=misfit, stated_batch=stated_batch, predicted=predicted,
        predicted_above=above, predicted_below=below,
        warnings=(*((Notice("prediction-above", numbers=(predicted, reported)),) if above and predicted else ()),
                  *((Notice("prediction-below", value=claim.claim.baseline or "",
                            numbers=(predicted, reported, bound, float(exceeds))),) if below and predicted else ()),
                  *cannot_act.warnings(claim.change, [loaded.method.catalog.hardware[hardware]],
                                       [("the paper's setting", phase)], domains=None)))


def _predicted(claim: Claim, loaded: PaperInputs, chosen: PaperSetting) -> float | None:
    """What the memo's own pricing gives end to end in the setting the bound chose (its batch and context, the
    shipped defaults' efficiencies and fixed costs, the card's kernel): the number to set beside the paper's
    measurement, None where the check bounds a part of the step, memory, or another model's baseline."""
    if loaded.expected is None:
        return None
    w = workloads.regrid(loaded.expected, [chosen.batch], [chosen.context])
    grid = matrix.build(w)
    g = evidence.compute(grid, claim, {**w.catalog.models, **claim.models})
    value = float(g.speedup_end_to_end[0])
    return value if np.isfinite(value) else None
