"""The verdicts a reviewer checks first, on the shipped default matrix (or one-off flags), each against the reason
a reviewer would give (issue 21's "Done when"). The hand numbers beside each test are independent of the code."""

import triage

from conftest import CLAIMS


def _cells(card, workloads=None):
    d = triage.evaluate(CLAIMS / card, workloads, analyse=False).to_dict()
    return d, d["cells"]


def test_awq_4bit_g128_is_adoptable_with_a_reason_in_perplexity_terms():
    # AWQ INT4 g128 on Llama-2-7B, WikiText-2 5.47 -> 5.60 (paper Table 4): +2.4 % perplexity, between the +1 %
    # gate and the +5 % band, so opt-in (CONDITIONAL), never the accuracy gate's "0.977 retained"
    d, cells = _cells("awq.yaml")
    assert d["decision"]["verdict"] in {"GO", "CONDITIONAL"}
    paying = [c for c in cells if c["verdict"] == "CONDITIONAL"]
    assert paying and all(any("wikitext2 perplexity 5.47 → 5.60 (+2.4 %)" in r for r in c["reasons"])
                          for c in paying)


def test_int8_weights_on_llama_3_70b_on_one_h100_is_priced_as_capacity():
    # Llama-3-70B: 70.6e9 weights x 2 B = 141 GB in fp16 > 80 GB of one H100; x 1 B = 70.6 GB in int8 fits with a
    # 4,096-token sequence (80 layers x 8 KV heads x 128 x 2 x 2 B = 0.33 MB a token, 1.3 GB). The baseline needs
    # two GPUs, the claim one: GPU-time for the same requests, not a step's latency, is the gain
    one = triage.evaluate(CLAIMS / "int8-weights.yaml", {
        "defaults": {"model": "llama-3-70b", "hardware": "h100-sxm"},
        "workloads": [{"name": "one-h100", "phase": "decode", "context": 4096, "batch": 1}]},
        analyse=False).to_dict()
    (cell,) = one["cells"]
    # CONDITIONAL, not GO: the course card states no quality figure for int8 weights
    assert one["decision"]["verdict"] == "CONDITIONAL" and cell["verdict"] == "CONDITIONAL"
    assert cell["baseline_gpus"] == 2 and cell["end_to_end_metric"] == "gpu_time_per_request"
    assert any(r.startswith("capacity: the baseline holds not one sequence on 1 GPU(s)") for r in cell["reasons"])


def test_a_2bit_kv_format_with_only_a_paper_kernel_is_not_go_and_names_fp8_kv_and_the_attention_backends():
    # KIVI: 2-bit KV with fp16 scales and zeros per 32 values and a 128-token fp16 residual; engines ship fp8 KV
    # (half of fp16), so the question is what 2 bits add over 8
    d, cells = _cells("kivi.yaml")
    assert d["decision"]["verdict"] == "NO-GO"
    assert d["decision"]["incumbent"]["name"] == "fp8 KV cache"
    reasons = [r for c in cells for r in c["reasons"]]
    assert any("the shipped alternative (fp8 KV cache)" in r or "over the shipped alternative (fp8 KV cache)" in r
               for r in reasons)
    assert any(r.startswith("integration: a KV-cache quantization format must be read by every attention backend")
               for r in reasons)


def test_a_scheduler_card_gains_on_the_default_matrixs_serving_workload():
    # Sarathi-Serve's chunked prefill on the Azure conversation trace (serve-conv, the default matrix's traffic):
    # a non-trivial gain at the SLO where the step-level cells are untouched (and say so)
    d, cells = _cells("sarathi-serve.yaml")
    (conv,) = [c for c in cells if c["workload"] == "serve-conv"]
    assert conv["speedup"]["end_to_end"] > 1.10
    assert any(w["code"] == "no-effect" for w in d["warnings"])
