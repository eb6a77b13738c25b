"""Offline reproduction of LLM-Viewer's latency prediction, as a peer for triage's benchmark.

Source
------
Repository hahnyuan/LLM-Viewer (the tool of Yuan et al. 2024, "LLM Inference Unveiled: Survey and Roofline
Model Insights", arXiv 2402.16363), branch ``main``, commit 472f71f1a1807e80b573252e9185fd5e8d795e95
(2024-07-30, "fix bug in compute flashattntion kv load data"). Method read from:

- ``model_analyzer.py``: ``ModelAnalyzer.analyze`` (the per-operator OPs / load_weight / load_act / store_act /
  load_kv_cache / store_kv_cache for the ``prefill`` and ``decode`` stages, summed over layers),
  ``ModelAnalyzer._analyze_to_results`` (one roofline per operator), ``ModelAnalyzer.get_hardware_info``
  (FP16 or INT8 peak), ``ModelAnalyzer.analyze_generate_task`` (prefill + one decode per generated token);
- ``roofline_model.py``: ``roofline_analyze`` (performance = min(intensity x bandwidth, peak); time = OPs / that);
- ``configs/Llama.py``: ``get_linear_layers``, ``get_norm_layers``, ``post_process`` (lm_head);
  ``configs/opt.py``, ``configs/gpt-j-6B.py`` for the non-gated variants (opt.py still lists a gate_proj, so the
  source prices OPT with a gate projection; ``gated_mlp=False`` here drops it as gpt-j-6B.py does, and keeps two
  norms per layer as opt.py does, gpt-j-6B.py having one);
- ``get_model_graph.py``: ``get_model_graph``, the web demo's "chat" stage (a 10-point approximation of the
  decode sum); ``frontend/src/components/left_controls/Config.vue`` for the web defaults (decode, batch 1,
  seq 1024, FP16 everywhere, FlashAttention off);
- ``hardwares/hardware_params.py``: the hardware table (e.g. ``nvidia_A100_80G``: 2039e9 B/s, FP16 312e12,
  INT8 624e12; ``nvidia_A100`` / ``_40G``: 1555e9 B/s). No efficiency factors anywhere.
The ``dev`` branch (87a7db3, 2024-06-23, an ONNX/graph refactor, not the default branch) was not reproduced.

Method (per transformer layer, times ``layers``; lm_head once)
--------------------------------------------------------------
Each operator gets OPs and bytes = load_weight + load_act + store_act + load_kv_cache + store_kv_cache; its time
is OPs / min(OPs/bytes x bandwidth, peak) = max(OPs/peak, bytes/bandwidth); the stage time is the plain sum over
operators (no overlap, no launch overhead, no derating). Peak is the INT8 peak when w, a and kv bits are all <= 8,
else the FP16 peak. Byte widths are bits/8 (so 4-bit and 2-bit weights are counted fractionally).
Notation: B batch, T tokens processed in the stage (prompt in prefill, 1 in decode), L the KV length (prompt in
both stages: decode is one new token attending to ``prompt`` cached tokens), h hidden, H heads, G kv heads,
d = h // H, kvo = h*G/H, I intermediate, V vocab; w, a, kv byte widths.

- linear q/k/v/o, gate/up/down (gate only if gated): OPs 2*in*out*B*T; weight in*out*w (once per stage);
  input act in*B*T*a; output act out*B*T*a, except k/v whose output is counted as a KV-cache store out*B*T*kv
  instead of an activation store. Shapes q [h,h], k,v [h,kvo], o [h,h], gate,up [h,I], down [I,h].
- qk matmul: OPs 2*T*L*d*H*B; reads query d*H*B*T*a (prefill uses G, not H, for this read: as in the source),
  K cache L*d*G*B*kv; writes scores T*L*H*B*a.
- softmax: OPs 5*T*L*H*B (max, sub, exp, sum, div); reads and writes T*L*H*B*a.
- sv matmul: OPs 2*T*L*d*H*B; reads scores T*L*H*B*a, V cache L*d*G*B*kv; writes T*d*H*B*a.
  Prefill attention is the full T x L square (no causal halving); the K/V "cache" read in prefill is the K/V
  just written by k_proj/v_proj, so prefill counts that traffic twice (store in k/v proj, load here).
- fused attention (only with ``flash_attention=True``, off by default in CLI, web and analyze_generate_task):
  OPs of qk + sv + softmax; reads query, writes the "O" tensor twice sized T*L*H*B*a (sic), K and V loaded
  ceil(T/block) times with block = min(ceil(onchip_buffer/(kv*d)), d), counting H (not G) heads.
- norms (2 per layer, attn_norm and mlp_norm): OPs 7*h*B*T; reads and writes h*B*T*a, no weight bytes.
- residual adds (attn_add, mlp_add): OPs h*B*T; reads h*B*T*a (one operand only), writes h*B*T*a.
- mlp activation (mlp_act): OPs 2*h*B*T; reads 2*h*B*T*a, writes h*B*T*a -- sized by hidden, not intermediate,
  as in the source (kept also for non-gated MLPs, where the source reads two operands as well).
- lm_head (once, both stages): OPs h*V*B (one OP per MAC, not two); weight h*V*w; reads h*a and writes V*a
  (no batch factor; prefill computes only the last token's logits).
Not counted by LLM-Viewer: embedding lookup, final norm, rotary embedding, sampling, all-reduce or any
communication, kernel launch/scheduling overhead, efficiency below the datasheet peaks.

Against triage (triage/model/roofline.py: one roofline per operator group -- linear, attention, lm_head, other --
compulsory HBM traffic only, activations assumed on chip): LLM-Viewer counts the activation traffic between
operators (every projection's input and output, norms, residual adds and the MLP activation each read and write
DRAM at a_bits), always materialises the B*H*T*L score matrix when FlashAttention is off (its default; the same four
passes triage counts only for eager attention), re-reads in prefill the K/V it has just written, counts the
non-GEMM OPs (softmax 5, norm 7, add 1, activation 2 per element) at the tensor peak, and takes the max() per
operator (per projection, not per group). It does not count what triage does: all-reduces, embedding rows,
fp32 logits, dequantisation work, derating; and its lm_head has one OP per MAC and no batch factor in its bytes.

Tensor parallelism (not in LLM-Viewer)
--------------------------------------
LLM-Viewer has no tensor-parallel option (no ``tp`` anywhere in main or dev). ``tp_mode="shard"`` (default)
applies its counting to one device's Megatron shard: q/k/v/gate/up column-split, o/down row-split (weights and
the split activation divided by tp), attention heads H/tp and kv heads max(G/tp, 1) (KV replicated when tp > G),
mlp_act and lm_head (vocab-parallel) divided by tp, norms and residual adds replicated; all-reduce ignored (zero
time), as LLM-Viewer ignores communication everywhere. ``tp_mode="ignore"`` returns the single-device figure
whatever ``tp`` is.

Generation
----------
``analyze_generate_task(prompt_len, gen_len)``: prefill(prompt) + sum over i in [prompt, prompt+gen) of
decode(context i); ``generation_mode="exact"`` (default) does that. The web demo's chat stage instead adds
decode(context c) * gen/n for n = min(10, gen) points c = linspace(prompt+1, prompt+gen, n) (non-integer
contexts allowed); ``generation_mode="web"`` reproduces that.

Revisions and checks
--------------------
``revision="472f71f"`` (default) is main HEAD. ``revision="2e6d47b"`` (2024-03-11) is the version LLM-Viewer's
issue #4 (https://github.com/hahnyuan/LLM-Viewer/issues/4, 2024-03-11) quotes; it differs only in three counts:
lm_head weights at 1 byte each whatever w_bits, prefill qk_matmul without the query read and with the K/V read
doubled, and FlashAttention loading K only. Issue #4 quotes LLM-Viewer's estimates for LLaMA 7B, fp16, one A100
(prefill batch 1: 6.977 ms at 128 tokens and 100.88 ms at 2048; generation throughput, out tokens / (prefill + all
decodes): 8934.54, 2796.58, 788.73, 1169.17 tok/s at batch/in/out 256/128/128, 32/128/2048, 32/2048/128,
16/2048/2048); this module reproduces all six to the printed digits with revision 2e6d47b, the nvidia_A100_80G
entry (2039e9 B/s, 312e12) and FlashAttention on (see ``__main__``). Separately, the source's own
``ModelAnalyzer.analyze`` / ``analyze_generate_task`` / web chat sum (run offline at both revisions with a stubbed
model config; not committed) agree with ``latency`` to 1e-15 relative on 300 random shapes (GQA, w/a/kv bits
4-16, batch 1-128, context 1-4096, FlashAttention on/off, gated and not; tp=1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["REVISIONS", "latency", "operators"]

#: the source revisions reproduced: 472f71f (main HEAD, default) and 2e6d47b (2024-03-11, the version behind
#: the figures quoted in issue #4)
REVISIONS = ("472f71f", "2e6d47b")


def _roofline(ops: np.ndarray | float, nbytes: np.ndarray | float, peak: float, bw: float) -> np.ndarray:
    """Time of one operator: OPs over min(intensity x bandwidth, peak), i.e. max(OPs/peak, bytes/bandwidth)."""
    return np.maximum(np.asarray(ops, dtype=float) / peak, np.asarray(nbytes, dtype=float) / bw)


def operators(
    *,
    hidden: int,
    heads: int,
    kv_heads: int,
    intermediate: int,
    vocab: int,
    gated_mlp: bool,
    batch: int,
    tokens: int,
    kv_len: np.ndarray | float,
    stage: str,
    tp: int = 1,
    w_bits: int = 16,
    a_bits: int = 16,
    kv_bits: int = 16,
    flash_attention: bool = False,
    onchip_buffer: float = 20e6,
    revision: str = "472f71f",
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], tuple[float, float]]:
    """Per-layer operators {name: (OPs, bytes)} of one stage on one device, and lm_head's (OPs, bytes).

    ``stage`` is 'prefill' (tokens = kv_len = prompt) or 'decode' (tokens = 1, kv_len = context; may be an array).
    """
    if stage not in ("prefill", "decode"):
        raise ValueError(f"stage must be 'prefill' or 'decode', not {stage!r}")
    if revision not in REVISIONS:
        raise ValueError(f"revision must be one of {REVISIONS}, not {revision!r}")
    old = revision == "2e6d47b"
    w, a, kv = w_bits / 8, a_bits / 8, kv_bits / 8
    B, T, h = batch, tokens, hidden
    L = np.asarray(kv_len, dtype=float)
    d = hidden // heads  # head size as LLM-Viewer takes it
    H = heads / tp  # heads on this device
    G = max(kv_heads / tp, 1.0)  # kv heads on this device (replicated when tp > kv_heads)
    q_out = h / tp  # LLM-Viewer sizes q/o by hidden, not heads*head_size
    kv_out = h * kv_heads / heads / tp if kv_heads >= tp else h / heads
    inter = intermediate / tp

    ops: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(name: str, o: np.ndarray | float, b: np.ndarray | float) -> None:
        ops[name] = (np.asarray(o, dtype=float), np.asarray(b, dtype=float))

    # linear layers: [in, out] per device
    linears = {
        "q_proj": (h, q_out),
        "k_proj": (h, kv_out),
        "v_proj": (h, kv_out),
        "out_proj": (q_out, h),
        "gate_proj": (h, inter),
        "up_proj": (h, inter),
        "down_proj": (inter, h),
    }
    if not gated_mlp:
        del linears["gate_proj"]
    for name, (ic, oc) in linears.items():
        is_kv = name in ("k_proj", "v_proj")
        add(
            name,
            2 * ic * oc * B * T,
            ic * oc * w + ic * B * T * a + (oc * B * T * kv if is_kv else oc * B * T * a),
        )

    qk_ops = 2 * T * L * d * H * B
    sv_ops = 2 * T * L * d * H * B
    sm_ops = 5 * T * L * H * B
    if flash_attention:
        block = min(math.ceil(onchip_buffer / (kv * d)), d)
        n_blocks = math.ceil(T / block)
        q_bytes = T * d * B * H * a
        o_bytes = T * L * B * H * a  # the source sizes "O" like the score matrix
        kv_bytes = n_blocks * L * d * B * H * kv * (1 if old else 2)  # H, not G; 2e6d47b loads K only
        add("fused_attention", qk_ops + sv_ops + sm_ops, q_bytes + 2 * o_bytes + kv_bytes)
    else:
        if stage == "decode":
            add("qk_matmul", qk_ops, T * d * B * H * a + T * L * B * H * a + L * d * B * G * kv)
        elif old:  # 2e6d47b: no query read, K/V read twice
            add("qk_matmul", qk_ops, T * L * B * H * a + 2 * L * d * B * G * kv)
        else:  # 472f71f reads the query with kv heads in prefill
            add("qk_matmul", qk_ops, T * d * B * G * a + T * L * B * H * a + L * d * B * G * kv)
        add("sv_matmul", sv_ops, T * L * B * H * a + T * d * B * H * a + L * d * B * G * kv)
        add("softmax", sm_ops, 2 * T * L * B * H * a)

    for name in ("attn_norm", "mlp_norm"):
        add(name, 7 * h * B * T, 2 * h * B * T * a)
    for name in ("attn_add", "mlp_add"):
        add(name, h * B * T, 2 * h * B * T * a)
    act = h / tp  # hidden-sized in the source; sharded with the MLP
    add("mlp_act", 2 * act * B * T, 3 * act * B * T * a)

    v_dev = vocab / tp
    lm_w = 1.0 if old else w  # 2e6d47b counts lm_head weights at one byte each whatever w_bits
    lm_head = (float(B * h * v_dev), float(h * v_dev * lm_w + h * a + v_dev * a))
    return ops, lm_head


def latency(
    *,
    layers: int,
    prompt: int,
    output: int,
    phase: str,
    peak_flops: float,
    bandwidth: float,
    bandwidth_eff: float = 1.0,
    compute_eff: float = 1.0,
    peak_flops_int8: float | None = None,
    tp_mode: str = "shard",
    generation_mode: str = "exact",
    **shape: Any,
) -> float:
    """Seconds LLM-Viewer predicts for ``phase`` ('prefill', 'decode' or 'generation'); ``shape`` holds
    ``operators``' keywords but the stage's (hidden, heads, kv_heads, intermediate, vocab, gated_mlp, batch, tp,
    w_bits, a_bits, kv_bits, flash_attention, onchip_buffer, revision).

    'prefill': the prefill of ``prompt`` tokens x ``batch``; 'decode': one decode step at KV length ``prompt``;
    'generation': prefill + ``output`` decode steps at contexts prompt .. prompt+output-1 (``generation_mode``
    'exact', LLM-Viewer's analyze_generate_task) or the web demo's 10-point approximation ('web').
    ``peak_flops`` is the FP16 peak (FLOP/s); ``peak_flops_int8`` (default: same as peak_flops) is used instead
    when w, a and kv bits are all <= 8, as LLM-Viewer does. ``bandwidth_eff`` and ``compute_eff`` derate the
    roofs; LLM-Viewer itself has none (1.0). ``tp``: see the module docstring (LLM-Viewer has no TP).
    ``flash_attention`` (LLM-Viewer's use_flashattention; its analyze_generate_task never sets it, the web chat
    stage does) and ``onchip_buffer`` (bytes; matters only below kv_bytes x head_size^2) select the fused
    attention count; ``revision`` picks the source version ('472f71f' or '2e6d47b').
    """
    if tp_mode not in ("shard", "ignore"):
        raise ValueError(f"tp_mode must be 'shard' or 'ignore', not {tp_mode!r}")
    if generation_mode not in ("exact", "web"):
        raise ValueError(f"generation_mode must be 'exact' or 'web', not {generation_mode!r}")
    if prompt < 1 or shape["batch"] < 1:
        raise ValueError("prompt and batch must be >= 1")
    bits = [shape.get(k, 16) for k in ("w_bits", "a_bits", "kv_bits")]
    low_bit = max(bits) <= 8
    peak = (peak_flops_int8 if (low_bit and peak_flops_int8 is not None) else peak_flops) * compute_eff
    bw = bandwidth * bandwidth_eff
    if tp_mode == "ignore":
        shape = {**shape, "tp": 1}

    def stage_time(stage: str, kv_len: np.ndarray | float) -> np.ndarray:
        tokens = prompt if stage == "prefill" else 1
        per_layer, (lm_ops, lm_bytes) = operators(stage=stage, tokens=tokens, kv_len=kv_len, **shape)
        t = sum(_roofline(o, b, peak, bw) for o, b in per_layer.values())
        return layers * t + _roofline(lm_ops, lm_bytes, peak, bw)

    if phase == "prefill":
        return float(stage_time("prefill", prompt))
    if phase == "decode":
        return float(stage_time("decode", prompt))
    if phase == "generation":
        total = float(stage_time("prefill", prompt))
        if output <= 0:
            return total
        if generation_mode == "exact":
            contexts = np.arange(prompt, prompt + output, dtype=float)
            return total + float(np.sum(stage_time("decode", contexts)))
        n = min(10, output)
        contexts = np.linspace(prompt + 1, prompt + output, n)
        return total + float(np.sum(stage_time("decode", contexts))) * output / n
    raise ValueError(f"phase must be 'prefill', 'decode' or 'generation', not {phase!r}")


if __name__ == "__main__":
    llama2_7b = dict(layers=32, hidden=4096, heads=32, kv_heads=32, intermediate=11008, vocab=32000, gated_mlp=True)
    fp16 = dict(tp=1, w_bits=16, a_bits=16, kv_bits=16)
    a100_80g = dict(peak_flops=312e12, bandwidth=2.039e12)

    t = latency(**llama2_7b, **fp16, **a100_80g, batch=1, prompt=1024, output=0, phase="decode")
    # hand check: every operator is memory-bound at batch 1, so the time is bytes / bandwidth:
    # weights 32 x (4 x 4096^2 + 3 x 4096 x 11008) x 2 B + lm_head 4096 x 32000 x 2 B = 13.21 GB;
    # K and V reads 32 x 2 x 1024 x 4096 x 2 B = 0.537 GB; activations (score matrix 32 heads x 1024 written
    # by qk, read+written by softmax, read by sv; norms, adds, projections) ~ 0.016 GB
    weights = 32 * (4 * 4096**2 + 3 * 4096 * 11008) * 2 + 4096 * 32000 * 2
    kv_read = 32 * 2 * 1024 * 4096 * 2
    print(f"Llama-2-7B decode, batch 1, context 1024, fp16, A100-80GB: {t * 1e3:.3f} ms")
    print(f"  hand check, weights + KV reads only: {(weights + kv_read) / 2.039e12 * 1e3:.3f} ms")

    # LLM-Viewer issue #4 quotes the tool's own estimates (revision 2e6d47b, A100 80G entry, FlashAttention on)
    old = dict(revision="2e6d47b", flash_attention=True, onchip_buffer=27648e3)
    for n, quoted in ((128, 6.977), (2048, 100.88071)):
        tp_ = latency(**llama2_7b, **fp16, **a100_80g, **old, batch=1, prompt=n, output=0, phase="prefill")
        print(f"  prefill {n:5d} tokens: {tp_ * 1e3:9.5f} ms (issue #4 quotes {quoted} ms)")
    for (b, n_in, n_out), quoted in zip(
        ((256, 128, 128), (32, 128, 2048), (32, 2048, 128), (16, 2048, 2048)),
        (8934.54, 2796.58, 788.73, 1169.17),
        strict=True,
    ):
        tg = latency(**llama2_7b, **fp16, **a100_80g, **old, batch=b, prompt=n_in, output=n_out, phase="generation")
        print(f"  generation {b}/{n_in}/{n_out}: {b * n_out / tg:8.2f} tok/s (issue #4 quotes {quoted})")
