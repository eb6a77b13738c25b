"""Calibration and measurements: the six bugs of issue 16, each pinned by a regression test."""

import json

import pytest
from click.testing import CliRunner

import triage
from triage.analysis import calibrate
from triage.cli import main
from triage.errors import UserError
from triage.report.result import with_measurements

from conftest import CLAIMS, load_workloads

HEAD = "model,hardware,phase,context,batch,weights,kv,output_tokens,tokens_per_s,tpot_s,ttft_s,e2e_s,source\n"


def csv(tmp_path, *rows, head=HEAD):
    f = tmp_path / "m.csv"
    f.write_text(head + "".join(r + "\n" for r in rows))
    return f


def test_calibrate_o_keeps_each_rows_phase_and_weight_format(tmp_path):
    # bug 1: a 2,048-token TTFT row became a 2,048-context decode, an int4 row bf16
    f = csv(tmp_path,
            "llama-2-7b,a100-80gb,prefill,2048,1,bf16,,,,,0.130,,gpt-fast-like",
            "llama-2-7b,a100-80gb,decode,512,1,int4,,,,0.0051,,,a",
            "llama-2-7b,a100-80gb,decode,512,1,bf16,,,,0.0095,,,b")
    out = tmp_path / "cal.yaml"
    assert CliRunner().invoke(main, ["calibrate", str(f), "-o", str(out)]).exit_code == 0
    m = load_workloads(out)
    prefill, int4 = m.blocks[0], m.blocks[1]
    assert prefill.phase == "prefill" and prefill.context == 2048
    assert int4.phase == "decode" and int4.precision["weights"] == "int4"
    # priced again from the file, the prefill row costs a prefill (tens of ms), not a decode step (~10 ms)
    r = triage.evaluate({"id": "x", "title": "x", "direction": "cache", "change": {"kv_bytes": 1.0}}, out)
    assert r.to_dict()["cells"][0]["baseline"]["time_s"]["end_to_end"] > 0.05


def test_times_in_plain_seconds_are_read_where_the_format_says_seconds(tmp_path):
    # bug 2: '0.0093' was "unknown time unit ''" in --measured and calibrate
    m = tmp_path / "meas.csv"
    m.write_text("workload,variant,hardware,tpot\nchat-4k,baseline,a100-80gb,0.0093\n"
                 "chat-4k,claim,a100-80gb,0.0088\n")
    r = with_measurements(triage.evaluate(CLAIMS / "kv2x.yaml"), m)
    assert r.evaluation.measured["workloads"][0]["measured"]["baseline_s"] == pytest.approx(0.0093)
    f = csv(tmp_path, *["llama-2-7b,a100-80gb,decode,512,1,bf16,,,,0.0093,,,x"] * 3)
    assert calibrate.calibrate(f)["hardware"][0]["points"][0]["measured_s"] == pytest.approx(0.0093)
    bare = tmp_path / "bare.csv"
    bare.write_text("model,hardware,context,tpot\nllama-2-7b,a100-80gb,512,0.0093\n")
    with pytest.raises(UserError, match="in the tpot_s column, in seconds"):
        calibrate.calibrate(bare)


def test_a_parameter_on_the_grids_edge_is_a_warning(tmp_path):
    # bug 3: llama.cpp-like rows, 30 ms a batch-1 step of a 7B model on an H100 (a floor the model lacks)
    f = csv(tmp_path, *[f"llama-2-7b,h100-sxm,decode,{c},1,bf16,,,,0.030,,,floor" for c in (128, 512, 2048, 4096)])
    (h,) = calibrate.calibrate(f)["hardware"]
    assert h["parameters"]["overhead_s"] == pytest.approx(0.010)
    assert any("overhead 10 ms is the highest value the fit may take" in w for w in h["warnings"])


def test_fewer_rows_than_parameters_are_not_fitted(tmp_path):
    # bug 4: three parameters from one or two rows, ~0 % in-sample error and no warning
    f = csv(tmp_path, "llama-2-7b,a100-80gb,decode,512,1,bf16,,,,0.0095,,,a",
            "llama-2-7b,a100-80gb,decode,2048,1,bf16,,,,0.0105,,,b")
    (h,) = calibrate.calibrate(f)["hardware"]
    assert h["fitted"] is None and h["parameters"] == calibrate.defaults()
    assert h["warnings"] == ["not fitted: 2 rows for 3 parameters; the defaults stay (add rows)"]


def test_fp8_weights_kv_precision_attention_and_whole_generations_can_be_stated(tmp_path):
    # bug 5: calibrate could not express fp8 weights, KV precision, attention or multi-step generation rows
    f = csv(tmp_path,
            "llama-3-8b,h100-sxm,decode,1024,8,fp8,fp8,,,0.0072,,,a",
            "llama-3-8b,h100-sxm,generation,1024,8,bf16,bf16,128,,,,1.30,b",
            "llama-3-8b,h100-sxm,prefill,2048,1,bf16,bf16,,,,0.052,,c")
    (h,) = calibrate.calibrate(f)["hardware"]
    phases = [p["phase"] for p in h["points"]]
    assert phases == ["decode", "generation", "prefill"]
    # a generation row is priced as a prefill plus 128 decode steps: far longer than one step
    gen = h["points"][1]
    assert gen["before_s"] > 50 * h["points"][0]["before_s"]


def test_a_chip_outside_the_catalog_is_defined_with_catalog(tmp_path):
    f = csv(tmp_path, "llama-2-7b,my-gpu,decode,512,1,bf16,,,,0.0095,,,a")
    with pytest.raises(UserError, match="define it in a catalog file and pass --catalog"):
        calibrate.calibrate(f)
    (tmp_path / "cat.yaml").write_text("hardware:\n  my-gpu:\n    memory: 24 GiB\n    bandwidth: 936 GB/s\n"
                                       "    compute: {fp16: 71 TFLOP/s}\n")
    rows = csv(tmp_path, *["llama-2-7b,my-gpu,decode,512,1,bf16,,,,0.0095,,,a"] * 3)
    assert calibrate.calibrate(rows, tmp_path / "cat.yaml")["hardware"][0]["hardware"] == "my-gpu"


def test_measured_json_reports_the_predicted_end_to_end_time(tmp_path):
    # bug 6: predicted.baseline_s was the implementation time (8.86 ms) where the cell's end-to-end is 11.86 ms
    w = {"defaults": {"overhead": "3 ms"}, "workloads": [{"name": "chat-4k", "context": 4096, "batch": 1,
                                                          "hardware": "a100-80gb"}]}
    r = triage.evaluate(CLAIMS / "kv2x.yaml", w)
    m = tmp_path / "meas.json"
    m.write_text(json.dumps([{"workload": "chat-4k", "variant": "baseline", "tpot": "12 ms"},
                             {"workload": "chat-4k", "variant": "claim", "tpot": "11 ms"}]))
    cell = r.to_dict()["cells"][0]
    predicted = with_measurements(r, m).evaluation.measured["workloads"][0]["predicted"]
    assert predicted["baseline_s"] == pytest.approx(cell["baseline"]["time_s"]["end_to_end"])
    assert predicted["baseline_s"] == pytest.approx(cell["baseline"]["time_s"]["implementation"] + 0.003)


def test_the_leave_one_out_error_is_reported_and_not_below_the_in_sample_error():
    (h,) = calibrate.calibrate(CLAIMS.parent / "examples" / "measurements" / "gpt-fast-a100.csv")["hardware"]
    assert h["error_leave_one_out"] >= h["error_after"] and h["uncertainty"]["bandwidth"] > 0


def test_calibrate_o_writes_an_engine_profile_other_workload_files_use_by_path(tmp_path):
    out = tmp_path / "cal.yaml"
    res = CliRunner().invoke(main, ["calibrate", str(CLAIMS.parent / "examples" / "measurements" /
                                                     "gpt-fast-a100.csv"), "-o", str(out), "--engine", "mine"])
    assert res.exit_code == 0, res.output
    (a100,) = calibrate.calibrate(CLAIMS.parent / "examples" / "measurements" / "gpt-fast-a100.csv")["hardware"]
    w = tmp_path / "w.yaml"
    w.write_text("workloads:\n  - {name: w, context: 1024, batch: 1, hardware: a100-80gb, engine: cal.yaml}\n")
    m = load_workloads(w)
    values = m.blocks[0].engine_values("a100-80gb")
    assert values["bandwidth"] == a100["fitted"]["bandwidth"]
    assert values["overhead_s"] == pytest.approx(a100["fitted"]["overhead_s"])


@pytest.mark.parametrize("phase,column,value", [("generation", "tpot_s", "0.012"), ("decode", "e2e_s", "3.2"),
                                                ("prefill", "tpot_s", "0.01")])
def test_a_time_that_is_not_the_rows_phase_is_refused(tmp_path, phase, column, value):
    f = tmp_path / "m.csv"
    f.write_text(f"model,hardware,phase,context,output_tokens,{column}\nllama-2-7b,a100-80gb,{phase},512,128,{value}\n")
    with pytest.raises(UserError, match=f"a {phase} row is measured by"):
        calibrate.calibrate(f)


def test_short_prompt_ttft_is_read_as_a_per_request_cost(tmp_path):
    # the case: 128-token TTFT rows carry ~10 ms a step model cannot give; decode rows do not
    f = csv(tmp_path, *[f"llama-2-7b,a100-80gb,prefill,{p},1,bf16,,,,,{t},,ttft" for p, t in
                        ((128, 0.0135), (256, 0.0152), (512, 0.0195))],
            *[f"llama-2-7b,a100-80gb,decode,{c},1,bf16,,,,{t},,,tpot" for c, t in ((512, 0.0095), (2048, 0.0101),
                                                                                    (8192, 0.0125))])
    (h,) = calibrate.calibrate(f)["hardware"]
    assert 0.001 < h["parameters"]["request_overhead_s"] < calibrate.REQUEST_MAX
    short = h["points"][0]                                # the 128-token TTFT: a few ms of it is the request's
    assert short["after_s"] == pytest.approx(short["measured_s"], rel=0.1)
    assert h["error_after"] < 0.1


def test_a_calibrated_profiles_uncertainty_is_a_range_in_the_json_and_memo(tmp_path):
    out = tmp_path / "cal.yaml"
    assert CliRunner().invoke(main, ["calibrate", str(CLAIMS.parent / "examples" / "measurements" /
                                                      "gpt-fast-a100.csv"), "-o", str(out)]).exit_code == 0
    w = tmp_path / "w.yaml"
    w.write_text("workloads:\n  - {name: w, context: 4096, batch: 1, hardware: a100-80gb, engine: cal.yaml}\n")
    r = triage.evaluate(CLAIMS / "kv2x.yaml", w)
    c = r.to_dict()["cells"][0]
    low, high = c["speedup_range"]["end_to_end"]["low"], c["speedup_range"]["end_to_end"]["high"]
    # the overhead's standard error (0.64 ms of 0.8 ms) moves the end-to-end gain; the point lies inside
    assert low < c["speedup"]["end_to_end"] < high
    from triage.report.memo import render_markdown
    assert "Ranges in brackets: the calibrated engine profile's values one standard error" in render_markdown(r)
    plain = triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()["cells"][0]
    assert "speedup_range" not in plain
