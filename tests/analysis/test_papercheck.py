"""The paper check: bounds only where both sides fit, the setting that gave the bound, capacity bounds for
throughput claims, scoped numbers, the paper's GPUs and offloading, and warnings for mechanisms that cannot act."""

import pytest
from click.testing import CliRunner

import triage
from triage.cli import main

KV4 = {"id": "kv4", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.25},
       "claim": {"speedup": 3.6, "metric": "tpot",
                 "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch": 8}}}


def check(card, workloads=None):
    return triage.evaluate(card, workloads).to_dict()["paper_check"]


LONG_7B = {"models": {"llama-2-7b-32k": {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                                          "num_key_value_heads": 32, "head_dim": 128, "intermediate_size": 11008,
                                          "vocab_size": 32000, "max_position_embeddings": 32768}},
           "workloads": [{"name": "w", "context": 4096}]}


def test_a_4bit_kv_card_without_a_context_is_bounded_by_the_largest_context_that_fits():
    # Llama 2 7B's shape with a 32k window (LLaMA-2-7B-32K), defined in the workload file. By hand: 81,920 MiB
    # = 85,899,345,920 B; fp16 weights 13,476,831,232 B leave 72,422,514,688 B, at batch 8 and 524,288 B of KV
    # per token: 17,266 tokens (17,265 with the activations). Bytes per step at 17,265: base 13.48 GB +
    # 72.41 GB = 85.89 GB, 4-bit KV 13.48 + 18.10 = 31.58 GB: 2.72x (2.73 with the LM head and logits in both)
    # — well below 3.6x, and every longer context does not fit.
    card = {**KV4, "claim": {**KV4["claim"], "setting": {**KV4["claim"]["setting"], "model": "llama-2-7b-32k"}}}
    c = check(card, LONG_7B)
    assert c["setting"]["context"] == 17_265 and c["setting"]["batch"] == 8
    assert c["bound"] == pytest.approx(2.73, abs=0.01) and c["exceeds_bound"] is True
    assert "context 17,265 (searched)" in c["setting_words"]


def test_the_models_trained_window_caps_the_searched_context():
    # Llama 2 7B itself was trained for 4,096 tokens (max_position_embeddings): at batch 8, 4,096 tokens,
    # (13,476,831,232 + 8·4,096·524,288) / (13,476,831,232 + 8·4,096·131,072) = 30.66 / 17.77 GB = 1.725x
    c = check(KV4)
    assert c["setting"]["context"] == 4096 and c["bound"] == pytest.approx(1.73, abs=0.01)
    assert c["exceeds_bound"] and "up to the model's 4,096-token window" in c["assumed"][0]


def test_the_memo_says_which_setting_gave_the_bound(tmp_path):
    import yaml
    path = tmp_path / "kv4.yaml"
    path.write_text(yaml.safe_dump(KV4))
    out = CliRunner().invoke(main, ["run", str(path)]).stdout
    assert "(llama-2-7b on a100-80gb, decode, batch 8, context 4,096 (searched)) is **1.74×**" in out


def test_settings_where_nothing_fits_are_never_the_bound():
    # 1M tokens at batch 8 would give the largest KV saving, but neither side fits there
    c = check(KV4)
    assert c["setting"]["context"] < 1_048_576 and c["baseline_fits"] is True


def test_a_throughput_claim_is_bounded_by_capacity():
    card = {**KV4, "claim": {"speedup": 3.0, "metric": "throughput",
                             "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "context": 4096}}}
    c = check(card)
    # by hand at 4,096 tokens (2,147,483,648 B of KV a sequence): the baseline fits 33 sequences, the 4-bit
    # KV 134 (536,870,912 B each); a step streams the weights once, so throughput ~ batch / time
    assert c["capacity_batches"] == [33, 134]
    assert c["bound_kind"].startswith("capacity") and c["bound"] == pytest.approx(c["capacity_bound"])
    assert c["bound"] > 2.0


def test_a_kernel_number_is_bounded_by_the_operators_it_times():
    card = {**KV4, "claim": {"speedup": 3.8, "metric": "tpot", "scope": "attention",
                             "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch": 1,
                                         "context": 16384}}}
    c = check(card)
    # attention alone: KV read 16,384 x 524,288 B plus one token written, x 0.25 -> 4.0x (all bytes of the
    # group scale); the whole step would be ~1.5x
    assert c["bound"] == pytest.approx(4.0, rel=1e-3) and c["exceeds_bound"] is False
    assert c["bound_kind"].startswith("attention only")


def test_a_training_number_gets_no_inference_bound():
    card = {**KV4, "claim": {**KV4["claim"], "scope": "training"}}
    c = check(card)
    assert c["bound"] is None and "training number" in c["note"]


def test_pipeline_stages_hold_a_model_one_gpu_cannot():
    card = {"id": "w", "title": "t", "direction": "weights", "change": {"weight_bytes": 0.5},
            "claim": {"speedup": 1.9, "metric": "tpot",
                      "setting": {"model": "opt-175b", "hardware": "a100-80gb", "batch": 1, "context": 2048}}}
    alone = check(card)
    # OPT-175B's fp16 weights, 350 GB, over 80 GiB (85.9 GB) per A100: 5 GPUs
    assert alone["baseline_fits"] is False and "its weights alone need 5 GPUs" in alone["note"]
    staged = check({**card, "claim": {**card["claim"], "setting": {**card["claim"]["setting"], "pipeline": 5}}})
    assert staged["baseline_fits"] is True and staged["note"] == ""


def _offloaded(change, model, batch, reported):
    """A card whose paper ran on a T4 with every weight streamed from the host over PCIe Gen3 (16 GB/s)."""
    return {"id": "o", "title": "t", "direction": "cache", "change": change,
            "claim": {"speedup": reported, "metric": "tpot",
                      "setting": {"model": model, "hardware": "t4", "batch": batch, "context": 1024,
                                  "offload": {"weights": 1.0, "link": "16 GB/s"}}}}


def test_an_offloading_baseline_is_priced_with_its_link():
    # OPT-6.7B on a T4, its fp16 weights (13.3 GB) streamed over a 16 GB/s link every step: ~0.83 s a step on
    # both sides, so halving the KV at equal batch gains almost nothing. By hand, batch 8 at 1,024 tokens:
    # KV 8 x 1,024 x 524,288 B = 4.29 GB, read in 13.4 ms at 320 GB/s (half of it with the change), against
    # 832 ms of link time: (832 + 13.4 + 0.4) / (832 + 6.7 + 0.4) ~ 1.008. On the GPU alone it would be 1.13.
    c = check(_offloaded({"kv_bytes": 0.5}, "opt-6.7b", batch=8, reported=1.5))
    assert c["bound"] == pytest.approx(1.008, abs=0.002)
    assert c["exceeds_bound"] and c["likely_sources"][0].startswith("an offloading baseline")
    assert "100 % of the weights offloaded over 16 GB/s" in c["setting_words"]


def test_offloaded_weights_are_each_sides_own():
    # a 4x smaller weight format streams 4x fewer bytes over the link: the link-bound bound is ~4x, not 1x
    c = check(_offloaded({"weight_bytes": 0.25}, "llama-2-7b", batch=1, reported=3.5))
    assert c["bound"] == pytest.approx(4.0, rel=0.02) and not c["exceeds_bound"]


def test_a_baseline_model_other_than_the_methods():
    # MLA (DeepSeek-V2) against its own MHA shape would be kv_latent; against another model the bound is the
    # two models' step times, not the latent's ratio alone
    card = {"id": "m", "title": "t", "direction": "cache", "change": {"kv_bytes": 1.0},
            "claim": {"speedup": 1.0, "metric": "tpot",
                      "setting": {"model": "llama-2-7b", "baseline_model": "llama-2-13b", "hardware": "a100-80gb",
                                  "batch": 1, "context": 1}}}
    c = check(card)
    # by hand at context 1: bytes ~ weights, 13B 26.03 GB vs 7B 13.48 GB: ~1.93
    assert c["bound"] == pytest.approx(26_031_728_640 / 13_476_831_232, rel=0.01)


@pytest.mark.parametrize("change,chip,dtype", [({"compute_dtype": "int4"}, "h100-sxm", "int4"),
                                               ({"compute_dtype": "fp8"}, "a100-80gb", "fp8"),
                                               ({"attention_dtype": "fp8"}, "a100-80gb", "fp8")])
def test_a_dtype_the_chip_lacks_is_a_warning_in_json_and_memo(tmp_path, change, chip, dtype):
    import yaml
    card = {"id": "d", "title": "t", "direction": "weights", "change": change}
    w = {"workloads": [{"name": "p", "phase": "prefill", "context": 2048, "batch": 8, "hardware": chip}]}
    r = triage.evaluate(card, w).to_dict()
    assert [x["code"] for x in r["warnings"]] == ["dtype-missing"]
    assert chip in r["warnings"][0]["message"] and f"no dense {dtype} peak" in r["warnings"][0]["message"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(w))
    memo = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml"), "-w", str(tmp_path / "w.yaml")]).stdout
    assert f"> **Warning:** {list(change)[0]} {dtype}: {chip}" in memo


def test_int4_compute_acts_where_the_chip_has_int4():
    card = {"id": "d", "title": "t", "direction": "weights", "change": {"compute_dtype": "int4"}}
    w = {"workloads": [{"name": "p", "phase": "prefill", "context": 2048, "batch": 8, "hardware": "a100-80gb"}]}
    r = triage.evaluate(card, w).to_dict()
    assert r["warnings"] == []
    # A100: int4 1,248 TOP/s over fp16 312 TFLOP/s: the compute-bound linear layers run 4x faster
    c = r["cells"][0]
    assert c["speedup"]["theoretical"] > 2.5


def test_a_decode_only_mechanism_warns_on_prefill_workloads():
    card = {"id": "q", "title": "t", "direction": "attention", "change": {"kv_read": {"budget": 2048}}}
    r = triage.evaluate(card).to_dict()
    # the default matrix: prefill-2k is untouched by a decode-only change, serve-conv's 1,024-token context is
    # under the 2,048-token budget, and docqa-128k is beyond Llama 2's 4,096-token window
    assert [w["code"] for w in r["warnings"]] == ["phase-untouched", "no-effect", "beyond-window"]
    assert "prefill-2k is priced unchanged" in r["warnings"][0]["message"]
    assert "does not act on serve-conv" in r["warnings"][1]["message"]


def test_a_throughput_claim_of_a_prefill_only_change_is_bounded_at_prefill():
    card = {"id": "p", "title": "t", "direction": "system", "change": {"prefix_hit": 0.9},
            "claim": {"speedup": 5.0, "metric": "throughput",
                      "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch": 1, "context": 4096}}}
    c = check(card)
    # a 90 % prefix hit computes a tenth of the prompt's linear FLOPs and its queries' pairs: ~10x at most
    assert c["setting"]["phase"] == "prefill" and 5.0 < c["bound"] <= 10.0
    assert c["assumed"][0].startswith("phase not stated: bounded at prefill")


def test_a_kv_that_does_not_fit_is_not_blamed_on_the_weights():
    card = {"id": "k", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5},
            "claim": {"speedup": 1.5, "metric": "tpot",
                      "setting": {"model": "llama-2-70b", "hardware": "a100-80gb", "pipeline": 4, "batch": 512,
                                  "context": 4096}}}
    # 138 GB of weights fit in 4 x 80 GiB; 512 x 4,096 tokens x 327,680 B of GQA KV (687 GB) do not
    c = check(card)
    assert "its weights fit, but not the KV of batch 512 at 4,096 tokens" in c["note"]


def test_a_ttft_claim_is_never_bounded_at_decode():
    card = {"id": "t", "title": "t", "direction": "attention", "change": {"kv_read": {"budget": 2048}},
            "claim": {"speedup": 1.2, "metric": "ttft",
                      "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch": 1, "context": 4096}}}
    c = check(card)
    assert c["setting"]["phase"] == "prefill" and c["bound"] == pytest.approx(1.0)


def test_a_decode_only_key_beside_a_both_phase_key_still_warns_at_prefill():
    card = {"id": "q", "title": "t", "direction": "attention",
            "change": {"kv_read": {"budget": 2048}, "kv_bytes": 0.5}}
    r = triage.evaluate(card).to_dict()
    assert any(w["message"].startswith("kv_read acts at decode only: prefill-2k is priced without it")
               for w in r["warnings"])


def test_a_mechanism_with_nothing_to_save_on_a_workload_says_so():
    card = {"id": "s", "title": "t", "direction": "attention", "change": {"score_bytes": 0.0}}
    r = triage.evaluate(card).to_dict()
    assert [w["code"] for w in r["warnings"]] == ["no-effect", "beyond-window"]
    assert "its attention is already split: no score traffic to save" in r["warnings"][0]["message"]
