"""One-off questions from flags: `triage run CARD --model M --hardware H --context N[,N…] [--batch …]` builds
the matrix with no workload file (inputs/oneoff.py); compare and sweep take the same flags."""

import csv
import json

import pytest
import yaml
from click.testing import CliRunner

from triage.cli import main

from conftest import CLAIMS

ISSUE = ["--model", "llama-3-8b", "--hardware", "l40s", "--context", "2048,32768", "--batch", "1,8"]


@pytest.fixture
def runner():
    return CliRunner()


def test_the_newcomers_question_prints_a_memo_with_no_workload_file(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "fp8-inference.yaml"), *ISSUE])
    assert res.exit_code == 0, res.stderr
    text = res.stdout
    # the memo says how to run it again, and prices the grid the flags asked for: 2 contexts x 2 batches
    assert text.splitlines()[0].endswith(f"`triage run {CLAIMS / 'fp8-inference.yaml'} " + " ".join(ISSUE) + "` -->")
    rows = [line for line in text.splitlines() if line.startswith("| flags | llama-3-8b | l40s | decode |")]
    assert [r.split("|")[5:7] for r in rows[:4]] == [[" 2,048 ", " 1 "], [" 2,048 ", " 8 "], [" 32,768 ", " 1 "],
                                                  [" 32,768 ", " 8 "]]
    # Llama 3 8B's window is 8,192 tokens (config.json max_position_embeddings): 32k is flagged, not silent
    assert "priced beyond the model's trained window" in text and "32,768 tokens > 8,192" in text


def test_a_cell_from_flags_is_the_hand_calculation(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--model", "llama-3-8b", "--hardware", "l40s",
                               "--context", "2048", "-f", "json"])
    (cell,) = json.loads(res.stdout)["cells"]
    # KV read at 2,048 tokens: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 B x 2,048 = 268,435,456 B,
    # plus the new token's K and V written, 131,072 B
    assert cell["baseline"]["bytes_by_group"]["attention"] == 268_435_456 + 131_072
    # one decode step is bytes over the L40S's 864 GB/s (datasheet): 15,278,937,088 B / 864e9 B/s
    total = sum(cell["baseline"]["bytes_by_group"].values())
    assert total == 15_278_937_088
    assert cell["baseline"]["time_s"]["theoretical"] == pytest.approx(total / 864e9, rel=1e-12)
    assert (cell["phase"], cell["batch"], cell["share"]) == ("decode", 1, 1.0)


def test_flags_price_what_the_same_workload_file_prices(runner, tmp_path):
    """The flags are a workload file's grid: the same cells, the same numbers."""
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"grid": {"name": "flags", "share": 1.0, "model": ["llama-3-8b"],
                                             "hardware": ["l40s", "a100-80gb"], "phase": ["decode", "prefill"],
                                             "context": [2048, 32768], "batch": [1, 8]}}))
    by_file = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-f", "json"])
    by_flags = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "--model", "llama-3-8b", "--hardware",
                                    "l40s,a100-80gb", "--phase", "decode,prefill", "--context", "2048,32768",
                                    "--batch", "1,8", "-f", "json"])
    assert by_file.exit_code == by_flags.exit_code == 0, by_flags.stderr
    a, b = json.loads(by_file.stdout), json.loads(by_flags.stdout)
    assert len(a["cells"]) == len(b["cells"]) == 16
    assert a["cells"] == b["cells"] and a["decision"] == b["decision"]


def test_compare_and_sweep_take_the_same_flags(runner, tmp_path):
    cmp = runner.invoke(main, ["compare", str(CLAIMS / "awq.yaml"), str(CLAIMS / "int8-weights.yaml"), *ISSUE,
                               "-f", "json"])
    assert cmp.exit_code == 0, cmp.stderr
    doc = json.loads(cmp.stdout)
    assert {(c["model"], c["hardware"], c["context"], c["batch"]) for c in doc["cells"]} == {
        ("llama-3-8b", "l40s", n, b) for n in (2048, 32768) for b in (1, 8)}
    out = tmp_path / "cells.csv"
    sweep = runner.invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), *ISSUE, "-o", str(out)])
    assert sweep.exit_code == 0, sweep.stderr
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["context"], r["batch"]) for r in rows) == [("2048", "1"), ("2048", "8"), ("32768", "1"),
                                                                 ("32768", "8")]


@pytest.mark.parametrize("args,message", [
    (["--hardware", "l40s"], "--context: a matrix from flags needs the context in tokens"),
    (["--context", "4kb"], "--context: expected whole numbers of tokens, comma-separated"),
    (["--context", "1..4..8"], "--context: expected whole numbers of tokens, comma-separated"),
    (["--context", "4096,,8192"], "--context: an empty value"),
    (["--context", ",".join(["1"] * 1001)], "--context: more than 1,000 values (limit flag_values)"),
    (["--batch", "-1", "--context", "4096"], "--batch: expected whole numbers of sequences"),
    (["--engine", "vllm"], "--engine: --engine goes with the matrix flags"),
    (["--model", "llama-2-7b,llama-3-8b"], "--model: several models make a grid: add --context"),
    (["--hardware", "l40", "--context", "4096"], "$.grid.hardware[0]: unknown hardware (did you mean 'l40s'?)"),
    (["--phase", "decod", "--context", "4096"], "(did you mean 'decode'?)"),
])
def test_bad_flags_are_one_addressed_line(runner, args, message):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), *args])
    assert res.exit_code == 1, res.stdout
    assert message in res.stderr and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_the_memo_s_own_forms_are_accepted_128k_and_a_doubling_range(runner, tmp_path):
    """The memo prints 131,072 tokens as '128k' (k = 1,024, where_it_pays) and a batch sweep as 1..64: the
    flags take them back. By hand: 4k = 4,096 and 128k = 131,072 tokens; 1..64 doubles to 1, 2, 4, …, 64
    (7 batches); 2 contexts × 7 batches on one chip = 14 cells."""
    out = tmp_path / "cells.csv"
    res = runner.invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "--hardware", "h100-sxm", "--context",
                               "4k,128k", "--batch", "1..64", "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert sorted({int(r["context"]) for r in rows}) == [4096, 131072]
    assert sorted({int(r["batch"]) for r in rows}) == [1, 2, 4, 8, 16, 32, 64]
    assert len(rows) == 14


def test_a_workload_file_and_the_matrix_flags_are_refused_together(runner):
    res = runner.invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-w", "examples/mix-chat.yaml", "--context", "4096"])
    assert res.exit_code == 2 and "both name a matrix: give one" in res.stderr
