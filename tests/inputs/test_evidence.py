"""Evidence per number: `validate --strict` requires {quote, where} with the source's version for every
reported number, setting detail, quality figure and change value of a paper card; the memo cites it."""

import yaml
from click.testing import CliRunner

from triage.cli import main

CARD = {"id": "p", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5},
        "paper": {"title": "A paper", "url": "https://arxiv.org/abs/2402.02750"},
        "claim": {"speedup": 1.5, "metric": "tpot", "setting": {"model": "llama-2-7b", "batch": 8,
                                                                "precision": {"weights": "fp16"}}},
        "quality": {"retained": 0.99}}
FULL = {"claim.speedup": {"quote": "1.5x faster decoding", "where": "Table 3, arXiv 2402.02750v2"},
        "claim.setting.model": {"quote": "Llama-2-7B", "where": "§5.1, arXiv 2402.02750v2"},
        "claim.setting.batch": {"quote": "batch size 8", "where": "§5.1, arXiv 2402.02750v2"},
        "claim.setting.precision": {"quote": "FP16 weights", "where": "§5.1, arXiv 2402.02750v2"},
        "quality.retained": {"quote": "44.27 vs 44.52", "where": "Table 2, commit 048e19e"},
        "change.kv_bytes": {"quote": "8-bit keys and values", "where": "§3, arXiv 2402.02750v2"}}


def validate(tmp_path, card, *flags):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card, sort_keys=False))
    return CliRunner().invoke(main, ["validate", *flags, str(tmp_path / "c.yaml")])


def test_strict_names_every_number_without_evidence(tmp_path):
    res = validate(tmp_path, CARD, "--strict")
    assert res.exit_code == 1
    missing = [line.split("no evidence: give evidence.")[1].split(":")[0] for line in res.output.splitlines()
               if "no evidence" in line]
    assert missing == ["change.kv_bytes", "claim.speedup", "claim.setting.model", "claim.setting.batch",
                       "claim.setting.precision.weights", "quality.retained"]
    assert validate(tmp_path, CARD).exit_code == 0            # without --strict evidence is optional


def test_full_evidence_passes_and_a_where_without_a_version_does_not(tmp_path):
    assert validate(tmp_path, {**CARD, "evidence": FULL}, "--strict").exit_code == 0
    bad = {**FULL, "claim.speedup": {"quote": "1.5x faster decoding", "where": "Table 3 of the paper"}}
    res = validate(tmp_path, {**CARD, "evidence": bad}, "--strict")
    assert res.exit_code == 1 and "$.evidence.claim.speedup.where: names no version of its source" in res.output


def test_evidence_for_a_number_the_card_does_not_give_is_an_error(tmp_path):
    res = validate(tmp_path, {**CARD, "evidence": {**FULL, "claim.setting.contxt": FULL["claim.speedup"]}})
    line = next(i for i, text in enumerate((tmp_path / "c.yaml").read_text().splitlines(), 1)
                if text.startswith("  claim.setting.contxt:"))
    # blamed on the evidence mapping at the key's line: the file's key itself is not echoed
    assert res.exit_code == 1 and f"c.yaml:{line}:3 $.evidence: evidence for a number the card does not give" \
        in res.output


def test_course_cards_need_no_evidence(tmp_path):
    course = {k: v for k, v in CARD.items() if k != "paper"}
    assert validate(tmp_path, course, "--strict").exit_code == 0


def test_the_memo_cites_the_evidence_beside_the_number(tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**CARD, "evidence": FULL}, sort_keys=False))
    memo = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml")]).stdout
    assert "**1.50×** on tpot (source: Table 3, arXiv 2402.02750v2)" in memo
    assert "99.0 % of baseline retained (source: Table 2, commit 048e19e)" in memo
    assert '| `claim.setting.batch` | 8 | "batch size 8" | §5.1, arXiv 2402.02750v2 |' in memo


def test_a_number_no_source_states_is_marked_an_assumption_and_shown_as_one(tmp_path):
    ev = {**FULL, "quality.retained": {"assumption": "the paper reports no score; exact by construction"}}
    assert validate(tmp_path, {**CARD, "evidence": ev}, "--strict").exit_code == 0
    memo = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml")]).stdout
    assert "99.0 % of baseline retained (assumed: the paper reports no score; exact by construction)" in memo
    assert "*an assumption:* the paper reports no score" in memo
    both = {**FULL, "quality.retained": {"assumption": "x y z", "quote": "q", "where": "Table 1, v2"}}
    res = validate(tmp_path, {**CARD, "evidence": both})
    assert res.exit_code == 1


def test_the_reported_number_cannot_be_an_assumption(tmp_path):
    ev = {**FULL, "claim.speedup": {"assumption": "we think"}}
    res = validate(tmp_path, {**CARD, "evidence": ev}, "--strict")
    assert res.exit_code == 1 and "an assumption cannot stand for it" in res.output


def test_a_word_of_hex_letters_is_not_a_commit(tmp_path):
    ev = {**FULL, "claim.speedup": {"quote": "1.5x", "where": "the effaced table"}}
    assert validate(tmp_path, {**CARD, "evidence": ev}, "--strict").exit_code == 1


def test_one_quote_of_a_table_stands_for_every_figure_read_from_it(tmp_path):
    figures = [{"kind": "accuracy", "task": t, "model": "llama-2-7b", "baseline": b, "claim": c}
               for t, b, c in (("qasper", 9.52, 9.31), ("qmsum", 21.28, 20.50))]
    card = {**CARD, "quality": {"retained": 0.99, "figures": figures}}
    res = validate(tmp_path, {**card, "evidence": FULL}, "--strict")
    assert res.exit_code == 1 and "quality.figures.0" in res.output and "quality.figures.1" in res.output
    table = {"quote": "| 16bit | 9.52 | 21.28 |\n| KIVI-2 | 9.31 | 20.50 |", "where": "Table 4, arXiv 2402.02750v2"}
    assert validate(tmp_path, {**card, "evidence": {**FULL, "quality.figures": table}}, "--strict").exit_code == 0
