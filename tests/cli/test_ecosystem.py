"""Editors, pre-commit, scaffolding, catalog browsing, briefs and CLI manners."""

import json
import re

import pytest
import yaml
from click.testing import CliRunner

from triage.cli import main
from triage.io.resources import schema

from conftest import CLAIMS, ROOT

CONFIGS = ROOT / "tests" / "configs"
SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


@pytest.fixture
def runner():
    return CliRunner()


@pytest.mark.parametrize("path", sorted(CLAIMS.glob("*.yaml")), ids=lambda p: p.stem)
def test_cards_carry_a_schema_line_that_resolves_in_a_checkout(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    match = SCHEMA_LINE.match(first)
    assert match, f"{path.name} does not start with a yaml-language-server schema line"
    target = (path.parent / match.group(1)).resolve()
    assert target == (ROOT / "schemas" / "claim.schema.json").resolve()
    assert json.loads(target.read_text())["$schema"].endswith("2020-12/schema")


def test_schema_command_prints_both_schemas(runner):
    for name in ("claim", "workloads"):
        res = runner.invoke(main, ["schema", name])
        assert res.exit_code == 0
        assert json.loads(res.stdout) == schema(name)
    assert json.loads(runner.invoke(main, ["schema"]).stdout)["title"] == "triage claim card"


@pytest.mark.parametrize("direction", ["attention", "cache", "weights", "decoding", "system"])
def test_new_writes_a_commented_card_validate_refuses_until_filled_and_never_overwrites(runner, tmp_path, direction,
                                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(main, ["new", "--direction", direction, "--id", "my-paper"])
    assert res.exit_code == 0, res.stderr
    path = tmp_path / "claims" / "my-paper.yaml"
    text = path.read_text()
    for command in (["validate", str(path)], ["validate", "--strict", str(path)], ["run", str(path)]):
        refused = runner.invoke(main, command)
        assert refused.exit_code == 1 and "$.change." in refused.stderr and "placeholder" in refused.stderr
    assert yaml.safe_load(text)["id"] == "my-paper" and yaml.safe_load(text)["direction"] == direction
    assert "Ask the authors:" in text and "needle-in-a-haystack" in text
    assert SCHEMA_LINE.match(text.splitlines()[0])
    again = runner.invoke(main, ["new", "--direction", direction, "--id", "my-paper"])
    assert again.exit_code == 1
    assert again.stderr == "error: claims/my-paper.yaml: exists: triage new never overwrites a card\n"
    assert path.read_text() == text


def test_new_schema_line_points_at_the_schema(runner, tmp_path):
    out = tmp_path / "deep" / "card.yaml"
    assert runner.invoke(main, ["new", "-d", "cache", "--id", "x", "-o", str(out)]).exit_code == 0
    line = SCHEMA_LINE.match(out.read_text().splitlines()[0]).group(1)
    target = (out.parent / line).resolve() if not line.startswith("file:") else None
    assert target is None or target.name == "claim.schema.json" and target.exists()


def test_new_rejects_a_bad_id(runner, tmp_path):
    res = runner.invoke(main, ["new", "-d", "cache", "--id", "My Paper", "-o", str(tmp_path / "x.yaml")])
    assert res.exit_code == 1
    assert "is not a card id" in res.stderr


@pytest.mark.parametrize("section", ["hardware", "models", "workloads"])
def test_catalog_tables_and_json(runner, section):
    md = runner.invoke(main, ["catalog", section])
    assert md.exit_code == 0 and md.stdout.startswith("| ")
    rows = json.loads(runner.invoke(main, ["catalog", section, "--format", "json"]).stdout)
    assert rows
    if section == "hardware":
        a100 = next(r for r in rows if r["key"] == "a100-80gb")
        assert a100["ridge_point_fp16_flop_per_byte"] == pytest.approx(312e12 / 2.039e12)
        assert "| a100-80gb | 80.00 GiB | 2.039 TB/s | 312 TFLOP/s |" in md.stdout
    if section == "models":
        llama = next(r for r in rows if r["key"] == "llama-2-7b")
        assert llama["kv_bytes_per_token_fp16"] == 524_288 and llama["params"] == 6_738_415_616
        assert all(r["source"] for r in rows)


def test_catalog_import_round_trips(runner, tmp_path):
    res = runner.invoke(main, ["catalog", "import", str(CONFIGS / "mixtral-8x7b.json"), "--name", "mix"])
    assert res.exit_code == 0, res.stderr
    doc = yaml.safe_load(res.stdout)
    entry = doc["models"]["mix"]
    assert entry["num_experts"] == 8 and entry["num_experts_per_tok"] == 2
    out = tmp_path / "models.yaml"
    assert runner.invoke(main, ["catalog", "import", str(CONFIGS / "mixtral-8x7b.json"), "--name", "mix",
                                "-o", str(out)]).exit_code == 0
    workload = tmp_path / "w.yaml"
    workload.write_text(out.read_text() + "defaults: {model: mix}\nworkloads:\n  - {name: w, context: 4096}\n")
    run = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(workload), "-f", "json"])
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["cells"][0]["model"] == "mix"


def test_brief_is_one_page_with_the_three_questions(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--brief"])
    assert res.exit_code == 0
    text = res.stdout
    assert text.startswith("<!-- triage reading-group brief")
    assert "**Which direction it moves: cache** (one of five in the course page, module 12.4" in text
    assert text.count("\n1. ") == 1 and "\n3. Does quality hold on long-context retrieval" in text
    assert "| docqa-128k (decode, 131,072 tokens, batch 1) | llama-2-7b | a100-80gb | 41.9 % | 1.722× |" in text
    assert len(text.splitlines()) < 60
    assert runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--brief", "-f", "json"]).exit_code == 2


def test_quiet_verbose_and_no_color(runner, tmp_path, monkeypatch):
    out = tmp_path / "m.md"
    loud = runner.invoke(main, ["-v", "run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)])
    assert "9 cells; evaluated in" in loud.stderr and f"wrote {out}" in loud.stderr
    quiet = runner.invoke(main, ["-q", "run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)])
    assert quiet.stderr == ""
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\n")
    monkeypatch.setenv("NO_COLOR", "1")
    res = runner.invoke(main, ["validate", str(bad)], color=True)
    assert "\x1b[" not in res.stderr and res.stderr.startswith("error: ")
    monkeypatch.delenv("NO_COLOR")
    res = runner.invoke(main, ["validate", str(bad)], color=True)
    assert res.stderr.startswith("\x1b[")                        # red on a terminal


def test_pre_commit_hook_definitions():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = hooks
    assert hook["id"] == "triage-validate" and hook["entry"] == "triage validate"
    assert re.search(hook["files"], "claims/kv2x.yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    local = config["repos"][0]["hooks"][0]
    assert local["id"] == "triage-validate" and local["entry"].endswith("triage validate")
    assert re.search(local["files"], "claims/kv2x.yaml")
