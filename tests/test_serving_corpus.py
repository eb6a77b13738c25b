"""data/serving/: every row in the corpus's format, with a known scenario and metric, and its number in its
quote (the number as the source prints it, or in milliseconds where the row says it converted)."""

import csv
import re
from pathlib import Path

import pytest

from triage.inputs.traffic import SCENARIOS

DATA = Path(__file__).resolve().parent.parent / "data" / "serving"
COLUMNS = ["source_url", "source_version", "where", "quote", "engine", "engine_version", "model", "hf_model",
           "hardware", "gpus", "tp", "pp", "replicas", "max_seqs", "max_batched_tokens", "scheduler_steps", "weights",
           "kv", "compute", "scenario", "clients", "requests", "prompt_tokens", "output_tokens", "lengths",
           "slo_ttft_s", "slo_tpot_s", "slo_at", "metric", "value", "notes"]
FILES = sorted(DATA.glob("*.csv"))


def _numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_serving_row_is_pinned_and_quotes_its_number(path):
    rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    assert rows and list(rows[0]) == COLUMNS
    for n, r in enumerate(rows, start=2):
        assert r["source_url"] and r["source_version"] and r["quote"], (path.name, n)
        assert r["scenario"] in SCENARIOS, (path.name, n)
        assert r["metric"] in ("tokens_per_s", "requests_per_s", "ttft_s", "tpot_s"), (path.name, n)
        value = float(r["value"])
        said = _numbers(r["quote"] + " " + r["where"])
        # seconds converted from milliseconds, requests/s from requests a minute, where the notes say so
        scale = 60.0 if r["metric"] == "requests_per_s" and "divided by 60" in r["notes"] else 1e3
        assert any(abs(x - value) <= 1e-6 * max(abs(value), 1) or abs(x - value * scale) <= 1e-3 * abs(value * scale)
                   for x in said), (path.name, n, r["value"])


def test_the_runs_that_fit_a_chip_by_simulation_are_not_priced_as_held_out():
    """bench/serving_profiles.py fits a chip's entry on its engine's max-load runs where the step corpus has no row
    of that chip (B200 and GB200 under TensorRT-LLM: the v1.0 perf overview's FP4 runs); every row of that document
    on that engine and chip leaves the held-out table, and every other row stays in it."""
    from bench import serving_corpus

    every, _ = serving_corpus.rows(held_out_only=False)
    held, skipped = serving_corpus.rows()
    groups = serving_corpus.simulation_trained(every)
    assert sorted(groups) == [("tensorrt-llm", "b200"), ("tensorrt-llm", "gb200")]
    assert all(i["row"]["source"] == "tensorrt-llm-perf-overview-v1.0.csv" for g in groups.values() for i in g)
    assert len(held) == len(every) - 18
    assert skipped["a document that trained the chip's entry by simulation (not held out)"] == 18
    assert not [i for i in held if (i["row"]["engine"], i["hardware"]) in groups
                and i["row"]["source"] == "tensorrt-llm-perf-overview-v1.0.csv"]
    assert [i for i in held if i["hardware"] == "b200"]          # MLPerf's B200 rows: another document, held out


def test_tensorrt_llm_perf_overview_v1_b200_runs_priced_by_the_shipped_entry():
    """TensorRT-LLM's perf overview (NVIDIA/TensorRT-LLM @ 00f3768, Llama 3.3 70B, B200 TP1 FP4, "Total Output
    Throughput"): 11,147 tokens/s at 128/128, 6,831 at 128/4096 and 665 at 20000/2000 (data/measurements/
    tensorrt-llm-perf-overview-v1.0.csv). A plain workload naming the engine on B200 takes the catalog's entry
    fitted by simulation on these runs and prices each within 10 %; the engine's default (0.5 of the FP4 peak,
    63.4 us a layer) prices the GEMM-bound 128/128 run over 20 % fast. The fit states every profile value at
    workload level, so no catalog entry enters it."""
    from triage.inputs import catalog

    from bench import serving_corpus, serving_profiles

    every, _ = serving_corpus.rows(held_out_only=False)
    runs = {(i["row"]["prompt_tokens"], i["row"]["output_tokens"]): i
            for i in serving_corpus.simulation_trained(every)[("tensorrt-llm", "b200")]}
    published = {("128", "128"): 11147.0, ("128", "4096"): 6831.0, ("20000", "2000"): 665.0}
    for key, value in published.items():
        assert float(runs[key]["row"]["value"]) == value
        assert serving_corpus.predict(runs[key]) == pytest.approx(value, rel=0.10), key
    default = catalog.load().engines["tensorrt-llm"].default
    assert serving_corpus.predict(serving_profiles._workload(runs[("128", "128")], default)) > 1.2 * 11147.0
    block = serving_profiles._workload(runs[("128", "128")], default)["workloads"]["workloads"][0]
    assert {"efficiency", "overhead", "layer_overhead", "request_overhead", "sequence_overhead"} <= set(block)
    assert set(block["efficiency"]) == {"bandwidth", "compute"}
