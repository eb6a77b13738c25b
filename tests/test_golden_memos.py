"""Golden memos: tests/cases/<name>/ holds card.yaml, an optional workloads.yaml and the expected memo.md.

Regenerate after an intended change with TRIAGE_UPDATE_GOLDEN=1 pytest tests/test_golden_memos.py
and review the diff.
"""

import os
from pathlib import Path

import pytest

import triage
from triage.report.memo import render_json, render_markdown

CASES = sorted(p for p in (Path(__file__).parent / "cases").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt,render", [("md", render_markdown), ("json", render_json)])
def test_golden_memo(case, fmt, render, monkeypatch):
    monkeypatch.chdir(case)
    workloads = "workloads.yaml" if (case / "workloads.yaml").exists() else None
    text = render(triage.evaluate("card.yaml", workloads))
    expected = case / f"expected.{fmt}"
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        expected.write_text(text, encoding="utf-8")
    assert text == expected.read_text(encoding="utf-8")


def test_there_are_golden_cases():
    assert len(CASES) >= 3
