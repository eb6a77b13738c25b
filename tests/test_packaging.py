"""The wheel carries schemas/, templates/ and the catalog, and works outside the repository."""

import re
import subprocess
import sys
import zipfile

import pytest

from conftest import CLAIMS, ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    (whl,) = out.glob("llm_triage-*.whl")
    return whl


def test_wheel_contains_schemas_templates_and_catalog(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("triage/schemas/claim.schema.json", "triage/schemas/workloads.schema.json",
                     "triage/templates/memo.md.j2", "triage/inputs/catalog/hardware.yaml",
                     "triage/inputs/catalog/models.yaml", "triage/inputs/catalog/workloads.yaml",
                     "triage/inputs/mechanisms.yaml", "triage/cli/__init__.py", "triage/cli/run.py"):
        assert required in names


def test_installed_wheel_runs_outside_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    card = tmp_path / "card.yaml"
    card.write_text((CLAIMS / "kv2x.yaml").read_text())
    code = ("import triage, triage.io.resources as r; res = triage.evaluate('card.yaml'); "
            "print(triage.__file__); print(r.resource_dir('schemas')); print(res.decision()['verdict'])")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(site), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    module, schemas, verdict = proc.stdout.splitlines()
    assert module.startswith(str(site)) and schemas.startswith(str(site))
    assert verdict == "CONDITIONAL"


@pytest.mark.slow
def test_wheel_installs_by_its_distribution_name_in_a_fresh_venv(wheel, tmp_path):
    """The distribution is llm-triage (PyPI's `triage` is an unrelated project): the built wheel installs with
    both extras into a fresh venv, and its `triage` command runs the README's first card there."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    py = venv / "bin" / "python"
    install = subprocess.run([str(py), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"),
                              f"{wheel}[png,frame]"], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    show = subprocess.run([str(py), "-m", "pip", "show", "llm-triage"], capture_output=True, text=True, timeout=60)
    assert "Name: llm-triage" in show.stdout
    for extra in ("pandas", "pyarrow", "resvg_py"):
        subprocess.run([str(py), "-c", f"import {extra}"], check=True, capture_output=True, timeout=120)
    proc = subprocess.run([str(venv / "bin" / "triage"), "run", str(CLAIMS / "kv2x.yaml")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Decision" in proc.stdout


def test_no_text_tells_a_user_to_install_the_unrelated_triage():
    """Every install hint names llm-triage: the bare name on PyPI would fetch someone else's project."""
    bad = re.compile(r"pip install\s+['\"]?triage\b")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True,
                             timeout=60).stdout.splitlines()
    offenders = []
    for name in tracked:
        path = ROOT / name
        if path.is_file() and path.suffix in {".md", ".py", ".toml", ".yaml", ".j2", ".txt", ".cfg", ""}:
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            offenders += [name for _ in bad.finditer(text)]
    assert offenders == [], offenders
