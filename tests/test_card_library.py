"""The card library against its sources: every card passes `validate --strict`, the review's findings on each
paper card (issue 12) no longer describe it, and the paper check names the right explanation where it flags one.

The numbers asserted are the papers' (quoted with where they stand in each card's `evidence`) and the check's
outcomes in those settings; where a test states a bound, the hand calculation is beside it.
"""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import triage
from triage.cli import main

CLAIMS = Path(__file__).parent.parent / "claims"
CARDS = sorted(CLAIMS.glob("*.yaml"))


def card(name):
    return yaml.safe_load((CLAIMS / f"{name}.yaml").read_text(encoding="utf-8"))


pytestmark = pytest.mark.slow          # every card evaluated: the library's review, run by the whole suite


@pytest.fixture(scope="module")
def checks():
    return {p.stem: triage.evaluate(p).to_dict()["paper_check"] for p in CARDS}


def test_every_card_passes_strict_validation():
    res = CliRunner().invoke(main, ["validate", "--strict", *map(str, CARDS)])
    assert res.exit_code == 0, res.output


def test_every_paper_card_cites_each_number_with_a_version():
    for path in CARDS:
        d = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "paper" in d and "speedup" in d.get("claim", {}):
            assert "claim.speedup" in d.get("evidence", {}), path.stem


def test_at_least_twelve_new_paper_cards_of_2023_to_2026():
    new = ["duoattention", "minference", "quarot", "fp8-inference", "marlin", "flashattention-3", "flashinfer",
           "eagle-3", "lookahead-decoding", "deepseek-v3", "nsa", "sarathi-serve"]
    for name in new:
        d = card(name)
        assert 2023 <= d["paper"]["year"] <= 2026 and d.get("evidence"), name


# ---- the review's table, card by card ----

def test_flashattention_2_is_an_attention_training_number_not_a_prefill_ttft(checks):
    c = card("flashattention-2")
    assert c["claim"]["scope"] in ("training", "attention") and c["claim"].get("metric") != "ttft"
    assert checks["flashattention-2"]["bound"] is None or checks["flashattention-2"]["scope"] != "end-to-end"


def test_h2o_states_its_t4_offloading_setting_and_is_flagged_for_it(checks):
    s = card("h2o")["claim"]["setting"]
    assert (s["hardware"], s["model"], s["batch"]) == ("t4", "opt-30b", 8) and "offload" in s
    h2o = checks["h2o"]
    assert h2o["exceeds_bound"] and h2o["likely_sources"][0].startswith("an offloading baseline")


def test_kvquant_is_a_kernel_timing_on_an_a6000():
    c = card("kvquant")["claim"]
    assert c["scope"] in ("kernel", "attention") and c["setting"]["hardware"] == "rtx-a6000"
    assert c["setting"]["context"] == 16384 and c["speedup"] == pytest.approx(1.74)   # 219.4 / 126.3 µs


def test_quest_pairs_2_23x_with_4bit_weights():
    c = card("quest")["claim"]
    # the repository's Fig. 10: 4-bit AWQ weights, 29.6 ms -> 13.3 ms per token at 32k, budget 2048
    assert c["speedup"] == pytest.approx(29.6 / 13.3, abs=0.01) and c["setting"]["precision"]["weights"] == "int4"


def test_sglang_names_its_real_baselines_and_a10g():
    c = card("radixattention-sglang")["claim"]
    assert c["setting"]["hardware"] == "a10g" and "TGI" not in c["baseline"] and "vLLM" in c["baseline"]


def test_smoothquant_is_a_prefill_number():
    c = card("smoothquant")["claim"]
    assert (c["metric"], c["setting"]["phase"], c["setting"]["batch"]) == ("ttft", "prefill", 4)


def test_snapkv_takes_the_latency_number_at_its_setting():
    c = card("snapkv")["claim"]
    assert c["speedup"] == 3.6 and (c["setting"]["batch"], c["setting"]["context"]) == (2, 16384)


def test_kivi_counts_its_fp16_residual():
    # 2-bit + fp16 scale and zero per 32 = 3/16 of fp16, but the last 128 tokens stay fp16: at 161 + 338 = 499
    # tokens, (371 x 3/16 + 128) / 499 = 0.3959 of the fp16 bytes
    w = {"workloads": [{"name": "sharegpt-end", "model": "llama-2-7b", "hardware": "a100-80gb", "phase": "decode",
                        "context": 499, "batch": 1}]}
    c = triage.evaluate(CLAIMS / "kivi.yaml", w, analyse=False).to_dict()["cells"][0]
    assert c["claim"]["kv_bytes"] / c["baseline"]["kv_bytes"] == pytest.approx((371 * 3 / 16 + 128) / 499, rel=1e-9)


def test_awq_takes_the_measured_row_not_the_demo_caption():
    assert card("awq")["claim"]["speedup"] == pytest.approx(16.17 / 6.02, abs=0.01)


def test_eagle_70b_runs_sharded_as_the_paper_did(checks):
    s = card("eagle")["claim"]["setting"]
    assert s["hardware"] == "a100-40gb" and s["tp"] == 4 and checks["eagle"]["baseline_fits"]


def test_deepseek_v2_is_against_another_model_on_h800s():
    s = card("mla-deepseek-v2")["claim"]["setting"]
    assert s["hardware"] == "h800-sxm" and "baseline_model" in s and s["tp"] == 8


def test_vllm_13b_is_opt_13b_on_one_a100_40gb():
    s = card("pagedattention-vllm")["claim"]["setting"]
    assert s["hardware"] == "a100-40gb" and "opt-13b" in s["model"] and s.get("tp", 1) == 1


def test_qserve_states_its_input_length():
    assert card("qserve")["claim"]["setting"]["context"] == 1024


def test_streamingllm_is_flagged_for_its_recomputation_baseline(checks):
    s = card("streamingllm")["claim"]
    assert s["setting"]["hardware"] == "rtx-a6000"
    st = checks["streamingllm"]
    assert st["exceeds_bound"] and "re-computation" in st["likely_sources"][0]


def test_flash_decoding_is_flagged_as_an_implementation_gain(checks):
    fd = checks["flash-decoding"]
    assert fd["exceeds_bound"] and fd["bound"] == pytest.approx(1.0)
    assert any("kernel better than the baseline" in s for s in fd["likely_sources"])


def test_gptq_and_llm_int8_state_the_gpus_their_fp16_baselines_needed(checks):
    for name in ("gptq", "llm-int8"):
        s = card(name)["claim"]["setting"]
        assert s.get("tp", 1) * s.get("pipeline", 1) >= 5, name
        assert checks[name]["baseline_fits"], name


def test_speculative_cards_rest_on_the_papers_tokens_per_step(checks):
    for name in ("eagle", "eagle-3", "medusa"):
        c = card(name)
        assert "change.speculative.tokens_per_step" in c["evidence"], name
        assert not any("rests on the card's own assumption" in a for a in checks[name]["assumed"]), name


def test_the_awq_check_runs_on_its_rtx_4090(checks):
    awq = checks["awq"]
    assert awq["setting"]["hardware"] == "rtx-4090" and not awq["exceeds_bound"]


def test_no_setting_or_no_number_gives_no_bound(checks):
    assert checks["kv2x"]["bound"] is None and checks["kv2x"]["reported"] is None
    assert checks["gqa"]["bound"] is None and checks["gqa"]["note"] == "the card states no setting"


def test_a_scheduler_number_is_not_bounded_by_a_step(checks):
    s = checks["sarathi-serve"]
    assert s["bound"] is None and "serving number" in s["note"]


def test_every_new_mechanism_has_a_card():
    used = {k for p in CARDS for k in yaml.safe_load(p.read_text(encoding="utf-8")).get("change", {})}
    assert {"streaming_heads", "sparse_attention", "attention_dtype", "hadamard"} <= used
