"""Hugging Face config.json → a catalog model entry, read from a local file (no network).

Covers Llama 2/3, Mistral (sliding window), Qwen2/2.5 (q/k/v biases, optional
sliding window), Mixtral and Qwen-MoE (experts), DeepSeek-V2/V3 (MLA and
experts), Gemma (explicit head_dim, tied embeddings) and Gemma 2/3 (sliding
window on some layers). Other model types are read through the common keys.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..errors import Problem, UserError
from ..io.files import read_text
from ..io.jsonio import load_json
from ..io.yamlio import Document
from . import catalog
from .specs import Model
from .validation import validate

# Types whose tie_word_embeddings default (when the key is absent) is True.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3", "gemma3_text"}
_QKV_BIAS = {"qwen2", "qwen2_moe"}
_INTEGER_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "vocab_size",
                 "intermediate_size", "ffn_dim", "head_dim", "num_local_experts", "num_experts", "n_routed_experts",
                 "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
                 "n_shared_experts", "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim",
                 "qk_nope_head_dim", "v_head_dim", "sliding_window", "max_position_embeddings", "max_window_layers",
                 "sliding_window_pattern", "decoder_sparse_step", "moe_layer_freq")
_MAY_BE_ZERO = {"first_k_dense_replace", "n_shared_experts", "shared_expert_intermediate_size", "max_window_layers",
                "num_experts", "num_local_experts", "n_routed_experts", "qk_rope_head_dim", "sliding_window"}


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")


def model_name(cfg: dict[str, Any], file: str) -> str:
    """How tables name a config.json's model: its ``_name_or_path`` when that reads as a hub name
    (``Qwen/Qwen2.5-7B``), else the file's stem, or its folder's name for a file called config.json."""
    given = cfg.get("_name_or_path")
    if isinstance(given, str) and _NAME.fullmatch(given):
        return given
    path = Path(file)
    return path.parent.name if path.stem == "config" and path.parent.name else path.stem


def read_config(path: Path | str) -> dict[str, Any]:
    """The JSON object of a config.json: bounded size, UTF-8, no NaN, no duplicate keys."""
    label = str(path)
    data = load_json(read_text(path, label), label)
    if not isinstance(data, dict):
        raise UserError([Problem(label, path="$", message="expected a JSON object (a Hugging Face config.json)")])
    if isinstance(data.get("text_config"), dict) and "num_hidden_layers" not in data:
        data = {**data["text_config"], "model_type": data["text_config"].get("model_type", data.get("model_type"))}
    return data


def _sliding(cfg: dict[str, Any], layers: int) -> tuple[int | None, int | None]:
    """(window, layers that use it) from a config's sliding-window keys."""
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return None, None
    kind = cfg.get("model_type", "")
    if kind == "gemma2":                                   # local and global layers alternate
        return window, math.ceil(layers / 2)
    if "sliding_window_pattern" in cfg:                   # Gemma 3: 1 global layer in every N
        every = int(cfg["sliding_window_pattern"])
        return window, layers - layers // every
    if cfg.get("use_sliding_window") and "max_window_layers" in cfg:   # Qwen2: full attention below it
        return window, max(layers - int(cfg["max_window_layers"]), 0)
    return window, layers


def to_entry(cfg: dict[str, Any], file: str, name: str | None = None) -> dict[str, Any]:
    """A catalog model entry (the workload schema's model keys) from a config dict; UserError names missing keys."""
    kind = str(cfg.get("model_type", "unknown"))
    if kind == "opt":                        # OPT names its MLP width ffn_dim and has no head_dim
        cfg = {**cfg, "intermediate_size": cfg.get("ffn_dim"),
               "tie_word_embeddings": cfg.get("tie_word_embeddings", True)}
    cfg = {k: v for k, v in cfg.items() if v is not None}          # null is absent
    bad = [k for k in _INTEGER_KEYS if k in cfg and not (
        isinstance(cfg[k], int) and not isinstance(cfg[k], bool)
        and (0 if k in _MAY_BE_ZERO else 1) <= cfg[k] <= 10**9)]
    if bad:
        raise UserError([Problem(file, path=f"$.{k}", message=(
            f"config.json's {k} must be a whole number from {0 if k in _MAY_BE_ZERO else 1} to 1e9"))
            for k in bad])
    missing = [k for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size") if k not in cfg]
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts") or 0
    if not experts and "intermediate_size" not in cfg:
        missing.append("intermediate_size")
    if experts and "num_experts_per_tok" not in cfg:
        missing.append("num_experts_per_tok")
    if missing:
        raise UserError([Problem(file, path=f"$.{k}", message=f"config.json (model_type {kind}) has no {k!r}, "
                                                              f"which triage needs") for k in missing])
    for key, ok in (("decoder_sparse_step", 1), ("moe_layer_freq", 1)):
        if cfg.get(key, ok) != ok:
            raise UserError([Problem(file, path=f"$.{key}", message=(
                f"{key} {cfg[key]} is not supported: triage models every layer after the dense ones as MoE"))])
    layers = int(cfg["num_hidden_layers"])
    entry: dict[str, Any] = {
        "name": name or model_name(cfg, file),
        "num_hidden_layers": layers,
        "hidden_size": int(cfg["hidden_size"]),
        "num_attention_heads": int(cfg["num_attention_heads"]),
        "num_key_value_heads": int(cfg.get("num_key_value_heads") or cfg["num_attention_heads"]),
        "vocab_size": int(cfg["vocab_size"]),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", kind in _TIED_BY_DEFAULT)),
    }
    if cfg.get("head_dim"):
        entry["head_dim"] = int(cfg["head_dim"])
    if cfg.get("max_position_embeddings"):
        entry["max_position_embeddings"] = int(cfg["max_position_embeddings"])
    if cfg.get("intermediate_size"):
        entry["intermediate_size"] = int(cfg["intermediate_size"])
    if kind in _QKV_BIAS:
        entry["qkv_bias"] = True
    elif cfg.get("attention_bias") or kind == "opt":
        entry["attention_bias"] = True
    if kind == "opt":
        entry.update(gated_mlp=False, mlp_bias=True, norm_bias=True,
                     position_embeddings=int(cfg.get("max_position_embeddings", 2048)) + 2)
    if experts:
        entry["num_experts"] = int(experts)
        entry["num_experts_per_tok"] = int(cfg["num_experts_per_tok"])
        if cfg.get("moe_intermediate_size"):
            entry["moe_intermediate_size"] = int(cfg["moe_intermediate_size"])
        shared = cfg.get("shared_expert_intermediate_size") or (
            (cfg.get("n_shared_experts") or 0) * (cfg.get("moe_intermediate_size") or 0))
        if shared:
            entry["shared_expert_intermediate_size"] = int(shared)
        if cfg.get("first_k_dense_replace"):
            entry["first_k_dense_replace"] = int(cfg["first_k_dense_replace"])
    if cfg.get("kv_lora_rank"):
        for key in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            if key not in cfg:
                raise UserError([Problem(file, path=f"$.{key}", message=(
                    f"config.json uses MLA (kv_lora_rank) but has no {key!r}"))])
            entry[key] = int(cfg[key])
        if cfg.get("q_lora_rank"):
            entry["q_lora_rank"] = int(cfg["q_lora_rank"])
    window, window_layers = _sliding(cfg, layers)
    if window:
        entry["sliding_window"] = int(window)
        if window_layers != layers:
            entry["sliding_window_layers"] = int(window_layers or 0)
    extra = " (multi-token-prediction layers not counted)" if cfg.get("num_nextn_predict_layers") else ""
    entry["source"] = f"Hugging Face config.json {file} (model_type {kind}){extra}"
    return entry


def load_model(path: Path | str, key: str | None = None, name: str | None = None) -> Model:
    """A Model from a local config.json, validated like a catalog entry."""
    label = str(path)
    entry = to_entry(read_config(path), label, name)
    key = key or label
    doc = Document(label, {key: entry})
    problems = validate(doc, "workloads", prefix=("models",))
    model = catalog.parse_model(doc, (key,), key, problems)
    if problems:
        raise UserError(problems)
    return model


