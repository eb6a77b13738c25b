"""The third round of hostile input (issue 46): each numbered case of the review as a test, named by its case.
Every one failed on main before the fix; the fuzzers cover the classes (bench/fuzz_hostile.py)."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLAIMS, ROOT, run

KV2X = CLAIMS / "kv2x.yaml"


def _triage(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triage", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})})


# ---- case 1: code from places a user does not control ------------------------------------------------

class _Planted:
    """Unpickling it touches a file: what a planted Jinja bytecode cache entry would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_case_1_a_compiled_template_planted_in_a_checkout_never_runs(tmp_path):
    """A checkout holding .cache/triage/templates/<key>.bin (a pickle behind a valid digest, at the exact key
    Jinja would look up) reached as a relative XDG_CACHE_HOME or as $HOME: nothing in it runs."""
    import jinja2
    import jinja2.bccache

    checkout = tmp_path / "checkout"
    folder = checkout / ".cache" / "triage" / "templates"
    folder.mkdir(parents=True)
    marker = tmp_path / "ran"
    payload = jinja2.bccache.bc_magic + pickle.dumps(_Planted(marker), protocol=2)
    for name in ("memo.md.j2", "brief.md.j2"):
        key = jinja2.BytecodeCache().get_cache_key(name, str(ROOT / "templates" / name))
        (folder / f"{key}.bin").write_bytes(hashlib.sha256(payload).digest() + payload)
    for env in ({"XDG_CACHE_HOME": ".cache"}, {"XDG_CACHE_HOME": "", "HOME": str(checkout)}):
        proc = _triage("run", str(KV2X), "--workloads", str(ROOT / "examples" / "course.yaml"), cwd=checkout,
                       env=env)
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists(), env
    assert len(list(checkout.rglob("*.bin"))) == 2                          # and triage wrote none of its own


# ---- case 2: a printed command that runs what a workload file names ---------------------------------

def test_case_2_the_verification_plans_command_quotes_a_chips_name(tmp_path):
    """A chip named h100$(touch PWNED): the memo's A/B command, run with vllm as a no-op, touches nothing."""
    workloads = tmp_path / "w.yaml"
    workloads.write_text('hardware:\n  "h100$(touch PWNED)": {memory: 80 GiB, bandwidth: 2 TB/s, compute: '
                         '{fp16: 1000 TFLOP/s}}\ndefaults: {hardware: "h100$(touch PWNED)", model: llama-2-7b}\n'
                         'workloads:\n  - {name: w, context: 4096}\n')
    res = run("run", KV2X, "-w", workloads, "-f", "json")
    assert res.exit_code == 0, res.stderr
    steps = json.loads(res.stdout)["analysis"]["verification_plan"]
    for step in steps:
        if step["command"].startswith(("for w in", "triage run")):
            subprocess.run(["bash", "-c", "vllm() { :; }; triage() { :; }; " + step["command"]], cwd=tmp_path,
                           check=True, timeout=120)
    assert not (tmp_path / "PWNED").exists()


# ---- case 3: a file name that writes YAML into what triage writes ------------------------------------

@pytest.mark.parametrize("command", ["calibrate", "import"])
def test_case_3_a_newline_in_an_input_files_name_stays_in_its_comment(tmp_path, command):
    name = "m\nhardware:\n  h100-sxm: {bandwidth: 200 TB}\n#"
    if command == "calibrate":
        source = tmp_path / f"{name}.csv"
        source.write_bytes((ROOT / "examples" / "measurements" / "gpt-fast-a100.csv").read_bytes())
        args = ["calibrate", source, "-o", tmp_path / "out.yaml"]
    else:
        source = tmp_path / f"{name}.json"
        source.write_bytes((ROOT / "tests" / "configs" / "llama-3-8b.json").read_bytes())
        args = ["catalog", "import", source, "--name", "mine", "-o", tmp_path / "out.yaml"]
    res = run(*args)
    assert res.exit_code == 0, res.stderr
    import yaml

    written = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert "hardware" not in written
    assert "\\x0ahardware:" in (tmp_path / "out.yaml").read_text().splitlines()[0]


# ---- case 10: YAML tags the parser cannot construct ---------------------------------------------------

@pytest.mark.parametrize("value", ["!!int 0b101", "!!int 1:30", "!!float abc", "!!timestamp bogus", "!!bool maybe",
                                   "!!set 3.7", "!!map 3.7"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_case_10_a_tag_that_cannot_read_its_value_is_an_addressed_error(tmp_path, value, command):
    card = tmp_path / "card.yaml"
    card.write_text(KV2X.read_text().replace("id: kv2x", f"id: {value}"))
    res = run(command, card)
    assert res.exit_code == 1, res.stderr
    line = res.stderr.strip().splitlines()[0]
    assert line.startswith(f"error: {card}:") and ("cannot read" in line or "expected a mapping for its tag" in line)
    assert value.split()[1] not in res.stderr                     # the file's value is never quoted


# ---- case 11: a fit the rows cannot identify ----------------------------------------------------------

def test_case_11_calibrate_on_rows_that_make_the_fit_singular_is_not_an_internal_error(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("model,hardware,phase,context,batch,weights,tp,tpot,source\n"
                    "llama-2-7b,a100-80gb,decode,512,1,fp16,1,1e-9 s,a\n"
                    "llama-2-7b,a100-80gb,decode,512,2,fp16,1,20 s,b\n"
                    "llama-2-7b,a100-80gb,decode,512,4,fp16,1,20 s,c\n")
    res = run("calibrate", rows)
    assert res.exit_code in (0, 1), res.stderr
    assert "Singular" not in res.stderr and "internal error" not in res.stderr


# ---- case 5: a limit on what a command holds, not on one evaluation ---------------------------------

_CONTEXTS = ",".join(str(1024 * i) for i in range(1, 501))
_BATCHES = ",".join(str(i) for i in range(1, 701))            # × 2 chips: 700,000 cells, a third over the limit


def test_case_5_compare_counts_cards_times_cells_against_the_cell_limit():
    res = run("compare", KV2X, CLAIMS / "int8-kv.yaml", CLAIMS / "gqa.yaml", "--model", "llama-2-7b",
              "--hardware", "h100-sxm,a100-80gb", "--context", _CONTEXTS, "--batch", _BATCHES)
    assert res.exit_code == 1
    assert "3 cards compared of 700,000 cells = 2,100,000 held at once" in res.stderr


def test_case_5_a_stack_counts_each_stacked_cards_evaluation():
    res = run("run", KV2X, CLAIMS / "int8-weights.yaml", "--stack", "--model", "llama-2-7b",
              "--hardware", "h100-sxm,a100-80gb", "--context", _CONTEXTS, "--batch", _BATCHES, "-f", "json")
    assert res.exit_code == 1 and "2,100,000 held at once" in res.stderr


# ---- case 12: the API's number types -------------------------------------------------------------------

def test_case_12_the_api_takes_any_number_type_as_int_or_float_and_refuses_a_nan():
    import decimal
    import fractions

    import numpy as np
    import yaml

    import triage

    base = yaml.safe_load(KV2X.read_text())
    for value in (decimal.Decimal("0.5"), fractions.Fraction(1, 2), np.float64(0.5), np.float32(0.5)):
        out = triage.evaluate({**base, "change": {"kv_bytes": value}}, analyse=False).to_dict()
        json.dumps(out, allow_nan=False)
        assert type(out["claim"]["change"]["kv_bytes"]) is float and out["claim"]["change"]["kv_bytes"] == 0.5
    for value in (decimal.Decimal("NaN"), np.float64("nan"), fractions.Fraction(10**400, 1)):
        with pytest.raises(triage.UserError, match="expected a finite number"):
            triage.evaluate({**base, "change": {"kv_bytes": value}}, analyse=False)


# ---- case 13: linear work on user text ---------------------------------------------------------------------

def test_case_13_did_you_mean_is_searched_only_for_the_problems_shown(tmp_path, monkeypatch):
    """400 chips defined and 400 misspelt references: one suggestion search per printed problem (20), not one
    per problem against every name (400 × 421 comparisons on main)."""
    import difflib

    from triage.defaults import LIMITS

    calls = []
    real = difflib.get_close_matches
    monkeypatch.setattr(difflib, "get_close_matches", lambda *a, **k: calls.append(1) or real(*a, **k))
    chips = "".join(f"  chip{i:04d}: {{memory: 80 GiB, bandwidth: 2 TB/s, compute: {{fp16: 1000 TFLOP/s}}}}\n"
                    for i in range(400))
    refs = "".join(f"  - {{name: w{i}, context: 4096, hardware: chlp{i:04d}}}\n" for i in range(400))
    workloads = tmp_path / "w.yaml"
    workloads.write_text(f"hardware:\n{chips}defaults: {{model: llama-2-7b}}\nworkloads:\n{refs}")
    res = run("validate", KV2X, "-w", workloads)
    assert res.exit_code == 1 and "and 380 more problems" in res.stderr
    assert "(did you mean 'chip0000'?)" in res.stderr
    assert len(calls) < 2 * LIMITS.problems_shown, len(calls)        # about one a printed problem, not 400


def test_case_13_a_long_model_type_in_a_config_json_is_read_in_linear_time(tmp_path):
    """A 200 kB model_type of 'a-a-…/a': the verification plan reads the model's source word by word (on main a
    search that backtracks at every word boundary, once per plan cell: about 25 s a cell); a generous timeout
    catches only the hang."""
    cfg = json.loads((ROOT / "tests" / "configs" / "llama-3-8b.json").read_text())
    cfg["model_type"] = "a-" * 100_000 + "/a"
    config = tmp_path / "config.json"
    config.write_text(json.dumps(cfg))
    proc = subprocess.run([sys.executable, "-m", "triage", "run", str(KV2X), "--model", str(config), "--hardware",
                           "h100-sxm", "--context", "4096,8192", "--batch", "1,2,4,8,16,32,64", "-f", "json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-300:]


# ---- cases 7, 8, 9: outputs that never replace what appeared meanwhile, nor are left half-written ----------

_SWEEP = ("--hardware", "a100-80gb,h100-sxm", "--context", ",".join(str(1024 * i) for i in range(1, 101)),
          "--batch", ",".join(str(i) for i in range(1, 101)))              # 20,000 cells


def test_case_7_a_file_saved_at_the_target_while_a_sweep_runs_is_kept(tmp_path, monkeypatch):
    from triage.report import frame

    target = tmp_path / "cells.csv"
    real = frame.writer

    def writer_then_the_user_saves(chunks, fmt):
        write = real(chunks, fmt)

        def both(fh):
            write(fh)
            target.write_text("the user's notes")                   # saved while triage was pricing
        return both

    monkeypatch.setattr(frame, "writer", writer_then_the_user_saves)
    res = run("sweep", KV2X, *_SWEEP, "-o", target)
    assert res.exit_code == 1 and "appeared or changed while triage was writing" in res.stderr
    assert target.read_text() == "the user's notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cells.csv"]   # no temporary file left


@pytest.mark.slow
def test_case_8_sigterm_during_a_sweep_leaves_no_temporary_file(tmp_path):
    import signal
    import time

    contexts = ",".join(str(1024 * i) for i in range(1, 1001))
    batches = ",".join(str(i) for i in range(1, 1001))                     # 2,000,000 cells: several seconds
    proc = subprocess.Popen([sys.executable, "-m", "triage", "sweep", str(KV2X), "--hardware", "a100-80gb,h100-sxm",
                             "--context", contexts, "--batch", batches, "-o", str(tmp_path / "cells.csv")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):                                              # the temporary file appears
            if list(tmp_path.glob(".cells.csv.*.tmp")) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before it could be interrupted"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM and "interrupted" in err
    assert list(tmp_path.iterdir()) == []


def test_case_9_a_sweep_the_disk_has_no_room_for_is_refused_before_it_prices(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**9, 10**9 - 10**6, 10**6))   # 1 MB free
    res = run("sweep", KV2X, *_SWEEP, "-o", tmp_path / "cells.csv")
    assert res.exit_code == 1
    # 20,000 cells × 930 B a cell (SWEEP_BYTES_PER_CELL, measured) = 18.6 MB, by hand
    assert "20,000 cells of csv take about 18.6 MB and the disk holding" in res.stderr and "has 1 MB free" in res.stderr
    assert list(tmp_path.iterdir()) == []


# ---- case 4: memory bounded by what a run holds, not by the JSON's cells ---------------------------------------

@pytest.mark.slow
def test_case_4_run_json_writes_its_cells_a_window_at_a_time_under_a_1_gb_address_space(tmp_path):
    """50,000 cells to JSON under a 1 GB address-space cap: on main every cell was built as nested dicts first
    (~32 kB each, 1.6 GB: MemoryError, exit 3); now a window of JSON_WINDOW_CELLS at a time (measured here:
    112 MB peak)."""
    import resource

    def one_gb():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    out = tmp_path / "cells.json"
    proc = subprocess.run([sys.executable, "-m", "triage", "run", str(KV2X), "--model", "llama-2-7b", "--hardware",
                           "h100-sxm,a100-80gb", "--context", ",".join(str(1024 * i) for i in range(1, 101)),
                           "--batch", ",".join(str(i) for i in range(1, 251)), "-f", "json", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, preexec_fn=one_gb)
    assert proc.returncode == 0, proc.stderr[-500:]
    with out.open("rb") as fh:
        head = fh.read(4096)
        fh.seek(-4096, os.SEEK_END)
        tail = fh.read()
    assert head.startswith(b'{\n  "version": 1,') and tail.endswith(b"\n}\n")
    with out.open("rb") as fh:
        assert sum(line.startswith(b"      \"workload\": ") for line in fh) == 50_000     # every cell


def test_case_4_the_windowed_json_is_the_whole_documents_bytes():
    """A 3,000-cell grid written in windows of 1,000 cells: byte for byte what json.dumps of the whole
    document gives (the JSON contract does not change with the window)."""
    import io

    from triage.report.memo import write_json
    from triage.report.result import evaluate

    grid = {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
            "grid": {"context": [1024 * i for i in range(1, 51)], "batch": list(range(1, 61))}}
    result = evaluate(KV2X, grid)
    buffer = io.BytesIO()
    write_json(result, window=1000)(buffer)
    whole = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    assert buffer.getvalue().decode("utf-8") == whole
    assert len(json.loads(whole)["cells"]) == 3000


# ---- case 6: the serving budget charges what a simulation costs, not only its tokens -------------------------

def test_case_6_every_simulation_pays_its_fixed_cost_against_the_serving_budget(monkeypatch):
    """Many small traffic workloads (ten requests, four output tokens each): before the fix a run charged only
    ~2,500 token-steps for a simulation that costs ~600 us of CPU (7,500 at 80 ns), so the budget's documented
    ~30 s became ~80 s. With 20,000,000 steps for the listed rates and as many for the rate searches (issue 44:
    charged apart), the run now stops after at most 40e6 / SIMULATION_STEPS simulations (8,000; main ran 7,800
    against one budget of 20,000,000 before the fix)."""
    import triage
    from triage.analysis import pipeline
    from triage.serving import engine
    from triage.serving.budget import Budget

    made = []
    real = engine.Engine.__init__
    monkeypatch.setattr(engine.Engine, "__init__", lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    traffic = {"rates": [1], "arrivals": "poisson", "prompt_tokens": 64, "output_tokens": 4, "requests": 10,
               "seed": 1, "slo": {"ttft": "2 s", "tbt": "100 ms"}}
    workloads = [{"name": f"t{i}", "phase": "decode", "context": 512, "batch": 1, "share": 1 / 300,
                  "traffic": traffic, "scheduler": {"policy": "continuous", "max_seqs": 8, "max_batched_tokens": 512}}
                 for i in range(300)]
    with pytest.raises((triage.UserError, ValueError), match="token-steps"):
        pipeline.evaluate(KV2X, {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
                                 "workloads": workloads}, work=Budget(limit=20_000_000, search_limit=20_000_000))
    assert len(made) <= 8_000                # 40,000,000 steps / 5,000 a simulation at least, by hand


# ---- what triage writes for people to read back: XML ------------------------------------------------------------

def test_a_control_character_in_a_cards_title_leaves_every_figure_parseable_xml(tmp_path):
    """A double-quoted YAML title may hold "\\x01" and "\\x0b", which XML 1.0 forbids: each SVG still parses."""
    import xml.etree.ElementTree as ET

    card = tmp_path / "card.yaml"
    card.write_text(KV2X.read_text().replace('title: ', 'title: "ctl\\x01 \\x0b" # ', 1))
    res = run("run", card, "-o", tmp_path / "memo.md")
    assert res.exit_code == 0, res.stderr
    figures = sorted(tmp_path.glob("memo.*.svg"))
    assert figures
    for svg in figures:
        ET.parse(svg)
