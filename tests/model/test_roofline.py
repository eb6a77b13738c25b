"""The cost model against hand calculations, and against the mistakes other roofline calculators ship."""

import numpy as np
import pytest

import triage
from triage.inputs import catalog
from triage.inputs.specs import BYTES_PER_ELEMENT, bytes_per_element
from triage.model import roofline as costmodel
from triage.model.evidence import baseline_inputs

from conftest import GB, GiB, MiB, card, cell, load_workloads

CAT = catalog.load()


def _inputs(**workload):
    m = {"defaults": {"model": workload.pop("model", "llama-2-7b"), "hardware": workload.pop("hardware", "a100-80gb")},
         "workloads": [{"name": "w", **workload}]}
    return baseline_inputs(load_workloads(m)), m


def test_llama2_7b_decode_4k_on_a100_is_7_53_ms():
    # Hand calculation: 6,738,415,616 params − 2 × 32000·4096 (embedding, LM head) = 6,476,271,616 body
    # weights, + 131,072,000 LM head read whole = 6,607,343,616 weights × 2 B = 13.2147 GB;
    # KV 4096 × 524,288 B = 2.1475 GB (2 GiB) read + 524,288 B written; one embedding row 8,192 B;
    # fp32 logits 128,000 B. Total 15.3628 GB / 2.039e12 B/s = 7.534 ms.
    r = triage.evaluate(card({"kv_bytes": 1.0}), {"defaults": {"hardware": "a100-80gb"},
                                                  "workloads": [{"name": "w", "phase": "decode", "context": 4096}]})
    c = cell(r, "w")["baseline"]
    weights = c["bytes_by_group"]["linear"] + c["bytes_by_group"]["lm_head"]
    assert weights == 6_607_343_616 * 2
    assert weights / GB == pytest.approx(13.21, abs=0.005)
    assert c["bytes_by_group"]["attention"] == 4096 * 524_288 + 524_288
    assert c["bytes_per_step"] == 6_607_343_616 * 2 + 4097 * 524_288 + 8192 + 128_000
    assert c["time_s"]["theoretical"] * 1e3 == pytest.approx(7.534, abs=0.0005)
    # the unit mistake (GiB/s) would give 7.02 ms; charging the whole embedding 7.66 ms
    assert c["bytes_per_step"] / (2039 * GiB) * 1e3 == pytest.approx(7.017, abs=0.001)


def test_kv_cache_is_read_once_per_decode_step():
    x, _ = _inputs(phase="decode", context=8192, batch=4)
    kv = costmodel.step_cost(x).bytes["attention"][0]
    per_token = 524_288
    assert kv == 4 * 8192 * per_token + 4 * per_token          # read B·T rows once, write B new rows
    assert kv < 2 * 4 * 8192 * per_token * 0.51


def test_embedding_lookup_reads_rows_but_the_lm_head_is_read_whole():
    x, _ = _inputs(phase="decode", context=1, batch=8)
    cost = costmodel.step_cost(x)
    rows = 8 * 4096 * 2.0                                      # B rows of h fp16 values
    logits = 8 * 32000 * 4.0
    assert cost.bytes["other"][0] == rows + logits
    assert cost.bytes["lm_head"][0] == 32000 * 4096 * 2.0      # the whole V × h matrix


def test_tied_head_reads_the_same_matrix_whole_and_stores_it_once():
    untied = CAT.models["llama-2-7b"]
    from dataclasses import replace
    tied = replace(untied, key="tied", tie_word_embeddings=True)
    assert tied.params == untied.params - 32000 * 4096
    assert tied.body_params == untied.body_params
    assert tied.lm_head_params == untied.lm_head_params


def test_prefill_attention_is_causal():
    x, _ = _inputs(phase="prefill", context=2048, batch=2)
    flops = costmodel.step_cost(x).flops["attention"][0]
    # 4·L·H·d per query-key pair, P(P+1)/2 pairs per sequence: not P²
    assert flops == 4 * 32 * 32 * 128 * 2 * (2048 * 2049 / 2)
    assert flops < 4 * 32 * 32 * 128 * 2 * 2048**2 * 0.51


def test_decode_attention_flops_4_L_H_d_T_B():
    x, _ = _inputs(phase="decode", context=4096, batch=3)
    assert costmodel.step_cost(x).flops["attention"][0] == 4 * 32 * 32 * 128 * 4096 * 3


def test_int4_is_half_a_byte_not_zero():
    assert bytes_per_element("int4") == 0.5                      # not 4 // 8 == 0, the classic bug
    assert BYTES_PER_ELEMENT == {"fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0,
                                 "int8": 1.0, "int4": 0.5, "fp6": 0.75, "fp4": 0.5}   # 6/8 and 4/8 B


def test_int4_weights_in_a_workload_quarter_the_weight_bytes():
    m = {"defaults": {"precision": {"weights": "int4"}},
         "workloads": [{"name": "w", "phase": "decode", "context": 1, "batch": 1, "hardware": "a100-80gb"}]}
    r = triage.evaluate(card({"kv_bytes": 1.0}), m)
    assert cell(r, "w")["baseline"]["bytes_by_group"]["lm_head"] == 32000 * 4096 * 0.5


@pytest.mark.parametrize("key,dense", [("a100-80gb", 312e12), ("h100-sxm", 989.4e12), ("h100-pcie", 756e12),
                                       ("h200", 989.4e12), ("b200", 2250e12), ("l40s", 362.05e12),
                                       ("rtx-4090", 165.2e12), ("mi300x", 1307.4e12)])
def test_catalog_peaks_are_dense_not_sparse(key, dense):
    # datasheets print "with sparsity" at 2x; the catalog holds the dense figure
    assert CAT.hardware[key].peak("fp16") == dense


def test_prefill_is_compute_bound_and_decode_bandwidth_bound():
    r = triage.evaluate(card({"kv_bytes": 1.0}))
    assert cell(r, "prefill-2k", "h100-sxm")["baseline"]["compute_bound_fraction"] > 0.99
    assert cell(r, "chat-4k", "h100-sxm")["baseline"]["compute_bound_fraction"] == 0.0


def test_roofline_per_group_takes_the_max_then_sums():
    cost = costmodel.StepCost(flops={"linear": np.array([4e12]), "attention": np.array([0.0]),
                                     "lm_head": np.array([0.0]), "other": np.array([0.0])},
                              bytes={"linear": np.array([1e9]), "attention": np.array([2e12]),
                                     "lm_head": np.array([0.0]), "other": np.array([0.0])})
    # linear: max(4e12/1e15, 1e9/2e12) = 4 ms; attention: 2e12/2e12 = 1 s
    t = costmodel.step_time(cost, np.array([1e15]), np.array([2e12]))
    assert t[0] == pytest.approx(1.004)


def test_memory_and_largest_batch():
    # llama-2-7b at 4096 on an A100 80GB: 13.4768 GB of weights + 1 GiB reserve; each sequence holds
    # 2 GiB of KV plus (4·4096 + 2·11008)·2 B of activations and 32000·4 B of logits.
    x, m = _inputs(phase="decode", context=4096, batch=1)
    mem = costmodel.memory(x)
    per_seq = 2 * GiB + (4 * 4096 + 2 * 11008) * 2 + 32000 * 4
    assert mem.weights[0] == 6_738_415_616 * 2
    assert mem.per_sequence(np.array([0.0]))[0] == per_seq
    cap = 81920 * MiB
    expected = int((cap - 6_738_415_616 * 2 - GiB) // per_seq)
    assert expected == 33
    assert mem.max_batch(np.array([cap]), np.array([0.0]), np.array([GiB]))[0] == expected


def test_memory_waste_inflates_kv_and_shrinks_the_batch():
    x, _ = _inputs(phase="decode", context=4096, batch=1)
    mem = costmodel.memory(x)
    cap, res = np.array([81920 * MiB]), np.array([GiB])
    assert mem.max_batch(cap, np.array([0.5]), res)[0] == 16      # fragmentation halves the usable batch
    assert mem.max_batch(cap, np.array([0.0]), res)[0] == 33


def test_eager_attention_writes_scores_to_hbm():
    fused, _ = _inputs(phase="prefill", context=2048, batch=8)
    m = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb", "attention": "eager"},
         "workloads": [{"name": "w", "phase": "prefill", "context": 2048, "batch": 8}]}
    eager = baseline_inputs(load_workloads(m))
    extra = costmodel.step_cost(eager).bytes["attention"][0] - costmodel.step_cost(fused).bytes["attention"][0]
    # S written, read, P written, read: 4 passes of B·H·T²·2 B = 2.15 GB per layer, 32 layers
    assert extra == 4 * 32 * 8 * 32 * 2048 * 2048 * 2
    assert costmodel.memory(eager).activations_per_sequence[0] > costmodel.memory(fused).activations_per_sequence[0]


def test_vectorized_over_cells_matches_one_cell_at_a_time():
    grid = {"grid": {"phase": ["decode", "prefill"], "context": [512, 4096, 131072], "batch": [1, 16]},
            "defaults": {"hardware": ["a100-80gb", "h100-sxm"]}}
    r_all = triage.evaluate(card({"kv_bytes": 0.5}), grid)
    assert len(r_all) == 2 * 3 * 2 * 2
    for c in r_all.to_dict()["cells"]:
        one = {"defaults": {"hardware": c["hardware"]},
               "workloads": [{"name": "w", "phase": c["phase"], "context": c["context"], "batch": c["batch"]}]}
        single = cell(triage.evaluate(card({"kv_bytes": 0.5}), one), "w")
        assert single["speedup"] == c["speedup"]
        assert single["baseline"]["bytes_per_step"] == c["baseline"]["bytes_per_step"]
