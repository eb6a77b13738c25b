"""How each kind of change in a card alters the cost model's inputs: one small function each.

A mechanism maps (baseline StepInputs, the card's value, a context) to the
claim's StepInputs. What it touches, what a missing kernel takes back and how
two stacked cards compose it are data (inputs/mechanisms.yaml); this module
binds each key to its function. Structure (which matrices a model has, how
many parameters a KV head costs) comes from the model's spec, never re-derived
here. Speculative decoding changes the step itself and is priced in evidence.py
with the plan this module gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from ..defaults import DRAFT_PASSES, OUTLIER_BITS, ROTATIONS_PER_LAYER, SCALE_BITS, ZERO_BITS
from ..errors import Problem, UserError
from ..inputs.change import (
    Batching,
    Change,
    DequantOps,
    Hadamard,
    KvLatent,
    KvQuant,
    KvRead,
    LowRank,
    SchedulerKeys,
    SparseAttention,
    Sparsity,
    Speculative,
    StreamingHeads,
    TokenKeep,
    Value,
    WeightQuant,
)
from ..inputs.registry import KV_FORMATS, WEIGHT_FORMATS, MechanismInfo, registry
from ..inputs.specs import Model
from ..records import record, written
from .roofline import StepInputs, attended_tokens, by_phase


@record
class Context:
    """What a mechanism may look up: the whole change, another model's inputs on the same cells, a dtype's
    peak ratio, and a per-model figure of the cells' own models."""

    change: Change
    model_inputs: Callable[[str], StepInputs]
    peak_ratio: Callable[[str], Any]   # a dtype's dense peak over the workload's compute dtype, per cell
    per_model: Callable[[Callable[[Model], float]], np.ndarray]   # fn(model) of each cell's (served) model
    models: dict[str, Model]           # every model a card may name


# ---- cache -------------------------------------------------------------------------------------


def kv_quant_bytes(spec: KvQuant) -> float:
    """A quantized KV element: bits/8 + (scale_bits + zero_bits)/(8·group_size) bytes (no group_size: one scale
    per tensor, negligible), plus a dense-and-sparse format's outliers at outlier_bits each (value and index;
    Hooper et al. 2024 §3.5). 2 bits with an fp16 scale and zero per 32 elements: 0.25 + 32/256 = 0.375 B. A
    float format's bits are its element's (e4m3: 8)."""
    group = spec.group_size
    scales = (_or(spec.scale_bits, SCALE_BITS) + _or(spec.zero_bits, ZERO_BITS)) / (8 * group) if group else 0.0
    return spec.element_bits / 8 + scales + _or(spec.outliers, 0.0) * _or(spec.outlier_bits, OUTLIER_BITS) / 8


def _or(value: float | None, default: float) -> float:
    """A spec's optional value, or the default the docs give for it (defaults.py)."""
    return default if value is None else value


def kv_quant(x: StepInputs, spec: KvQuant, ctx: Context) -> StepInputs:
    """A declared KV format: each token's KV at ``kv_quant_bytes`` per element, except the ``residual_tokens``
    most recent, kept at the baseline's precision until their group fills (KIVI's residual, Liu et al. 2024
    §3.3); the mean over the context the cell holds, never above the baseline's."""
    q = kv_quant_bytes(spec)
    residual = np.minimum(_or(spec.residual_tokens, 0.0), x.context)
    mean = np.where(x.context > 0, ((x.context - residual) * q + residual * x.kv_read_bpe)
                    / np.maximum(x.context, 1.0), q)
    bpe = np.minimum(mean, x.kv_read_bpe)
    return replace(x, kv_read_bpe=bpe, kv_stored_bpe=np.minimum(mean, x.kv_stored_bpe))


def kv_heads(x: StepInputs, n: int, ctx: Context) -> StepInputs:
    """GQA/MQA: n KV heads instead of H_kv. The cache shrinks by n/H_kv and the k,v projections by
    (H_kv − n) heads' parameters (Model.kv_head_params; Ainslie et al. 2023). MLA caches have no heads:
    unchanged there."""
    ratio = np.where(x.mla, 1.0, n / x.kv_heads)
    fewer = np.where(x.mla, 0.0, ctx.per_model(lambda mod: mod.kv_head_params) * np.maximum(x.kv_heads - n, 0.0))
    return replace(x, kv_elements_per_token=x.kv_elements_per_token * ratio,
                   body_params=x.body_params - fewer, stored_params=x.stored_params - fewer)


def kv_latent(x: StepInputs, spec: KvLatent, ctx: Context) -> StepInputs:
    """MLA-style latent cache: ``elements`` cached per token and layer, shared by all heads (DeepSeek-V2 §2.1)."""
    return replace(x, kv_elements_per_token=x.layers * float(spec.elements))


def _kept(x: StepInputs, spec: TokenKeep | KvRead) -> Any:
    return x.context * spec.keep if spec.keep is not None else np.minimum(x.context, float(_or(spec.budget, 0.0)))


def kv_tokens(x: StepInputs, spec: TokenKeep, ctx: Context) -> StepInputs:
    """Eviction: keep a fraction of the context, or a fixed token budget, read and stored by decode.

    Prefill still computes and writes the whole prompt's KV (eviction follows it).
    """
    kept = _kept(x, spec)
    return replace(x, kv_read_tokens=np.minimum(x.kv_read_tokens, kept),
                   kv_stored_tokens=np.where(x.decode, np.minimum(x.kv_stored_tokens, kept), x.kv_stored_tokens))


def streaming_heads(x: StepInputs, spec: StreamingHeads, ctx: Context) -> StepInputs:
    """DuoAttention: a share s of the heads keep only W tokens (sinks + recent window), the rest everything.
    Like a sliding window on a share of the layers: decode reads and stores (1−f)·T + f·min(T, W) tokens and
    prefill's pairs are windowed there, with f = 1 − (1 − f₀)(1 − s) over a model's own window f₀ (Xiao et
    al. 2024, §3; the smaller window taken for both)."""
    window = np.minimum(x.window, float(spec.tokens))
    fraction = 1.0 - (1.0 - x.window_fraction) * (1.0 - float(spec.share))
    kept = attended_tokens(x.context, window, fraction)
    return replace(x, window=window, window_fraction=fraction, kv_read_tokens=np.minimum(x.kv_read_tokens, kept),
                   kv_stored_tokens=np.where(x.decode, np.minimum(x.kv_stored_tokens, kept), x.kv_stored_tokens))


def sparse_attention(x: StepInputs, spec: SparseAttention, ctx: Context) -> StepInputs:
    """Each query attends at most ``budget`` keys in the phases named: a decode step reads min(T, budget)
    tokens of KV (all stay stored); a prefill computes Σ min(i, budget) pairs, causal_pairs with W = budget.
    The gain grows with the context (MInference: Jiang et al. 2024; NSA: Yuan et al. 2025)."""
    budget = float(spec.budget)
    if "decode" in spec.phases:
        x = replace(x, kv_read_tokens=np.where(x.decode, np.minimum(x.kv_read_tokens, budget), x.kv_read_tokens))
    if "prefill" in spec.phases:
        x = replace(x, window=np.where(x.decode, x.window, np.minimum(x.window, budget)),
                    window_fraction=np.where(x.decode, x.window_fraction, 1.0))
    return x


def kv_read(x: StepInputs, spec: KvRead, ctx: Context) -> StepInputs:
    """Query-aware sparsity: read only a fraction or a budget of the KV, keep all of it stored; ``metadata``
    is what choosing costs, as a share of the stored KV read every step (Quest: a min and a max key per
    16-token page, 2/16 of K = 1/16 of the KV)."""
    return replace(x, kv_read_tokens=np.minimum(x.kv_read_tokens, _kept(x, spec)),
                   kv_metadata=x.kv_metadata + _or(spec.metadata, 0.0))


def prefix_hit(x: StepInputs, f: float, ctx: Context) -> StepInputs:
    """Prefix caching: a fraction f of each prompt's KV is already cached; prefill computes the rest
    (its queries still attend over the whole prompt). Decode is unchanged."""
    return replace(x, prefix_fraction=np.asarray(f))


def memory_waste(x: StepInputs, f: float, ctx: Context) -> StepInputs:
    """Paged allocation: the claim's KV fragmentation (PagedAttention: under 4 %); the baseline's is the
    workload's, and a stack that already wastes less keeps its own (adopting the allocator never adds waste).
    Time is unchanged; the batch that fits changes."""
    return replace(x, memory_waste=np.minimum(x.memory_waste, f))


# ---- attention ---------------------------------------------------------------------------------


def attention_dtype(x: StepInputs, dtype: str, ctx: Context) -> StepInputs:
    """Attention's matmuls in ``dtype`` (FlashAttention-3 FP8, Shah et al. 2024): the chip's peak for it. A chip
    without it keeps its rate (the evaluation warns)."""
    return replace(x, attention_peak_mult=x.attention_peak_mult * ctx.peak_ratio(dtype))


def split_kv(x: StepInputs, on: bool, ctx: Context) -> StepInputs:
    """Split-KV decoding (Flash-Decoding): the KV is split across SMs, so a decode step fills the GPU
    even at batch 1 (an implementation gain: the bytes are the same)."""
    return replace(x, split_kv=np.asarray(bool(on)) | x.split_kv)


# ---- weights -----------------------------------------------------------------------------------


def quantized_bytes_per_weight(spec: WeightQuant, channels_per_weight: float | np.ndarray = 0.0) -> float | np.ndarray:
    """Quantized weights: bits/8 + (scale_bits + zero_bits)/(8·group_size) bytes per weight; per-channel scales
    are (scale_bits + zero_bits)/8 × ``channels_per_weight`` (a model's output channels over its weights), a
    per-tensor scale is negligible (one per matrix). A float format's bits are its element's (e3m2: 6).

    int4 with an fp16 scale per 128 weights: 0.5 + 16/1024 = 0.515625 B (0.258 of fp16).
    """
    scale_bits = _or(spec.scale_bits, SCALE_BITS) + _or(spec.zero_bits, ZERO_BITS)
    if spec.group_size is not None:
        return spec.element_bits / 8 + scale_bits / (8 * spec.group_size)
    per_channel = scale_bits / 8 * channels_per_weight if spec.scales == "per-channel" else 0.0
    return spec.element_bits / 8 + per_channel


def _kv_heads_left(ctx: Context, mod: Model) -> int | None:
    """The KV heads a GQA/MQA change leaves ``mod`` (None: its own; an MLA cache has no heads)."""
    n = ctx.change.kv_heads
    return min(int(n), mod.num_key_value_heads) if n is not None and not mod.is_mla else None


def weight_quant(x: StepInputs, spec: WeightQuant, ctx: Context) -> StepInputs:
    """Weight-only quantization of the transformer blocks (and experts); the LM head and embedding stay
    16-bit unless ``keep_16bit: false`` (AWQ and GPTQ keep them). Per-channel scales are one per output channel
    (Model.output_channels): spread over the blocks' and experts' weights, they add rows × scale bytes."""
    rows = 0.0
    if spec.scales == "per-channel":
        channels = ctx.per_model(lambda mod: sum(mod.output_channels(_kv_heads_left(ctx, mod))))
        rows = channels / (x.body_params + x.routed_expert_params)
    bpe = np.asarray(quantized_bytes_per_weight(spec, rows))
    head = np.asarray(2.0) if spec.keep_16bit is not False else bpe
    return replace(x, weight_read_bpe=bpe, weight_stored_bpe=bpe, head_read_bpe=head, head_stored_bpe=head)


def sparsity(x: StepInputs, spec: Sparsity, ctx: Context) -> StepInputs:
    """N:M structured sparsity (2:4 on Ampere+): N of every M weights kept, with ⌈log2 M⌉ index bits per kept
    weight; FLOPs × N/M. Only a sparse kernel gets either (Mishra et al. 2021)."""
    n, m = (int(v) for v in spec.pattern.split(":"))
    kept = n / m
    meta = math.ceil(math.log2(m)) / 8
    return replace(x, linear_flops_mult=x.linear_flops_mult * kept,
                   weight_read_bpe=x.weight_read_bpe * kept + kept * meta,
                   weight_stored_bpe=x.weight_stored_bpe * kept + kept * meta)


def compute_dtype(x: StepInputs, dtype: str, ctx: Context) -> StepInputs:
    """Linear layers run their GEMMs in ``dtype`` (W8A8 int8, fp8): the hardware's peak for it, where it has
    one (SmoothQuant, QServe). Cells whose chip lacks the dtype keep their peak."""
    return replace(x, linear_peak_mult=x.linear_peak_mult * ctx.peak_ratio(dtype))


def hadamard(x: StepInputs, spec: Hadamard, ctx: Context) -> StepInputs:
    """Online rotations before quantized GEMMs (QuaRot, Ashkboos et al. 2024): per token and layer, ``per_layer``
    fast Walsh–Hadamard transforms of n elements at n·log2(n) vector operations each."""
    n = float(spec.size)
    ops = x.layers * float(_or(spec.per_layer, ROTATIONS_PER_LAYER)) * n * math.log2(n)
    return replace(x, transform_ops=x.transform_ops + ops)


def low_rank(x: StepInputs, spec: LowRank, ctx: Context) -> StepInputs:
    """Each projection W (m × n) becomes U (m × r) · V (r × n): parameters and FLOPs r(m+n) instead of m·n
    (Hu et al. 2021's factorization, applied to the weights). Which projections a model has — attention or
    MLA, a gated or two-matrix MLP, shared and routed experts — is Model.low_rank_saved's."""
    r = float(spec.rank)                          # GQA/MQA first: factorize the k, v projections left
    body = ctx.per_model(lambda mod: mod.low_rank_saved(r, _kv_heads_left(ctx, mod))[0])
    routed = ctx.per_model(lambda mod: mod.low_rank_saved(r, _kv_heads_left(ctx, mod))[1])
    return replace(x, body_params=x.body_params - body, routed_expert_params=x.routed_expert_params - routed,
                   stored_params=x.stored_params - body - routed)


def distill_to(x: StepInputs, name: str, ctx: Context) -> StepInputs:
    """Distillation: the claim serves another (smaller) catalog model on the same workload."""
    return ctx.model_inputs(name)


# ---- decoding and system -----------------------------------------------------------------------


def speculative(x: StepInputs, spec: Speculative, ctx: Context) -> StepInputs:
    """The verification forward: q = γ+1 (or the tree's size) queries per sequence in one step."""
    return replace(x, query_tokens=np.asarray(float(speculative_plan(spec).verify_tokens)))


@record
class SpeculativePlan:
    """Per step: ``draft_passes`` draft forwards, one verification of ``verify_tokens`` tokens per
    sequence, ``expected_tokens`` accepted (the bonus token included)."""

    draft_passes: float
    verify_tokens: float
    expected_tokens: float
    draft_model: str | None
    draft_cost: float | None


def expected_tokens(acceptance: float, tokens: int) -> float:
    """Tokens per step with γ drafted at acceptance α: (1 − α^(γ+1)) / (1 − α) (Leviathan et al. 2023, eq. 1)."""
    if acceptance >= 1.0:
        return tokens + 1.0
    return (1.0 - acceptance ** (tokens + 1)) / (1.0 - acceptance)


def expected_for(spec: Speculative, domain: str | None) -> float:
    """Tokens per step for a workload of ``domain``: the card's by_domain value where it gives one (acceptance
    varies with the text: code and math accept more than chat), else its default."""
    by_domain = dict(spec.by_domain)
    if domain not in by_domain:
        return speculative_plan(spec).expected_tokens
    if spec.tokens_per_step is not None:
        return float(by_domain[domain])
    return expected_tokens(by_domain[domain], int(_or(spec.tokens, 1)))


def speculative_plan(spec: Speculative) -> SpeculativePlan:
    """A chain draft {tokens, acceptance} or a tree/multi-head draft {tokens_per_step, verify_tokens}."""
    if spec.tokens_per_step is not None:
        return SpeculativePlan(float(_or(spec.draft_passes, DRAFT_PASSES)), float(_or(spec.verify_tokens, 1)),
                               float(spec.tokens_per_step), spec.draft_model, spec.draft_cost)
    gamma = int(_or(spec.tokens, 1))
    return SpeculativePlan(float(gamma), gamma + 1.0, expected_tokens(_or(spec.acceptance, 0.0), gamma),
                           spec.draft_model, spec.draft_cost)


def tp(x: StepInputs, n: int, ctx: Context) -> StepInputs:
    """Tensor parallelism over n GPUs: weights, heads and KV split n ways, two all-reduces per layer."""
    return replace(x, tp=np.asarray(float(n)))


def batching(x: StepInputs, spec: Batching, ctx: Context) -> StepInputs:
    """Continuous batching: the share of batch slots doing useful work (Orca, Yu et al. 2022); the
    baseline's is the workload's batch_utilization. An end-to-end gain in throughput."""
    return replace(x, utilization=np.asarray(spec.utilization))


def scheduler(x: StepInputs, spec: SchedulerKeys, ctx: Context) -> StepInputs:
    """A scheduling change leaves every step as it is: its gain lives in the queue, which the serving
    simulation of a workload with traffic: prices (analysis/serving.py); elsewhere the memo warns."""
    return x


def dequant_ops(x: StepInputs, ops: DequantOps, ctx: Context) -> StepInputs:
    """Vector-unit work to dequantize each element read in a changed format (KV and/or weights):
    free while a step is bandwidth-bound, a slowdown once it is compute-bound (the course's warning)."""
    kv = _or(ops.kv, 0.0) if KV_FORMATS & set(ctx.change.keys) else 0.0
    weights = _or(ops.weights, 0.0) if WEIGHT_FORMATS & set(ctx.change.keys) else 0.0
    return replace(x, dequant_kv_ops=np.asarray(float(kv)), dequant_weight_ops=np.asarray(float(weights)))


@record
class Mechanism:
    """A change key: its data (groups, reverts, composition) and its function."""

    info: MechanismInfo
    apply: Callable[[StepInputs, Any, Context], StepInputs]


def scaler(info: MechanismInfo) -> Callable[[StepInputs, Any, Context], StepInputs]:
    """A pure multiplier (the registry's ``scales``): each step input it names × the card's value, on the
    phases it acts on (the other phase keeps the baseline's). KV quantization as bytes per token × m, an int4
    format as bytes per weight × 0.27, a sparse attention as its FLOPs × m."""
    both = {"decode", "prefill"} <= set(info.phases)
    on_decode = "decode" in info.phases

    def apply(x: StepInputs, m: float, ctx: Context) -> StepInputs:
        value, one = np.asarray(float(m)), np.asarray(1.0)
        factor = value if both else by_phase(x.decode, lambda: value if on_decode else one,
                                             lambda: one if on_decode else value)
        return replace(x, **{f: getattr(x, f) * factor for f in info.scales})
    return apply


# The mechanisms that need arithmetic of their own; every registry entry with ``scales`` is applied by scaler.
_FUNCTIONS: dict[str, Callable[[StepInputs, Any, Context], StepInputs]] = {
    "streaming_heads": streaming_heads, "sparse_attention": sparse_attention, "attention_dtype": attention_dtype,
    "hadamard": hadamard, "distill_to": distill_to, "kv_heads": kv_heads, "kv_latent": kv_latent,
    "kv_quant": kv_quant, "kv_tokens": kv_tokens, "kv_read": kv_read, "prefix_hit": prefix_hit,
    "memory_waste": memory_waste, "split_kv": split_kv, "weight_quant": weight_quant, "sparsity": sparsity,
    "compute_dtype": compute_dtype, "low_rank": low_rank, "speculative": speculative, "tp": tp,
    "batching": batching, "dequant_ops": dequant_ops, "scheduler": scheduler,
}

# In the data's order (the model swap first, formats before their dequantization).
REGISTRY: dict[str, Mechanism] = {key: Mechanism(info, scaler(info) if info.scales else _FUNCTIONS[key])
                                  for key, info in registry().items()}


def _served(model: Model) -> Callable[[Callable[[Model], float]], np.ndarray]:
    """per_model for cells that all serve ``model``."""
    def per_model(fn: Callable[[Model], float]) -> np.ndarray:
        return np.asarray(float(fn(model)))
    return per_model


def check_applies(change: Change, file: str, models: Iterable[Model]) -> None:
    """A change that cannot act on the matrix's models is an error, never a quiet 1.00x (or a growth)."""
    n = change.kv_heads
    if n is None:
        return
    heads = [mod.num_key_value_heads for mod in models if not mod.is_mla]
    if heads and n >= max(heads):
        raise UserError([Problem(file, path="$.change.kv_heads", message=(
            f"kv_heads {n} does not reduce the KV heads of any model here (at most {max(heads)}): GQA/MQA keeps "
            f"fewer heads than the model has"))])


def schedulers(change: Change, blocks: Iterable[Any]) -> tuple[SchedulerKeys, ...]:
    """The claim side's scheduler of each workload: the card's `change.scheduler` keys laid over the workload's
    block (the keys it sets win); the serving simulation reads these, never the card's change."""
    card = change.scheduler
    if card is None:
        return tuple(b.scheduler for b in blocks)
    chosen = written(card)
    return tuple(replace(b.scheduler, **chosen) for b in blocks)


def apply(change: Change, x: StepInputs, ctx: Context) -> StepInputs:
    """The claim's inputs: every mechanism of ``change`` applied to the baseline ``x``, in registry order."""
    for key in change.keys:                   # in the registry's order
        value: Value = getattr(change, key)
        x = REGISTRY[key].apply(x, value, ctx)
        if key == "distill_to":               # the mechanisms after it act on the served model's structure
            ctx = replace(ctx, per_model=_served(ctx.models[str(value)]))
    return x


def without_kernel(claim: StepInputs, base: StepInputs, change: Change) -> StepInputs:
    """No kernel reads the new format in place: what each format mechanism saves at read time comes back
    (reads at the old bytes, dense FLOPs); storage keeps the saving unless the mechanism says otherwise."""
    return replace(claim, **{f: getattr(base, f) for f in change.reverts})
