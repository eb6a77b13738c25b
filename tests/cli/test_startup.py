"""Start-up: `triage run` imports what the command uses and nothing else (bench/bench.py times it).

Each case runs the command in a fresh interpreter and reads the modules loaded when it exits."""

import os
import subprocess
import sys

import pytest

from conftest import CLAIMS, ROOT

RUNNER = ("import atexit, os, sys\n"
          "atexit.register(lambda: open(os.environ['TRIAGE_MODULES'], 'w').write('\\n'.join(sorted(sys.modules))))\n"
          "from triage.cli import main\n"
          "sys.argv = ['triage', *sys.argv[1:]]\n"
          "main()\n")


def _modules(tmp_path, *args: str) -> set[str]:
    out = tmp_path / "modules.txt"
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700, exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", RUNNER, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TRIAGE_MODULES": str(out), "XDG_CACHE_HOME": str(cache)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(out.read_text().split())


def _has(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


NEVER = ("pandas", "pyarrow", "resvg_py", "PIL", "selenium", "mkdocs", "triage.analysis.calibrate",
         "triage.cli.calibrate", "triage.cli.compare", "triage.cli.sweep", "triage.report.frame")


def test_run_help_loads_no_numpy_schema_template_or_pipeline(tmp_path):
    modules = _modules(tmp_path, "run", "--help")
    for heavy in ("numpy", "jsonschema", "jinja2", "triage.model", "triage.analysis", "triage.report",
                  *NEVER):
        assert not _has(modules, heavy), heavy


@pytest.mark.parametrize("args,loads,skips", [
    # the memo to standard output: the pipeline and the templates; no figure writer, no measurement reader
    # (no traceback module but for --traceback; no thread pool: the default matrix has traffic, whose variants
    # price one at a time)
    (["run", str(CLAIMS / "kv2x.yaml")], ("numpy", "jinja2", "triage.analysis.pipeline"),
     ("triage.report.figures", "triage.analysis.measured", "traceback", "concurrent.futures")),
    # JSON: no templates either
    (["run", str(CLAIMS / "kv2x.yaml"), "--format", "json"], ("numpy", "triage.analysis.pipeline"),
     ("jinja2", "triage.report.figures", "triage.analysis.measured")),
])
@pytest.mark.slow
def test_run_loads_what_its_output_needs(tmp_path, args, loads, skips):
    """The first run of a card validates it against the schema (jsonschema loads); a second run of the same
    card finds it in the record of valid documents (io/known_valid.py) and does not load jsonschema."""
    first = _modules(tmp_path, *args)
    again = _modules(tmp_path, *args)
    assert _has(first, "jsonschema") and not _has(again, "jsonschema")
    for name in loads:
        assert _has(again, name), name
    for name in (*skips, *NEVER):
        assert not _has(first, name) and not _has(again, name), name
