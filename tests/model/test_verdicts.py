"""Verdicts and the decision on the shipped defaults and on hand-made cells."""

import pytest

import triage

from conftest import CLAIMS, card, cell, course_matrix


@pytest.fixture(scope="module")
def kv2x():
    return triage.evaluate(CLAIMS / "kv2x.yaml")


@pytest.mark.parametrize("hw", ["a100-80gb", "h100-sxm"])
def test_kv2x_chat_4k_is_no_go_at_1_075(kv2x, hw):
    c = cell(kv2x, "chat-4k", hw)
    assert c["model"] == "llama-2-7b"
    assert c["speedup"]["theoretical"] == pytest.approx(1.075, abs=0.001)
    assert c["verdict"] == "NO-GO"
    assert "below the 1.10× threshold" in c["reasons"][0]


@pytest.mark.parametrize("hw", ["a100-80gb", "h100-sxm"])
def test_kv2x_docqa_128k_is_conditional_at_1_72_while_long_context_untested(kv2x, hw):
    c = cell(kv2x, "docqa-128k", hw)
    assert c["speedup"]["theoretical"] == pytest.approx(1.722, abs=0.001)
    assert c["verdict"] == "CONDITIONAL"
    assert any("needle-in-a-haystack" in r for r in c["reasons"])


def test_kv2x_docqa_is_go_once_long_context_is_tested_and_an_engine_reads_the_format():
    tested = {"retained": 0.995, "long_context_tested": True}
    r = triage.evaluate(card({"kv_bytes": 0.5}, quality=tested, implementation={"kernel_in": "engine"}))
    assert cell(r, "docqa-128k", "h100-sxm")["verdict"] == "GO"
    # the same format with its kernel in the paper's code only: every attention backend must still read it
    paper = cell(triage.evaluate(card({"kv_bytes": 0.5}, quality=tested)), "docqa-128k", "h100-sxm")
    assert paper["verdict"] == "CONDITIONAL"
    assert any(r.startswith("integration: a KV-cache quantization format must be read by every attention backend")
               for r in paper["reasons"])


def test_high_concurrency_baseline_does_not_fit_at_batch_64():
    kv2x = triage.evaluate(CLAIMS / "kv2x.yaml", {"defaults": {"hardware": "h100-sxm"}, "workloads": [
        {"name": "chat-4k-b64", "context": 4096, "batch": 64}]})
    c = cell(kv2x, "chat-4k-b64", "h100-sxm")
    assert not c["baseline"]["fits"] and c["claim"]["fits"]
    assert c["baseline"]["max_batch"] == 33 and c["claim"]["max_batch"] == 66
    assert c["end_to_end_baseline_batch"] == 33
    assert any("the baseline does not fit at batch 64" in r for r in c["reasons"])
    # end-to-end is throughput: 64 sequences per claim step against 33 per baseline step
    assert c["speedup"]["end_to_end"] > c["speedup"]["implementation"]


def test_claim_that_does_not_fit_is_does_not_fit_not_an_assert():
    m = course_matrix(workloads=[{"name": "big", "phase": "decode", "context": 131072, "batch": 64}])
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}), m), "big")
    assert c["verdict"] == "DOES-NOT-FIT"
    assert c["reasons"][0].startswith("does not fit at batch 64: needs ")
    assert c["speedup"]["end_to_end"] is None


def test_quality_below_the_band_is_no_go():
    # 92 % retained: below the 93.0 % worst evaluation of a vendor-shipped INT4 checkpoint (defaults.py)
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}, quality={"retained": 0.92}), course_matrix()), "B")
    assert c["verdict"] == "NO-GO"
    assert ("quality beyond its band: quality retained 92.0 % (the card's one figure, a task average), against "
            "99.0 % (GO) and 93.0 % (CONDITIONAL)") in c["reasons"]


def test_quality_between_the_gate_and_the_band_is_conditional():
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}, quality={"retained": 0.98}), course_matrix()), "B")
    assert c["verdict"] == "CONDITIONAL"
    assert any(r.startswith("quality between its gate and its band") for r in c["reasons"])


@pytest.mark.parametrize("retained,verdict", [(0.925, "NO-GO"), (0.935, "CONDITIONAL")])
def test_the_band_sits_at_the_vendor_checkpoints_93_percent(retained, verdict):
    # RedHatAI Llama-3.1-8B-Instruct W4A16's worst reported evaluation, Arena-Hard 93.0 % (defaults.py)
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}, quality={"retained": retained}), course_matrix()), "B")
    assert c["verdict"] == verdict


def test_unreported_quality_is_conditional():
    # int8 weights on the course's workload A: 1.76x, no integration left (one GEMM kernel, offline)
    c = cell(triage.evaluate(card({"weight_bytes": 0.5}, direction="weights"), course_matrix()), "A")
    assert c["verdict"] == "CONDITIONAL"
    assert "the card reports no quality retained: the quality gate cannot be checked" in c["reasons"]


def test_unreported_quality_of_a_kv_format_only_the_paper_reads_is_no_go():
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}), course_matrix()), "B")
    assert c["verdict"] == "NO-GO"
    assert any(r.endswith("that work buys an unknown loss: NO-GO") for r in c["reasons"])


def test_slo_missed_is_conditional_and_min_gain_is_a_knob():
    base = {"quality": {"retained": 1.0, "long_context_tested": True}}
    tight = course_matrix(defaults={"model": "course-7b", "hardware": "course-gpu", "slo": {"tpot": "10 ms"},
                                    "efficiency": {"bandwidth": 1.0, "compute": 1.0}, "reserve": 0, "overhead": 0,
                                    "sequence_overhead": 0})
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}, **base), tight), "B")
    assert c["verdict"] == "CONDITIONAL"
    assert c["reasons"][-1] == "TPOT 24.18 ms (predicted) with the claim misses the 10.00 ms SLO"
    strict = course_matrix(defaults={"model": "course-7b", "hardware": "course-gpu", "min_gain": 2.0})
    assert cell(triage.evaluate(card({"kv_bytes": 0.5}, **base), strict), "B")["verdict"] == "NO-GO"


def test_overhead_lowers_the_end_to_end_gain():
    m = course_matrix(defaults={"model": "course-7b", "hardware": "course-gpu", "overhead": "20 ms",
                                "efficiency": {"bandwidth": 1.0, "compute": 1.0}})
    c = cell(triage.evaluate(card({"kv_bytes": 0.5}), m), "B")
    # (41.36 + 20) / (24.18 + 20) ms
    assert c["speedup"]["end_to_end"] == pytest.approx((41.3603 + 20) / (24.1804 + 20), abs=1e-4)


def test_decision_is_weighted_by_share():
    # by hand from the course's TPOTs (A 8.074 -> 7.537 ms, B 41.360 -> 24.180 ms), 256 tokens a request:
    #   99 % A: (0.99·8.074 + 0.01·41.36) / (0.99·7.537 + 0.01·24.18) = 1.0913, below 1.10: NO-GO
    #   90 % B: the fleet gain is 1.66: GO
    chat_heavy = course_matrix(workloads=[{"name": "A", "context": 4096, "share": 0.99},
                                          {"name": "B", "context": 131072, "share": 0.01}])
    doc_heavy = course_matrix(workloads=[{"name": "A", "context": 4096, "share": 0.1},
                                         {"name": "B", "context": 131072, "share": 0.9}])
    good = card({"kv_bytes": 0.5}, quality={"retained": 0.999, "long_context_tested": True},
                implementation={"kernel_in": "engine"})
    chat = triage.evaluate(good, chat_heavy).decision()
    assert chat["weighted_speedup"]["end_to_end"] == pytest.approx(1.091314, rel=1e-6)
    # below the threshold for the fleet, but B pays 1.71x of GPU-time: enable it where B runs
    assert chat["verdict"] == "CONDITIONAL" and "some workloads pay" in chat["rule"]
    d = triage.evaluate(good, doc_heavy).decision()
    assert d["verdict"] == "GO"
    assert d["shares"] == {"GO": pytest.approx(0.9), "CONDITIONAL": 0.0, "NO-GO": pytest.approx(0.1),
                           "DOES-NOT-FIT": 0.0}


def test_shares_default_to_equal_and_are_normalised():
    r = triage.evaluate(card({"kv_bytes": 0.5}), course_matrix())
    assert [c["share"] for c in r.to_dict()["cells"]] == [0.5, 0.5]
    r = triage.evaluate(card({"kv_bytes": 0.5}), course_matrix(workloads=[
        {"name": "A", "context": 4096, "share": 0.3}, {"name": "B", "context": 131072, "share": 0.3}]))
    assert [c["share"] for c in r.to_dict()["cells"]] == [0.5, 0.5]


def test_results_do_not_depend_on_workload_order():
    fwd = course_matrix()
    rev = course_matrix(workloads=list(reversed(fwd["workloads"])))
    a = {c["workload"]: c for c in triage.evaluate(card({"kv_bytes": 0.5}), fwd).to_dict()["cells"]}
    b = {c["workload"]: c for c in triage.evaluate(card({"kv_bytes": 0.5}), rev).to_dict()["cells"]}
    assert a == b
