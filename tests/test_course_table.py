"""Every row of docs/design.md's table of the course's worked numbers, as a golden test.

The course's model: L=32, H=32, d_head=128, fp16, 7.0e9 parameters (14 GB).
The tool is unit-exact (GB = 1e9 B, GiB = 2**30 B), so its times sit ~7 %
above the course's GiB-over-TB/s figures while every ratio matches.
"""

import numpy as np
import pytest

import triage
from triage.inputs import catalog
from triage.inputs.claim import HOURS_PER_WEEK
from triage.inputs.specs import Hardware
from triage.model import roofline as costmodel
from triage.model.evidence import baseline_inputs

from conftest import CLAIMS, COURSE, GiB, cell, course_matrix, load_workloads

COURSE_7B = catalog.load().models["course-7b"]


def test_kv_bytes_per_token_is_half_a_mib():
    # 2 · L · H_kv · d · 2 B = 2 · 32 · 32 · 128 · 2 = 524,288 B
    assert COURSE_7B.kv_elements_per_token * 2 == 524_288


@pytest.mark.parametrize("context,batch,gib", [(4096, 1, 2), (131072, 1, 64), (4096, 16, 32)])
def test_kv_cache_sizes(context, batch, gib):
    # 4096 × 0.5 MiB = 2 GiB; 131072 × 0.5 MiB = 64 GiB; 16 × 4096 × 0.5 MiB = 32 GiB
    m = course_matrix(workloads=[{"name": "w", "phase": "decode", "context": context, "batch": batch}])
    r = triage.evaluate({"id": "x", "title": "x", "direction": "cache", "change": {"kv_bytes": 1.0}}, m)
    assert cell(r, "w")["baseline"]["kv_bytes"] == gib * GiB


def test_weights_plus_kv_at_128k_fit_an_80_gib_card_with_3_gib_left():
    r = triage.evaluate(CLAIMS / "int8-kv.yaml", COURSE)
    b = cell(r, "B-docqa-128k")["baseline"]
    assert b["weights_bytes"] == 14e9                                   # 14 GB = 13.04 GiB
    assert b["weights_bytes"] / GiB == pytest.approx(13.04, abs=0.005)
    assert (b["weights_bytes"] + b["kv_bytes"]) / GiB == pytest.approx(77.04, abs=0.005)
    assert b["fits"] and b["max_batch"] == 1
    # 80 GiB − 77.04 GiB = 2.96 GiB left for activations and fragmentation
    assert (80 * GiB - b["weights_bytes"] - b["kv_bytes"]) / GiB == pytest.approx(2.96, abs=0.005)


def test_decode_arithmetic_intensity_of_the_weights_is_one():
    x = baseline_inputs(load_workloads(course_matrix()))
    cost = costmodel.step_cost(x)
    # 2N FLOP over 2N bytes at batch 1
    np.testing.assert_allclose(cost.flops["linear"] / cost.bytes["linear"], 1.0)


def test_ridge_point_1000_tflops_over_3_tbs():
    hw = Hardware("h", "h", 80 * GiB, 3e12, {"fp16": 1000e12})
    assert hw.ridge_point("fp16") == pytest.approx(333.33, abs=0.01)


def test_decode_lower_bound_14_gb_at_2_tbs():
    x = baseline_inputs(load_workloads(course_matrix()))
    weights_read = costmodel.step_cost(x).bytes["linear"][0]
    assert weights_read == 14e9
    t = weights_read / 2e12
    assert t == pytest.approx(7.0e-3)
    assert 1 / t == pytest.approx(142.86, abs=0.01)                   # tokens/s


def test_prefill_2048_tokens_at_500_tflops():
    m = course_matrix(workloads=[{"name": "p", "phase": "prefill", "context": 2048, "batch": 1}])
    x = baseline_inputs(load_workloads(m))
    linear = costmodel.step_cost(x).flops["linear"][0]
    assert linear == pytest.approx(2.867e13, rel=1e-4)                 # 2 · 7e9 · 2048
    t = linear / 500e12
    assert t == pytest.approx(57.3e-3, abs=0.05e-3)
    assert t / 2048 == pytest.approx(0.028e-3, rel=1e-3)
    # decode vs prefill time per token: 7 ms / 0.028 ms = 250
    assert (14e9 / 2e12) / (t / 2048) == pytest.approx(250.0)


def test_attention_scores_per_head_and_per_layer():
    one = costmodel.attention_score_bytes(1, 1, 2048, 2048, 2.0)
    assert one == 8_388_608                                            # 8.4 MB per head, fp16
    assert costmodel.attention_score_bytes(8, 32, 2048, 2048, 2.0) == pytest.approx(2.147e9, rel=1e-3)


@pytest.mark.parametrize("card,workload,bound", [
    ("int8-kv.yaml", "A-chat-4k", 1.071),
    ("int8-weights.yaml", "A-chat-4k", 1.765),
    ("int8-kv.yaml", "B-docqa-128k", 1.711),
    ("int8-weights.yaml", "B-docqa-128k", 1.092),
])
def test_scenario_bounds(card, workload, bound):
    r = triage.evaluate(CLAIMS / card, COURSE)
    assert cell(r, workload)["speedup"]["theoretical"] == pytest.approx(bound, abs=0.0005)


def test_both_at_128k_is_exactly_two_not_the_product():
    r = triage.evaluate(CLAIMS / "int8-weights-kv.yaml", COURSE)
    b = cell(r, "B-docqa-128k")
    assert b["speedup"]["theoretical"] == pytest.approx(2.0, rel=1e-12)   # not 1.092 × 1.711 = 1.868
    # the course's "38.5 GiB": 7 GB of int8 weights (6.52 GiB) + 32 GiB of int8 KV
    assert b["claim"]["bytes_per_step"] / GiB == pytest.approx(38.52, abs=0.01)


@pytest.mark.parametrize("card,workload,base_ms,claim_ms", [
    ("int8-weights.yaml", "A-chat-4k", 8.07, 4.57),
    ("int8-kv.yaml", "A-chat-4k", 8.07, 7.54),
    ("int8-kv.yaml", "B-docqa-128k", 41.4, 24.2),
    ("int8-weights.yaml", "B-docqa-128k", 41.4, 37.9),
    ("int8-weights-kv.yaml", "B-docqa-128k", 41.4, 20.7),
])
def test_tpot_at_2_tbs(card, workload, base_ms, claim_ms):
    r = triage.evaluate(CLAIMS / card, COURSE)
    c = cell(r, workload)
    digits = 0.005 if base_ms < 10 else 0.05
    assert c["baseline"]["time_s"]["theoretical"] * 1e3 == pytest.approx(base_ms, abs=digits)
    assert c["claim"]["time_s"]["theoretical"] * 1e3 == pytest.approx(claim_ms, abs=digits)


@pytest.mark.parametrize("kv_bytes,gib", [(1.0, 16), (0.5, 8)])
def test_exercise_2_gib_kv_times_8_concurrent(kv_bytes, gib):
    m = course_matrix(workloads=[{"name": "w", "phase": "decode", "context": 4096, "batch": 8}])
    r = triage.evaluate({"id": "x", "title": "x", "direction": "cache", "change": {"kv_bytes": kv_bytes}}, m)
    assert cell(r, "w")["claim"]["kv_bytes"] == gib * GiB


def test_reproduction_cost_2688_gpu_hours():
    r = triage.evaluate(CLAIMS / "kv2x.yaml")
    assert r.claim.gpu_hours == 2688 == 8 * 2 * HOURS_PER_WEEK
    assert r.to_dict()["decision"]["reproduction_gpu_hours"] == 2688


def test_time_saved_and_speedup_are_not_confused():
    # "saving half of the bytes saves at most a third of the time" is wrong: at 128k the
    # int8-KV claim saves 41.5 % of the time, a 1.71x speedup; 25 % saved would be 1.33x.
    r = triage.evaluate(CLAIMS / "int8-kv.yaml", COURSE)
    c = cell(r, "B-docqa-128k")
    saved, speedup = c["time_saved_fraction"]["theoretical"], c["speedup"]["theoretical"]
    assert speedup == pytest.approx(1 / (1 - saved))
    assert saved == pytest.approx(0.4154, abs=1e-4)
