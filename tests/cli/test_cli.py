"""The command line through click's CliRunner (and one real subprocess)."""

import json
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

import triage
from triage.cli import main

from conftest import CLAIMS, COURSE, ROOT


@pytest.fixture
def runner():
    return CliRunner()


def test_run_prints_the_memo(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml")])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("<!-- triage decision memo")
    assert "# Decision memo: 2x KV-cache compression (`kv2x`)" in res.stdout
    assert "| chat-4k | llama-2-7b | a100-80gb | decode | 4,096 | 1 | 20.0 % | 1.057× | 1.853× |" in res.stdout


def test_json_output_is_exactly_to_dict(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--format", "json"])
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    assert doc == triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()
    assert set(doc) >= {"claim", "cells", "decision"}
    c = doc["cells"][0]
    for key in ("workload", "model", "hardware", "phase", "context", "batch", "baseline", "claim", "speedup",
                "verdict", "reasons"):
        assert key in c
    for side in ("baseline", "claim"):
        assert set(c[side]) >= {"bytes_per_step", "flops_per_step", "memory_bytes", "fits", "max_batch", "time_s"}
        assert set(c[side]["time_s"]) == {"theoretical", "implementation", "end_to_end"}
        assert isinstance(c[side]["bytes_per_step"], float)
    assert set(c["speedup"]) == {"claimed", "theoretical", "implementation", "end_to_end"}


def test_workloads_flag(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "int8-kv.yaml"), "--workloads", str(COURSE), "-f", "json"])
    doc = json.loads(res.stdout)
    assert [c["workload"] for c in doc["cells"]] == ["A-chat-4k", "B-docqa-128k"]
    assert round(doc["cells"][1]["speedup"]["theoretical"], 3) == 1.711


@pytest.mark.slow
def test_output_file_is_written_atomically_and_format_follows_suffix(runner, tmp_path):
    out = tmp_path / "memo.json"
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)])
    assert res.exit_code == 0
    assert json.loads(out.read_text())["claim"]["id"] == "kv2x"
    assert list(tmp_path.iterdir()) == [out]                     # no temporary file left behind
    md = tmp_path / "memo.md"
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(md)]).exit_code == 0
    assert md.read_text().startswith("<!-- triage decision memo")
    # rewriting its own output is fine
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(md)]).exit_code == 0


def test_output_never_overwrites_a_foreign_file_or_the_input(runner, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(notes)])
    assert res.exit_code == 1
    assert res.stderr == (f"error: {notes}: exists and was not written by triage (or changed since); "
                          "pass --force to overwrite it\n")
    assert notes.read_text() == "my notes\n"
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(notes), "--force"]).exit_code == 0
    card = tmp_path / "card.yaml"
    card.write_text((CLAIMS / "kv2x.yaml").read_text())
    res = runner.invoke(main, ["run", str(card), "-o", str(card), "--force"])
    assert res.exit_code == 1 and "refusing to write the output onto an input file" in res.stderr
    assert card.read_text() == (CLAIMS / "kv2x.yaml").read_text()


def test_bad_card_exits_1_with_addressed_errors_and_writes_nothing(runner, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nchange: {kv_bytes: -1}\n")
    out = tmp_path / "memo.md"
    res = runner.invoke(main, ["run", str(bad), "-o", str(out)])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {bad}:1:1 $: missing required key 'direction'",
        f"error: {bad}:1:1 $: missing required key 'title'",
        f"error: {bad}:2:20 $.change.kv_bytes: expected a number >= 0.001, got -1",
    ]
    assert not out.exists()


def test_missing_file(runner, tmp_path):
    res = runner.invoke(main, ["run", str(tmp_path / "nope.yaml")])
    assert res.exit_code == 1
    assert res.stderr == f"error: {tmp_path / 'nope.yaml'}: no such file\n"


def test_validate_lists_every_problem_and_the_claims_are_clean(runner):
    res = runner.invoke(main, ["validate", *map(str, sorted(CLAIMS.glob("*.yaml")))])
    assert res.exit_code == 0, res.stderr
    assert res.stderr == f"{len(list(CLAIMS.glob('*.yaml')))} files valid\n"
    bad = ROOT / "tests" / "corpus" / "negative" / "cards"
    res = runner.invoke(main, ["validate", str(bad / "many-errors.yaml"), str(bad / "negative-multiplier.yaml"),
                               "--format", "json"])
    assert res.exit_code == 1
    problems = json.loads(res.stdout)
    assert len(problems) == 5
    assert problems[0] == {"file": str(bad / "many-errors.yaml"), "line": 3, "col": 12, "path": "$.direction",
                           "message": "expected one of attention, cache, weights, decoding, system; got other text "
                                      "(did you mean 'cache'?)"}


def test_usage_error_exits_2(runner):
    assert runner.invoke(main, ["run"]).exit_code == 2
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--format", "pdf"]).exit_code == 2


def test_internal_error_exits_3_with_a_hint(runner, monkeypatch):
    import triage.report.result

    def boom(*_a, **_k):
        raise RuntimeError("boom")

    monkeypatch.setattr(triage.report.result, "evaluate", boom)       # `run` imports it when it runs
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml")])
    assert res.exit_code == 3
    assert res.stderr == ("internal error: RuntimeError: boom\n"
                          "This is a bug in triage; rerun with --traceback and report it.\n")
    res = runner.invoke(main, ["--traceback", "run", str(CLAIMS / "kv2x.yaml")])
    assert res.exit_code == 3 and "Traceback" in res.stderr


def test_help_has_examples(runner):
    for args in (["--help"], ["run", "--help"], ["validate", "--help"], ["compare", "--help"], ["calibrate", "--help"],
                 ["schema", "--help"], ["new", "--help"], ["catalog", "--help"], ["catalog", "models", "--help"],
                 ["catalog", "import", "--help"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 0 and "Example:" in res.stdout


def test_python_dash_m_triage():
    proc = subprocess.run([sys.executable, "-m", "triage", "run", "claims/kv2x.yaml", "-f", "json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["decision"]["verdict"] == "CONDITIONAL"


def test_output_is_byte_identical_across_runs(runner):
    a = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml")]).stdout
    b = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml")]).stdout
    assert a == b


def test_version_is_the_installed_distributions():
    """`triage --version` names the llm-triage distribution's version (click's guess from the import name
    `triage` found no such distribution: a traceback in every fresh venv)."""
    from importlib.metadata import version

    res = CliRunner().invoke(main, ["--version"])
    assert res.exit_code == 0 and res.stdout == f"triage, version {version('llm-triage')}\n"


def test_the_figures_help_names_every_figure_run_writes(runner, tmp_path):
    """`--figures` help named three files while the memo wrote four (the serving figure): every figure a memo
    with a serving workload writes beside it is named in the help, and nothing else is."""
    out = tmp_path / "memo.md"
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    written = {p.name.removeprefix("memo.") for p in tmp_path.glob("memo.*.svg")}
    assert written == {"roofline.svg", "gain.svg", "latency.svg", "serving.svg"}     # serve-conv has traffic
    named = set(re.findall(r"FILE\.(\w+\.svg)", runner.invoke(main, ["run", "--help"]).stdout))
    assert named == written
