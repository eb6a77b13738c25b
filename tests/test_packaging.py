"""The wheel carries schemas/, templates/ and the catalog, and works outside the repository."""

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
    (whl,) = out.glob("triage-*.whl")
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
