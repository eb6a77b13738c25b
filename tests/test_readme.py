"""The README's test command is what CI runs, its links resolve, and the docs' generated parts are current:
the limits and decision-rules tables, the claims gallery, the card and workload references.

Refresh after an intended change: the tables with TRIAGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest
tests/test_readme.py, the gallery with .venv/bin/python docs/build_gallery.py; then read the diff.
"""

import importlib.util
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from triage.cli import main

from conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _load(path):
    """A script under docs/ as a module (docs/ is not a package: mkdocs serves it)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _help(args: str) -> str:
    res = CliRunner().invoke(main, args.split(), prog_name="triage", terminal_width=100)
    assert res.exit_code == 0
    return res.stdout


def _generated(path, marker: str, block: str) -> None:
    """The <!-- marker --> … <!-- /marker --> section of a docs page is ``block`` (rewritten under
    TRIAGE_UPDATE_GOLDEN)."""
    pattern = re.compile(rf"<!-- {marker} -->\n.*?<!-- /{marker} -->", re.S)
    block = f"<!-- {marker} -->\n{block}\n<!-- /{marker} -->"
    text = path.read_text(encoding="utf-8")
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        path.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")
        text = path.read_text(encoding="utf-8")
    found = pattern.search(text)
    assert found, f"{path.name} has no {marker} section"
    assert found[0] == block, f"{path.name}: the {marker} drifted (TRIAGE_UPDATE_GOLDEN=1 refreshes it)"


# the README's and the home page's excerpt of `triage run claims/kv2x.yaml`: these cells, from a real run
EXCERPT_CELLS = (("chat-4k", "a100-80gb"), ("docqa-128k", "a100-80gb"), ("chat-4k-b16", "h100-sxm"),
                 ("prefill-2k", "h100-sxm"), ("serve-conv", "a100-80gb"))


def _excerpt() -> str:
    """The excerpt as the tool prints it today: the cells' three layers and verdicts, the 128k cell's first three
    reasons, and the sentence that reads them."""
    import textwrap

    import triage
    from triage.inputs.units import fmt_ratio

    run = triage.evaluate(ROOT / "claims" / "kv2x.yaml").to_dict()
    cells = {(c["workload"], c["hardware"]): c for c in run["cells"]}
    rows = ["| workload | hardware | phase | context | batch | theoretical | implementation | end-to-end | verdict |",
            "|---|---|---|--:|--:|--:|--:|--:|---|"]
    for key in EXCERPT_CELLS:
        c, s = cells[key], cells[key]["speedup"]
        name = c["workload"] + (" (Azure conversation trace)" if c["workload"] == "serve-conv" else "")
        rows.append(f"| {name} | {c['hardware']} | {c['phase']} | {c['context']:,} | {c['batch']} | "
                    f"{fmt_ratio(s['theoretical'])} | {fmt_ratio(s['implementation'])} | {fmt_ratio(s['end_to_end'])} "
                    f"| **{c['verdict']}** |")
    doc = cells[("docqa-128k", "a100-80gb")]
    quote = textwrap.fill("docqa-128k: " + "; ".join(doc["reasons"][:3]) + ".", width=106, initial_indent="> ",
                          subsequent_indent="> ", break_on_hyphens=False)
    chat, conv = cells[("chat-4k", "a100-80gb")]["speedup"], cells[("serve-conv", "a100-80gb")]["speedup"]
    prose = textwrap.fill(
        f"The same 2× compression is worth {(chat['theoretical'] - 1) * 100:.1f} % on a 4k chat and "
        f"{(doc['speedup']['theoretical'] - 1) * 100:.1f} % on a 128k document, and "
        f"{(conv['end_to_end'] - 1) * 100:.1f} % more requests a second at the SLO on a real request stream "
        "(serve-conv: the Azure 2023 conversation trace through a continuous-batching scheduler): the gain of an "
        "optimization is the bytes it saves ÷ the bytes read per step, and the workload sets the denominator (the "
        "course page behind this tool, module 12.4).", width=88)
    return "\n".join(rows) + "\n\n" + quote + "\n\n" + prose


def test_the_readme_and_home_page_excerpts_are_the_tools_own_output():
    block = _excerpt()
    for path in (README, DOCS / "index.md"):
        _generated(path, "kv2x-excerpt", block)


def test_a_planted_drift_in_the_excerpt_fails(tmp_path, monkeypatch):
    """The README as it read before the excerpt was generated (1.570× where the tool prints 1.568×) fails."""
    monkeypatch.delenv("TRIAGE_UPDATE_GOLDEN", raising=False)
    copy = tmp_path / "README.md"
    copy.write_text(README.read_text(encoding="utf-8").replace("1.568×", "1.570×", 1), encoding="utf-8")
    with pytest.raises(AssertionError, match="kv2x-excerpt drifted"):
        _generated(copy, "kv2x-excerpt", _excerpt())


def test_ci_runs_the_readme_test_command():
    readme = README.read_text(encoding="utf-8")
    first_screen = readme[: readme.index("---")]
    commands = re.findall(r"```sh\n(.*?)\n```", first_screen, re.S)
    assert len(commands) == 2
    install_run, test = commands
    assert install_run.endswith("triage run claims/kv2x.yaml")
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()


def test_the_readme_is_short_and_its_links_resolve():
    """The README is the front page (under 12 KB); the rest lives in docs/, and every relative link in the
    README names a file that exists."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 12_000
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)
             if not re.match(r"[a-z]+:", target)]
    assert "docs/getting-started.md" in links and "docs/gallery/index.md" in links
    missing = [link for link in links if link and not (ROOT / link).exists()]
    assert missing == []


def test_the_docs_nav_names_every_page():
    """mkdocs.yml's nav lists every hand-written page (the generated references come from the hook)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    named = set(re.findall(r":\s+([\w./-]+\.md)\s*$", nav, re.M))
    hook = _load(DOCS / "hooks" / "reference.py")
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")} | set(hook.PAGES) | {"gallery/index.md"}
    assert pages <= named, pages - named
    assert {p for p in named if p not in hook.PAGES and not (DOCS / p).is_file()} == set()


def test_limits_table_is_generated_from_the_defaults():
    from triage.defaults import LIMITS

    rows = ["| limit | value | what |", "|---|--:|---|"]
    rows += [f"| `{name}` | {value:,} | {why} |" for name, value, why in LIMITS.table()]
    _generated(DOCS / "limits.md", "limits-table", "\n".join(rows))


def test_the_decision_rules_table_is_the_codes():
    from triage.report import rules

    _generated(DOCS / "reading-a-memo.md", "rules-table", rules.markdown())


def test_the_mechanism_table_is_generated_from_the_registry():
    from triage.report.describe import mechanism_table
    _generated(DOCS / "claim-cards.md", "mechanisms-table", mechanism_table())


def test_the_workloads_help_names_every_shipped_workload():
    import yaml

    from triage.io.resources import catalog_file

    shipped = yaml.safe_load(catalog_file("workloads.yaml").read_text(encoding="utf-8"))
    text = " ".join(_help("run --help").split())
    names = " / ".join(w["name"] for w in shipped["workloads"])
    assert f"the shipped {names})" in text


def _schema_paths(node, prefix=""):
    """Every key path of a schema as the reference writes it (`change.kv_quant.bits`), $defs by name."""
    for key, child in node.get("properties", {}).items():
        yield prefix + key
        yield from _schema_paths(child, prefix + key + ".")
    for alt in node.get("oneOf", []) + node.get("anyOf", []):
        yield from _schema_paths(alt, prefix)
    items = node.get("items")
    if isinstance(items, dict) and "$ref" not in items:
        yield from _schema_paths(items, prefix[:-1] + "[]." if prefix else "")


@pytest.mark.parametrize("name,page", [("claim", "card_reference"), ("workloads", "workload_reference")])
def test_the_references_are_generated_from_the_schemas(name, page):
    """The hook's pages name every key of the schema `triage schema` prints, and every definition."""
    from triage.io.resources import schema_text

    hook = _load(DOCS / "hooks" / "reference.py")
    text = getattr(hook, page)()
    s = json.loads(schema_text(name))
    paths = set(_schema_paths(s))
    for def_name, node in s.get("$defs", {}).items():
        paths |= {f"{def_name}.{p}" for p in _schema_paths(node)}
        assert f"{{#def-{def_name}}}" in text
    assert paths and all(f"| `{p}` |" in text for p in paths), sorted(p for p in paths if f"| `{p}` |" not in text)
    assert text == getattr(hook, page)()                    # deterministic: the build is a function of the tree


def test_the_card_reference_lists_every_mechanism_and_class():
    from triage.inputs.registry import classes, registry

    text = _load(DOCS / "hooks" / "reference.py").card_reference()
    for key, m in registry().items():
        assert f"| `{key}` | [{m.klass}](#class-{m.klass}) |" in text
    for key in classes():
        assert f'<span id="class-{key}"></span>`{key}`' in text


def _key_lines(text: str) -> list[str]:
    """The lines that carry a decision: the headline decision and every verdict row."""
    return [line for line in text.splitlines()
            if line.startswith("**Decision:") or re.search(r"\*\*(GO|NO-GO|CONDITIONAL|DOES-NOT-FIT)\*\*", line)
            and line.startswith("|")]


@pytest.mark.slow
def test_the_claims_gallery_is_current(monkeypatch):
    """docs/gallery/: the sortable table of every shipped card, byte for byte; each card's memo by its decision
    and verdict lines (wording may move without a refresh, a decision may not); every figure present and
    well-formed; nothing stale left beside them."""
    gallery = _load(DOCS / "build_gallery.py")
    monkeypatch.chdir(ROOT)
    files = gallery.render_all()
    stored = {p.relative_to(gallery.GALLERY).as_posix() for p in gallery.CARDS.iterdir()}
    assert stored == {name for name in files if name.startswith("cards/")}, "run docs/build_gallery.py"
    assert (gallery.INDEX).read_text(encoding="utf-8") == files["index.md"], "run docs/build_gallery.py"
    cards = sorted((ROOT / "claims").glob("*.yaml"))
    assert files["index.md"].count("](cards/") >= len(cards) and len(cards) >= 40
    for name, text in files.items():
        path = gallery.GALLERY / name
        if name.endswith(".svg"):
            ET.parse(path)
        elif name.startswith("cards/"):
            assert _key_lines(path.read_text(encoding="utf-8")) == _key_lines(text) and _key_lines(text), name
    size = sum((gallery.GALLERY / name).stat().st_size for name in files)
    assert size < 10_000_000
