"""Words only in report/ (issue 22): the layers that compute results (model/, serving/, analysis/) hand the report
numbers and codes, never a sentence. An English phrase (three words or more) in their code is a defect, except
where it is an error's own message (a raise, an assert, an addressed Problem or an exception built for one) or a
docstring. inputs/ and io/ read what users write and word their own addressed errors at the edge, and the
mechanism registry holds each mechanism's words as data by design, so they are not scanned."""

import ast
import re

from conftest import ROOT

PHRASE = re.compile(r"[A-Za-z]{2,}(?:[ ,:;()]* [A-Za-z]{2,}){2,}")
ERRORS = {"Problem", "UserError", "ValueError", "RuntimeError", "TypeError", "KeyError", "_at"}


def _phrases(path, root=ROOT):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            exempt.add(id(body[0].value))                                   # a docstring
        called = getattr(getattr(node, "func", None), "id", None) or getattr(getattr(node, "func", None), "attr", "")
        if isinstance(node, ast.Raise | ast.Assert) or isinstance(node, ast.Call) and called in ERRORS:
            exempt |= {id(sub) for sub in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.JoinedStr):
            exempt |= {id(v) for v in node.values}
            text = "".join(v.value if isinstance(v, ast.Constant) else " x " for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if PHRASE.search(text):
            yield f"{path.relative_to(root)}:{node.lineno}: {text[:60]!r}"


def test_no_sentence_is_built_outside_the_report():
    found = [hit for layer in ("model", "serving", "analysis")
             for path in sorted((ROOT / "triage" / layer).rglob("*.py")) for hit in _phrases(path)]
    assert found == []


def test_the_scan_finds_a_sentence(tmp_path):
    (tmp_path / "x.py").write_text('def f(n):\n    """A docstring is fine."""\n    if n < 0:\n'
                                   '        raise ValueError("a negative count is refused")\n'
                                   '    return f"the claim pays on {n} workloads"\n')
    assert list(_phrases(tmp_path / "x.py", tmp_path)) == ["x.py:5: 'the claim pays on  x  workloads'"]
