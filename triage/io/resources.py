"""Files shipped inside the wheel (schemas/, templates/, inputs/catalog/), found via importlib.resources."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


def resource_dir(name: str) -> Path:
    """The packaged ``schemas`` or ``templates`` folder.

    A wheel carries them inside the package (hatch force-include); an editable
    install or a plain checkout has them at the repository's top level.
    """
    packaged = resources.files("triage").joinpath(name)
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"triage is installed without its {name}/ folder")


def catalog_file(name: str) -> Path:
    """A YAML data file of the shipped catalog."""
    return Path(str(resources.files("triage").joinpath("inputs").joinpath("catalog").joinpath(name)))


def schema_text(name: str) -> str:
    """A JSON Schema's text by name: 'claim' or 'workloads' (a shipped file: read whole, never recorded)."""
    return (resource_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema by name: 'claim' or 'workloads'."""
    return json.loads(schema_text(name))
