"""Each mechanism against a hand calculation, and no knob that silently does nothing."""


import pytest

import triage
from triage.io.resources import schema
from triage.model import mechanisms

from conftest import GiB, card, cell, course_matrix

COURSE_A_BYTES = 14e9 + 4096 * 524_288 + 524_288          # weights + KV read + one token written


def _speedup(change, workload="A", **card_extra):
    r = triage.evaluate(card(change, **card_extra), course_matrix())
    return cell(r, workload)


def test_kv_bytes_halves_kv_read_and_stored():
    c = _speedup({"kv_bytes": 0.5})
    assert c["claim"]["bytes_per_step"] == 14e9 + (4096 * 524_288 + 524_288) / 2
    assert c["claim"]["kv_bytes"] == 1 * GiB


def test_kv_quant_kivi_format_with_its_fp16_residual():
    # KIVI (Liu et al. 2024 §3.3): 2 bits + an fp16 scale and zero per 32 elements = 3/16 of fp16 per element;
    # the 128 newest tokens stay fp16. Course A, 4096 tokens of 524,288 B: (3968 x 3/16 + 128) x 524,288 B.
    c = _speedup({"kv_quant": {"bits": 2, "group_size": 32, "scale_bits": 16, "zero_bits": 16,
                               "residual_tokens": 128}})
    assert c["claim"]["kv_bytes"] == (744 + 128) * 524_288


def test_kv_quant_outliers_cost_a_value_and_an_index_each():
    # KVQuant nuq4-1 %: 4/16 + 0.01 x 48/16 = 0.28 of fp16 (the paper's own saving: 3.7x = 0.27)
    c = _speedup({"kv_quant": {"bits": 4, "outliers": 0.01}})
    assert c["claim"]["kv_bytes"] == pytest.approx(0.28 * 4096 * 524_288, rel=1e-12)


def test_weight_bytes_halves_weights_read_and_stored():
    c = _speedup({"weight_bytes": 0.5})
    assert c["claim"]["bytes_per_step"] == 7e9 + 4096 * 524_288 + 524_288
    assert c["claim"]["weights_bytes"] == 7e9


def test_linear_flops_changes_flops_not_bytes():
    c = _speedup({"linear_flops": 0.5})
    assert c["claim"]["flops_by_group"]["linear"] == 0.5 * 2 * 7e9
    assert c["claim"]["bytes_per_step"] == c["baseline"]["bytes_per_step"]
    assert c["speedup"]["theoretical"] == 1.0                 # decode is bandwidth-bound: FLOPs are free


def test_attention_flops_halves_attention_flops():
    c = _speedup({"attention_flops": 0.5})
    assert c["claim"]["flops_by_group"]["attention"] == 0.5 * 4 * 32 * 32 * 128 * 4096


@pytest.mark.parametrize("spec,kept", [({"keep": 0.25}, 1024), ({"budget": 1000}, 1000), ({"budget": 10**6}, 4096)])
def test_kv_tokens_keep_or_budget_read_and_stored(spec, kept):
    c = _speedup({"kv_tokens": spec})
    assert c["claim"]["bytes_by_group"]["attention"] == kept * 524_288 + 524_288
    assert c["claim"]["kv_bytes"] == kept * 524_288
    assert c["claim"]["flops_by_group"]["attention"] == 4 * 32 * 32 * 128 * kept


def test_without_a_kernel_reads_keep_the_old_bytes_but_storage_shrinks():
    # (a quality figure inside the gate: without one, a KV format no engine kernel reads is NO-GO)
    c = _speedup({"kv_bytes": 0.5}, "B", implementation={"kernel": False}, quality={"retained": 0.995})
    assert c["speedup"]["theoretical"] == pytest.approx(1.711, abs=5e-4)
    # only the one new token's KV is written in the compressed format: 1 + 0.25 MiB / 82.7 GB
    base = 14e9 + 131073 * 524_288
    assert c["speedup"]["implementation"] == pytest.approx(base / (base - 524_288 / 2), rel=1e-12)
    assert c["claim"]["kv_bytes"] == 32 * GiB
    assert c["verdict"] == "CONDITIONAL"
    assert any("no kernel reads the new format" in r for r in c["reasons"])


def test_card_efficiency_applies_only_to_the_kernels_it_replaces():
    # KV at 128k: weights 14e9 B at 100 %, KV 32 GiB at 50 % of the bandwidth
    c = _speedup({"kv_bytes": 0.5}, "B", implementation={"bandwidth_efficiency": 0.5})
    base = 14e9 + 131072 * 524_288 + 524_288
    claim = 14e9 + (131072 * 524_288 + 524_288) / 2 / 0.5
    assert c["speedup"]["implementation"] == pytest.approx(base / claim)


def test_every_schema_change_key_has_a_mechanism_and_back():
    keys = set(schema("claim")["properties"]["change"]["properties"])
    assert keys == set(mechanisms.REGISTRY)


@pytest.mark.parametrize("key,value", [("kv_bytes", 0.5), ("weight_bytes", 0.5), ("linear_flops", 0.5),
                                       ("attention_flops", 0.5), ("kv_tokens", {"keep": 0.5})])
def test_no_change_key_is_a_silent_no_op(key, value):
    r = triage.evaluate(card({key: value}), course_matrix(workloads=[
        {"name": "d", "phase": "decode", "context": 4096, "batch": 1},
        {"name": "p", "phase": "prefill", "context": 4096, "batch": 8}]))
    d = r.to_dict()["cells"]
    changed = [c for c in d if c["claim"]["bytes_per_step"] != c["baseline"]["bytes_per_step"]
               or c["claim"]["flops_per_step"] != c["baseline"]["flops_per_step"]]
    assert changed, f"{key} changed nothing on any cell"


@pytest.mark.parametrize("change", [{"prefill_attention_flops": 0.5}, {"sparse_attention": {"budget": 1024,
                                                                                          "phases": ["prefill"]}}])
def test_a_prefill_only_kernel_leaves_the_decode_cells_kernels_as_they_were(change):
    """A prefill-only mechanism replaces no decode kernel: its card's efficiencies (here half the baseline's) do
    not touch a decode cell, which stays exactly 1.000x, as its does-not-act warning says."""
    r = triage.evaluate(card(change, implementation={"compute_efficiency": 0.5, "bandwidth_efficiency": 0.5}),
                        course_matrix(workloads=[{"name": "d", "phase": "decode", "context": 4096, "batch": 1}]),
                        analyse=False).to_dict()
    (c,) = r["cells"]
    assert c["speedup"]["implementation"] == 1.0 and c["speedup"]["end_to_end"] == 1.0
    assert any("priced unchanged" in w["message"] for w in r["warnings"])
