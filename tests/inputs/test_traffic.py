"""A workload's traffic: and scheduler: blocks, and request traces: read as written, refused with an addressed
one-line error otherwise."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

import triage
from triage.cli import main
from triage.errors import UserError
from triage.inputs.traffic import read_trace

from conftest import CLAIMS

ROOT = CLAIMS.parent
TRACE = ROOT / "triage" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
KV = {"id": "c", "title": "t", "direction": "cache", "change": {"kv_bytes": 1.0}}


def workload(tmp_path, traffic, scheduler=None):
    w = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
         "workloads": [{"name": "w", "context": 1024, "traffic": traffic,
                        **({"scheduler": scheduler} if scheduler else {})}]}
    f = tmp_path / "w.yaml"
    f.write_text(json.dumps(w))
    return f


def test_the_azure_trace_is_read_as_offsets_and_lengths():
    problems = []
    t = read_trace(TRACE, problems)
    assert not problems and len(t.arrival) == 19_366           # the rows of the shipped file (wc -l less the head)
    assert t.arrival[0] == 0.0 and np.all(np.diff(t.arrival) >= 0)
    # its first rows: 18:15:46.68 (374, 44), 18:15:50.99 (396, 109) -> 4.3145 s apart
    assert t.arrival[1] == pytest.approx(4.314579, abs=1e-6)
    assert (t.prompt[0], t.output[0]) == (374.0, 44.0)


@pytest.mark.parametrize("suffix,text", [
    (".csv", "arrival_s,prompt_tokens,output_tokens\n0.0,100,10\n0.5,200,20\n"),
    (".jsonl", '{"arrival_s": 0.0, "prompt_tokens": 100, "output_tokens": 10}\n'
               '{"arrival_s": 0.5, "prompt_tokens": 200, "output_tokens": 20}\n')])
def test_a_plain_trace_as_csv_or_jsonl(tmp_path, suffix, text):
    f = tmp_path / f"t{suffix}"
    f.write_text(text)
    t = read_trace(f, [])
    assert t.rate == pytest.approx(2.0) and t.prompt.tolist() == [100.0, 200.0]


@pytest.mark.parametrize("text,message", [
    ("time,in,out\n1,2,3\n", "expected the columns TIMESTAMP, ContextTokens, GeneratedTokens"),
    ("arrival_s,prompt_tokens,output_tokens\n0,nan,1\n1,2,3\n", "finite, non-negative"),
    ("arrival_s,prompt_tokens,output_tokens\n0,1\n", "expected a time and two token counts"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,1\n", "two or more requests")])
def test_a_bad_trace_is_refused_with_its_address(tmp_path, text, message):
    f = tmp_path / "t.csv"
    f.write_text(text)
    problems = []
    assert read_trace(f, problems) is None
    assert message in str(problems[0]) and "t.csv" in str(problems[0])


@pytest.mark.parametrize("traffic,message", [
    ({"rate": -1}, "$.workloads[0].traffic.rate"),
    ({"rate": 1, "arrivals": {"gamma": 0}}, "$.workloads[0].traffic.arrivals"),
    ({"rate": 1, "prompt_tokens": "trace"}, "need arrivals: {trace: FILE}"),
    ({"rate": 1, "slo": {"ttft": 2}}, "a time needs its unit"),
    ({"rate": 1, "arrivals": {"trace": "missing.csv"}}, "missing.csv"),
    ({"rate": 1, "requests": 2_000_000}, "$.workloads[0].traffic.requests")])
def test_a_bad_traffic_block_is_one_addressed_line(tmp_path, traffic, message):
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(workload(tmp_path, traffic))])
    assert res.exit_code == 1 and message in res.output, res.output


def shown(serving: dict, asked: list[float]) -> list[float]:
    """The rates a serving object shows (issue 47): the traffic's, each side's largest at the SLO, and one a
    quarter above the larger of those (defaults.SERVING_AROUND_BEST), sorted."""
    best = [serving[side]["max_rate_at_slo_rps"] for side in ("baseline", "claim")]
    best = [b for b in best if b]
    return sorted({*asked, *best, *([max(best) * 1.25] if best else [])})


def test_a_cell_with_traffic_carries_the_contracts_serving_object(tmp_path):
    w = workload(tmp_path, {"rates": [1, 3], "prompt_tokens": 256, "output_tokens": 32, "requests": 200,
                            "slo": {"ttft": "1 s", "tbt": "100 ms"}}, {"policy": "continuous"})
    (cell,) = triage.evaluate(CLAIMS / "sarathi-serve.yaml", w).to_dict()["cells"]
    s = cell["serving"]
    for side in ("baseline", "claim"):
        assert [r["rate_rps"] for r in s[side]["rates"]] == shown(s, [1.0, 3.0])
        r = s[side]["rates"][0]
        assert {"rate_rps", "ttft_s", "tbt_s", "tpot_s", "e2e_s", "throughput_rps", "output_tokens_per_s",
                "goodput_rps"} <= set(r)
        assert set(r["ttft_s"]) == {"p50", "p90", "p99", "mean"}
        assert s[side]["max_rate_at_slo_rps"] > 0
    # the verdict reads the simulation's gain: the largest rate at the SLO, claim over baseline
    gain = s["claim"]["max_rate_at_slo_rps"] / s["baseline"]["max_rate_at_slo_rps"]
    assert cell["speedup"]["end_to_end"] == pytest.approx(gain)


def test_a_scheduler_change_without_traffic_is_a_warning_not_a_quiet_gain():
    d = triage.evaluate(CLAIMS / "sarathi-serve.yaml", ROOT / "examples" / "course.yaml").to_dict()
    assert "scheduler-unpriced" in {w["code"] for w in d["warnings"]}
    assert all(c["speedup"]["end_to_end"] == pytest.approx(1.0) for c in d["cells"])


def test_a_request_longer_than_the_cache_is_cut_to_fit(tmp_path):
    from triage.inputs.traffic import Lengths, Traffic
    from triage.serving.requests import requests as serving_requests
    t = Traffic((1.0,), "poisson", 1.0, None, Lengths("fixed", 10_000), Lengths("fixed", 100), 20, 0, 0.1,
                None, None, None)
    req = serving_requests(t, 1.0, 4096)
    assert (req.prompt + req.output <= 4096).all() and (req.output == 100).all()


def test_a_trace_that_is_not_a_file_is_refused(tmp_path):
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w",
                                    str(workload(tmp_path, {"rate": 1, "arrivals": {"trace": str(tmp_path)}}))])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) <= 2, res.output
    with pytest.raises(UserError):
        triage.evaluate(KV, workload(tmp_path, {"rate": 1, "arrivals": {"trace": "/dev/zero"}}))


def test_a_simulation_too_large_for_one_run_is_refused_before_it_starts(tmp_path):
    # By hand, in token-steps (serving/budget.py: an output token 1, an iteration 100, a simulation 5,000), the
    # least a run takes: both sides at each listed rate (the rate search and sensitivity variants come on top,
    # charged as they run). 1,000,000 requests of 128 output tokens, each a prefill and two events: 128 + 3 x 100
    # = 428 a request a side (Sarathi's chunked budget 512 takes a 512-token prompt in one iteration too), and
    # 5,000 a simulation: 2 x (428 x 1e6 + 5,000) x 4 rates = 3,424,040,000
    w = workload(tmp_path, {"rates": [1, 2, 3, 4], "requests": 1_000_000, "slo": {"ttft": "2 s"}})
    for card in ("sarathi-serve.yaml", "kv2x.yaml"):
        res = CliRunner().invoke(main, ["run", str(CLAIMS / card), "-w", str(w)])
        assert res.exit_code == 1 and "3,424,040,000 simulated token-steps" in res.output \
            and "serving_work" in res.output


@pytest.mark.slow
@pytest.mark.parametrize("example", ["serving-conv.yaml", "serving-sharegpt.yaml", "serving-distserve.yaml"])
def test_every_shipped_serving_example_runs_with_a_card_whose_kernels_the_sensitivity_moves(example):
    # the estimate before a run is a floor, not a ceiling: a card the sensitivity analysis re-simulates (2x KV)
    # still runs on each shipped example (an estimate counting the search and the variants refused them)
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(CLAIMS.parent / "examples" / example),
                                    "--format", "json"])
    assert res.exit_code == 0, res.output[-300:]


@pytest.mark.parametrize("traffic,message", [
    ({"rate": 1e-310}, "$.workloads[0].traffic.rate"),
    ({"rate": 1, "duration": "fast"}, "$.workloads[0].traffic.duration"),
    ({"rate": 1, "duration": "-5 s"}, "$.workloads[0].traffic.duration")])
def test_review_inputs_that_crashed_or_hung_are_addressed_errors(tmp_path, traffic, message):
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(workload(tmp_path, traffic))])
    assert res.exit_code == 1 and message in res.output, res.output


def test_a_mixed_timezone_trace_is_read_and_fractional_lengths_are_refused_not_rounded(tmp_path):
    # issue 27: an input that cannot be taken as written is an error, never a silent change (374.4 tokens were
    # rounded to 374 unsaid)
    f = tmp_path / "t.csv"
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,10\n"
                 "2023-11-16 18:15:50.9951690+00:00,396,109\n")
    t = read_trace(f, [])
    assert t.prompt.tolist() == [374.0, 396.0] and t.output.tolist() == [10.0, 109.0]
    assert t.arrival.tolist() == pytest.approx([0.0, 4.314579])
    f.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374.4,10.5\n"
                 "2023-11-16 18:15:50.9951690+00:00,396,109\n")
    problems = []
    assert read_trace(f, problems) is None and "whole numbers" in str(problems[0])
    w = workload(tmp_path, {"rates": [2, 1], "prompt_tokens": 100.5, "output_tokens": 10.5, "requests": 50})
    with pytest.raises(UserError, match=r"traffic\.prompt_tokens"):
        triage.evaluate(KV, w)
    w = workload(tmp_path, {"rates": [2, 1], "prompt_tokens": 100, "output_tokens": 10, "requests": 50})
    cell = triage.evaluate(KV, w).to_dict()["cells"][0]
    assert [r["rate_rps"] for r in cell["serving"]["baseline"]["rates"]] == shown(cell["serving"], [1.0, 2.0])


def test_a_trace_whose_requests_all_arrive_at_once_is_refused(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,1\n0,20,2\n")
    problems = []
    assert read_trace(f, problems) is None and "same time" in str(problems[0])


def test_an_moe_model_in_a_serving_simulation_needs_no_caveat(tmp_path):
    """Each iteration prices the experts its own tokens touch (model/iteration.py), so the warning that said
    the simulation read a probe step's experts for every iteration is gone."""
    w = {"defaults": {"model": "mixtral-8x7b", "hardware": "h100-sxm", "tp": 2},
         "workloads": [{"name": "w", "context": 1024, "traffic": {"rate": 2, "requests": 100}}]}
    d = triage.evaluate(KV, w, analyse=False).to_dict()
    assert "serving-moe" not in {x["code"] for x in d["warnings"]}


# ---- a serving workload takes what it needs (issue: "Serving asks for what it does not use") ----------------

ISSUE_SVC = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb", "slo": {"ttft": "2 s", "tpot": "100 ms"}},
             "workloads": [{"name": "svc", "traffic": {"rates": [0.05, 4, 400], "arrivals": "poisson",
                                                       "prompt_tokens": 512, "output_tokens": 128,
                                                       "requests": 300}}]}


def test_a_traffic_workload_needs_no_context_and_takes_the_defaults_slo():
    """The newcomer's workload was refused for want of a step-level context the simulation ignores, and its
    defaults' SLO did not reach the rate search (max_rate_at_slo_rps was null)."""
    d = triage.evaluate(CLAIMS / "kv2x.yaml", ISSUE_SVC).to_dict()
    (cell,) = d["cells"]
    assert (cell["context"], cell["batch"]) == (512 + 128 // 2, 1)     # mean prompt + half the mean output
    for side in ("baseline", "claim"):
        assert cell["serving"][side]["max_rate_at_slo_rps"] > 0.05     # the defaults' bounds were searched
    b = cell["serving"]["baseline"]["rates"]
    assert [r["rate_rps"] for r in b] == shown(cell["serving"], [0.05, 4, 400])
    assert b[0]["slo_met"] and not b[-1]["slo_met"]                     # 400 requests/s is far past capacity


def test_traffic_slo_replaces_the_workloads_bounds_and_its_absence_keeps_them(tmp_path):
    own = {**ISSUE_SVC, "workloads": [{"name": "svc", "traffic": {**ISSUE_SVC["workloads"][0]["traffic"],
                                                                  "rates": [4], "slo": {"ttft": "1 ms"}}}]}
    (cell,) = triage.evaluate(CLAIMS / "kv2x.yaml", own).to_dict()["cells"]
    # a 1 ms TTFT is below one 512-token prefill on an A100 (2 x 6.7e9 x 512 FLOP / 312 TFLOP/s = 22 ms):
    # no rate meets it, so the traffic's own bound, not the defaults' 2 s, was applied
    assert cell["serving"]["baseline"]["max_rate_at_slo_rps"] == 0.0          # searched: no rate meets it
    assert not cell["serving"]["baseline"]["rates"][0]["slo_met"]


def test_a_traced_workload_stands_its_step_cell_at_the_traces_mean_context():
    import csv
    with TRACE.open() as f:
        rows = list(csv.DictReader(f))
    prompt = sum(int(r["ContextTokens"]) for r in rows) / len(rows)
    output = sum(int(r["GeneratedTokens"]) for r in rows) / len(rows)
    w = {"workloads": [{"name": "t", "traffic": {"rates": [2], "arrivals": {"trace": str(TRACE)},
                                                 "prompt_tokens": "trace", "output_tokens": "trace",
                                                 "requests": 100}}]}
    m = triage.evaluate(CLAIMS / "kv2x.yaml", w, analyse=False).to_dict()
    assert {c["context"] for c in m["cells"]} == {round(prompt + output / 2)}


def test_the_scheduler_policies_are_the_schemas():
    """One list of policies: the schema's enum, the traffic module's, and the serving package's registry (one
    module per policy) hold the same names in the same order."""
    import json

    from triage.inputs.traffic import POLICIES
    from triage.io.resources import schema_text
    from triage.serving.policies import POLICIES as REGISTRY

    found = []

    def walk(node):
        if isinstance(node, dict):
            if "policy" in node.get("properties", {}):
                found.append(node["properties"]["policy"]["enum"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(schema_text("workloads")))
    assert found and all(tuple(e) == POLICIES for e in found)
    assert tuple(REGISTRY) == POLICIES
