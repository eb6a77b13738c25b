"""docs/design.md's architecture table names every module of the package and nothing that does not exist
(issue 22: docs that are true)."""

import re

from conftest import ROOT

PACKAGE = ROOT / "triage"


def _table() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`\w+/`|foundation) \| (.+?) \| .+ \|$", text, re.M)
    return {layer.strip("`/"): set(re.findall(r"`(\w+)`", modules)) for layer, modules in rows}


def _modules(folder) -> set[str]:
    """A layer's modules, a subpackage by its name and its own modules (serving/policies/)."""
    packages = [p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {p.name for p in packages} | \
        {m for p in packages for m in _modules(p)}


def test_the_design_doc_names_every_module_and_only_modules_that_exist():
    table = _table()
    assert set(table) == {"foundation", "io", "inputs", "model", "serving", "analysis", "report", "cli"}
    assert table["foundation"] == {p.stem for p in PACKAGE.glob("*.py")}
    for layer in ("io", "inputs", "model", "serving", "analysis", "report", "cli"):
        assert table[layer] == _modules(PACKAGE / layer), layer
