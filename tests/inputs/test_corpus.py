"""Positive and negative example files: every malformed input gets its exact, addressed error line.

Each tests/corpus/negative/*/NAME.yaml has NAME.err beside it holding the exact
error lines `triage validate` prints. A change in wording shows up here.
"""

import subprocess
import sys
from pathlib import Path

import pytest

import triage
from triage.errors import UserError
from triage.inputs import cards, workloads
from triage.inputs.change import to_json

from conftest import CLAIMS, ROOT, load_workloads

CORPUS = ROOT / "tests" / "corpus"
NEG_CARDS = sorted((CORPUS / "negative" / "cards").glob("*.yaml"))
NEG_WORKLOADS = sorted((CORPUS / "negative" / "workloads").glob("*.yaml"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_corpus_is_large_enough():
    assert len(NEG_CARDS) >= 20 and len(NEG_WORKLOADS) >= 8


@pytest.mark.parametrize("path", NEG_CARDS + NEG_WORKLOADS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_negative_file_gets_its_exact_error(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    load = cards.load if path.parent.name == "cards" else workloads.load
    with pytest.raises(UserError) as err:
        load(_rel(path))
    got = [f"error: {p}" for p in err.value.problems]
    assert got == path.with_suffix(".err").read_text(encoding="utf-8").splitlines()
    assert all(line.startswith(f"error: {_rel(path)}") for line in got)


@pytest.mark.parametrize("path", sorted((CORPUS / "positive" / "cards").glob("*.yaml")) + sorted(CLAIMS.glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_positive_cards_load(path):
    claim = cards.load(path)
    assert claim.change


def test_yaml_1_2_numbers_are_numbers():
    claim = cards.load(CORPUS / "positive" / "cards" / "yaml12-numbers.yaml")
    assert to_json(claim.change) == {"weight_bytes": 0.5, "linear_flops": 1.0}
    assert isinstance(claim.change.weight_bytes, float) and isinstance(claim.change.linear_flops, float)
    assert claim.claimed_speedup == 2.0


@pytest.mark.parametrize("path", sorted((CORPUS / "positive" / "workloads").glob("*.yaml")), ids=lambda p: p.stem)
def test_positive_workloads_evaluate(path):
    r = triage.evaluate(CLAIMS / "kv2x.yaml", path)
    assert len(r) > 0
    assert abs(sum(c["share"] for c in r.to_dict()["cells"]) - 1.0) < 1e-9


def test_grid_expands_every_axis():
    m = load_workloads(CORPUS / "positive" / "workloads" / "grid.yaml")
    assert len(m) == 2 * 3 * 2 * 2                   # phase × context × batch × model
    m = load_workloads(CORPUS / "positive" / "workloads" / "mixed.yaml")
    # chat: 2 models × 1 hardware; rag: 2 models × 2 hardware; grid: 2 × 2 contexts × batches × 2 models
    assert len(m) == 2 + 4 + 8


def test_a_20_mb_card_is_refused_after_reading_one_mebibyte(tmp_path, monkeypatch):
    """The work is bounded, not timed: the reader stops at the limit (1 MiB and one byte), never reads 20 MB."""
    import os

    big = tmp_path / "big.yaml"
    big.write_text("id: big\n" + "# padding\n" * 2_000_000)
    assert big.stat().st_size > 20e6
    read = []
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real(fd, n))
    with pytest.raises(UserError) as err:
        cards.load(big)
    assert str(err.value) == f"{big}: file is over the 1024 KiB limit"
    assert sum(read) <= (1 << 20) + 1


def test_cli_prints_errors_without_traceback_and_exits_1():
    bad = CORPUS / "negative" / "cards" / "many-errors.yaml"
    proc = subprocess.run([sys.executable, "-m", "triage", "run", _rel(bad)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == bad.with_suffix(".err").read_text().splitlines()
