"""Per-behaviour cases: tests/cases/<name>.yaml, one small card and matrix each, with hand-derived
``expect:`` values and a ``# source:`` line saying where each comes from (in the manner of black's case files).

An expectation names a cell by its workload (and hardware when there are several) and a dotted path into
the JSON cell: ``{cell: B, path: speedup.theoretical, value: 1.711, rel: 1e-3}``.
"""

from pathlib import Path

import pytest
import yaml

import triage

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


def _get(cell, path):
    for part in path.split("."):
        cell = cell[part]
    return cell


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_case(case):
    text = case.read_text(encoding="utf-8")
    assert "# source:" in text, f"{case.name} says nowhere where its expected values come from"
    spec = yaml.safe_load(text)
    cells = triage.evaluate(spec["card"], spec["workloads"], analyse=False).to_dict()["cells"]
    for e in spec["expect"]:
        found = [c for c in cells if c["workload"] == e["cell"] and c["hardware"] == e.get("hardware", c["hardware"])]
        assert len(found) == 1, e
        got = _get(found[0], e["path"])
        assert got == pytest.approx(e["value"], rel=e.get("rel", 1e-9)), (e, got)


def test_there_are_cases():
    assert len(CASES) >= 3
