"""Hardware and model specs as frozen dataclasses, with derived figures computed once.

Every quantity is a float in SI base units; ``source`` says where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

# Bytes per element. int4 is half a byte: 4 // 8 == 0 is the classic bug.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5,
}


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element of ``precision`` (int4 -> 0.5)."""
    return BYTES_PER_ELEMENT[precision]


@dataclass(frozen=True)
class Hardware:
    """One accelerator: capacity, HBM bandwidth and dense peak per dtype."""

    key: str
    name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    compute_flops_per_s: dict[str, float]
    interconnect_kind: str | None = None
    interconnect_bytes_per_s: float | None = None
    source: dict[str, str] = field(default_factory=dict)

    def peak(self, dtype: str) -> float:
        """Dense tensor throughput for ``dtype``; bf16 and fp16 stand in for each other."""
        table = self.compute_flops_per_s
        for candidate in (dtype, {"bf16": "fp16", "fp16": "bf16"}.get(dtype, dtype)):
            if candidate in table:
                return table[candidate]
        raise KeyError(dtype)

    def ridge_point(self, dtype: str = "fp16") -> float:
        """FLOP/B where the roofline bends: peak / bandwidth (Williams et al. 2009)."""
        return self.peak(dtype) / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class Model:
    """A dense decoder-only transformer, in Hugging Face config.json terms.

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
    params_override: float | None = None
    published_params: float | None = None
    source: str = ""

    @cached_property
    def embedding_params(self) -> float:
        """V·h: the input embedding table (0 when the vocabulary is not given)."""
        return float(self.vocab_size * self.hidden_size) if self.vocab_size else 0.0

    @cached_property
    def lm_head_params(self) -> float:
        """V·h read whole by every decode step, tied to the embedding or not."""
        return self.embedding_params

    @cached_property
    def layer_params(self) -> float:
        """One block: q,o (h·H·d each), k,v (h·H_kv·d each), biases, gated MLP 3·h·I, two norms."""
        h, d = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv + h
        elif self.qkv_bias:
            attn += q + 2 * kv
        mlp = 3 * h * (self.intermediate_size or 0)
        return float(attn + mlp + 2 * h)

    @cached_property
    def params(self) -> float:
        """Total stored parameters: blocks, final norm, embedding, untied LM head."""
        if self.params_override is not None:
            return float(self.params_override)
        head = 0.0 if self.tie_word_embeddings else self.lm_head_params
        return self.num_hidden_layers * self.layer_params + self.hidden_size + self.embedding_params + head

    @cached_property
    def body_params(self) -> float:
        """Weights every decode step reads once, shared by the batch: all but embedding and LM head."""
        head = 0.0 if self.tie_word_embeddings else self.lm_head_params
        return self.params - self.embedding_params - head

    @cached_property
    def kv_elements_per_token(self) -> float:
        """2·L·H_kv·d_head: one K and one V vector per layer (course §4.2)."""
        return 2.0 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim
