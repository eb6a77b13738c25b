"""No module of triage keeps mutable state at module level (issue 45): a run's reads and its memo of serving runs
live on a Run (triage/io/run.py, the current one a context variable), a record class's field names on the class.
A module-level name is state when the module rebinds it (`global`), assigns into it (`NAME[k] = v`, `del
NAME[k]`) or calls a mutating method on it (`NAME.append`, `.add`, `.update`, `.pop`, …); constants are fine."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

MUTATING = {"append", "appendleft", "add", "update", "setdefault", "clear", "pop", "popitem", "extend", "insert",
            "remove", "discard", "__setitem__", "__delitem__"}


def _state(source: str) -> list[str]:
    """Each place the module's own top-level names are rebound or mutated, as 'line: what'."""
    tree = ast.parse(source)
    names = {t.id for node in tree.body
             for t in (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else [])
             if isinstance(t, ast.Name)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            out += [f"{node.lineno}: global {n}" for n in node.names]
        targets = (node.targets if isinstance(node, ast.Assign | ast.Delete) else
                   [node.target] if isinstance(node, ast.AugAssign) else [])
        out += [f"{node.lineno}: {t.value.id}[…]" for t in targets
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING
                and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
            out.append(f"{node.lineno}: {node.func.value.id}.{node.func.attr}()")
    return out


def test_no_module_of_triage_keeps_mutable_state():
    found = [f"{path.relative_to(ROOT)}:{where}" for path in sorted((ROOT / "triage").rglob("*.py"))
             for where in _state(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_scan_finds_each_kind_of_module_state():
    # what triage held before issue 45: a global rebound per run, a memo assigned into and evicted, a set of
    # classes added to
    planted = ("READS = None\n_MEMO = {}\n_RECORDS = set()\n"
               "def new_run():\n    global READS\n    READS = 1\n"
               "def run(k, v):\n    _MEMO[k] = v\n    _MEMO.pop(k)\n    _RECORDS.add(k)\n"
               "def local(x):\n    seen = {}\n    seen[x] = 1\n    return seen\n")
    assert _state(planted) == ["5: global READS", "8: _MEMO[…]", "9: _MEMO.pop()", "10: _RECORDS.add()"]


def test_two_runs_keep_their_own_reads_and_memo(tmp_path):
    # the Python API: each evaluation is a run of its own; its reads and serving memo go with it
    import triage
    from triage.io import run

    w = tmp_path / "w.yaml"
    w.write_text("workloads: [{name: w, context: 4096}]\n")
    card = {"id": "t", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5}}
    triage.evaluate(card, w, analyse=False)
    first = run.current()
    assert first.reads.files == {str(Path(w).resolve())}
    triage.evaluate(card, w, analyse=False)
    assert run.current() is not first and run.current().reads.files == first.reads.files
