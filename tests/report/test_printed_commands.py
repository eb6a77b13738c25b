"""Every command a memo or its JSON prints for a person runs (issue 47): the memo's "regenerate with" line
regenerates the same memo, the verification plan's `triage run … --measured` parses as a triage command with the
run's own arguments, and its `vllm bench serve` and `lm_eval` commands are valid shell using only the flags those
tools document.

The documented flags, read from the tools' own argument parsers:
- vLLM 0.11.0 (commit f71952c1c), `vllm/benchmarks/serve.py` add_cli_args and `vllm/benchmarks/datasets.py`
  add_dataset_parser (the subset triage prints);
- lm-evaluation-harness v0.4.9.2 (commit ad3f4d0), `lm_eval/__main__.py`.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from triage.cli import main

from conftest import CLAIMS, ROOT

VLLM_BENCH_SERVE = {"--model", "--dataset-name", "--random-input-len", "--random-output-len", "--max-concurrency",
                    "--num-prompts", "--save-result", "--result-dir", "--result-filename", "--metadata",
                    "--request-rate", "--seed", "--backend", "--base-url", "--host", "--port", "--endpoint",
                    "--tokenizer", "--served-model-name", "--percentile-metrics", "--metric-percentiles",
                    "--goodput", "--ignore-eos"}
LM_EVAL = {"--model", "--tasks", "--model_args", "--num_fewshot", "--batch_size", "--max_batch_size", "--device",
           "--output_path", "--limit", "--use_cache", "--log_samples", "--system_instruction",
           "--apply_chat_template", "--gen_kwargs", "--seed", "--trust_remote_code", "--confirm_run_unsafe_code",
           "--metadata", "--include_path"}
TOOLS = {("vllm", "bench", "serve"): VLLM_BENCH_SERVE, ("lm_eval",): LM_EVAL}


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder holding a local model the way a user has one (Meta-Llama-3-8B/config.json), as the cwd."""
    folder = tmp_path / "Meta-Llama-3-8B"
    folder.mkdir()
    shutil.copy(ROOT / "tests" / "configs" / "llama-3-8b.json", folder / "config.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


RUNS = {
    "default": [str(CLAIMS / "kv2x.yaml")],
    "config.json": [str(CLAIMS / "kv2x.yaml"), "--model", "Meta-Llama-3-8B/config.json"],
    "flags": [str(CLAIMS / "awq.yaml"), "--model", "llama-3-8b", "--hardware", "h100-sxm", "--context", "4k,32k",
              "--batch", "1..8"],
    "stack": [str(CLAIMS / "int8-weights.yaml"), str(CLAIMS / "int8-kv.yaml"), "--stack", "--baseline", "current"],
}


def _invoke(args: list[str]):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.stderr
    return res


def _regenerate_line(memo: str) -> list[str]:
    first = memo.splitlines()[0]
    assert first.startswith("<!-- triage decision memo: regenerate with `") and first.endswith("` -->"), first
    return shlex.split(first[len("<!-- triage decision memo: regenerate with `"):-len("` -->")])


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNS)
def test_the_memo_s_regenerate_line_regenerates_the_same_memo(here, name):
    memo = here / "memo.md"
    _invoke(["run", *RUNS[name], "-o", str(memo), "--figures", "none"])
    first = memo.read_text(encoding="utf-8")
    words = _regenerate_line(first)
    assert words[:2] == ["triage", "run"]
    if name == "config.json":
        assert "--model" in words and "Meta-Llama-3-8B/config.json" in words      # issue 47: it was dropped
    memo.unlink()
    _invoke(words[1:])
    assert memo.read_text(encoding="utf-8") == first


@pytest.mark.slow
@pytest.mark.parametrize("name", ["default", "config.json", "flags"])
def test_every_command_the_json_prints_is_valid_for_its_tool(here, name):
    doc = json.loads(_invoke(["run", *RUNS[name], "-f", "json"]).stdout)
    commands = [s["command"] for s in doc["analysis"]["verification_plan"] if s["command"]]
    assert any(c.startswith("triage run") for c in commands)
    seen = set()
    for command in commands:
        if shutil.which("bash"):                                     # the whole line is valid shell
            assert subprocess.run(["bash", "-n", "-c", command]).returncode == 0, command
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";")
        lexer.whitespace_split = True
        words = list(lexer)
        if words[:2] == ["triage", "run"]:
            # the run's own arguments, then --measured: click parses it as the triage command it is
            assert words[-2:] == ["--measured", "results/"]
            main.make_context("triage", words[1:])
            assert words[2:-2] == RUNS[name], words
            seen.add("triage")
            continue
        for start in range(len(words)):
            for tool, flags in TOOLS.items():
                if tuple(words[start:start + len(tool)]) == tool:
                    end = words.index(";", start) if ";" in words[start:] else len(words)
                    used = {w.split("=", 1)[0] for w in words[start:end] if w.startswith("--")}
                    assert used <= flags, (tool, used - flags)
                    seen.add(tool[0])
                    model = words[words.index("--model", start) + 1] if tool[0] == "vllm" else \
                        next(w for w in words[start:end] if w.startswith("pretrained="))
                    # vLLM serves a model folder or a Hugging Face id, never a config file
                    assert not model.endswith(".json"), command
                    if name == "config.json":
                        assert "Meta-Llama-3-8B" in model and "config.json" not in model, model
    assert seen == {"triage", "vllm", "lm_eval"}


def test_the_plan_maps_the_card_s_tasks_to_the_harness_and_names_the_rest():
    """gptq.yaml lists wikitext2, ptb, c4, lambada, arc-easy, arc-challenge, piqa. lm-eval v0.4.9.2's tasks:
    wikitext (lm_eval/tasks/wikitext/wikitext.yaml, dataset wikitext-2-raw-v1), c4, lambada_openai, arc_easy,
    arc_challenge, piqa; ptb has none (only paloma_ptb, another corpus), so it is named in the step, not passed.
    speculative-decoding.yaml's wmt-ende and cnn-dailymail have no harness task either: the default set runs."""
    import triage

    def gate(card: str) -> dict:
        plan = triage.evaluate(CLAIMS / card).to_dict()["analysis"]["verification_plan"]
        (step,) = [s for s in plan if s["step"].startswith("quality gate")]
        return step

    g = gate("gptq.yaml")
    assert "--tasks wikitext,c4,lambada_openai,arc_easy,arc_challenge,piqa --batch_size auto" in g["command"]
    assert "the card's ptb: no lm-evaluation-harness task" in g["step"]
    s = gate("speculative-decoding.yaml")
    assert "--tasks wikitext,hellaswag,gsm8k" in s["command"] and "wmt-ende, cnn-dailymail" in s["step"]
    assert "pretrained=MODEL" not in g["command"] + s["command"]
