"""docs/gallery/: three real memos and a brief, rendered from claims/ and kept in step by this test.

Refresh after an intended change: TRIAGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_gallery.py
"""

import os

import pytest

import triage
from triage.report.memo import render_brief, render_markdown

from conftest import ROOT

GALLERY = [
    ("kv2x.md", "claims/kv2x.yaml", None, render_markdown),
    ("int8-kv-course.md", "claims/int8-kv.yaml", "examples/course.yaml", render_markdown),
    ("int8-weights-kv.md", "claims/int8-weights-kv.yaml", None, render_markdown),
    ("kv2x-brief.md", "claims/kv2x.yaml", None, render_brief),
]


@pytest.mark.parametrize("name,card,workloads,render", GALLERY, ids=[g[0] for g in GALLERY])
def test_gallery_is_current(name, card, workloads, render, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = render(triage.evaluate(card, workloads))
    path = ROOT / "docs" / "gallery" / name
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
