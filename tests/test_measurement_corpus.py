"""data/measurements/: every row of the public measurement corpus is well-formed, pinned to a source version
and quoted, so a calibration or a fidelity figure built on it can be traced to what the source says."""

import csv
import math
import re
from pathlib import Path

import pytest

from triage.inputs import catalog

DATA = Path(__file__).parent.parent / "data" / "measurements"
HEADER = ["source_url", "source_version", "where", "quote", "engine", "engine_version", "model", "hf_model",
          "hardware", "gpus", "weights", "kv", "compute", "phase", "batch", "prompt_tokens", "output_tokens",
          "metric", "value", "notes"]
ENGINES = {"vllm", "sglang", "tensorrt-llm", "llama.cpp", "gpt-fast", "hf-transformers", "lmdeploy", "exllamav2",
           "mlc-llm", "tgi", "other"}
METRICS = {"tpot_s", "ttft_s", "e2e_s", "tokens_per_s", "tokens_per_s_per_seq", "tokens_per_s_per_gpu",
           "prompt_tokens_per_s", "requests_per_s"}
PINNED = re.compile(r"[0-9a-f]{7,40}|\d{4}-\d\d-\d\d|v\d")
FILES = sorted(DATA.glob("*.csv"))


def test_the_corpus_holds_over_a_thousand_rows_from_many_engines():
    rows = [r for f in FILES for r in csv.DictReader(f.read_text(encoding="utf-8").splitlines())]
    assert len(rows) > 1000
    assert len({r["engine"] for r in rows}) >= 8 and len({r["hardware"] for r in rows}) >= 10
    assert {r["phase"] for r in rows} == {"decode", "prefill", "generation"}


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_every_row_is_pinned_quoted_and_typed(path):
    cat = catalog.load()
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == HEADER
        for n, r in enumerate(reader, start=2):
            where = f"{path.name}:{n}"
            assert r["source_url"].startswith("http") and PINNED.search(r["source_version"]), where
            assert r["quote"].strip() and r["where"].strip(), where
            assert r["engine"] in ENGINES and r["metric"] in METRICS, where
            assert r["phase"] in ("decode", "prefill", "generation"), where
            value = float(r["value"])
            assert math.isfinite(value) and value > 0, where
            for k in ("gpus", "batch"):
                assert r[k] == "" or (r[k].isdigit() and int(r[k]) > 0), (where, k)
            for k in ("prompt_tokens", "output_tokens"):            # llama-bench's text generation: 0 prompt
                assert r[k] == "" or r[k].isdigit(), (where, k)
            assert r["model"] == "" or r["model"] in cat.models, where


def test_the_theoretical_layer_is_a_lower_bound_on_every_row_it_can_state():
    # full efficiency, no overhead, no all-reduces: no published measurement may be faster (tp > 1 included)
    from bench import fidelity

    rows, _ = fidelity.priced()
    assert len(rows) > 190 and any(int(r.spec.tp) > 1 for r in rows)
    assert any(r.spec.pipeline > 1 for r in rows)           # ExLlamaV2's layer split over two to eight GPUs
    ratios = fidelity.errors(rows, {"bandwidth": 1.0, "compute": 1.0}, comm=False)
    faster = [(r.spec.source, r.spec.model, r.spec.hardware, e) for r, e in zip(rows, ratios, strict=True)
              if e > 1e-9]
    assert faster == []


def test_the_shipped_defaults_are_the_corpus_default_the_corpus_gives_today():
    """workloads.yaml's efficiency and fixed-cost defaults are what bench/fit_profiles.py fits on the corpus as it
    stands (each source weighing as much as another): a corpus change without a refit fails here, not in a
    memo's numbers."""
    from triage.analysis import calibrate

    from bench import fidelity, profiles

    rows, _ = fidelity.priced()
    fit = profiles.corpus_default(rows).params
    shipped = calibrate.defaults()
    assert shipped["bandwidth"] == fit["bandwidth"] and shipped["compute"] == fit["compute"]
    for key in calibrate.LINEAR:             # written with three significant figures
        assert shipped[key] == pytest.approx(fit[key], rel=5e-3, abs=1e-9), key


@pytest.mark.slow
def test_a_held_out_source_is_predicted_from_the_other_sources_only():
    """bench/fidelity.py's leave-one-source-out: a source's rows are predicted by fits that never saw them — the
    same rows priced with the source's own rows added to the fit come out closer (in sample beats held out)."""
    from bench import fidelity, profiles

    rows, _ = fidelity.priced()
    held = fidelity.held_out(rows)[0]["defaults"]
    source = "gpt-fast-readme.csv"
    mine = [i for i, r in enumerate(rows) if r.spec.source == source]
    in_sample = fidelity.errors([rows[i] for i in mine], profiles.corpus_default(rows).params)
    assert len(mine) > 30
    assert sum(abs(e) for e in in_sample) < sum(abs(held[i]) for i in mine)
    # nor through a copy: a figure one source quotes from another (lmdeploy's quantization docs quote MLC's
    # blog, 159.4 and 90.7 tokens/s on an RTX 4090) is priced once, in one source
    figures: dict[tuple, set[str]] = {}
    for r in rows:
        s = r.spec
        key = (s.engine, s.model, s.hardware, s.phase, s.batch, s.context, s.output_tokens,
               round(r.measured_s, 12))
        figures.setdefault(key, set()).add(s.source)
    assert [k for k, v in figures.items() if len(v) > 1] == []


@pytest.mark.slow
def test_the_profiles_pull_is_the_one_leave_one_source_out_chooses():
    """bench/profiles.py's PROFILE_PULL is the pull among PULLS whose engine profiles predict held-out sources
    best on the corpus as it stands: a corpus change that moves the choice fails here (refit, then rerun
    bench/fit_profiles.py)."""
    from bench import fidelity, profiles

    rows, _ = fidelity.priced()
    assert fidelity.chosen_pull(rows) == profiles.PROFILE_PULL


def test_a_profiles_prefill_parameters_need_prefills_from_two_sources():
    """A profile fits the compute efficiency and the request cost (what only a prefill identifies) from rows of at
    least two sources that pay a prefill; from one source's it keeps the level above's values (bench/profiles.py)."""
    from bench import fidelity, profiles

    rows, _ = fidelity.priced()
    optimum = [r for r in rows if r.spec.source == "optimum-gptq-benchmark.csv"]
    trt = [r for r in rows if r.spec.engine == "tensorrt-llm"]
    assert any(r.spec.phase != "decode" for r in optimum)
    assert profiles.held(optimum) == ("compute", "request_overhead_s")
    assert profiles.held(trt) == ()                 # two TensorRT-LLM sources state TTFTs and whole generations
    prior = {**profiles.ANCHOR, "compute": 0.55, "request_overhead_s": 0.004}
    one = profiles.calibrate.solve(optimum, prior=prior, pull=1.0, hold=profiles.held(optimum)).params
    assert one["compute"] == 0.55 and one["request_overhead_s"] == 0.004
    assert profiles.calibrate.solve(optimum, prior=prior, pull=1e-3).params["compute"] != 0.55   # the rows move it
