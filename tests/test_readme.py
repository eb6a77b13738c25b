"""The README's command-line help is generated, and its test command is what CI runs."""

import os
import re

from click.testing import CliRunner

from triage.cli import main

from conftest import ROOT

README = ROOT / "README.md"
SECTION = re.compile(r"<!-- help: (?P<args>[^>]*?) -->\n```\n(?P<body>.*?)```\n<!-- /help -->", re.S)


def _help(args: str) -> str:
    res = CliRunner().invoke(main, args.split(), prog_name="triage", terminal_width=100)
    assert res.exit_code == 0
    return res.stdout


def test_help_sections_match_the_cli():
    text = README.read_text(encoding="utf-8")
    sections = list(SECTION.finditer(text))
    assert [m["args"] for m in sections] == ["--help", "run --help", "validate --help", "schema --help",
                                                "new --help", "catalog --help", "compare --help", "calibrate --help",
                                                "sweep --help"]
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        text = SECTION.sub(lambda m: f"<!-- help: {m['args']} -->\n```\n{_help(m['args'])}```\n<!-- /help -->", text)
        README.write_text(text, encoding="utf-8")
        sections = list(SECTION.finditer(text))
    for m in sections:
        assert m["body"] == _help(m["args"]), f"README help for `triage {m['args']}` drifted"


CLAIMS_TABLE = re.compile(r"<!-- claims-table -->\n.*?<!-- /claims-table -->", re.S)


def _claims_table() -> str:
    import triage

    rows = ["| card | direction | paper | reported | bound in its own setting | beyond the bound |",
            "|---|---|---|--:|--:|---|"]
    for path in sorted((ROOT / "claims").glob("*.yaml")):
        d = triage.evaluate(path).to_dict()
        c, pc = d["claim"], d["paper_check"]
        paper = c["paper"].get("title", "")[:70]
        reported = f"{pc['reported']:g}× {c['claim'].get('metric', '')}" if pc["reported"] is not None else "—"
        bound = f"{pc['bound']:.2f}×" if pc["bound"] is not None else "— (" + pc.get("note", "") + ")"
        flag = {True: "**yes**", False: "no", None: "—"}[pc["exceeds_bound"]]
        rows.append(f"| `{c['id']}` | {c['direction']} | {paper} | {reported} | {bound} | {flag} |")
    return "<!-- claims-table -->\n" + "\n".join(rows) + "\n<!-- /claims-table -->"


def test_claims_table_is_current():
    text = README.read_text(encoding="utf-8")
    table = _claims_table()
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        README.write_text(CLAIMS_TABLE.sub(lambda m: table, text), encoding="utf-8")
        text = README.read_text(encoding="utf-8")
    assert CLAIMS_TABLE.search(text).group(0) == table


def test_ci_runs_the_readme_test_command():
    readme = README.read_text(encoding="utf-8")
    first_screen = readme[: readme.index("---")]
    commands = re.findall(r"```sh\n(.*?)\n```", first_screen, re.S)
    assert len(commands) == 2
    install_run, test = commands
    assert install_run.endswith("triage run claims/kv2x.yaml")
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()


LIMITS_TABLE = re.compile(r"<!-- limits-table -->\n.*?<!-- /limits-table -->", re.S)


def test_limits_table_is_generated_from_the_defaults():
    from triage.defaults import LIMITS

    rows = ["| limit | value | what |", "|---|--:|---|"]
    rows += [f"| `{name}` | {value:,} | {why} |" for name, value, why in LIMITS.table()]
    block = "<!-- limits-table -->\n" + "\n".join(rows) + "\n<!-- /limits-table -->"
    text = README.read_text(encoding="utf-8")
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        README.write_text(LIMITS_TABLE.sub(lambda _: block, text), encoding="utf-8")
        text = README.read_text(encoding="utf-8")
    assert LIMITS_TABLE.search(text)[0] == block


RULES_TABLE = re.compile(r"<!-- rules-table -->\n.*?<!-- /rules-table -->", re.S)


def test_the_decision_rules_table_is_the_codes():
    from triage.report import rules

    block = "<!-- rules-table -->\n" + rules.markdown() + "\n<!-- /rules-table -->"
    text = README.read_text(encoding="utf-8")
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        README.write_text(RULES_TABLE.sub(lambda _: block, text), encoding="utf-8")
        text = README.read_text(encoding="utf-8")
    assert RULES_TABLE.search(text)[0] == block


def test_the_workloads_help_names_every_shipped_workload():
    import yaml

    from triage.io.resources import catalog_file

    shipped = yaml.safe_load(catalog_file("workloads.yaml").read_text(encoding="utf-8"))
    text = " ".join(_help("run --help").split())
    names = " / ".join(w["name"] for w in shipped["workloads"])
    assert f"the shipped {names})" in text
