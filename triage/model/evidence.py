"""The three layers of evidence per cell: theoretical → implementation → end-to-end.

theoretical     roofline at 100 % of peak and bandwidth, both sides;
implementation  the workload's achieved efficiencies; the card's relative
                efficiencies on the kernels it replaces; without a kernel that
                reads the new format, reads cost the baseline's bytes;
end-to-end      plus the fixed costs (per step, per layer of a step, per
                request at its prefill), with capacity: where the
                baseline does not fit the cell's batch and the claim does, the
                gain is throughput against the baseline at its largest batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..defaults import CAPACITY_TP
from ..inputs.catalog import FIXED_COSTS
from ..inputs.claim import Claim
from ..inputs.specs import Model
from ..inputs.traffic import SchedulerKeys
from ..records import record
from . import mechanisms
from .matrix import Matrix, compact, peak_flops, precision_bytes
from .roofline import (
    GROUPS,
    Machine,
    Memory,
    PerGroup,
    StepCost,
    StepInputs,
    at,
    attended_tokens,
    bound_times,
    comm_time,
    decode_occupancy,
    memory,
    step_cost,
    step_time,
)


@record
class Variant:
    """Baseline or claim on every cell."""

    inputs: StepInputs
    cost: StepCost
    mem: Memory
    memory_bytes: np.ndarray
    fits: np.ndarray
    max_batch: np.ndarray
    time_theoretical: np.ndarray
    time_implementation: np.ndarray
    time_end_to_end: np.ndarray
    compute_bound_fraction: np.ndarray  # share of one step's theoretical time in compute-bound groups, in [0, 1]
    # one forward step's end-to-end seconds by term (a verification step under speculation): kernels,
    # communication (all-reduces), step (overhead), launch (per layer), request (a prefill's fixed cost)
    time_terms: dict[str, np.ndarray]
    # one forward step's roofline time (the theoretical layer before speculation spreads it over the tokens a
    # step yields): what a roofline plot places the step at
    step_theoretical: np.ndarray


@record
class Gaps:
    """Both variants and the speedups between them (NaN where undefined)."""

    base: Variant
    claim: Variant
    speedup_theoretical: np.ndarray
    speedup_implementation: np.ndarray
    speedup_end_to_end: np.ndarray
    e2e_baseline_batch: np.ndarray   # the batch the end-to-end baseline runs at
    capacity: np.ndarray
    slo: np.ndarray                  # TPOT (decode) or TTFT (prefill) target, NaN if none
    # GPU-seconds to serve one request (a decode request: output_tokens steps; a prefill request: one prompt),
    # per GPU of the replica: step time × steps × GPUs ÷ batch. End-to-end at the batch each side runs at
    # (NaN where that side cannot serve the cell); theoretical at the cell's batch.
    base_request_s: np.ndarray
    claim_request_s: np.ndarray
    base_request_theoretical_s: np.ndarray
    claim_request_theoretical_s: np.ndarray
    switched_on: np.ndarray          # an optional feature is on in this cell (always True for other changes)
    speedup_when_on: np.ndarray      # end to end with the feature on, NaN where a side does not fit
    engine: dict[str, np.ndarray]    # the cells' efficiencies and fixed costs (engine_columns), as priced
    # GPUs of one baseline replica: the workload's tensor parallelism, or more where the baseline holds not
    # even one sequence on it and the claim does (capacity: the claim serves on fewer GPUs)
    base_gpus: np.ndarray
    # what each cell's end-to-end gain measures, a code into E2E_METRICS (the gain changes meaning across a
    # frame: a step-time ratio where both sides run the batch, a throughput ratio where only the claim does, ...)
    e2e_metric: np.ndarray
    # each workload's scheduler on the claim side: the card's change.scheduler laid over the block's
    schedulers: tuple[SchedulerKeys, ...] = ()


# what an end-to-end gain is a ratio of: TPOT or TTFT at the cell's batch; tokens/s with the baseline at the
# largest batch it fits (or both sides at theirs, for a capacity change); GPU-seconds per request with the
# baseline on more GPUs; from the serving simulation, the highest request rate within the SLO per GPU
# (goodput at the highest simulated rate where neither side meets it; output tokens/s per GPU in an offline or
# closed-loop run); a measured step-time ratio
E2E_METRICS = ("tpot_ratio", "ttft_ratio", "throughput_at_max_batch", "gpu_time_per_request", "max_rate_at_slo",
               "goodput", "measured", "output_tokens_per_s")


def e2e_metric_code(name: str) -> int:
    """The E2E_METRICS code of ``name``, for the analyses that replace a cell's end-to-end gain."""
    return E2E_METRICS.index(name)


def _block_column(m: Matrix, fn: Callable[[Any], Any]) -> np.ndarray:
    return compact(np.array([fn(s) for s in m.blocks]), m.block_idx)


def baseline_inputs(m: Matrix) -> StepInputs:
    """The workload's baseline on every cell, gathered from the model and block columns."""
    def model(attr: str) -> np.ndarray:
        return np.nan_to_num(m.column(attr, "models"), nan=0.0)

    per_model = m.per_model
    w_bpe = precision_bytes(m, "weights")
    kv_bpe = precision_bytes(m, "kv")
    window = per_model(lambda mod: float(mod.sliding_window) if mod.sliding_window else np.inf)
    fraction = model("window_fraction")
    attended = attended_tokens(m.context, window, fraction)
    return StepInputs(
        decode=m.decode, batch=m.batch, context=m.context,
        layers=model("num_hidden_layers"), heads=model("num_attention_heads"),
        kv_heads=model("num_key_value_heads"), head_dim=model("head_dim"),
        mla=per_model(lambda mod: mod.is_mla).astype(bool),
        hidden=model("hidden_size"), intermediate=model("active_intermediate"), vocab=model("vocab_size"),
        kv_elements_per_token=model("kv_elements_per_token"),
        pair_flops_decode=per_model(lambda mod: mod.attention_flops_per_pair(decode=True)),
        pair_flops_prefill=per_model(lambda mod: mod.attention_flops_per_pair(decode=False)),
        window=window, window_fraction=fraction,
        experts=model("num_experts"), experts_per_token=model("num_experts_per_tok"),
        routed_expert_params=model("routed_expert_params"), body_params=model("body_params"),
        lm_head_params=model("lm_head_params"), embedding_params=model("embedding_params"),
        stored_params=model("params"),
        weight_read_bpe=w_bpe, weight_stored_bpe=w_bpe, head_read_bpe=w_bpe, head_stored_bpe=w_bpe,
        kv_read_bpe=kv_bpe, kv_stored_bpe=kv_bpe, act_bpe=precision_bytes(m, "activations"),
        kv_read_tokens=attended, kv_stored_tokens=attended,
        linear_flops_mult=np.asarray(1.0), attention_flops_mult=np.asarray(1.0),
        eager=_block_column(m, lambda s: s.attention == "eager").astype(bool),
        split_kv=_block_column(m, lambda s: s.attention == "split").astype(bool),
        memory_waste=_block_column(m, lambda s: s.memory_waste).astype(float),
        tp=_block_column(m, lambda s: s.tp).astype(float),
        utilization=_block_column(m, lambda s: s.batch_utilization).astype(float),
    )


def machine(m: Matrix) -> Machine:
    """The hardware of every cell as columns."""
    return Machine(
        peak=peak_flops(m), vector_peak=compact(np.array([h.vector_flops_per_s for h in m.hardware]), m.hardware_idx),
        bandwidth=m.column("bandwidth_bytes_per_s", "hardware"),
        link_bandwidth=np.nan_to_num(m.column("interconnect_bytes_per_s", "hardware"), nan=np.inf),
        link_latency=m.column("interconnect_latency_s", "hardware"),
        sms=np.nan_to_num(m.column("sms", "hardware"), nan=np.inf))


@record
class _Layers:
    """Seconds per step at the three layers of evidence."""

    theoretical: np.ndarray
    implementation: np.ndarray
    end_to_end: np.ndarray


@record
class Fixed:
    """A step's fixed costs in seconds: its own, per layer of the model (kernel launches), a request's, paid by
    a prefill step, and per sequence the step carries (the engine's CPU work for each: sampling, detokenizing,
    scheduling)."""

    step: np.ndarray
    per_layer: np.ndarray
    request: np.ndarray
    per_sequence: np.ndarray

    def terms(self, x: StepInputs) -> dict[str, np.ndarray]:
        return {"step": self.step, "launch": self.per_layer * x.layers, "request": self.request,
                "sequences": self.per_sequence * x.batch}

    def of(self, x: StepInputs) -> np.ndarray:
        return np.asarray(sum(self.terms(x).values()))

    def take(self, idx: np.ndarray) -> Fixed:
        return Fixed(at(self.step, idx), at(self.per_layer, idx), at(self.request, idx), at(self.per_sequence, idx))


def _times(x: StepInputs, cost: StepCost, cost_impl: StepCost, x_impl: StepInputs, hw: Machine,
           ceff: PerGroup, beff: PerGroup, fixed: Fixed
           ) -> tuple[_Layers, dict[str, np.ndarray], np.ndarray]:
    """One forward step's time: the roofline, then efficiencies, occupancy and the all-reduces (their ring
    latency is an algorithm's, not a physical floor: kept out of the theoretical layer so that it stays a lower
    bound), then the fixed costs; the end-to-end time by term; and the bound's compute-bound seconds."""
    theo, compute_bound = bound_times(cost, hw.peak, hw.bandwidth, hw.vector_peak)
    impl, terms = _implementation(x, cost_impl, x_impl, hw, ceff, beff, fixed)
    return _Layers(theo, impl, impl + fixed.of(x)), terms, compute_bound


def _implementation(x: StepInputs, cost_impl: StepCost, x_impl: StepInputs, hw: Machine, ceff: PerGroup,
                    beff: PerGroup, fixed: Fixed) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The implementation layer of one step (kernels at their efficiencies and occupancy, then the all-reduces)
    and the end-to-end time by term."""
    comm = comm_time(x, hw.link_bandwidth, hw.link_latency)
    occupied = {**beff, "attention": beff["attention"] * decode_occupancy(x_impl, hw.sms)}
    kernels = step_time(cost_impl, hw.peak, hw.bandwidth, ceff, occupied, hw.vector_peak)
    return kernels + comm, {"kernels": kernels, "communication": comm, **fixed.terms(x)}


def _variant(x: StepInputs, x_impl: StepInputs, hw: Machine, ceff: PerGroup, beff: PerGroup,
             fixed: Fixed, capacity: Any, reserve: Any, spec: _Speculation | None = None,
             like: Variant | None = None) -> Variant:
    if like is not None and x_impl is x and spec is None:
        # only the kernels' efficiencies differ from ``like``: its bytes, FLOPs, bound and memory hold
        impl, terms = _implementation(x, like.cost, x, hw, ceff, beff, fixed)
        return replace(like, time_implementation=impl, time_end_to_end=(impl + fixed.of(x)) / x.utilization,
                       time_terms=terms)
    cost = step_cost(x)
    cost_impl = cost if x_impl is x else step_cost(x_impl)
    t, terms, bound = _times(x, cost, cost_impl, x_impl, hw, ceff, beff, fixed)
    # the share of one step (a verification step, under speculation) spent compute-bound: all-reduces count as
    # time that is neither, so the share stays in [0, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.clip(np.nan_to_num(bound / t.theoretical), 0.0, 1.0)
    mem = memory(x_impl)            # what the implementation stores (no sparse kernel: dense weights)
    step = t.theoretical
    if spec is not None:
        t = spec.per_token(t)
        mem = spec.with_draft(mem)
    total = mem.total(x.batch, x.memory_waste, reserve)
    return Variant(x, cost, mem, total, total <= capacity, mem.max_batch(capacity, x.memory_waste, reserve),
                   t.theoretical, t.implementation, t.end_to_end / x.utilization, fraction, terms, step)


def steps_per_request(m: Matrix) -> np.ndarray:
    """Steps one request takes: output_tokens for a decode workload, one for a prefill (its prompt)."""
    return np.where(m.decode, m.column("output_tokens"), 1.0)


def request_seconds(steps: Any, step_s: Any, gpus: Any, batch: Any) -> np.ndarray:
    """GPU-seconds of one request: steps × step time × GPUs of the replica ÷ the sequences a step serves."""
    return np.asarray(steps * step_s * gpus / batch, dtype=float)


def _either(on: np.ndarray, new: Variant, base: Variant) -> Variant:
    """The claim where ``on``, the baseline elsewhere (an optional feature switched off)."""
    def pick(a: Any, b: Any) -> np.ndarray:
        return np.where(on, a, b)

    cost = StepCost({g: pick(new.cost.flops[g], base.cost.flops[g]) for g in GROUPS},
                    {g: pick(new.cost.bytes[g], base.cost.bytes[g]) for g in GROUPS},
                    {g: pick(new.cost.vector_ops[g], base.cost.vector_ops[g]) for g in GROUPS},
                    new.cost.peak_mult)
    mem = Memory(pick(new.mem.weights, base.mem.weights), pick(new.mem.kv_per_sequence, base.mem.kv_per_sequence),
                 pick(new.mem.activations_per_sequence, base.mem.activations_per_sequence))
    return Variant(new.inputs, cost, mem, pick(new.memory_bytes, base.memory_bytes), pick(new.fits, base.fits),
                   pick(new.max_batch, base.max_batch), pick(new.time_theoretical, base.time_theoretical),
                   pick(new.time_implementation, base.time_implementation),
                   pick(new.time_end_to_end, base.time_end_to_end),
                   pick(new.compute_bound_fraction, base.compute_bound_fraction),
                   {k: pick(v, base.time_terms[k]) for k, v in new.time_terms.items()},
                   pick(new.step_theoretical, base.step_theoretical))


@record
class _Speculation:
    """Speculative decoding's time per output token: (draft passes · t_draft + t_verify) / expected tokens."""

    plan: mechanisms.SpeculativePlan
    draft: _Layers
    draft_memory: Memory | None
    decode: np.ndarray
    expected: np.ndarray             # tokens per step of each cell (by the workload's domain)

    def per_token(self, verify: _Layers) -> _Layers:
        def one(v: np.ndarray, d: np.ndarray) -> np.ndarray:
            return np.where(self.decode, (self.plan.draft_passes * d + v) / self.expected, v)

        return _Layers(one(verify.theoretical, self.draft.theoretical),
                       one(verify.implementation, self.draft.implementation),
                       one(verify.end_to_end, self.draft.end_to_end))

    def with_draft(self, mem: Memory) -> Memory:
        if self.draft_memory is None:
            return mem
        return Memory(mem.weights + self.draft_memory.weights, mem.kv_per_sequence + self.draft_memory.kv_per_sequence,
                      mem.activations_per_sequence)


def _model_inputs(m: Matrix, cat_models: dict[str, Model]) -> Callable[[str], StepInputs]:
    """Inputs of the same cells served by another model (distillation, draft models)."""
    def build(name: str) -> StepInputs:
        other = replace(m, models=(cat_models[name],), model_idx=np.zeros_like(m.model_idx))
        return baseline_inputs(other)
    return build


def _peak_ratio(m: Matrix) -> Callable[[str], np.ndarray]:
    """Per cell: the hardware's dense peak for a dtype over its peak for the workload's compute dtype (1 where
    the chip has no such peak)."""
    def ratio(dtype: str) -> np.ndarray:
        return m.per_block_hardware(lambda s, h: h.peak(dtype) / h.peak(s.precision["compute"])
                                    if dtype in h.compute_flops_per_s else 1.0)
    return ratio


def engine_columns(m: Matrix, shift: float = 0.0) -> dict[str, np.ndarray]:
    """Per cell: the workload's own efficiencies and fixed costs, else its engine profile's for the cell's chip
    where the cell lies in that entry's fitted range, else the profile's default (``shift``: that many standard
    errors of a calibrated profile, toward faster (+) or slower (-) kernels)."""
    values = {(id(s), h.key): s.engine_values(h.key) for s in m.blocks for h in m.hardware}
    misses = m.outside_fit

    def shifted(v: dict[str, float], key: str, sign: float) -> float:
        return v[key] + sign * shift * v.get(f"{key}_se", 0.0)

    def value(key: str, sign: float) -> np.ndarray:
        column = m.per_block_hardware(lambda s, h: shifted(values[(id(s), h.key)], key, sign))
        for (b, h), mask in misses.items():
            default = m.blocks[b].engine_values(m.hardware[h].key, fitted=False)
            column = np.where(mask, shifted(default, key, sign), column)
        return column

    out = {"bandwidth": np.clip(value("bandwidth", 1.0), 0.01, 1.0),
           "compute": np.clip(value("compute", 1.0), 0.01, 1.0)}
    # a step's fixed costs: its own, its layers' kernel launches, a request's (scheduling, set-up: paid with its
    # prefill)
    out.update({f"{k}_s": np.maximum(value(f"{k}_s", -1.0), 0.0) for k in FIXED_COSTS})
    return out


Efficiencies = tuple[PerGroup, PerGroup]       # (compute, bandwidth) per group


def efficiencies(claim: Claim, ce: Any, be: Any, decode: np.ndarray | None = None) -> tuple[Efficiencies,
                                                                                          Efficiencies]:
    """Baseline and claim efficiencies per group: a changed kernel runs at the card's share of the baseline
    kernel's efficiency, never above the peak, on the phases its mechanisms act on (``decode``: the cells'
    phase; a cell of the other phase runs the baseline's kernel, as its bytes and FLOPs say)."""
    phases = dict(claim.change.group_phases)

    def share(card: float, g: str) -> Any:
        acts: frozenset[str] = phases.get(g, frozenset())
        if not acts:
            return 1.0
        if decode is None or acts >= {"decode", "prefill"}:
            return card
        return np.where(decode, card, 1.0) if "decode" in acts else np.where(decode, 1.0, card)

    base = ({g: ce for g in GROUPS}, {g: be for g in GROUPS})
    new = ({g: np.minimum(ce * share(claim.compute_efficiency, g), 1.0) for g in GROUPS},
           {g: np.minimum(be * share(claim.bandwidth_efficiency, g), 1.0) for g in GROUPS})
    return base, new


def _spill(m: Matrix, base_x: StepInputs, base_fits: np.ndarray, claim_fits: np.ndarray, base_max: np.ndarray,
           hw: Machine, ceff: PerGroup, beff: PerGroup, fixed: Fixed, capacity: Any, reserve: Any,
           base_step: np.ndarray, e2e_batch: np.ndarray, base_theo: np.ndarray) -> tuple[np.ndarray, ...]:
    """Where the baseline holds not one sequence and the claim fits: the baseline on the fewest GPUs
    (CAPACITY_TP times the workload's tensor parallelism) that hold the cell's batch. Returns the baseline's
    GPUs per replica, the cells so priced, and ``base_step``, ``e2e_batch`` and its bound ``base_theo`` with
    those cells filled (a read-only view given is copied first; the arrays given come back untouched where no cell
    spills)."""
    gpus: np.ndarray = np.broadcast_to(np.asarray(base_x.tp, dtype=float), m.batch.shape)
    spilled: np.ndarray = np.asarray(False)
    left = ~base_fits & claim_fits & (base_max < 1)
    if not left.any():
        return gpus, spilled, base_step, e2e_batch, base_theo     # nothing spills: no column to allocate
    gpus, spilled = np.array(gpus), np.zeros(m.batch.shape, dtype=bool)
    base_step, e2e_batch, base_theo = (a if a.flags.writeable else np.array(a, dtype=float)
                                       for a in (base_step, e2e_batch, base_theo))
    for factor in CAPACITY_TP:
        idx = np.flatnonzero(left & ~spilled)
        if not idx.size:
            break
        sub = replace(base_x.take(idx), tp=at(base_x.tp, idx) * factor)
        fits = memory(sub).total(sub.batch, sub.memory_waste, at(reserve, idx)) <= at(capacity, idx)
        if not fits.any():
            continue
        idx = idx[fits]
        sub = sub.take(np.flatnonzero(fits))
        cost = step_cost(sub)
        layers_ = _times(sub, cost, cost, sub, hw.take(idx), {g: at(v, idx) for g, v in ceff.items()},
                         {g: at(v, idx) for g, v in beff.items()}, fixed.take(idx))[0]
        t = layers_.end_to_end / sub.utilization
        base_theo[idx] = layers_.theoretical
        base_step[idx], e2e_batch[idx], spilled[idx] = t, m.batch[idx], True
        gpus[idx] = np.broadcast_to(sub.tp, idx.shape)
    return gpus, spilled, base_step, e2e_batch, base_theo


def compute(m: Matrix, claim: Claim, models: dict[str, Model], switch_optional: bool = True,
            shift: float = 0.0, baseline: Variant | None = None, retime: Variant | None = None) -> Gaps:
    """Evaluate baseline and claim on every cell at once; ``models`` resolves draft and distillation targets.

    ``switch_optional=False`` prices an optional feature as always on (the paper check: the paper's number
    was measured with it on). ``baseline``: the baseline side already priced on the same matrix and engine
    shift (it depends on neither the card nor its variants), so a sensitivity variant prices only its own side.
    ``retime``: the claim side already priced for the same change and kernel, before any optional switch; a
    variant that moves only kernel efficiencies re-times its kernels on it (bytes, FLOPs and memory hold)."""
    models = {**models, **{mod.key: mod for mod in m.models}}
    model_inputs = _model_inputs(m, models)
    base_x = baseline_inputs(m)
    ctx = mechanisms.Context(claim.change, model_inputs, _peak_ratio(m), m.per_model, models)
    claim_x = mechanisms.apply(claim.change, base_x, ctx)
    claim_read = claim_x if claim.kernel else mechanisms.without_kernel(claim_x, base_x, claim.change)

    hw = machine(m)
    capacity = m.column("memory_bytes", "hardware")
    engine = engine_columns(m, shift)
    fixed = Fixed(engine["overhead_s"], engine["layer_overhead_s"],
                  np.where(m.decode, 0.0, engine["request_overhead_s"]), engine["sequence_overhead_s"])
    reserve = m.column("reserve_bytes")
    (base_ceff, base_beff), (claim_ceff, claim_beff) = efficiencies(claim, engine["compute"], engine["bandwidth"],
                                                                    m.decode)

    base = baseline or _variant(base_x, base_x, hw, base_ceff, base_beff, fixed, capacity, reserve)
    spec = None
    speculative = claim.change.speculative
    if speculative is not None:
        plan = mechanisms.speculative_plan(speculative)
        if plan.draft_model:
            draft_x = replace(model_inputs(plan.draft_model), query_tokens=np.asarray(1.0))
            draft_cost = step_cost(draft_x)
            draft = _times(draft_x, draft_cost, draft_cost, draft_x, hw, base_ceff, base_beff, fixed)[0]
            draft_mem: Memory | None = memory(draft_x)
        else:
            c = plan.draft_cost or 0.0
            draft = _Layers(base.time_theoretical * c, base.time_implementation * c,
                            base.time_end_to_end * base_x.utilization * c)
            draft_mem = None
        expected = _block_column(m, lambda s: mechanisms.expected_for(speculative, s.domain))
        spec = _Speculation(plan, draft, draft_mem, m.decode, expected)
    new = _variant(claim_x, claim_read, hw, claim_ceff, claim_beff, fixed, capacity, reserve, spec, retime)
    # on everywhere, and its gain when on is the cell's own, unless an operator switches it per deployment
    switched_on: np.ndarray = np.asarray(True)
    when_on: np.ndarray = np.asarray(np.nan)
    optional = claim.change.switchable
    if optional:
        with np.errstate(divide="ignore", invalid="ignore"):
            when_on = np.where(base.fits & new.fits, base.time_end_to_end / new.time_end_to_end, np.nan)
    if switch_optional and optional:
        # an operator turns speculation or prefix caching on where it pays and off where it does not: each cell
        # at the better of the two (the claim equals the baseline where it is off)
        with np.errstate(invalid="ignore"):
            switched_on = new.fits & ~(new.time_end_to_end >= base.time_end_to_end)
        new = _either(switched_on, new, base)

    with np.errstate(divide="ignore", invalid="ignore"):
        s_theo = base.time_theoretical / new.time_theoretical
        s_impl = base.time_implementation / new.time_implementation
        s_e2e = np.where(base.fits & new.fits, base.time_end_to_end / new.time_end_to_end, np.nan)

    # capacity turned into concurrency: the claim fits the batch, the baseline only a smaller one
    # the baseline's batch and step where it runs the cell: views of the cell's own until a cell differs
    e2e_batch: np.ndarray = np.broadcast_to(m.batch, m.batch.shape)        # read-only: never the matrix's own
    base_step: np.ndarray = np.broadcast_to(base.time_end_to_end, m.batch.shape)
    misfit = ~base.fits
    any_misfit = bool(misfit.any())
    if any_misfit:
        e2e_batch, base_step = m.batch.copy(), np.array(base_step, dtype=float)
    rescue = misfit & new.fits & (base.max_batch >= 1)
    if rescue.any():
        idx = np.flatnonzero(rescue)
        b0 = base.max_batch[idx]
        sub = base_x.take(idx).with_batch(b0)
        sub_cost = step_cost(sub)
        t0 = _times(sub, sub_cost, sub_cost, sub, hw.take(idx), {g: at(v, idx) for g, v in base_ceff.items()},
                    {g: at(v, idx) for g, v in base_beff.items()}, fixed.take(idx))[0].end_to_end / sub.utilization
        s_e2e[idx] = (m.batch[idx] / new.time_end_to_end[idx]) / (b0 / t0)
        e2e_batch[idx] = b0
        base_step[idx] = t0
    if any_misfit:
        e2e_batch[misfit & ~rescue] = np.nan

    slo = np.where(m.decode, m.column("slo_tpot_s"), m.column("slo_ttft_s"))
    steps = steps_per_request(m)
    gpus_b, gpus_c = base_x.tp, claim_x.tp
    claim_batch = m.batch
    claim_step = new.time_end_to_end
    if "capacity" in claim.change.kinds:
        # memory turned into throughput: each side at the largest batch it fits (PagedAttention's argument)
        b0, b1 = base.max_batch, new.max_batch
        at0 = _variant(base_x.with_batch(np.maximum(b0, 1.0)), base_x.with_batch(np.maximum(b0, 1.0)), hw,
                       base_ceff, base_beff, fixed, capacity, reserve)
        x1 = claim_x.with_batch(np.maximum(b1, 1.0))
        at1 = _variant(x1, x1 if claim_read is claim_x else claim_read.with_batch(np.maximum(b1, 1.0)), hw,
                       claim_ceff, claim_beff, fixed, capacity, reserve, spec)
        with np.errstate(divide="ignore", invalid="ignore"):
            s_e2e = np.where((b0 >= 1) & (b1 >= 1), (b1 / at1.time_end_to_end) / (b0 / at0.time_end_to_end), np.nan)
        e2e_batch = np.where(b0 >= 1, b0, np.nan)
        base_step = np.array(np.broadcast_to(at0.time_end_to_end, m.batch.shape), dtype=float)
        claim_batch = np.where(b1 >= 1, b1, np.nan)
        claim_step = at1.time_end_to_end
    spilled: np.ndarray = np.asarray(False)
    base_theo: np.ndarray = np.broadcast_to(base.time_theoretical, m.batch.shape)
    if "capacity" not in claim.change.kinds:
        gpus_b, spilled, base_step, e2e_batch, base_theo = _spill(
            m, base_x, base.fits, new.fits, base.max_batch, hw, base_ceff, base_beff, fixed, capacity, reserve,
            base_step, e2e_batch, base_theo)
    with np.errstate(invalid="ignore"):
        base_req = request_seconds(steps, base_step, gpus_b, e2e_batch)
        claim_req = np.where(np.isfinite(claim_batch) & (new.fits | ("capacity" in claim.change.kinds)),
                             request_seconds(steps, claim_step, gpus_c, claim_batch), np.nan)
    if spilled.any():                    # the baseline on more GPUs: the gain is GPU-time for the same requests
        with np.errstate(invalid="ignore", divide="ignore"):
            s_e2e = np.where(spilled, base_req / claim_req, s_e2e)
    metric = np.where(m.decode, e2e_metric_code("tpot_ratio"), e2e_metric_code("ttft_ratio"))
    if "capacity" in claim.change.kinds:
        metric = np.full(m.batch.shape, e2e_metric_code("throughput_at_max_batch"))
    metric = np.where(rescue, e2e_metric_code("throughput_at_max_batch"), metric)
    metric = np.where(spilled, e2e_metric_code("gpu_time_per_request"), metric).astype(np.int8)
    return Gaps(base, new, s_theo, s_impl, s_e2e, e2e_batch, np.broadcast_to(capacity, m.batch.shape), slo,
                np.broadcast_to(base_req, m.batch.shape), np.broadcast_to(claim_req, m.batch.shape),
                np.broadcast_to(request_seconds(steps, base_theo, gpus_b, m.batch), m.batch.shape),
                np.broadcast_to(request_seconds(steps, new.time_theoretical, gpus_c, m.batch), m.batch.shape),
                np.broadcast_to(switched_on, m.batch.shape),
                np.broadcast_to(when_on, m.batch.shape), engine,
                np.broadcast_to(np.asarray(gpus_b, dtype=float), m.batch.shape), np.broadcast_to(metric, m.batch.shape),
                mechanisms.schedulers(claim.change, m.blocks))
