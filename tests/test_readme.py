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
                                                "new --help", "catalog --help"]
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        text = SECTION.sub(lambda m: f"<!-- help: {m['args']} -->\n```\n{_help(m['args'])}```\n<!-- /help -->", text)
        README.write_text(text, encoding="utf-8")
        sections = list(SECTION.finditer(text))
    for m in sections:
        assert m["body"] == _help(m["args"]), f"README help for `triage {m['args']}` drifted"


def test_ci_runs_the_readme_test_command():
    readme = README.read_text(encoding="utf-8")
    first_screen = readme[: readme.index("---")]
    commands = re.findall(r"```sh\n(.*?)\n```", first_screen, re.S)
    assert len(commands) == 2
    install_run, test = commands
    assert install_run.endswith("triage run claims/kv2x.yaml")
    assert (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1] == test
