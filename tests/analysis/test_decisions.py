"""Decisions across workloads: stacking, comparing, crossover, SLO throughput, figures, measurements, calibration."""

import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import triage
from triage.analysis import calibrate
from triage.cli import main
from triage.errors import UserError
from triage.inputs import cards
from triage.inputs.change import to_json
from triage.report.calibration import as_json
from triage.report.result import with_measurements

from conftest import CLAIMS, COURSE, ROOT, cell, course_matrix, load_workloads

EXAMPLES = ROOT / "examples"


@pytest.fixture
def runner():
    return CliRunner()


# ---- stacking ----

def test_stacking_adds_savings_it_does_not_multiply():
    r = triage.evaluate([CLAIMS / "int8-weights.yaml", CLAIMS / "int8-kv.yaml"], COURSE)
    b = cell(r, "B-docqa-128k")
    assert b["stack"]["combined"] == pytest.approx(2.0, rel=1e-12)            # the course's 38.5 GiB: 2.0x
    assert b["stack"]["product"] == pytest.approx(1.0924 * 1.7105, abs=1e-3)  # what multiplying would say
    assert r.claim.gpu_hours == 2 * 2688


def test_a_card_can_list_the_cards_it_stacks():
    claim = cards.load(CLAIMS / "gqa-int8-kv.yaml")
    assert to_json(claim.change) == {"kv_heads": 8, "kv_quant": {"bits": 8}}
    assert [c.id for c in claim.stacked] == ["gqa", "int8-kv"]


def test_stacking_refuses_ambiguous_keys(tmp_path):
    a = tmp_path / "a.yaml"
    a.write_text("id: a\ntitle: a\ndirection: cache\nchange: {kv_tokens: {keep: 0.5}}\n")
    b = tmp_path / "b.yaml"
    b.write_text("id: b\ntitle: b\ndirection: cache\nchange: {kv_tokens: {budget: 100}}\n")
    with pytest.raises(UserError, match="'a' and 'b' both set kv_tokens"):
        triage.evaluate([a, b])
    loop = tmp_path / "loop.yaml"
    loop.write_text("id: loop\ntitle: l\ndirection: cache\nstack: [loop.yaml, a.yaml]\n")
    with pytest.raises(UserError, match="stacks itself"):
        cards.load(loop)


def test_cli_needs_stack_for_several_cards(runner):
    args = ["run", str(CLAIMS / "int8-weights.yaml"), str(CLAIMS / "int8-kv.yaml")]
    assert runner.invoke(main, args).exit_code == 2
    res = runner.invoke(main, [*args, "--stack", "-w", str(COURSE)])
    assert res.exit_code == 0 and "## Stacking is not multiplying" in res.stdout


# ---- compare ----

def _fleet(cells):
    """Σ share·t(baseline) ÷ Σ share·t(claim) over the cells both sides serve, from the JSON alone."""
    both = [c for c in cells if c["baseline"]["time_per_request_s"] is not None
            and c["claim"]["time_per_request_s"] is not None]
    return (sum(c["share"] * c["baseline"]["time_per_request_s"] for c in both)
            / sum(c["share"] * c["claim"]["time_per_request_s"] for c in both))


def test_the_fleet_gain_is_gpu_time_over_gpu_time_not_a_mean_of_ratios():
    # int8 KV on the course's A (70 % of requests) and B (30 %), 256 output tokens each, by hand from the course
    # TPOTs at 2 TB/s: A 8.074004 → 7.537004 ms, B 41.360001 → 24.180000 ms
    #   (0.7·8.074004 + 0.3·41.360001) / (0.7·7.537004 + 0.3·24.180000) = 1.441336
    # (the arithmetic mean of the two speedups, 0.7·1.0712 + 0.3·1.7105 = 1.263, answers no question)
    m = course_matrix(workloads=[{"name": "A", "phase": "decode", "context": 4096, "batch": 1, "share": 0.7},
                                 {"name": "B", "phase": "decode", "context": 131072, "batch": 1, "share": 0.3}])
    d = triage.evaluate(CLAIMS / "int8-kv.yaml", m).to_dict()
    assert d["decision"]["weighted_speedup"]["end_to_end"] == pytest.approx(1.441336, rel=1e-6)
    assert d["decision"]["share_is"] == "fraction of requests"
    a = next(c for c in d["cells"] if c["workload"] == "A")
    assert a["baseline"]["time_per_request_s"] == pytest.approx(256 * 8.074003968e-3, rel=1e-9)


@pytest.mark.parametrize("card", ["kv2x.yaml", "int8-weights.yaml", "eagle.yaml", "pagedattention-vllm.yaml",
                                  "course-continuous-batching.yaml", "course-tp2.yaml"])
@pytest.mark.parametrize("workloads", [None, "mix-chat.yaml", "mix-longdoc.yaml", "course.yaml"])
def test_the_fleet_gain_recomputes_from_its_own_cells(card, workloads):
    d = triage.evaluate(CLAIMS / card, EXAMPLES / workloads if workloads else None, analyse=False).to_dict()
    gain = d["decision"]["weighted_speedup"]["end_to_end"]
    assert gain == pytest.approx(_fleet(d["cells"]), rel=1e-12)


@pytest.mark.parametrize("mix,first", [("mix-chat.yaml", "gqa-int8-kv"), ("mix-longdoc.yaml", "gqa-int8-kv")])
def test_compare_reproduces_the_course_choice(runner, mix, first):
    res = runner.invoke(main, ["compare", str(CLAIMS / "kv2x.yaml"), str(CLAIMS / "gqa-int8-kv.yaml"),
                               str(CLAIMS / "int8-weights.yaml"), "-w", str(EXAMPLES / mix), "-f", "json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["recommendation"]["first"] == first
    ranks = [(["GO", "CONDITIONAL", "NO-GO"].index(o["decision"]), -o["weighted_speedup"]) for o in doc["overall"]]
    assert ranks == sorted(ranks)                 # by decision, then by fleet gain
    # ranked by the fleet gain each claim's own cells give (mix-chat: 90 % of requests are 4k chats, but a 128k
    # request costs ~5x the GPU-time, so the long documents are ~35 % of the fleet's GPU-time and GQA + int8 KV
    # saves more of it than int8 weights do)
    for o in doc["overall"]:
        own = triage.evaluate(CLAIMS / f"{o['claim']}.yaml", EXAMPLES / mix, analyse=False).to_dict()["cells"]
        assert o["weighted_speedup"] == pytest.approx(_fleet(own), rel=1e-12)
    chat = next(c for c in doc["cells"] if c["workload"] == "chat-4k")
    assert chat["best"] == "int8-weights"            # the course: workload A quantizes weights first
    doc_cell = next(c for c in doc["cells"] if c["workload"] == "docqa-128k")
    assert doc_cell["best"] == "gqa-int8-kv"         # workload B shrinks the KV first


def test_compare_never_recommends_a_no_go_over_an_adoptable_claim(runner):
    """The newcomer's `compare fp6 awq int8-weights` recommended AWQ while AWQ was NO-GO on 100 % of the
    requests. GPTQ gains the most on the default matrix (1.385x, against Marlin's 1.341x and int8 weights'
    1.212x) but is NO-GO: its 3-bit point loses +5.6 % perplexity on PTB, beyond the +5 % band. Marlin (4-bit
    g128: MMLU 40.07 / 41.80 = 95.9 % retained, inside the 93 % band) and int8 weights are CONDITIONAL: Marlin
    goes first, and no workload's best is a claim that is NO-GO there."""
    res = runner.invoke(main, ["compare", str(CLAIMS / "gptq.yaml"), str(CLAIMS / "int8-weights.yaml"),
                               str(CLAIMS / "marlin.yaml"), "-f", "json"])
    doc = json.loads(res.stdout)
    assert [(o["claim"], o["decision"]) for o in doc["overall"]] == [
        ("marlin", "CONDITIONAL"), ("int8-weights", "CONDITIONAL"), ("gptq", "NO-GO")]
    assert doc["overall"][2]["weighted_speedup"] > doc["overall"][0]["weighted_speedup"]
    assert doc["recommendation"]["first"] == "marlin"
    assert "gptq gains more" in doc["recommendation"]["reason"] and "but is NO-GO" in doc["recommendation"]["reason"]
    for c in doc["cells"]:
        verdict = {r["claim"]: r["verdict"] for r in c["ranking"]}
        assert c["best"] is None or verdict[c["best"]] in ("GO", "CONDITIONAL")
    assert {o["claim"]: o["traffic_won"] for o in doc["overall"]}["gptq"] == 0.0


def test_compare_of_only_no_go_claims_recommends_none(runner):
    res = runner.invoke(main, ["compare", str(CLAIMS / "gptq.yaml"), str(CLAIMS / "sparsegpt-2-4.yaml"), "-f", "json"])
    rec = json.loads(res.stdout)["recommendation"]
    assert rec == {"first": None, "reason": "every claim is NO-GO on this matrix"}


def test_compare_markdown(runner):
    res = runner.invoke(main, ["compare", str(CLAIMS / "kv2x.yaml"), str(CLAIMS / "int8-weights.yaml")])
    assert res.stdout.startswith("<!-- triage comparison") and "## Per workload" in res.stdout
    assert runner.invoke(main, ["compare", str(CLAIMS / "kv2x.yaml")]).exit_code == 2


# ---- crossover, SLO throughput, sensitivity, verification plan ----

@pytest.fixture(scope="module")
def kv2x_analysis():
    return triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()["analysis"]


def test_kv2x_crossover_context(kv2x_analysis):
    a100 = next(x for x in kv2x_analysis["crossover"] if x["hardware"] == "a100-80gb")
    rows = {r["batch"]: r for r in a100["rows"]}
    # a 2x KV saving reaches 1.10x once KV is 18 % of the bytes: 6k tokens at batch 1 for Llama 2 7B; it pays
    # only where both sides fit: 72,422,514,688 B of room / 524,288 B per token = 138,135 tokens at batch 1
    # (the grid's 128k), / 16 sequences = 8,633 tokens at batch 16 (the grid's 8k)
    assert rows[1]["theoretical"] == "from 6k to 128k tokens" and rows[1]["first_context"] == 6144
    assert rows[16]["theoretical"] == "from 384 to 8k tokens"
    assert "at batch 1 it pays from 6k to 128k tokens" in a100["text"]


def test_slo_throughput_turns_kv_savings_into_concurrency(kv2x_analysis):
    h100_chat = kv2x_analysis["slo_throughput"][1]
    assert h100_chat["baseline"]["batch"] == 32 and h100_chat["claim"]["batch"] == 64
    assert h100_chat["gain"] > 1.8


def test_sensitivity_shows_a_missing_kernel(kv2x_analysis):
    rows = {(r["input"], r["value"]): r for r in kv2x_analysis["sensitivity"]}
    assert rows[("kernel reads the new format", "no")]["weighted_speedup"] < 1.0
    assert rows[("kernel bandwidth efficiency", "1")]["weighted_speedup"] > \
        rows[("kernel bandwidth efficiency", "0.5")]["weighted_speedup"]


def test_sensitivity_in_threads_equals_one_at_a_time(kv2x_analysis, monkeypatch):
    """Without traffic the variants are priced two at a time (defaults.ANALYSIS_WORKERS): one worker must print
    the same rows, gains and per-cell codes to the last digit. With traffic (the shipped matrix's conversation
    workload) they are priced one at a time, with no pool at all, so what the serving memo holds and the budget
    is charged does not depend on thread timing."""
    import concurrent.futures
    from concurrent.futures import ThreadPoolExecutor

    from triage.analysis import where_it_pays

    workers = []

    class Spy(ThreadPoolExecutor):
        def __init__(self, max_workers):
            workers.append(max_workers)
            super().__init__(max_workers)
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Spy)      # where_it_pays imports it on use
    course = ROOT / "examples" / "course.yaml"
    threaded = triage.evaluate(CLAIMS / "kv2x.yaml", course).evaluation.analysis.sensitivity
    monkeypatch.setattr(where_it_pays, "ANALYSIS_WORKERS", 1)
    serial = triage.evaluate(CLAIMS / "kv2x.yaml", course).evaluation.analysis.sensitivity
    assert [(r.input, r.value, r.weighted_speedup, r.decision) for r in threaded] == \
        [(r.input, r.value, r.weighted_speedup, r.decision) for r in serial]
    assert all((a.codes == b.codes).all() for a, b in zip(threaded, serial, strict=True))
    assert workers == [2, 1] and len(threaded) == 8
    monkeypatch.setattr(where_it_pays, "ANALYSIS_WORKERS", 2)
    triage.evaluate(CLAIMS / "kv2x.yaml")                   # the shipped matrix: a workload with traffic
    assert workers == [2, 1] and kv2x_analysis["sensitivity"][0]["input"] == "kernel bandwidth efficiency"


def test_verification_plan_has_commands_and_a_needle_test_where_it_matters(kv2x_analysis):
    steps = kv2x_analysis["verification_plan"]
    ab = [s for s in steps if s["step"].startswith("A/B on ")]
    assert len(ab) == 2                                       # one per hardware, not one per cell
    assert ab[0]["command"].startswith('for w in "chat-4k 4096 256 1 64" "docqa-128k 131072 256 1 64" ')
    assert "vllm bench serve --model meta-llama/Llama-2-7b-hf" in ab[0]["command"]
    assert "--metadata workload=$1 hardware=a100-80gb variant=$VARIANT" in ab[0]["command"]
    assert any("needle-in-a-haystack at 131,072 tokens" in s["step"] for s in steps)
    weights = triage.evaluate(CLAIMS / "int8-weights.yaml").to_dict()["analysis"]["verification_plan"]
    assert not any("needle" in s["step"] for s in weights)       # weights do not touch the KV


# ---- figures ----

@pytest.mark.slow
def test_memo_file_gets_two_svg_figures(runner, tmp_path):
    out = tmp_path / "memo.md"
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)]).exit_code == 0
    for name in ("memo.roofline.svg", "memo.gain.svg"):
        ET.parse(tmp_path / name)                                  # well-formed SVG
        assert f"]({name})" in out.read_text()
    assert (tmp_path / "memo.gain.svg").read_text().count("<rect") > 50
    again = tmp_path / "second.md"
    runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(again), "--figures", "none"])
    assert "Figures skipped: --figures none." in again.read_text()
    assert not (tmp_path / "second.roofline.svg").exists()
    stdout = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml")]).stdout
    assert "Figures skipped: figures are written only beside a memo file (-o)." in stdout


# ---- measurements ----

def test_vllm_results_fill_the_end_to_end_layer():
    r = triage.evaluate(CLAIMS / "kv2x.yaml")
    measured = with_measurements(r, EXAMPLES / "measurements" / "vllm")
    c = cell(measured, "chat-4k", "a100-80gb")
    assert c["speedup"]["end_to_end"] == pytest.approx(9.25 / 8.96)
    w = measured.to_dict()["measured"]["workloads"][0]
    assert w["lost_in"].startswith("end-to-end")
    assert cell(measured, "chat-4k", "h100-sxm")["speedup"]["end_to_end"] == \
        cell(r, "chat-4k", "h100-sxm")["speedup"]["end_to_end"]


@pytest.mark.parametrize("text,message", [
    ('{"workload": "chat-4k", "variant": "faster", "hardware": "a100-80gb", "tpot_s": 0.01}',
     "expected baseline or claim, got 'faster'"),
    ('{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb", "tpot_s": -1}', "expected a time > 0"),
    ('{"workload": "nope", "variant": "claim", "hardware": "a100-80gb", "tpot_s": 0.01}',
     "no cell for workload 'nope'"),
    ('{"workload": "chat-4k", "variant": "claim", "tpot_s": 0.01}', "give hardware"),
    ('{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb", "tpot": 0.012}',
     "a time needs its unit: 0.012 → '0.012 s' or '12 ms'\\? \\(or give it in the tpot_s column, in seconds\\)"),
    ('{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb", "tpot": "12 ms", "tpot_s": 0.012}',
     "tpot is given twice"),
    ('{"workload": "chat-4k", "variant": "claim", "speed": 3}', "unknown measurement field 'speed'"),
])
def test_bad_measurements_are_user_errors(tmp_path, text, message):
    f = tmp_path / "m.json"
    f.write_text(text)
    with pytest.raises(UserError, match=message):
        with_measurements(triage.evaluate(CLAIMS / "kv2x.yaml"), f)


# ---- calibration ----

def test_calibration_on_the_gpt_fast_numbers_lowers_the_error(runner, tmp_path):
    report = as_json(calibrate.calibrate(EXAMPLES / "measurements" / "gpt-fast-a100.csv"))   # as the JSON prints it
    (a100,) = report["hardware"]
    assert a100["rows"] == 11
    # a fit on the chip's own rows beats the shipped default — the corpus default, whose fit already saw these
    # gpt-fast README rows among its sources (data/measurements/gpt-fast-readme.csv), so "before" is in sample
    # and the margin small (11.9 % -> 11.3 % when this was written)
    assert a100["error_after"] < a100["error_before"] < 0.15
    assert 0.3 <= a100["fitted"]["bandwidth"] <= 1.0
    out = tmp_path / "calibrated.yaml"
    res = runner.invoke(main, ["calibrate", str(EXAMPLES / "measurements" / "gpt-fast-a100.csv"), "-o", str(out)])
    assert res.exit_code == 0 and "Mean absolute prediction error" in res.stdout
    matrix = load_workloads(out)
    assert len(matrix) == 11
    assert matrix.blocks[0].engine_values("a100-80gb")["bandwidth"] == a100["fitted"]["bandwidth"]


def test_calibration_rows_need_a_measurement(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context\nllama-2-7b,a100-80gb,128\n")
    with pytest.raises(UserError, match="row needs 'tokens_per_s or a time"):
        calibrate.calibrate(f)


@pytest.mark.parametrize("row,message", [
    ("llama-2-7b,a100-80gb,abc,1,bf16,100", "$.context: expected a number, got 'abc'"),
    ("llama-2-7b,a100-80gb,128,0,bf16,100", "$.batch: expected a finite number > 0, got '0'"),
    ("llama-2-7b,a100-80gb,128,1,int3,100", "$.weights: expected bf16, fp16, fp8, int8, int4, got 'int3'"),
    ("llama-2-7b,a100-80gb,128,1,bf16,nan", "$.tokens_per_s: expected a finite number > 0, got 'nan'"),
    ("llama-2-8b,a100-80gb,128,1,bf16,100", "unknown model 'llama-2-8b'"),
])
def test_calibration_rows_are_validated(tmp_path, row, message):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context,batch,weights,tokens_per_s\n" + row + "\n")
    with pytest.raises(UserError) as err:
        calibrate.calibrate(f)
    assert message in str(err.value)
    assert str(err.value).startswith(f"{f}:2:1")


def test_a_measured_quality_below_the_gate_is_no_go_and_says_it_was_measured(tmp_path):
    # docqa-128k is CONDITIONAL on the card's facts (1.72x bound, long context untested); measured: claim 0.60
    # against baseline 0.70 = 85.7 % retained, below the 99 % gate; TPOT measured 30.1 ms
    before = cell(triage.evaluate(CLAIMS / "kv2x.yaml"), "docqa-128k", "a100-80gb")
    assert before["verdict"] == "CONDITIONAL"
    f = tmp_path / "m.csv"
    f.write_text("workload,variant,hardware,tpot,quality\n"
                 "docqa-128k,baseline,a100-80gb,52.0 ms,0.70\ndocqa-128k,claim,a100-80gb,30.1 ms,0.60\n")
    r = with_measurements(triage.evaluate(CLAIMS / "kv2x.yaml"), f)
    c = cell(r, "docqa-128k", "a100-80gb")
    assert c["verdict"] == "NO-GO"
    assert any(s.startswith("measured quality retained 85.7 %") for s in c["reasons"])
    assert any("TPOT 30.10 ms (measured)" in s for s in c["reasons"])
    assert c["claim"]["time_per_request_s"] == pytest.approx(256 * 30.1e-3)
    other = cell(r, "docqa-128k", "h100-sxm")                                # not measured: the card's facts
    assert other["verdict"] == "CONDITIONAL" and not any("measured" in s for s in other["reasons"])


def test_a_gain_outside_the_step_is_judged_end_to_end():
    # continuous batching on a fleet whose static batching keeps 60 % of slots useful: the step is unchanged
    # (bound 1.000x) and the gain is 1 / 0.6 = 1.667x end to end, by hand
    w = {"defaults": {"batch_utilization": 0.6}, "workloads": [{"name": "chat-b32", "context": 4096, "batch": 32}]}
    r = triage.evaluate(CLAIMS / "course-continuous-batching.yaml", w).to_dict()
    for c in r["cells"]:
        assert c["speedup"]["theoretical"] == 1.0
        assert c["speedup"]["end_to_end"] == pytest.approx(1 / 0.6)
        assert c["verdict"] in ("GO", "CONDITIONAL")
        assert any("outside the step" in s and "1.667×" in s for s in c["reasons"])
    assert r["decision"]["weighted_speedup"]["end_to_end"] == pytest.approx(1 / 0.6)


def test_the_paper_check_prices_batch_utilization():
    card = {"id": "cb", "title": "cb", "direction": "system", "change": {"batching": {"utilization": 1.0}},
            "claim": {"speedup": 1.6, "metric": "throughput",
                      "setting": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch": 32, "context": 2048,
                                  "batch_utilization": 0.6}}}
    check = triage.evaluate(card).to_dict()["paper_check"]
    assert check["bound"] == pytest.approx(1 / 0.6)
    assert check["exceeds_bound"] is False
    assert check["setting"]["batch_utilization"] == 0.6


def _measure(tmp_path, rows, card="kv2x.yaml", workloads=None):
    f = tmp_path / "m.csv"
    f.write_text("workload,variant,hardware,tpot,quality\n" + "".join(r + "\n" for r in rows))
    return with_measurements(triage.evaluate(CLAIMS / card, workloads), f)


def test_a_measured_quality_of_zero_is_below_the_gate(tmp_path):
    r = _measure(tmp_path, ["docqa-128k,baseline,a100-80gb,52 ms,0.7", "docqa-128k,claim,a100-80gb,30 ms,0"])
    assert cell(r, "docqa-128k", "a100-80gb")["verdict"] == "NO-GO"


def test_measured_times_are_priced_like_predicted_ones_idle_slots_included(tmp_path):
    # continuous batching on a fleet at 50 % useful slots, measured TPOT equal on both sides: the gain is the
    # slots (1 / 0.5 = 2.0x), as predicted, not 1.0x
    w = {"defaults": {"batch_utilization": 0.5, "hardware": "a100-80gb"},
         "workloads": [{"name": "chat", "context": 4096, "batch": 32}]}
    r = _measure(tmp_path, ["chat,baseline,a100-80gb,40 ms,", "chat,claim,a100-80gb,40 ms,"],
                 "course-continuous-batching.yaml", w)
    assert cell(r, "chat")["speedup"]["end_to_end"] == pytest.approx(2.0)
    assert r.to_dict()["decision"]["weighted_speedup"]["end_to_end"] == pytest.approx(2.0)


def test_a_baseline_measured_alone_does_not_mix_measured_and_predicted(tmp_path):
    before = triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()["decision"]["weighted_speedup"]["end_to_end"]
    r = _measure(tmp_path, ["chat-4k,baseline,a100-80gb,9.0 ms,"])
    assert r.to_dict()["decision"]["weighted_speedup"]["end_to_end"] == pytest.approx(before)


def test_the_beyond_window_warning_names_each_workload_once():
    """A grid's two phases are two blocks of one name: the warning names the workload once, not once a phase."""
    grid = {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
            "grid": {"phase": ["decode", "prefill"], "context": [8192], "batch": [1]}}
    (warning,) = [w["message"] for w in triage.evaluate(CLAIMS / "kv2x.yaml", grid, analyse=False).to_dict()["warnings"]
                  if "trained window" in w["message"]]
    assert warning.count("grid (llama-2-7b, 8,192 tokens > 4,096)") == 1


def test_a_workload_can_refuse_a_context_beyond_the_models_window(tmp_path, runner):
    """Llama 2 7B was trained to 4,096 tokens (config.json max_position_embeddings): a 131,072-token workload that
    says beyond_window: refuse is an error addressed to its context, exit 1, no memo; by default it is priced with
    the warning."""
    w = tmp_path / "w.yaml"
    w.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\n"
                 "workloads:\n"
                 "  - {name: fits, phase: decode, context: 4096, batch: 1, beyond_window: refuse}\n"
                 "  - {name: long, phase: decode, context: 131072, batch: 1, beyond_window: refuse}\n")
    out = tmp_path / "memo.md"
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(w), "-o", str(out)])
    assert res.exit_code == 1 and not out.exists()
    assert "w.yaml:4" in res.stderr and "$.workloads[1].context" in res.stderr
    assert "context 131,072 tokens is beyond llama-2-7b's trained window of 4,096" in res.stderr
    w.write_text(w.read_text().replace(", beyond_window: refuse}", "}"))
    d = triage.evaluate(CLAIMS / "kv2x.yaml", w, analyse=False).to_dict()
    assert any("trained window" in x["message"] for x in d["warnings"])
