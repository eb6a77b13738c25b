"""Hardware and model specs as frozen dataclasses, with derived figures computed once.

Every quantity is a float in SI base units; ``source`` says where it came from.
"""

from __future__ import annotations

import math
import re
from dataclasses import field
from functools import cached_property

from ..records import record

_REPO = re.compile(r"[\w.-]+/[\w.-]+")

# Bytes per element. int4 is half a byte: 4 // 8 == 0 is the classic bug.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp6": 0.75, "fp4": 0.5,
}


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element of ``precision`` (int4 -> 0.5)."""
    return BYTES_PER_ELEMENT[precision]


def is_config_path(name: str) -> bool:
    """Whether a model name in a card or workload file is a path to a config.json."""
    return name.endswith(".json")


@record
class Hardware:
    """One accelerator: capacity, HBM bandwidth and dense peak per dtype."""

    key: str
    name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    compute_flops_per_s: dict[str, float]
    interconnect_kind: str | None = None
    interconnect_bytes_per_s: float | None = None
    interconnect_latency_s: float = 0.0
    sms: int | None = None
    source: dict[str, str] = field(default_factory=dict)

    @property
    def vector_flops_per_s(self) -> float:
        """Non-tensor throughput (fp32 FMA units): where dequantization runs; the tensor fp16 peak / 16 if unknown."""
        return self.compute_flops_per_s.get("fp32", self.peak("fp16") / 16)

    def peak(self, dtype: str) -> float:
        """Dense tensor throughput for ``dtype``; bf16 and fp16 stand in for each other."""
        table = self.compute_flops_per_s
        for candidate in (dtype, {"bf16": "fp16", "fp16": "bf16"}.get(dtype, dtype)):
            if candidate in table:
                return table[candidate]
        raise KeyError(dtype)

    def has_peak(self, dtype: str) -> bool:
        """Whether the catalog gives a dense peak for ``dtype`` (bf16 and fp16 standing in for each other)."""
        try:
            self.peak(dtype)
        except KeyError:
            return False
        return True

    def ridge_point(self, dtype: str = "fp16") -> float:
        """FLOP/B where the roofline bends: peak / bandwidth (Williams et al. 2009)."""
        return self.peak(dtype) / self.bandwidth_bytes_per_s


@record
class Model:
    """A decoder-only transformer in Hugging Face config.json terms: dense, MoE, MLA, sliding window.

    ``params`` overrides the derived count; given without ``vocab_size`` every
    parameter is a body weight read once per decode step (the course's 7B).
    """

    key: str
    name: str
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int | None = None
    vocab_size: int | None = None
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qkv_bias: bool = False
    # older layouts (OPT, GPT-2): a two-matrix MLP with biases, LayerNorm with biases, learned positions
    gated_mlp: bool = True
    mlp_bias: bool = False
    norm_bias: bool = False
    position_embeddings: int = 0
    max_context: int | None = None                 # max_position_embeddings: the longest trained context
    # mixture of experts (Mixtral, Qwen-MoE, DeepSeek): routed experts per MoE layer
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int | None = None      # per routed expert (Mixtral: intermediate_size)
    shared_expert_intermediate_size: int = 0       # always-on shared experts, summed
    first_k_dense_replace: int = 0                 # leading layers with a dense MLP
    # multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # sliding-window attention (Mistral v0.1, Gemma 2)
    sliding_window: int | None = None
    sliding_window_layers: int | None = None       # layers that use the window (default: all)
    params_override: float | None = None
    published_params: float | None = None
    source: str = ""

    @property
    def label(self) -> str:
        """How cells and tables name the model: its catalog key, or a config.json's model name (not its path)."""
        return self.name if is_config_path(self.key) else self.key

    @property
    def hf_repo(self) -> str | None:
        """The Hugging Face repository whose config.json the catalog entry cites (the word before 'config.json'
        in its source), else None. Word by word, each matched whole: linear in the source, which can be a
        user's text, where a search for the pattern anywhere would backtrack quadratically."""
        words = self.source.split()
        for word, following in zip(words, words[1:], strict=False):
            if following.startswith("config.json") and _REPO.fullmatch(word.lstrip("([")):
                return word.lstrip("([")
        return None

    @property
    def window(self) -> float:
        """The longest context it was trained for (max_position_embeddings), in tokens; infinite where the config
        does not say: a context above it is beyond the trained window."""
        return float(self.max_context) if self.max_context else math.inf

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @cached_property
    def moe_layers(self) -> int:
        """Layers whose MLP is routed experts."""
        return self.num_hidden_layers - self.first_k_dense_replace if self.is_moe else 0

    @cached_property
    def embedding_params(self) -> float:
        """V·h: the input embedding table (0 when the vocabulary is not given)."""
        return float(self.vocab_size * self.hidden_size) if self.vocab_size else 0.0

    @cached_property
    def lm_head_params(self) -> float:
        """V·h read whole by every decode step, tied to the embedding or not."""
        return self.embedding_params

    @cached_property
    def attention_params(self) -> float:
        """One layer's attention projections.

        Standard: q,o h·H·d each, k,v h·H_kv·d each, plus biases. MLA (DeepSeek-V2
        §2.1): q down/up (or one q projection), a joint KV down-projection to
        kv_lora_rank plus the decoupled RoPE key, K/V up-projections, o, and two
        low-rank norms.
        """
        h, heads = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            kv_lora = self.kv_lora_rank or 0
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * heads * qk
                 if self.q_lora_rank else h * heads * qk)
            kv = h * (kv_lora + self.qk_rope_head_dim) + kv_lora + kv_lora * heads * (self.qk_nope_head_dim
                                                                                       + self.v_head_dim)
            return float(q + kv + heads * self.v_head_dim * h)
        d = self.head_dim
        q, kv = heads * d, self.num_key_value_heads * d
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv + h
        elif self.qkv_bias:
            attn += q + 2 * kv
        return float(attn)

    @cached_property
    def expert_params(self) -> float:
        """One routed expert of one layer: a gated MLP, 3·h·I_expert."""
        return float(3 * self.hidden_size * (self.moe_intermediate_size or self.intermediate_size or 0))

    @cached_property
    def routed_expert_params(self) -> float:
        """All routed experts of all MoE layers: stored, but a step reads only those its tokens touch."""
        return self.moe_layers * self.num_experts * self.expert_params

    @cached_property
    def norm_params(self) -> float:
        """One norm: a scale of h (plus a bias of h for LayerNorm with bias)."""
        return float(self.hidden_size * (2 if self.norm_bias else 1))

    @cached_property
    def layer_params(self) -> float:
        """A dense layer: attention, MLP (gated 3·h·I, or 2·h·I with biases I + h), two norms."""
        h, inter = self.hidden_size, self.intermediate_size or 0
        mlp = (3 if self.gated_mlp else 2) * h * inter + ((inter + h) if self.mlp_bias else 0)
        return self.attention_params + mlp + 2 * self.norm_params

    @cached_property
    def moe_layer_params(self) -> float:
        """An MoE layer without its routed experts: attention, shared experts, router h·E, two norms."""
        h = self.hidden_size
        return (self.attention_params + 3.0 * h * self.shared_expert_intermediate_size + h * self.num_experts
                + 2 * self.norm_params)

    @cached_property
    def params(self) -> float:
        """Total stored parameters: blocks, routed experts, final norm, embedding, untied LM head."""
        if self.params_override is not None:
            return float(self.params_override)
        head = 0.0 if self.tie_word_embeddings else self.lm_head_params
        dense_layers = self.num_hidden_layers - self.moe_layers
        return (dense_layers * self.layer_params + self.moe_layers * self.moe_layer_params
                + self.routed_expert_params + self.norm_params + self.position_embeddings * self.hidden_size
                + self.embedding_params + head)

    @cached_property
    def body_params(self) -> float:
        """Weights every decode step reads once, shared by the batch: all but routed experts, embedding, head."""
        head = 0.0 if self.tie_word_embeddings else self.lm_head_params
        return self.params - self.routed_expert_params - self.embedding_params - head

    @cached_property
    def active_params(self) -> float:
        """Parameters one token uses: body, its top-k experts per MoE layer, the LM head."""
        routed = self.routed_expert_params * self.num_experts_per_tok / self.num_experts if self.is_moe else 0.0
        return self.body_params + routed + self.lm_head_params

    @cached_property
    def active_intermediate(self) -> float:
        """MLP width one token passes through (for activation memory)."""
        if self.is_moe:
            return float(self.num_experts_per_tok * (self.moe_intermediate_size or self.intermediate_size or 0)
                         + self.shared_expert_intermediate_size)
        return float(self.intermediate_size or 0)

    @cached_property
    def kv_elements_per_token(self) -> float:
        """KV cache elements per token: 2·L·H_kv·d (course §4.2); MLA caches L·(d_c + d_rope), shared by heads."""
        if self.is_mla:
            return float(self.num_hidden_layers * ((self.kv_lora_rank or 0) + self.qk_rope_head_dim))
        return 2.0 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim

    def attention_flops_per_pair(self, decode: bool) -> float:
        """FLOPs per query-key pair, all layers: 2·H·(d_qk + d_v)·L (4·L·H·d for standard attention).

        MLA decodes with the up-projections absorbed (scores over d_c + d_rope,
        values in d_c) and prefills unabsorbed (d_nope + d_rope, d_v) — DeepSeek-V2 §2.1.3.
        """
        heads, layers = self.num_attention_heads, self.num_hidden_layers
        if self.is_mla:
            c = self.kv_lora_rank or 0
            dims = (c + self.qk_rope_head_dim + c) if decode else (
                self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
            return 2.0 * heads * dims * layers
        return 4.0 * heads * self.head_dim * layers

    @cached_property
    def kv_head_params(self) -> float:
        """Parameters of one KV head's k and v projections over all layers: 2·h·d·L (+ 2·d·L of biases).

        What GQA/MQA removes per KV head dropped (Ainslie et al. 2023); 0 for MLA, whose cache has no heads.
        """
        if self.is_mla:
            return 0.0
        per_layer = 2.0 * self.hidden_size * self.head_dim
        if self.attention_bias or self.qkv_bias:
            per_layer += 2.0 * self.head_dim
        return per_layer * self.num_hidden_layers

    def _attention_shapes(self, kv_heads: int | None = None) -> list[tuple[float, float]]:
        """(rows, cols) of one layer's attention projections, as attention_params counts them (with
        ``kv_heads`` KV heads instead of the model's, after GQA/MQA)."""
        h, heads = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            kv_lora = self.kv_lora_rank or 0
            query: list[tuple[float, float]] = (
                [(h, self.q_lora_rank), (self.q_lora_rank, heads * qk)] if self.q_lora_rank else [(h, heads * qk)])
            return query + [(h, kv_lora + self.qk_rope_head_dim),
                            (kv_lora, heads * (self.qk_nope_head_dim + self.v_head_dim)), (heads * self.v_head_dim, h)]
        q_width, kv_width = heads * self.head_dim, (kv_heads or self.num_key_value_heads) * self.head_dim
        return [(h, q_width), (h, kv_width), (h, kv_width), (q_width, h)]

    def output_channels(self, kv_heads: int | None = None) -> tuple[float, float]:
        """Rows of the linear weight matrices, one per output channel (a matrix of shape (out, in) has ``out``
        rows of ``in`` weights): (dense body, routed experts), what per-channel scales count, one scale a row.

        The matrices low_rank_saved factorizes: attention (the second of each _attention_shapes pair is its
        output width; ``kv_heads`` after GQA/MQA), the MLP (gated: gate and up I rows each, down h; else I + h),
        shared experts and each routed expert (gated). Routers, norms, embedding and LM head count none.
        """
        h = self.hidden_size
        attention = sum(out for _, out in self._attention_shapes(kv_heads))
        mlp = (2 if self.gated_mlp else 1) * (self.intermediate_size or 0) + h
        shared = 2 * self.shared_expert_intermediate_size + h if self.shared_expert_intermediate_size else 0
        expert = 2 * (self.moe_intermediate_size or self.intermediate_size or 0) + h
        dense_layers = self.num_hidden_layers - self.moe_layers
        body = dense_layers * (attention + mlp) + self.moe_layers * (attention + shared)
        return float(body), float(self.moe_layers * self.num_experts * expert)

    def low_rank_saved(self, rank: float, kv_heads: int | None = None) -> tuple[float, float]:
        """Parameters a rank-r factorization W (m × n) ≈ U (m × r)·V (r × n) removes: (dense body, routed experts).

        Each projection keeps min(m·n, r·(m+n)) parameters (a factorization never adds any): attention,
        the MLP of dense layers (three matrices when gated, two when not), shared experts, and each routed
        expert (three matrices). Routers, norms, embedding and LM head are left whole. ``kv_heads``: the
        KV heads left after GQA/MQA, whose k and v projections are the ones factorized.
        """
        def saved(shapes: list[tuple[float, float]]) -> float:
            return sum(max(m * n - rank * (m + n), 0.0) for m, n in shapes)

        h = self.hidden_size
        attention = saved(self._attention_shapes(kv_heads))
        mlp = saved([(h, self.intermediate_size or 0)] * (3 if self.gated_mlp else 2))
        shared = saved([(h, self.shared_expert_intermediate_size)] * 3) if self.shared_expert_intermediate_size else 0.0
        expert = saved([(h, self.moe_intermediate_size or self.intermediate_size or 0)] * 3)
        dense_layers = self.num_hidden_layers - self.moe_layers
        body = dense_layers * (attention + mlp) + self.moe_layers * (attention + shared)
        return body, self.moe_layers * self.num_experts * expert

    @cached_property
    def window_fraction(self) -> float:
        """Fraction of layers that attend within the sliding window."""
        if not self.sliding_window:
            return 0.0
        layers = self.sliding_window_layers if self.sliding_window_layers is not None else self.num_hidden_layers
        return layers / self.num_hidden_layers
