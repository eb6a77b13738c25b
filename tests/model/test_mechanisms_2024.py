"""The mechanisms 2024–2026 papers need, each against a hand calculation (Llama 2 7B: 32 layers, 32 KV heads
of 128, fp16: 524,288 B of KV per token)."""

import math

import pytest

import triage

KV_TOKEN = 2 * 32 * 32 * 128 * 2          # k and v, layers, heads, head dim, bytes = 524,288 B


def run(change, phase, context, batch=1, hardware="a100-80gb"):
    card = {"id": "m", "title": "t", "direction": "attention", "change": change}
    w = {"workloads": [{"name": "w", "phase": phase, "context": context, "batch": batch, "hardware": hardware}]}
    return triage.evaluate(card, w).to_dict()["cells"][0]


def test_streaming_heads_read_and_keep_a_window_on_their_share():
    c = run({"streaming_heads": {"share": 0.5, "tokens": 2048}}, "decode", 32768)
    # DuoAttention at 50 % streaming heads: 0.5·32,768 + 0.5·2,048 = 17,408 tokens read, + 1 written
    assert c["claim"]["bytes_by_group"]["attention"] == pytest.approx(17_409 * KV_TOKEN)
    assert c["claim"]["kv_bytes"] == pytest.approx(17_408 * KV_TOKEN)


def test_streaming_heads_window_the_prefill_on_their_share():
    c = run({"streaming_heads": {"share": 0.75, "tokens": 1024}}, "prefill", 8192)
    full = 8192 * 8193 / 2                                        # causal pairs
    windowed = 1024 * 1025 / 2 + (8192 - 1024) * 1024             # query i sees min(i, 1024) keys
    ratio = (0.25 * full + 0.75 * windowed) / full
    assert c["claim"]["flops_by_group"]["attention"] / c["baseline"]["flops_by_group"]["attention"] == \
        pytest.approx(ratio)


def test_sparse_attention_at_prefill_only_and_its_gain_grows_with_context():
    short = run({"sparse_attention": {"budget": 4096, "phases": ["prefill"]}}, "prefill", 4096)
    long = run({"sparse_attention": {"budget": 4096, "phases": ["prefill"]}}, "prefill", 32768)
    decode = run({"sparse_attention": {"budget": 4096, "phases": ["prefill"]}}, "decode", 32768)
    assert short["claim"]["flops_by_group"]["attention"] == short["baseline"]["flops_by_group"]["attention"]
    # 4,096·4,097/2 + 28,672·4,096 = 125,831,168 pairs of 32,768·32,769/2 = 536,887,296
    assert long["claim"]["flops_by_group"]["attention"] / long["baseline"]["flops_by_group"]["attention"] == \
        pytest.approx(125_831_168 / 536_887_296)
    assert decode["speedup"]["theoretical"] == 1.0


def test_sparse_attention_at_decode_reads_the_budget():
    c = run({"sparse_attention": {"budget": 5632, "phases": ["decode"]}}, "decode", 65536)
    # NSA's 5,632 tokens at 64k (its own count): 5,632 read + 1 written
    assert c["claim"]["bytes_by_group"]["attention"] == pytest.approx(5_633 * KV_TOKEN)


def test_fp8_attention_doubles_the_attention_peak_on_an_h100():
    base = run({"attention_flops": 1.0}, "prefill", 32768, hardware="h100-sxm")
    fp8 = run({"attention_dtype": "fp8"}, "prefill", 32768, hardware="h100-sxm")
    # H100 SXM: fp8 1,978.9 over fp16 989.4 TFLOP/s; at 32k tokens prefill attention is compute-bound
    # attention at 32k is compute-bound on both: its time halves, flops / 989.4e12 -> flops / 1978.9e12
    flops = base["claim"]["flops_by_group"]["attention"]
    assert fp8["claim"]["flops_by_group"] == base["claim"]["flops_by_group"]
    saved = base["claim"]["time_s"]["theoretical"] - fp8["claim"]["time_s"]["theoretical"]
    assert saved == pytest.approx(flops / 989.4e12 - flops / 1978.9e12, rel=1e-6)


def test_hadamard_rotations_cost_n_log2_n_vector_ops_per_token_and_layer():
    with_rot = run({"hadamard": {"size": 11008, "per_layer": 1}}, "prefill", 2048, batch=1)
    # 2,048 tokens x 32 layers x 11,008 x log2(11,008) vector ops (the fast Walsh-Hadamard transform)
    ops = 2048 * 32 * 11008 * math.log2(11008)
    fp32 = 19.5e12                       # A100 vector (fp32) peak; a 2k prefill's linear layers are compute-bound
    delta = with_rot["claim"]["time_s"]["theoretical"] - with_rot["baseline"]["time_s"]["theoretical"]
    assert delta == pytest.approx(ops / fp32, rel=1e-6)


def test_speculative_acceptance_per_workload_domain():
    card = {"id": "s", "title": "t", "direction": "decoding",
            "change": {"speculative": {"tokens_per_step": 3.8, "verify_tokens": 60, "draft_cost": 0.1,
                                       "by_domain": {"code": 4.4}}}}
    w = {"workloads": [{"name": "chat", "phase": "decode", "context": 2048, "batch": 1, "domain": "chat"},
                       {"name": "code", "phase": "decode", "context": 2048, "batch": 1, "domain": "code"}]}
    r = triage.evaluate(card, w).to_dict()
    t = {c["workload"]: c["claim"]["time_s"]["theoretical"] for c in r["cells"] if c["hardware"] == "a100-80gb"}
    # the same verify step and draft cost; time per token = (c·t + t_verify) / tokens per step: 3.8 vs 4.4
    assert t["code"] / t["chat"] == pytest.approx(3.8 / 4.4)
    assert r["warnings"] == []


def test_a_domain_no_workload_states_is_a_warning():
    card = {"id": "s", "title": "t", "direction": "decoding",
            "change": {"speculative": {"tokens": 4, "acceptance": 0.7, "draft_cost": 0.05,
                                       "by_domain": {"math": 0.8}}}}
    r = triage.evaluate(card).to_dict()
    assert "speculative.by_domain gives math, which no workload states" in r["warnings"][0]["message"]


SPEC = {"tokens_per_step": 2.0, "verify_tokens": 8, "draft_cost": 0.05, "by_domain": {"code": 3.0}}


def _spec_card(evidence, setting_domain="code"):
    return {"id": "s", "title": "t", "direction": "decoding", "change": {"speculative": SPEC},
            "claim": {"speedup": 2.5, "metric": "tpot",
                      "setting": {"model": "llama-2-7b", "batch": 1, "context": 1024, "domain": setting_domain}},
            "evidence": evidence}


def test_a_card_setting_in_a_domain_raises_no_false_domain_warning():
    w = {"workloads": [{"name": "code", "context": 2048, "domain": "code"}]}
    r = triage.evaluate(_spec_card({}), w).to_dict()
    assert [x for x in r["warnings"] if x["code"] == "domain-unused"] == []


def test_the_check_rests_on_the_number_of_the_settings_domain():
    quoted = {"change.speculative.by_domain.code": {"quote": "tau 3.0 on HumanEval", "where": "Table 1, v2"}}
    assert not triage.evaluate(_spec_card(quoted)).to_dict()["paper_check"]["assumed"][1:]
    default_only = {"change.speculative.tokens_per_step": {"quote": "2.0", "where": "Table 1, v2"}}
    c = triage.evaluate(_spec_card(default_only)).to_dict()["paper_check"]
    assert any("rests on the card's own assumption (by_domain.code 3.0)" in a for a in c["assumed"])
    admitted = {"change.speculative.by_domain.code": {"assumption": "we guess"}}
    c = triage.evaluate(_spec_card(admitted)).to_dict()["paper_check"]
    assert any("rests on the card's own assumption" in a for a in c["assumed"])
