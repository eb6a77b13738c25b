"""The blind hindsight set as registered (docs/hindsight.md): every file matches its committed SHA-256 sum, the
split is the registered hash rule, the set has the size and spread issue 41 asks for, each label cites a source
with a quote, and each card is one a user could have written at the paper's publication (`validate --strict`,
no engine kernel). Scoring is bench/hindsight_blind.py's, not a test's: a test must not look at the held-out half.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from triage.cli import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import hindsight_blind, hindsight_split  # noqa: E402

BLIND = ROOT / "bench" / "hindsight" / "blind"
PAPERS = yaml.safe_load((BLIND / "papers.yaml").read_text())
IDS = {pid: d for d, ids in PAPERS.items() for pid in ids}
LABELS = {pid: v for f in sorted((BLIND / "labels").glob("*.yaml")) for pid, v in yaml.safe_load(f.read_text()).items()}
CARDS = sorted((BLIND / "cards").glob("*.yaml"))


def test_every_registered_file_matches_its_committed_sum():
    # the git half (SHA256SUMS committed as it is) where the tree is a checkout; the sums everywhere
    problems = hindsight_blind.check() if (ROOT / ".git").exists() else hindsight_blind.file_problems()
    assert problems == []


def test_a_changed_card_without_an_errata_entry_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "blind"
    for f in hindsight_blind.registered_files() + [hindsight_blind.SUMS]:
        (copy / f.relative_to(BLIND)).parent.mkdir(parents=True, exist_ok=True)
        (copy / f.relative_to(BLIND)).write_bytes(f.read_bytes())
    monkeypatch.setattr(hindsight_blind, "BLIND", copy)
    monkeypatch.setattr(hindsight_blind, "ERRATA", copy / "errata.yaml")
    monkeypatch.setattr(hindsight_blind, "SUMS", copy / "SHA256SUMS")
    card = copy / "cards" / CARDS[0].name
    card.write_text(card.read_text() + "# an edit after registration\n")
    assert hindsight_blind.file_problems() == [f"cards/{CARDS[0].name}: differs from its registered sum and has no "
                                               "errata entry"]


def test_the_split_is_the_registered_hash_rule_and_halves_each_direction_of_the_first_registration():
    split = yaml.safe_load((BLIND / "split.yaml").read_text())
    assert split == hindsight_split.split_of_registered(PAPERS)
    for ids in PAPERS.values():
        first = [pid for pid, paper in ids.items() if "added" not in paper]
        held = sum(split[pid] == "held-out" for pid in first)
        assert held in (len(first) // 2, (len(first) + 1) // 2)
    # an added paper by the parity of its hash's first byte: sha256("ring-attention") starts f5 (odd),
    # sha256("punica") 08 (even), by hand with sha256sum
    assert [split[p] for p in ("ring-attention", "punica")] == ["held-out", "train"]


def test_the_set_has_forty_labelled_papers_six_in_each_direction_none_with_a_shipped_card():
    labelled = {pid for pid, v in LABELS.items() if v["outcome"] in ("adopted", "passed_over")}
    assert len(labelled) >= 40
    for direction in PAPERS:
        assert sum(IDS[pid] == direction for pid in labelled) >= 6, direction
    assert not {p.stem for p in (ROOT / "claims").glob("*.yaml")} & set(IDS)
    outcomes = [LABELS[pid]["outcome"] for pid in labelled]
    assert 0.35 <= outcomes.count("adopted") / len(outcomes) <= 0.65     # about half each


def test_every_paper_has_one_label_and_one_card_or_an_unexpressible_note():
    assert set(LABELS) == set(IDS)
    written = {p.name.split(".")[0] for p in (BLIND / "cards").iterdir()}
    assert written == set(IDS)


def test_every_label_cites_a_quote_and_where_it_stands():
    for pid, label in LABELS.items():
        assert label["outcome"] in ("adopted", "passed_over", "dropped"), pid
        assert label["evidence"] or label["outcome"] == "dropped", pid
        for ev in label["evidence"] or []:
            assert ev["quote"].strip() and ev["where"].strip(), pid
        if label["outcome"] != "dropped":                              # dropped: whatever it once shipped in
            assert (label["outcome"] == "adopted") == bool(label.get("engines")), pid


def test_every_card_passes_strict_validation_and_states_no_engine_kernel():
    res = CliRunner().invoke(main, ["validate", "--strict", *map(str, CARDS)])
    assert res.exit_code == 0, res.output
    for card in CARDS:
        impl = yaml.safe_load(card.read_text()).get("implementation") or {}
        assert impl.get("kernel_in") != "engine", card.name
