"""docs/gallery/: real memos and a brief rendered from claims/.

kv2x.md is the project's one whole-memo snapshot: it catches unintended changes of layout and wording
(the numbers in it are checked against independent values elsewhere: tests/cases/, the course table).
The other gallery files are kept current by their decision and verdict lines, not byte for byte.
Refresh after an intended change: TRIAGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_gallery.py
and read the diff.
"""

import os
import xml.etree.ElementTree as ET

import pytest

import triage
from triage.report.memo import figure_data, render_brief, render_markdown

from conftest import ROOT

GALLERY = [
    ("kv2x.md", "claims/kv2x.yaml", None, render_markdown),
    ("int8-kv-course.md", "claims/int8-kv.yaml", "examples/course.yaml", render_markdown),
    ("int8-weights-kv.md", "claims/int8-weights-kv.yaml", None, render_markdown),
    ("kv2x-brief.md", "claims/kv2x.yaml", None, render_brief),
]
SNAPSHOT = "kv2x.md"


def _key_lines(text: str) -> list[str]:
    """The lines that carry a decision: the headline decision and every verdict row."""
    verdicts = ("GO |", "NO-GO |", "CONDITIONAL |", "DOES-NOT-FIT |", "GO** |", "NO-GO** |", "CONDITIONAL** |",
                "DOES-NOT-FIT** |")
    return [line for line in text.splitlines()
            if "Decision" in line and "**" in line or line.endswith(verdicts)]


@pytest.mark.parametrize("name,card,workloads,render", GALLERY, ids=[g[0] for g in GALLERY])
def test_gallery_is_current(name, card, workloads, render, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = triage.evaluate(card, workloads)
    path = ROOT / "docs" / "gallery" / name
    figures = figure_data(result) if render is render_markdown else {}
    files = {f"{path.stem}.{fig}.svg": svg for fig, svg in figures.items()}
    text = render(result, [{"title": f.split(".")[-2], "path": f} for f in files]) if files else render(result)
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
        for f, svg in files.items():                       # the figures beside every gallery memo
            (path.parent / f).write_text(svg, encoding="utf-8")
    for f in files:
        assert f"]({f})" in text
        ET.parse(path.parent / f)                          # present and well-formed (checked by pixels elsewhere)
    stored = path.read_text(encoding="utf-8")
    if name == SNAPSHOT:
        assert text == stored
    else:
        assert _key_lines(text) == _key_lines(stored) and _key_lines(text)
