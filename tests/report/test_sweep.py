"""Sweeps as data: `triage sweep` and Result.to_frame carry the JSON cells' fields, one row per cell."""

import csv

import pytest
from click.testing import CliRunner

import triage
from triage.cli import main

from conftest import CLAIMS, ROOT

GRID = {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
        "grid": {"phase": ["decode"], "context": [4096, 131072], "batch": [1, 64, 128]}}


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_columns_are_the_json_cells_flattened():
    r = triage.evaluate(CLAIMS / "kv2x.yaml", GRID)
    cells = r.to_dict()["cells"]
    cols = r.columns()
    assert set(cols.pop("claim")) == {"kv2x"}           # the frame names its card on every row; the JSON once
    for i, c in enumerate(cells):
        flat = _flatten({k: v for k, v in c.items() if k != "reasons"})
        assert list(flat) == list(cols)
        for name, value in flat.items():
            column = cols[name][i]
            if value is None:
                assert column != column or name == "speedup.claimed"      # NaN where JSON says null
            else:
                assert column == value, name


def test_to_frame_has_one_row_per_cell():
    pd = pytest.importorskip("pandas")
    frame = triage.evaluate(CLAIMS / "kv2x.yaml", GRID).to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 6
    # docqa at 131072 tokens, batch 1 on an H100: the course's 1.72× bound (README excerpt)
    row = frame[(frame["context"] == 131072) & (frame["batch"] == 1)].iloc[0]
    assert row["speedup.theoretical"] == pytest.approx(1.722, abs=5e-4)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sweep_writes_every_cell(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    grid = tmp_path / "grid.yaml"
    grid.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\n"
                    "grid: {phase: [decode], context: [4096, 131072], batch: [1, 64, 128]}\n")
    out = tmp_path / f"cells{suffix}"
    res = CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.stderr and "6 cells" in res.stderr
    if suffix == ".csv":
        with out.open() as fh:
            rows = list(csv.DictReader(fh))
        assert len(rows) == 6
        assert rows[0]["workload"] == "grid" and rows[0]["verdict"] in ("GO", "NO-GO", "CONDITIONAL", "DOES-NOT-FIT")
        assert float(rows[3]["speedup.theoretical"]) == pytest.approx(1.722, abs=5e-4)   # 131072 × batch 1
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(out)
        assert table.num_rows == 6 and "baseline.time_s.end_to_end" in table.column_names
    # a second run replaces the file triage wrote (recorded in the private folder, whatever its format)
    assert CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-o", str(out)]
                              ).exit_code == 0


def test_to_dict_only_converts_what_the_pipeline_computed(monkeypatch):
    # the pipeline prices, judges and analyses once; rendering must not evaluate anything again
    from triage.model import evidence

    r = triage.evaluate(CLAIMS / "kv2x.yaml")
    calls = []
    monkeypatch.setattr(evidence, "compute", lambda *a, **k: calls.append(a))
    r.to_dict()
    assert calls == []


def test_every_row_says_what_its_end_to_end_gain_measures(tmp_path):
    """One frame, four meanings of speedup.end_to_end: the column names each (docs/sweep-frame.md).

    By hand, Llama-2-7B fp16 on an A100 80GB at 32,768 tokens: 16 GiB of KV per sequence, so batch 5
    (80 GiB + 13.5 GB of weights) does not fit and the baseline runs at the largest batch it fits, 4;
    kv2x's half-size cache fits all 5.
    """
    import yaml

    grid = tmp_path / "w.yaml"
    grid.write_text(yaml.safe_dump({
        "defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
        "workloads": [{"name": "decode", "context": 4096, "batch": 8},
                      {"name": "prefill", "phase": "prefill", "context": 4096, "batch": 1},
                      {"name": "long", "context": 32768, "batch": 5},
                      {"name": "svc", "slo": {"ttft": "2 s", "tpot": "100 ms"},
                       "traffic": {"rates": [1, 4], "arrivals": "poisson", "prompt_tokens": 512,
                                   "output_tokens": 128, "requests": 300}}]}))
    cols = triage.evaluate(CLAIMS / "kv2x.yaml", grid).columns()
    metric = dict(zip(cols["workload"], cols["end_to_end_metric"], strict=True))
    assert metric == {"decode": "tpot_ratio", "prefill": "ttft_ratio", "long": "throughput_at_max_batch",
                      "svc": "max_rate_at_slo"}
    long = list(cols["workload"]).index("long")
    assert cols["end_to_end_baseline_batch"][long] == 4 and cols["batch"][long] == 5
    assert set(cols["claim"]) == {"kv2x"}


def test_a_config_json_model_is_named_not_pathed(tmp_path):
    """The model column joins across machines: a config.json's model by its stem, never by its path."""
    import shutil

    shutil.copy(ROOT / "tests" / "configs" / "qwen2.5-7b.json", tmp_path / "qwen2.5-7b.json")
    grid = tmp_path / "g.yaml"
    grid.write_text(f"grid: {{model: [{tmp_path / 'qwen2.5-7b.json'}], hardware: [l40s], context: [2048], "
                    "batch: [1, 8]}\n")
    cols = triage.evaluate(CLAIMS / "kv2x.yaml", grid).columns()
    assert set(cols["model"]) == {"qwen2.5-7b"}


def test_a_sweep_streamed_in_chunks_has_the_cells_of_the_whole(tmp_path, monkeypatch):
    """Chunks of 7 cells over a 60-cell grid of two chips and two phases: the CSV holds, row for row, the
    columns one whole evaluation gives (the same cells, order and shares), and a row group per chunk."""
    import dataclasses

    pq = pytest.importorskip("pyarrow.parquet")
    from triage.analysis import pipeline

    monkeypatch.setattr(pipeline, "LIMITS", dataclasses.replace(pipeline.LIMITS, sweep_chunk_cells=7))
    grid = {"defaults": {"model": "llama-2-7b", "hardware": ["a100-80gb", "h100-sxm"]},
            "grid": {"phase": ["decode", "prefill"], "context": [512, 2048, 8192], "batch": [1, 2, 4, 8, 16]}}
    whole = triage.evaluate(CLAIMS / "kv2x.yaml", grid, analyse=False).columns()
    assert len(whole["verdict"]) == 60
    f = tmp_path / "grid.yaml"
    f.write_text(__import__("yaml").safe_dump(grid))
    for suffix in (".csv", ".parquet"):
        out = tmp_path / f"cells{suffix}"
        res = CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(f), "-o", str(out)])
        assert res.exit_code == 0, res.output
        if suffix == ".parquet":
            assert pq.ParquetFile(out).metadata.num_row_groups == 9          # ceil(60 / 7)
            table = pq.read_table(out).to_pydict()
            rows = [dict(zip(table, values, strict=True)) for values in zip(*table.values(), strict=True)]
        else:
            with out.open() as fh:
                rows = list(csv.DictReader(fh))
        assert len(rows) == 60 and list(rows[0]) == list(whole)
        for name, column in whole.items():
            for i, want in enumerate(column.tolist()):
                got = rows[i][name]
                if isinstance(want, float):
                    assert (want != want and got in ("", None)) or float(got) == pytest.approx(want, rel=1e-12), \
                        (name, i)
                elif isinstance(want, bool):
                    assert got in (want, "true" if want else "false"), (name, i)
                else:
                    assert str(got) == str(want), (name, i)


def test_a_sweep_streams_past_a_runs_cell_limit_up_to_its_own(tmp_path, monkeypatch):
    """`run` holds its cells whole (limit cells); `sweep` streams them (limit sweep_cells), each refused with
    its own limit named."""
    import dataclasses

    from triage.inputs import workloads

    monkeypatch.setattr(workloads, "LIMITS", dataclasses.replace(workloads.LIMITS, cells=100, sweep_cells=1_000))
    f = tmp_path / "grid.yaml"
    f.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\n"
                 "grid: {phase: [decode], context: [" + ",".join(str(128 * (i + 1)) for i in range(50)) + "], "
                 "batch: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n")
    run = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(f)])
    assert run.exit_code == 1 and "500 cells; one run prices at most 100 (limit cells)" in run.stderr
    assert "`triage sweep` streams up to 1,000" in run.stderr
    out = tmp_path / "cells.csv"
    res = CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(f), "-o", str(out)])
    assert res.exit_code == 0 and "500 cells" in res.stderr
    monkeypatch.setattr(workloads, "LIMITS", dataclasses.replace(workloads.LIMITS, cells=100, sweep_cells=400))
    res = CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(f), "-o", str(tmp_path / "b.csv")])
    assert res.exit_code == 1 and "limit sweep_cells" in res.stderr and not (tmp_path / "b.csv").exists()


def test_without_pyarrow_the_csv_is_the_same_rows_from_the_standard_library(tmp_path, monkeypatch):
    """The `frame` extra is optional: without pyarrow the standard library writes the same header and rows
    (values formatted the Python way), chunk after chunk under one header."""
    import dataclasses

    from triage.analysis import pipeline
    from triage.report import frame

    monkeypatch.setattr(pipeline, "LIMITS", dataclasses.replace(pipeline.LIMITS, sweep_chunk_cells=4))
    f = tmp_path / "grid.yaml"
    f.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\n"
                 "grid: {phase: [decode], context: [4096, 131072], batch: [1, 64, 128]}\n")
    outputs = {}
    for name, arrow in (("arrow", frame._pyarrow), ("stdlib", lambda: None)):
        monkeypatch.setattr(frame, "_pyarrow", arrow)
        out = tmp_path / f"{name}.csv"
        assert CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(f), "-o", str(out)]
                                  ).exit_code == 0
        with out.open() as fh:
            outputs[name] = list(csv.DictReader(fh))
    assert len(outputs["stdlib"]) == len(outputs["arrow"]) == 6
    for a, b in zip(outputs["arrow"], outputs["stdlib"], strict=True):
        assert list(a) == list(b)
        for key in a:
            try:
                assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-12), key
            except ValueError:
                assert a[key] == b[key], key


def test_the_json_says_which_analyses_it_computed():
    """Pay only for what is shown: a run computes and shows the analyses, a sweep's pricing none, and the JSON
    says which (`analyses`, the keys of `analysis`)."""
    shown = triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()
    assert shown["analyses"] == list(shown["analysis"]) == ["crossover", "slo_throughput", "sensitivity",
                                                            "verification_plan"]
    bare = triage.evaluate(CLAIMS / "kv2x.yaml", GRID, analyse=False)
    assert bare.analysis is None
    assert bare.to_dict()["analyses"] == [] and "analysis" not in bare.to_dict()


def test_a_sweep_finds_a_model_only_the_workload_file_defines(tmp_path):
    """A card's distillation target defined under the workload file's `models:` (not a workload's own model)
    resolves in every chunk as in a run (each chunk re-resolving the catalog lost it: exit 3)."""
    import yaml

    entry = yaml.safe_load((ROOT / "triage" / "inputs" / "catalog" / "models.yaml").read_text())["llama-3.2-1b"]
    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"models": {"tiny-1b": entry},
                                 "defaults": {"model": "llama-3-8b", "hardware": "h100-sxm"},
                                 "grid": {"phase": ["decode"], "context": [1024, 4096], "batch": [1, 8]}}))
    card = tmp_path / "card.yaml"
    card.write_text((CLAIMS / "course-distill-1b.yaml").read_text().replace("distill_to: llama-3.2-1b",
                                                                             "distill_to: tiny-1b"))
    whole = triage.evaluate(card, w, analyse=False).columns()
    out = tmp_path / "cells.csv"
    res = CliRunner().invoke(main, ["sweep", str(card), "-w", str(w), "-o", str(out)])
    assert res.exit_code == 0, res.output
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r["speedup.theoretical"]) for r in rows] == pytest.approx(whole["speedup.theoretical"].tolist())


@pytest.mark.parametrize("writer", ["parquet", "arrow", "stdlib"])
def test_a_writer_holds_no_chunk_while_the_next_is_priced(tmp_path, monkeypatch, writer):
    """Memory is one chunk's: when the next chunk is asked for, the previous one's arrays are gone."""
    import gc
    import weakref

    import numpy as np

    from triage.report import frame

    if writer != "stdlib":
        pytest.importorskip("pyarrow")
    else:
        monkeypatch.setattr(frame, "_pyarrow", lambda: None)
    alive = []

    def chunks():
        previous = None
        for k in range(3):
            gc.collect()
            alive.append(previous is not None and previous() is not None)
            column = np.arange(1000, dtype=float) + k
            previous = weakref.ref(column)
            yield {"x": column, "flag": column > 500, "name": np.full(1000, "grid")}
            del column

    with (tmp_path / "out").open("wb") as fh:
        frame.writer(chunks(), "parquet" if writer == "parquet" else "csv")(fh)
    assert alive == [False, False, False]
