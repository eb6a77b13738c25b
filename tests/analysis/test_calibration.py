"""Calibration and measurements: the six bugs of issue 16, each pinned by a regression test."""

import json

import pytest
import yaml
from click.testing import CliRunner

import triage
from triage.analysis import calibrate
from triage.cli import main
from triage.errors import UserError
from triage.inputs.calibration_rows import step_row
from triage.inputs.measurements import Record
from triage.report.calibration import as_json
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
    m.write_text("workload,variant,hardware,tpot_s\nchat-4k,baseline,a100-80gb,0.0093\n"
                 "chat-4k,claim,a100-80gb,0.0088\n")
    r = with_measurements(triage.evaluate(CLAIMS / "kv2x.yaml"), m)
    assert r.evaluation.measured.workloads[0].measured_baseline_s == pytest.approx(0.0093)
    f = csv(tmp_path, *["llama-2-7b,a100-80gb,decode,512,1,bf16,,,,0.0093,,,x"] * 3)
    assert as_json(calibrate.calibrate(f))["hardware"][0]["points"][0]["measured_s"] == pytest.approx(0.0093)
    bare = tmp_path / "bare.csv"
    bare.write_text("model,hardware,context,tpot\nllama-2-7b,a100-80gb,512,0.0093\n")
    with pytest.raises(UserError, match="in the tpot_s column, in seconds"):
        calibrate.calibrate(bare)


def test_a_fixed_cost_is_not_clipped_and_a_pinned_efficiency_is_a_warning(tmp_path):
    # bug 3: the grid clipped the overhead at 10 ms without a word. llama.cpp-like rows, 30 ms a batch-1 step of a
    # 7B model on an H100 whatever the context: a fixed cost of ~25 ms beside the 13.5 GB weight read
    # (13.5e9 B / (3.35e12 B/s x 0.85) = 4.7 ms), now fitted whole, no warning
    f = csv(tmp_path, *[f"llama-2-7b,h100-sxm,decode,{c},1,bf16,,,,0.030,,,floor" for c in (128, 512, 2048, 4096)])
    (h,) = as_json(calibrate.calibrate(f))["hardware"]     # the words `triage calibrate -f json` prints
    assert 0.022 < h["parameters"]["overhead_s"] < 0.027 and h["error_after"] < 0.02 and h["warnings"] == []
    # 3 ms a step is faster than the weights can be read at full bandwidth (4.0 ms): bandwidth pins at 1.0, the
    # overhead at its bound 0, and both are said
    f = csv(tmp_path, *[f"llama-2-7b,h100-sxm,decode,{c},1,bf16,,,,0.003,,,fast" for c in (128, 512, 2048, 4096)])
    (h,) = as_json(calibrate.calibrate(f))["hardware"]     # the words `triage calibrate -f json` prints
    assert h["parameters"]["bandwidth"] == 1.0 and h["parameters"]["overhead_s"] == 0.0
    assert any("bandwidth 1 is the highest value the fit may take" in w for w in h["warnings"])
    assert any("overhead 0 s is its lower bound and the rows ask for less" in w for w in h["warnings"])


def test_fewer_rows_than_parameters_are_not_fitted(tmp_path):
    # bug 4: three parameters from one or two rows, ~0 % in-sample error and no warning
    f = csv(tmp_path, "llama-2-7b,a100-80gb,decode,512,1,bf16,,,,0.0095,,,a",
            "llama-2-7b,a100-80gb,decode,2048,1,bf16,,,,0.0105,,,b")
    (h,) = as_json(calibrate.calibrate(f))["hardware"]     # the words `triage calibrate -f json` prints
    assert h["fitted"] is None and h["parameters"] == calibrate.defaults()
    assert h["warnings"] == ["not fitted: 2 rows for 3 parameters; the defaults stay (add rows)"]


def test_fp8_weights_kv_precision_attention_and_whole_generations_can_be_stated(tmp_path):
    # bug 5: calibrate could not express fp8 weights, KV precision, attention or multi-step generation rows
    f = csv(tmp_path,
            "llama-3-8b,h100-sxm,decode,1024,8,fp8,fp8,,,0.0072,,,a",
            "llama-3-8b,h100-sxm,generation,1024,8,bf16,bf16,128,,,,1.30,b",
            "llama-3-8b,h100-sxm,prefill,2048,1,bf16,bf16,,,,0.052,,c")
    (h,) = as_json(calibrate.calibrate(f))["hardware"]
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
    assert as_json(calibrate.calibrate(rows, tmp_path / "cat.yaml"))["hardware"][0]["hardware"] == "my-gpu"


def test_measured_json_reports_the_predicted_end_to_end_time(tmp_path):
    # bug 6: predicted.baseline_s was the implementation time (8.86 ms) where the cell's end-to-end is 11.86 ms
    w = {"defaults": {"overhead": "3 ms", "sequence_overhead": "0 ms"},
         "workloads": [{"name": "chat-4k", "context": 4096, "batch": 1, "hardware": "a100-80gb"}]}
    r = triage.evaluate(CLAIMS / "kv2x.yaml", w)
    m = tmp_path / "meas.json"
    m.write_text(json.dumps([{"workload": "chat-4k", "variant": "baseline", "tpot": "12 ms"},
                             {"workload": "chat-4k", "variant": "claim", "tpot": "11 ms"}]))
    cell = r.to_dict()["cells"][0]
    predicted = with_measurements(r, m).to_dict()["measured"]["workloads"][0]["predicted"]
    assert predicted["baseline_s"] == pytest.approx(cell["baseline"]["time_s"]["end_to_end"])
    assert predicted["baseline_s"] == pytest.approx(cell["baseline"]["time_s"]["implementation"] + 0.003)


def test_the_leave_one_out_error_is_reported_and_not_below_the_in_sample_error():
    (h,) = as_json(calibrate.calibrate(CLAIMS.parent / "examples" / "measurements" / "gpt-fast-a100.csv"))[
        "hardware"]
    assert h["error_leave_one_out"] >= h["error_after"] and h["uncertainty"]["bandwidth"] > 0


def test_calibrate_o_writes_an_engine_profile_other_workload_files_use_by_path(tmp_path):
    out = tmp_path / "cal.yaml"
    res = CliRunner().invoke(main, ["calibrate", str(CLAIMS.parent / "examples" / "measurements" /
                                                     "gpt-fast-a100.csv"), "-o", str(out), "--engine", "mine"])
    assert res.exit_code == 0, res.output
    (a100,) = as_json(calibrate.calibrate(CLAIMS.parent / "examples" / "measurements" / "gpt-fast-a100.csv"))[
        "hardware"]
    w = tmp_path / "w.yaml"
    w.write_text("workloads:\n  - {name: w, context: 1024, batch: 1, hardware: a100-80gb, engine: cal.yaml}\n")
    m = load_workloads(w)
    values = m.blocks[0].engine_values("a100-80gb")
    assert values["bandwidth"] == a100["fitted"]["bandwidth"]
    for k in ("overhead_s", "layer_overhead_s"):
        assert values[k] == pytest.approx(a100["fitted"][k], rel=1e-5)


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
    (h,) = as_json(calibrate.calibrate(f))["hardware"]
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


def test_a_layer_split_reads_the_whole_model_on_one_gpu_at_a_time(tmp_path):
    # ExLlamaV2 spreads Llama 2 70B (GPTQ 4-bit) over 2, 4 and 8 A10Gs layer by layer and measures 13.48 tok/s
    # on each (mlc-ai/llm-perf-bench README@d401356, lines 55-57: 74.2 ms a token, flat in the GPU count). Priced
    # as stages in sequence, a token reads all weights once at one A10G's 600 GB/s: by hand, body
    # (68.977e9 - 2 x 32,000 x 8,192) params x 0.5 B = 34.23 GB, the fp16 head 0.26e9 x 2 B = 0.52 GB, the KV of
    # 128 tokens 42 MB: 34.79 GB / 600e9 B/s = 58.0 ms, below the measured 74.2 ms at every count. Tensor
    # parallel over 4 would read a quarter (14.5 ms).
    from triage.inputs import catalog
    cat = catalog.load()

    def row(pipeline, tp):
        return calibrate.price(step_row(Record("x", 2, {"model": "llama-2-70b", "hardware": "a10g", "context": "128",
                                                        "pipeline": pipeline, "tp": tp, "weights": "int4",
                                                        "tokens_per_s": "13.48"}), cat), cat)
    full = {"bandwidth": 1.0, "compute": 1.0}
    for stages in ("2", "4", "8"):
        (t,) = calibrate.predict([row(stages, "1")], full, comm=False)
        assert t == pytest.approx(0.0580, rel=0.01) and t < 1 / 13.48
    assert calibrate.predict([row("1", "4")], full, comm=False)[0] == pytest.approx(0.0145, rel=0.01)
    with pytest.raises(UserError, match="does not fit"):
        row("1", "1")                                         # 34.8 GB on one 24 GB A10G


def test_the_non_negative_solve_of_the_fixed_costs():
    # min θᵀAθ − 2bᵀθ, θ >= 0. By hand: A = diag(2, 1), b = (2, −1): unconstrained (1, −1); the bound holds the
    # second at 0 and the first stays 1. With a coupling A = [[2, 1], [1, 2]], b = (1, 1): (1/3, 1/3) inside.
    import numpy as np
    theta = calibrate._nnls(np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([[2.0, -1.0], [1.0, 1.0]]))
    assert theta.tolist() == [[1.0, 0.0], [0.5, 1.0]]
    assert calibrate._nnls(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([1.0, 1.0])) == pytest.approx([1 / 3, 1 / 3])


def test_a_per_layer_cost_is_told_apart_from_a_per_step_cost_by_several_layer_counts(tmp_path):
    # times made by hand from a known engine: 0.80 of bandwidth, 1 ms a step, 50 µs a layer of a step. Llama 2 7B
    # (32 layers), 13B (40) and Llama 3.2 1B (16) decode at batch 1, bf16, on an A100 80GB (2,039 GB/s): a step
    # reads the weights but one row of the embedding table (7B: 13.48 GB - 0.26 GB) plus the KV of the context
    # (128 tokens x 32 layers x 2 x 4,096 x 2 B = 67 MB): 13.29 GB; so t = 13.29e9/(2.039e12 x 0.8) + 1 ms + 32 x
    # 0.05 ms = 10.75 ms. One layer count alone cannot tell the two costs apart (the layer cost is then not fitted);
    # two (32 and 40) nearly can't either — bytes grow with the layers, so bandwidth, step and layer costs trade
    # along a ridge the pull toward the shipped default decides (0.77, 1.9 ms, 11 µs) — three hold them.
    from triage.inputs import catalog
    cat = catalog.load()
    truth = {"bandwidth": 0.8, "compute": 0.7, "overhead_s": 0.001, "layer_overhead_s": 5e-5}
    configs = [(m, c) for m in ("llama-2-7b", "llama-2-13b", "llama-3.2-1b") for c in (128, 1024, 4096)]
    rows = [calibrate.price(step_row(Record("x", 2, {"model": m, "hardware": "a100-80gb", "context": str(c),
                                                     "tpot_s": "1"}), cat), cat) for m, c in configs]
    step_7b = rows[0].bytes.sum() / (2.039e12 * 0.8) + 0.001 + 32 * 5e-5
    assert step_7b == pytest.approx(13.29e9 / 1.6312e12 + 0.0026, rel=0.002)
    times = calibrate.predict(rows, truth)
    assert times[0] == pytest.approx(step_7b, rel=1e-3)
    lines = [f"{m},a100-80gb,decode,{c},1,bf16,,,,{t:.6f},,,synthetic"
             for (m, c), t in zip(configs, times, strict=True)]
    (h,) = as_json(calibrate.calibrate(csv(tmp_path, *lines)))["hardware"]
    assert h["free"] == ["overhead_s", "layer_overhead_s"]
    # a percent of bandwidth trades against the layer cost (three layer counts hold it against the pull toward
    # the shipped default): the layer cost within a third, the 7B step's fixed cost (2.6 ms) within a tenth
    p = h["parameters"]
    assert p["bandwidth"] == pytest.approx(0.8, abs=0.011)
    assert p["layer_overhead_s"] == pytest.approx(5e-5, rel=0.3)
    assert p["overhead_s"] + 32 * p["layer_overhead_s"] == pytest.approx(0.0026, rel=0.1)
    assert h["error_after"] < 0.005
    (one,) = as_json(calibrate.calibrate(csv(tmp_path, *lines[:3])))["hardware"]
    assert one["free"] == ["overhead_s"]


def test_rows_of_several_engines_on_one_chip_are_warned_not_pooled_silently(tmp_path):
    """Issue 23: a fit mixing engines describes none of them; an optional `engine` column names each row's, and a
    chip whose rows name two is warned (the engines named, escaped), one whose rows name one is not."""
    head = "model,hardware,phase,context,batch,tokens_per_s,engine,source\n"
    rows = [f"llama-2-7b,a100-80gb,decode,{c},1,{t},{e},x" for c, t, e in
            ((128, 80, "vllm"), (1024, 75, "vllm"), (4096, 60, "llama.cpp\x1b[31m"), (2048, 70, "vllm"))]
    rows += [f"llama-2-7b,h100-sxm,decode,{c},1,{t},vllm,x" for c, t in ((128, 120), (1024, 110), (4096, 95))]
    report = as_json(calibrate.calibrate(csv(tmp_path, *rows, head=head)))
    a100, h100 = sorted(report["hardware"], key=lambda h: h["hardware"])
    assert [w for w in a100["warnings"] if w.startswith("the rows name 2 engines")] == [
        "the rows name 2 engines (llama.cpp\\x1b[31m, vllm): one profile fitted on several engines describes none "
        "of them (their kernels and fixed costs differ); calibrate each engine's rows on their own"]
    assert not any("engines" in w for w in h100["warnings"])


# ---- issue 47 item 5: a parameter the rows cannot identify; the inputs `triage run --measured` reads ---------

MEASUREMENTS = CLAIMS.parent / "examples" / "measurements"
UNFITTED = {"bandwidth": True, "compute": False, "overhead_s": True, "layer_overhead_s": True,
            "request_overhead_s": False, "sequence_overhead_s": False}


def test_batch_1_decode_rows_leave_the_compute_efficiency_not_fitted(tmp_path):
    # gpt-fast's rows are batch-1 decode steps: a step's GEMMs do 2 FLOPs per weight read once at 2 B (bf16),
    # about 1 FLOP/B, where the A100 80GB turns compute-bound only above 312e12 / 2.039e12 = 153 FLOP/B (46 FLOP/B
    # at compute 0.30 and bandwidth 1.00, the grid's most favourable corner): compute binds in no row, nothing
    # fits it, and the jackknife's 0.00 said a precision it never had. It keeps the catalog default (0.5,
    # workloads.yaml) and says so; the request and sequence costs, which no row tells apart, were already so.
    example = MEASUREMENTS / "gpt-fast-a100.csv"
    (h,) = as_json(calibrate.calibrate(example))["hardware"]
    assert h["parameters_fitted"] == UNFITTED and h["compute_identified"] is False
    assert h["parameters"]["compute"] == calibrate.defaults()["compute"] == 0.5
    assert "compute" not in h["uncertainty"] and h["uncertainty"]["bandwidth"] > 0
    res = CliRunner().invoke(main, ["calibrate", str(example)])
    assert res.exit_code == 0 and ", compute efficiency not fitted (default 0.50); " in res.output
    assert "request overhead not fitted (default 2.56 ms per prefill step)" in res.output
    out = tmp_path / "cal.yaml"
    assert CliRunner().invoke(main, ["calibrate", str(example), "-o", str(out)]).exit_code == 0
    text = out.read_text()
    assert ("# not fitted (the rows do not identify them), the default kept: a100-80gb: compute 0.5, "
            "request_overhead 2.56 ms, sequence_overhead 0.00629 ms\n") in text
    profile = yaml.safe_load(text)["engines"]["calibrated"]
    assert profile["hardware"]["a100-80gb"]["compute"] == 0.5 and "compute" not in profile["hardware"][
        "a100-80gb"]["uncertainty"]
    assert "not fitted (the rows do not identify them), the default kept: a100-80gb: compute 0.5" in profile["source"]


def test_long_prefill_rows_leave_the_bandwidth_efficiency_not_fitted(tmp_path):
    # the mirror case: a 2,048-token prefill of Llama 2 7B does 2 x 6.6e9 x 2,048 = 2.7e13 FLOPs in its GEMMs
    # (170 ms at 312 TFLOP/s x 0.5) and reads 13 GB of weights (8.6 ms at 2,039 GB/s x 0.74): compute binds; the
    # bytes bind only in the small groups, a thousandth of the time. Bandwidth keeps its default, 0.74.
    f = csv(tmp_path, *[f"llama-2-7b,a100-80gb,prefill,{p},1,bf16,,,,,{t},,ttft" for p, t in
                        ((2048, 0.160), (4096, 0.330), (8192, 0.700))])
    (h,) = as_json(calibrate.calibrate(f))["hardware"]
    assert h["parameters_fitted"]["bandwidth"] is False and h["parameters_fitted"]["compute"] is True
    assert h["parameters"]["bandwidth"] == calibrate.defaults()["bandwidth"] == 0.74
    assert h["compute_identified"] is True and "bandwidth" not in h["uncertainty"]


def _vllm_folder(tmp_path, **metadata):
    """The shipped vLLM examples as if run with --metadata model=... (and ``metadata``)."""
    folder = tmp_path / "vllm"
    folder.mkdir()
    for side in ("baseline", "claim"):
        data = json.loads((MEASUREMENTS / "vllm" / f"chat-4k-{side}.json").read_text())
        (folder / f"chat-4k-{side}.json").write_text(json.dumps({**data, "model": "llama-2-7b", **metadata}))
    return folder


def test_calibrate_reads_the_vllm_results_and_folders_run_measured_reads(tmp_path):
    # the shipped vLLM examples (64 prompts at concurrency 1: 262,144 input and 16,384 output tokens) tagged
    # with their catalog model: the baseline's gives a decode row at the mean context of its tokens, 262,144 / 64
    # = 4,096 + 16,384 / 64 / 2 = 128 -> 4,224, timed by its median TPOT (9.25 ms), and, at batch 1, a prefill
    # row of the 4,096-token prompt timed by its median TTFT (305.7 ms); the claim's (variant=claim) times the
    # method's build, not the stack a profile describes: left out, and said
    folder = _vllm_folder(tmp_path)
    assert CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--measured", str(folder)]).exit_code == 0
    report = as_json(calibrate.calibrate(folder))
    (h,) = report["hardware"]
    rows = [(p["phase"], p["batch"], p["context"], p["source"]) for p in h["points"]]
    assert rows == [("decode", 1, 4224, "chat-4k-baseline.json"), ("prefill", 1, 4096, "chat-4k-baseline.json")]
    assert [p["measured_s"] for p in h["points"]] == pytest.approx([0.00925, 0.3057])
    assert report["left_out"] == [str(folder / "chat-4k-claim.json")]
    assert h["hardware"] == "a100-80gb"
    # a folder of the example CSV beside them: one fit over all 11 + 2 rows
    (folder / "gpt-fast-a100.csv").write_bytes((MEASUREMENTS / "gpt-fast-a100.csv").read_bytes())
    res = CliRunner().invoke(main, ["calibrate", str(folder), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["hardware"][0]["rows"] == 13


def test_a_vllm_result_names_its_model_by_the_repository_the_catalog_cites(tmp_path):
    # the shipped examples name the model by the server's name, meta-llama/Llama-2-7b-hf: the catalog's
    # llama-2-7b cites that repository's config.json (models.yaml), so the rows are llama-2-7b's
    (h,) = as_json(calibrate.calibrate(MEASUREMENTS / "vllm"))["hardware"]
    assert {p["model"] for p in h["points"]} == {"llama-2-7b"}
    # a server's name no catalog entry cites is an unknown model, addressed
    folder = tmp_path / "other"
    folder.mkdir()
    data = json.loads((MEASUREMENTS / "vllm" / "chat-4k-baseline.json").read_text())
    (folder / "run.json").write_text(json.dumps({**data, "model_id": "someone/unknown-7b"}))
    with pytest.raises(UserError, match=r"\$\.model: unknown model 'someone/unknown-7b'"):
        calibrate.calibrate(folder)


def test_a_vllm_result_at_a_higher_concurrency_gives_its_decode_row_only(tmp_path):
    # at concurrency 8 a TTFT waits behind the other requests' steps (a scheduling figure, not a prefill)
    folder = _vllm_folder(tmp_path, max_concurrency=8)
    (h,) = as_json(calibrate.calibrate(folder))["hardware"]
    assert [(p["phase"], p["batch"], p["context"]) for p in h["points"]] == [("decode", 8, 4224)]


def test_a_vllm_result_without_what_a_fit_needs_is_refused_with_how_to_add_it(tmp_path):
    folder = _vllm_folder(tmp_path, max_concurrency=None)
    with pytest.raises(UserError) as err:
        calibrate.calibrate(folder)
    assert str(err.value.problems[0]) == (
        f"{folder / 'chat-4k-baseline.json'}:1:1 $.max_concurrency: a vLLM result without max_concurrency sent every "
        "request at once and states no batch: rerun `vllm bench serve` with --max-concurrency N, or add --metadata "
        "batch=N")
    (tmp_path / "nochip").mkdir()
    folder = _vllm_folder(tmp_path / "nochip", hardware=None)
    with pytest.raises(UserError, match=r"\$\.hardware: a vLLM result names no catalog hardware"):
        calibrate.calibrate(folder)


def test_calibrate_and_run_measured_read_a_folder_through_one_reader(tmp_path):
    (tmp_path / "notes.txt").write_text("not a measurement")
    with pytest.raises(UserError, match="no .json or .csv measurement files in this folder"):
        calibrate.calibrate(tmp_path)
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--measured", str(tmp_path)])
    assert res.exit_code == 1 and "no .json or .csv measurement files in this folder" in res.output
