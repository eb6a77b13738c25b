"""The three layers of evidence per cell: theoretical → implementation → end-to-end.

theoretical     roofline at 100 % of peak and bandwidth, both sides;
implementation  the workload's achieved efficiencies; the card's relative
                efficiencies on the kernels it replaces; without a kernel that
                reads the new format, reads cost the baseline's bytes;
end-to-end      plus fixed per-step overhead, with capacity: where the
                baseline does not fit the cell's batch and the claim does, the
                gain is throughput against the baseline at its largest batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import mechanisms
from .cards import Claim
from .costmodel import (
    GROUPS,
    Memory,
    StepCost,
    StepInputs,
    at,
    attended_tokens,
    compute_bound_time,
    memory,
    step_cost,
    step_time,
)
from .specs import Model
from .workloads import Matrix, compact, peak_flops, precision_bytes


@dataclass
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
    compute_bound_fraction: np.ndarray  # share of the theoretical time in compute-bound groups


@dataclass
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


def baseline_inputs(m: Matrix) -> StepInputs:
    """The workload's baseline on every cell, gathered from the model and block columns."""
    def model(attr: str) -> np.ndarray:
        return np.nan_to_num(m.column(attr, "models"), nan=0.0)

    def per_model(fn: Callable[[Model], float]) -> np.ndarray:
        return compact(np.array([fn(mod) for mod in m.models], dtype=float), m.model_idx)

    w_bpe = precision_bytes(m, "weights")
    kv_bpe = precision_bytes(m, "kv")
    eager = np.array([s.attention == "eager" for s in m.blocks])
    eager = np.asarray(eager[0]) if eager.all() or not eager.any() else eager[m.block_idx]
    window = per_model(lambda mod: float(mod.sliding_window) if mod.sliding_window else np.inf)
    fraction = model("window_fraction")
    attended = attended_tokens(m.context, window, fraction)
    return StepInputs(
        decode=m.decode, batch=m.batch, context=m.context,
        layers=model("num_hidden_layers"), heads=model("num_attention_heads"),
        hidden=model("hidden_size"), intermediate=model("active_intermediate"), vocab=model("vocab_size"),
        kv_elements_per_token=model("kv_elements_per_token"),
        pair_flops_decode=per_model(lambda mod: mod.attention_flops_per_pair(decode=True)),
        pair_flops_prefill=per_model(lambda mod: mod.attention_flops_per_pair(decode=False)),
        window=window, window_fraction=fraction,
        experts=model("num_experts"), experts_per_token=model("num_experts_per_tok"),
        routed_expert_params=model("routed_expert_params"), body_params=model("body_params"),
        lm_head_params=model("lm_head_params"), embedding_params=model("embedding_params"),
        stored_params=model("params"),
        weight_read_bpe=w_bpe, weight_stored_bpe=w_bpe, kv_read_bpe=kv_bpe, kv_stored_bpe=kv_bpe,
        act_bpe=precision_bytes(m, "activations"),
        kv_read_tokens=attended, kv_stored_tokens=attended,
        linear_flops_mult=np.asarray(1.0), attention_flops_mult=np.asarray(1.0), eager=eager,
    )


def _variant(x: StepInputs, x_impl: StepInputs, peak: np.ndarray, bw: np.ndarray,
             ceff: dict[str, np.ndarray], beff: dict[str, np.ndarray], overhead: np.ndarray,
             capacity: np.ndarray, waste: np.ndarray, reserve: np.ndarray) -> Variant:
    cost = step_cost(x)
    cost_impl = cost if x_impl is x else step_cost(x_impl)
    mem = memory(x)
    t_theo = step_time(cost, peak, bw)
    t_impl = step_time(cost_impl, peak, bw, ceff, beff)
    total = mem.total(x.batch, waste, reserve)
    return Variant(x, cost, mem, total, total <= capacity, mem.max_batch(capacity, waste, reserve),
                   t_theo, t_impl, t_impl + overhead, compute_bound_time(cost, peak, bw) / t_theo)


def compute(m: Matrix, claim: Claim) -> Gaps:
    """Evaluate baseline and claim on every cell at once."""
    base_x = baseline_inputs(m)
    claim_x = mechanisms.apply(claim.change, base_x)
    claim_read = claim_x if claim.kernel else mechanisms.without_format_reads(claim_x, base_x)

    peak = peak_flops(m)
    bw = m.column("bandwidth_bytes_per_s", "hardware")
    capacity = m.column("memory_bytes", "hardware")
    be = m.column("bandwidth_efficiency")
    ce = m.column("compute_efficiency")
    overhead = m.column("overhead_s")
    waste = m.column("memory_waste")
    reserve = m.column("reserve_bytes")

    base_beff = {g: be for g in GROUPS}
    base_ceff = {g: ce for g in GROUPS}
    touched = mechanisms.touched_groups(claim.change)
    claim_beff = {g: be * (claim.bandwidth_efficiency if g in touched else 1.0) for g in GROUPS}
    claim_ceff = {g: ce * (claim.compute_efficiency if g in touched else 1.0) for g in GROUPS}

    base = _variant(base_x, base_x, peak, bw, base_ceff, base_beff, overhead, capacity, waste, reserve)
    new = _variant(claim_x, claim_read, peak, bw, claim_ceff, claim_beff, overhead, capacity, waste, reserve)

    with np.errstate(divide="ignore", invalid="ignore"):
        s_theo = base.time_theoretical / new.time_theoretical
        s_impl = base.time_implementation / new.time_implementation
        s_e2e = np.where(base.fits & new.fits, base.time_end_to_end / new.time_end_to_end, np.nan)

    # capacity turned into concurrency: the claim fits the batch, the baseline only a smaller one
    e2e_batch = m.batch.copy()
    rescue = ~base.fits & new.fits & (base.max_batch >= 1)
    if rescue.any():
        idx = np.flatnonzero(rescue)
        b0 = base.max_batch[idx]
        sub = base_x.take(idx).with_batch(b0)
        t0 = step_time(step_cost(sub), at(peak, idx), at(bw, idx),
                       {g: at(v, idx) for g, v in base_ceff.items()}, {g: at(v, idx) for g, v in base_beff.items()})
        t0 = t0 + at(overhead, idx)
        s_e2e[idx] = (m.batch[idx] / new.time_end_to_end[idx]) / (b0 / t0)
        e2e_batch[idx] = b0
    e2e_batch[~base.fits & ~rescue] = np.nan

    slo = np.where(m.decode, m.column("slo_tpot_s"), m.column("slo_ttft_s"))
    return Gaps(base, new, s_theo, s_impl, s_e2e, e2e_batch, np.broadcast_to(capacity, m.batch.shape), slo)
