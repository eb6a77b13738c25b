"""Models from Hugging Face config.json files: parameter counts, MoE, MLA, sliding windows, errors."""

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import triage
from triage.cli import main
from triage.errors import UserError
from triage.inputs.hfconfig import load_model
from triage.model import roofline as costmodel

from conftest import CLAIMS, ROOT, card, cell

CONFIGS = ROOT / "tests" / "configs"

# Published totals: the safetensors totals of the checkpoints, or the papers' figures where only those exist
# (DeepSeek-V2: 236B, DeepSeek-V3: 671B without its multi-token-prediction module; Gemma 2 9B: 9.24B).
PUBLISHED = {
    "llama-3-8b": 8_030_261_248,
    "mistral-7b-v0.1": 7_241_732_096,
    "qwen2.5-7b": 7_615_616_512,
    "mixtral-8x7b": 46_702_792_704,
    "qwen1.5-moe-a2.7b": 14_315_784_192,
    "deepseek-v2": 236e9,
    "deepseek-v3": 671e9,
    "gemma-7b": 8_537_680_896,
    "gemma-2-9b": 9_241_705_984,
}


@pytest.mark.parametrize("name,published", sorted(PUBLISHED.items()))
def test_parameter_count_within_one_percent(name, published):
    model = load_model(CONFIGS / f"{name}.json")
    assert abs(model.params / published - 1) < 0.01


@pytest.mark.parametrize("name", ["llama-3-8b", "mistral-7b-v0.1", "qwen2.5-7b", "mixtral-8x7b", "gemma-7b"])
def test_dense_and_mixtral_counts_are_exact(name):
    assert load_model(CONFIGS / f"{name}.json").params == PUBLISHED[name]


def test_mixtral_active_parameters_and_expert_reads():
    m = load_model(CONFIGS / "mixtral-8x7b.json")
    # 8 experts of 3·4096·14336 per layer, 32 layers; a token uses 2 of them
    assert m.routed_expert_params == 32 * 8 * 3 * 4096 * 14336
    assert m.active_params + m.embedding_params == pytest.approx(12.9e9, rel=0.01)   # "12.9B active"
    # batch 1 reads 2 of 8 experts per layer; batch B reads 8·(1 − (6/8)^B) of them
    for tokens, expected in [(1, 2 / 8), (4, 1 - 0.75**4), (64, 1 - 0.75**64)]:
        assert costmodel.experts_touched_fraction(np.array(float(tokens)), 8, 2) == pytest.approx(expected)


def test_mixtral_decode_bytes_grow_with_batch_toward_all_experts():
    r = triage.evaluate(card({"kv_bytes": 0.5}), {
        "workloads": [{"name": "b1", "context": 1, "batch": 1}, {"name": "b64", "context": 1, "batch": 64}]},
        model=str(CONFIGS / "mixtral-8x7b.json"))
    m = load_model(CONFIGS / "mixtral-8x7b.json")
    b1 = cell(r, "b1", "a100-80gb")["baseline"]["bytes_by_group"]["linear"]
    b64 = cell(r, "b64", "a100-80gb")["baseline"]["bytes_by_group"]["linear"]
    assert b1 == (m.body_params + m.routed_expert_params * 2 / 8) * 2
    assert b64 == pytest.approx((m.body_params + m.routed_expert_params * (1 - 0.75**64)) * 2)


def test_deepseek_v2_mla_caches_the_latent():
    m = load_model(CONFIGS / "deepseek-v2.json")
    # 60 layers × (kv_lora_rank 512 + rope 64) elements, fp16: 69,120 B per token (vs 2·60·128·128·2 = 3.9 MB)
    assert m.kv_elements_per_token * 2 == 60 * 576 * 2 == 69_120
    # absorbed decode: 2·H·(512 + 64 + 512) per pair and layer; prefill 2·H·(128 + 64 + 128)
    assert m.attention_flops_per_pair(decode=True) == 2 * 128 * 1088 * 60
    assert m.attention_flops_per_pair(decode=False) == 2 * 128 * 320 * 60


def test_mla_decode_attention_is_compute_bound_on_an_a100():
    # 2·128·(512+64+512)·60 FLOP per pair over 60·576·2 B of latent per token: 242 FLOP/B, above the A100's
    # ridge (153 FLOP/B): halving the cache's bytes does not halve attention time there, unlike MHA/GQA.
    m = load_model(CONFIGS / "deepseek-v2.json")
    intensity = m.attention_flops_per_pair(decode=True) / (m.kv_elements_per_token * 2)
    assert intensity == pytest.approx(241.8, abs=0.1)
    r = triage.evaluate(card({"kv_bytes": 0.5}), {"defaults": {"hardware": "a100-80gb"},
                        "workloads": [{"name": "w", "context": 32768}]}, model="deepseek-v2")
    base = cell(r, "w")["baseline"]
    flops_time = base["flops_by_group"]["attention"] / 312e12
    bytes_time = base["bytes_by_group"]["attention"] / 2.039e12
    assert flops_time > 1.5 * bytes_time                       # attention is compute-bound here
    assert cell(r, "w")["speedup"]["theoretical"] == pytest.approx(1.0, abs=1e-3)


def test_sliding_window_caps_kv_reads_and_prefill_pairs():
    r = triage.evaluate(card({"kv_bytes": 0.5}), {"workloads": [
        {"name": "d", "context": 32768, "batch": 1}, {"name": "p", "phase": "prefill", "context": 8192}]},
        model=str(CONFIGS / "mistral-7b-v0.1.json"))
    d = cell(r, "d", "a100-80gb")["baseline"]
    assert d["kv_bytes"] == 4096 * 131_072                       # a rolling buffer of 4096 tokens
    assert d["bytes_by_group"]["attention"] == 4096 * 131_072 + 131_072
    p = cell(r, "p", "a100-80gb")["baseline"]
    # Σ min(i, 4096) over 8192 queries = 4096·4097/2 + 4096·4096, × 4·L·H·d
    assert p["flops_by_group"]["attention"] == 4 * 32 * 32 * 128 * (4096 * 4097 / 2 + 4096 * 4096)


def test_gemma2_windows_half_its_layers():
    m = load_model(CONFIGS / "gemma-2-9b.json")
    assert m.sliding_window == 4096 and m.window_fraction == 0.5
    tokens = costmodel.attended_tokens(np.array(16384.0), 4096, 0.5)
    assert tokens == 0.5 * 16384 + 0.5 * 4096


def test_qwen2_sliding_window_off_unless_enabled():
    assert load_model(CONFIGS / "qwen2.5-7b.json").sliding_window is None


def test_cli_model_flag_shows_gqa_in_the_bytes():
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--model",
                                    str(CONFIGS / "llama-3-8b.json"), "-f", "json"])
    assert res.exit_code == 0, res.stderr
    c = [c for c in json.loads(res.stdout)["cells"] if c["workload"] == "chat-4k"][0]
    # 128 KiB of KV per token instead of Llama 2's 512 KiB: 4096 tokens read + 1 written
    assert c["baseline"]["bytes_by_group"]["attention"] == 4097 * 128 * 1024


def test_workload_file_and_card_setting_name_configs_by_relative_path(tmp_path):
    (tmp_path / "configs").mkdir()
    shutil.copy(CONFIGS / "llama-3-8b.json", tmp_path / "configs" / "l3.json")
    (tmp_path / "w.yaml").write_text("workloads:\n  - {name: w, context: 4096, model: ./configs/l3.json}\n")
    (tmp_path / "c.yaml").write_text("id: c\ntitle: t\ndirection: cache\nchange: {kv_bytes: 0.5}\n"
                                     "claim:\n  setting: {model: ./configs/l3.json}\n")
    r = triage.evaluate(tmp_path / "c.yaml", tmp_path / "w.yaml")
    assert cell(r, "w", "a100-80gb")["model"] == "l3"          # named by the file's stem, not its path
    assert cell(r, "w", "a100-80gb")["baseline"]["kv_bytes"] == 4096 * 128 * 1024


@pytest.mark.parametrize("text,message", [
    ('{"model_type": "llama", "hidden_size": 4096}',
     "$.num_attention_heads: config.json (model_type llama) has no 'num_attention_heads', which triage needs"),
    ('{"num_hidden_layers": NaN}', "$: JSON: NaN is not a number JSON allows"),
    ('{"a": 1, "a": 2}', "$: JSON: duplicate key (one object gives a key twice)"),
    ('[1, 2]', "$: expected a JSON object (a Hugging Face config.json)"),
    ('{"model_type": "x",', "1:20 $: JSON: Expecting property name enclosed in double quotes"),
])
def test_unreadable_configs_name_the_problem(tmp_path, text, message):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_model(path)
    assert any(str(p).endswith(message) for p in err.value.problems), str(err.value)


def test_unsupported_layer_pattern_is_refused(tmp_path):
    cfg = json.loads((CONFIGS / "qwen1.5-moe-a2.7b.json").read_text())
    cfg["decoder_sparse_step"] = 2
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(UserError, match="decoder_sparse_step 2 is not supported"):
        load_model(path)


def test_a_500_deep_config_json_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[" * 500 + "]" * 500)
    with pytest.raises(UserError, match="nesting deeper than 50 levels"):
        load_model(path)


def test_a_config_is_named_by_its_hub_name_else_its_file(tmp_path):
    """Tables name a config.json's model as a reader would: `_name_or_path`, else the stem or the folder."""
    cfg = json.loads((CONFIGS / "llama-3-8b.json").read_text())
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "config.json").write_text(json.dumps(cfg))
    assert load_model(tmp_path / "meta" / "config.json").label == "meta"
    (tmp_path / "hub.json").write_text(json.dumps({**cfg, "_name_or_path": "meta-llama/Meta-Llama-3-8B"}))
    assert load_model(tmp_path / "hub.json").label == "meta-llama/Meta-Llama-3-8B"
    (tmp_path / "odd.json").write_text(json.dumps({**cfg, "_name_or_path": "/home/me/ckpt | <b>"}))
    assert load_model(tmp_path / "odd.json").label == "odd"          # a local path or markup is not a name
