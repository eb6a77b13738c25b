"""Files shipped inside the wheel (schemas/, templates/, inputs/), found beside the package's own modules.

triage installs as files (a wheel unpacked into site-packages, an editable install, a checkout), never as a
zip, so its data is a path next to this module; importlib.resources would cost `triage run` 3 ms of imports
(tempfile, zipfile) to say the same.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent      # the installed triage/ folder


def resource_dir(name: str) -> Path:
    """The packaged ``schemas`` or ``templates`` folder.

    A wheel carries them inside the package (hatch force-include); an editable
    install or a plain checkout has them at the repository's top level.
    """
    packaged = PACKAGE / name
    if packaged.is_dir():
        return packaged
    checkout = PACKAGE.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"triage is installed without its {name}/ folder")


def package_file(*parts: str) -> Path:
    """A data file shipped inside the package: ``package_file("inputs", "mechanisms.yaml")``."""
    return PACKAGE.joinpath(*parts)


def catalog_file(name: str) -> Path:
    """A YAML data file of the shipped catalog."""
    return package_file("inputs", "catalog", name)


def schema_text(name: str) -> str:
    """A JSON Schema's text by name: 'claim' or 'workloads' (a shipped file: read whole, never recorded)."""
    return (resource_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema by name: 'claim' or 'workloads'."""
    return json.loads(schema_text(name))
