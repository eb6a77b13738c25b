"""Names resolve in one merged catalog: shipped, a user catalog (--catalog, $TRIAGE_CATALOG) and the workload
file's own definitions, for workloads, a card's setting, draft models and distillation targets."""

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import triage
from triage.cli import main

CONFIGS = Path(__file__).parent.parent / "configs"

# An RTX 3090-shaped chip under a name the shipped catalog does not hold (numbers: NVIDIA GA102 whitepaper,
# 936 GB/s, 24 GiB, 71 TFLOP/s dense fp16 with fp16 accumulate).
CHIP = ("hardware:\n  my-gpu:\n    memory: 24 GiB\n    bandwidth: 936 GB/s\n"
        "    compute: {fp16: 71 TFLOP/s}\n")
# a 1B draft with the Llama 3.2 1B shape
DRAFT = ("models:\n  my-draft-1b:\n    num_hidden_layers: 16\n    hidden_size: 2048\n    num_attention_heads: 32\n"
         "    num_key_value_heads: 8\n    head_dim: 64\n    intermediate_size: 8192\n    vocab_size: 128256\n"
         "    tie_word_embeddings: true\n")
KV_CARD = ("id: c\ntitle: t\ndirection: cache\nchange: {kv_bytes: 0.25}\n"
           "claim: {speedup: 1.5, metric: tpot, setting: {model: llama-2-7b, hardware: my-gpu, batch: 1, "
           "context: 4096}}\n")


def _spec_card(draft: str) -> str:
    return ("id: s\ntitle: t\ndirection: decoding\n"
            f"change: {{speculative: {{tokens: 4, acceptance: 0.7, draft_model: {draft}}}}}\n"
            "claim: {speedup: 2.0, metric: tpot, setting: {model: llama-3-8b, batch: 1, context: 2048}}\n")


def test_a_card_setting_on_hardware_defined_in_the_workload_file_runs_its_paper_check(tmp_path):
    (tmp_path / "w.yaml").write_text(CHIP + "workloads:\n  - {name: w, context: 4096, hardware: my-gpu}\n")
    (tmp_path / "c.yaml").write_text(KV_CARD)
    check = triage.evaluate(tmp_path / "c.yaml", tmp_path / "w.yaml").to_dict()["paper_check"]
    assert check["setting"]["hardware"] == "my-gpu"
    # by hand, decode at batch 1, 4,096 tokens, Llama 2 7B: weights 13,476,831,232 B (6,738,415,616 x 2),
    # KV 4,096 x 524,288 B = 2,147,483,648 B; a quarter of the KV saves 1,610,612,736 B: bound ~ 15.62/14.01
    assert check["bound"] == pytest.approx(1.115, abs=0.005)


def test_a_user_catalog_file_and_the_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "cat.yaml").write_text(CHIP)
    (tmp_path / "c.yaml").write_text(KV_CARD)
    a = triage.evaluate(tmp_path / "c.yaml", catalog=tmp_path / "cat.yaml").to_dict()["paper_check"]
    monkeypatch.setenv("TRIAGE_CATALOG", str(tmp_path / "cat.yaml"))
    b = triage.evaluate(tmp_path / "c.yaml").to_dict()["paper_check"]
    assert a["bound"] == b["bound"] and a["setting"]["hardware"] == "my-gpu"
    res = CliRunner().invoke(main, ["validate", str(tmp_path / "c.yaml")])
    assert res.exit_code == 0, res.output


def test_without_the_definition_the_card_is_refused_with_a_hint(tmp_path, monkeypatch):
    monkeypatch.delenv("TRIAGE_CATALOG", raising=False)
    (tmp_path / "c.yaml").write_text(KV_CARD)
    res = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml")])
    assert res.exit_code == 1
    assert "$.claim.setting.hardware: unknown hardware" in res.output and "--catalog" in res.output


def test_a_catalog_file_holds_definitions_only(tmp_path):
    (tmp_path / "cat.yaml").write_text(CHIP + "workloads:\n  - {name: w, context: 4096}\n")
    (tmp_path / "c.yaml").write_text(KV_CARD)
    res = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml"), "--catalog", str(tmp_path / "cat.yaml")])
    assert res.exit_code == 1 and "cat.yaml:6:1 $.workloads: a catalog file holds hardware, models, engines only" \
        in res.output


def test_draft_model_defined_inline_in_the_workload_file(tmp_path):
    (tmp_path / "w.yaml").write_text(DRAFT + "workloads:\n  - {name: w, context: 2048, model: llama-3-8b}\n")
    (tmp_path / "c.yaml").write_text(_spec_card("my-draft-1b"))
    r = triage.evaluate(tmp_path / "c.yaml", tmp_path / "w.yaml").to_dict()
    assert r["cells"][0]["claim"]["time_s"]["theoretical"] > 0
    # the same draft under the shipped name prices the same: the inline entry is the Llama 3.2 1B shape
    (tmp_path / "c2.yaml").write_text(_spec_card("llama-3.2-1b"))
    ref = triage.evaluate(tmp_path / "c2.yaml", tmp_path / "w.yaml").to_dict()
    assert r["cells"][0]["claim"]["time_s"] == ref["cells"][0]["claim"]["time_s"]


def test_draft_model_as_a_config_json_path_relative_to_the_card(tmp_path):
    (tmp_path / "draft").mkdir()
    shutil.copy(CONFIGS / "llama-3-8b.json", tmp_path / "draft" / "config.json")
    (tmp_path / "c.yaml").write_text(_spec_card("./draft/config.json"))
    (tmp_path / "c2.yaml").write_text(_spec_card("llama-3-8b"))
    a = triage.evaluate(tmp_path / "c.yaml").to_dict()["cells"][0]["claim"]["time_s"]
    b = triage.evaluate(tmp_path / "c2.yaml").to_dict()["cells"][0]["claim"]["time_s"]
    assert a == b            # the config.json is Llama 3 8B's: the same draft by path and by name


def test_what_catalog_import_writes_is_a_user_catalog(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["catalog", "import", str(CONFIGS / "llama-3-8b.json"), "--name", "mine",
                               "-o", str(tmp_path / "mine.yaml")])
    assert res.exit_code == 0, res.output
    (tmp_path / "c.yaml").write_text(KV_CARD.replace("llama-2-7b", "mine").replace("my-gpu", "a100-80gb"))
    res = runner.invoke(main, ["run", str(tmp_path / "c.yaml"), "--catalog", str(tmp_path / "mine.yaml"), "-f", "json"])
    assert res.exit_code == 0, res.output
    assert '"model": "mine"' in res.stdout


def test_the_catalog_listing_shows_the_users_chips(tmp_path):
    (tmp_path / "cat.yaml").write_text(CHIP)
    res = CliRunner().invoke(main, ["catalog", "hardware", "--catalog", str(tmp_path / "cat.yaml")])
    assert res.exit_code == 0, res.output
    assert "| my-gpu | 24.00 GiB | 936 GB/s | 71 TFLOP/s |" in res.stdout
