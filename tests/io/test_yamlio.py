"""The package's own YAML (the mechanism registry, the catalog) is parsed without the hostile-text walks
(io/yamlio.py, ``trusted``): each file must pass them, and read the same either way."""

import pytest

from triage.errors import UserError
from triage.io import yamlio

from conftest import ROOT

SHIPPED = sorted((ROOT / "triage").rglob("*.yaml"))


def test_the_shipped_files_are_found():
    names = {p.name for p in SHIPPED}
    assert {"mechanisms.yaml", "classes.yaml", "hardware.yaml", "models.yaml", "engines.yaml",
            "workloads.yaml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_file_passes_the_guards_and_reads_the_same_trusted(path):
    text = path.read_text(encoding="utf-8")
    guarded = yamlio.load(text, path.name)              # raises UserError if any rule fails
    assert yamlio.load(text, path.name, trusted=True).data == guarded.data


def test_untrusted_text_still_meets_the_guards():
    with pytest.raises(UserError, match="a key must be valid text"):
        yamlio.load("1: one\n", "card.yaml")


def test_a_trusted_file_still_addresses_its_problems():
    """Positions of a shipped file are read when a message asks for one (a maintainer's broken catalog entry)."""
    text = "hardware:\n  my-gpu:\n    memory: 80 GiB\n    bandwidth: 2 TB/s\n"
    trusted = yamlio.load(text, "hardware.yaml", trusted=True)
    assert trusted.where(("hardware", "my-gpu", "bandwidth")) == (4, 16)
    assert trusted.where(("hardware", "my-gpu", "bandwidth"), key=True) == (4, 5)
    assert trusted.where(("hardware", "my-gpu", "bandwidth")) == yamlio.load(text, "h").where(
        ("hardware", "my-gpu", "bandwidth"))
