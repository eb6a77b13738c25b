"""The one whole-memo snapshot: kv2x on the shipped default matrix (tests/snapshot-kv2x-defaults/).

Everything else about a memo is checked against independent values in tests/cases/*.yaml and the unit
tests; this snapshot only catches unintended changes of layout and wording. Regenerate after an intended
change with TRIAGE_UPDATE_GOLDEN=1 pytest tests/test_golden_memos.py and review the diff.
"""

import os
from pathlib import Path

import triage
from triage.report.memo import render_markdown

CASE = Path(__file__).parent / "snapshot-kv2x-defaults"


def test_golden_memo(monkeypatch):
    monkeypatch.chdir(CASE)
    text = render_markdown(triage.evaluate("card.yaml"))
    expected = CASE / "expected.md"
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        expected.write_text(text, encoding="utf-8")
    assert text == expected.read_text(encoding="utf-8")
