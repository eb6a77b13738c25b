"""Typed results between the layers (issues 22 and 45): no public function, method, record field or type alias
that a module of another layer uses takes or hands over a `dict[str, Any]` or a `Mapping[str, Any]`, under its
own name or an alias's. A card's change crosses as one typed record (inputs/change.py), its paper and claim
sections as records (inputs/claim.py), results as records, a measurement row as a record (inputs/measurements.py,
inputs/calibration_rows.py). What may still cross untyped is listed below by name, each with why, so the list
can only shrink: JSON documents (the report's JSON builder and the card echoed in it, the schemas generated from
the registry) and a user's raw document before it is typed (the public entry point takes a card or workload file
as a dict)."""

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import types
from pathlib import Path

LAYERS = ("triage.io", "triage.inputs", "triage.model", "triage.serving", "triage.analysis", "triage.report",
          "triage.cli")
PACKAGE = Path(__file__).resolve().parents[1] / "triage"
UNTYPED = ("dict[str, Any]", "Mapping[str, Any]")

ALLOWED = {
    # JSON documents: the report's JSON builder (what `-f json` writes), and the schemas generated from the
    # registry (what `triage schema` prints and the docs show)
    "triage.report.compare.comparison", "triage.report.calibration.as_json", "triage.inputs.registry.MechanismInfo",
    # a user's raw document, before inputs/ types it (triage.evaluate's card and workload file as a dict; a
    # config.json)
    "triage.inputs.cards.load", "triage.inputs.hfconfig.read_config", "triage.inputs.hfconfig.to_entry",
    # the card as it was written, echoed in the report's JSON (only inputs/ knows how the card wrote it)
    "triage.inputs.claim.Claim.to_dict", "triage.inputs.claim.stated",
}


def _layer(module: str) -> str:
    return next(layer for layer in LAYERS if module == layer or module.startswith(layer + "."))


def _modules():
    for layer in LAYERS:
        package = importlib.import_module(layer)
        yield package
        for info in pkgutil.walk_packages(package.__path__, layer + "."):
            yield importlib.import_module(info.name)


def _untyped(annotation, module) -> bool:
    """An annotation holding dict[str, Any] or Mapping[str, Any], itself or through a type alias of its module."""
    text = str(annotation).replace("typing.", "").replace("collections.abc.", "")
    if any(u in text for u in UNTYPED):
        return True
    for name in text.replace("|", " ").replace("[", " ").replace("]", " ").replace(",", " ").split():
        alias = getattr(module, name, None)
        if isinstance(alias, types.GenericAlias) and any(u in str(alias).replace("collections.abc.", "")
                                                         .replace("typing.", "") for u in UNTYPED):
            return True
    return False


def _public(module):
    """(qualified owner, label, annotation) of every public function's parameters and return, every public class's
    methods and every public dataclass's fields, and every public type alias, defined in ``module``."""
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, types.GenericAlias):
            yield name, name, obj
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        functions = [(name, name, obj)] if inspect.isfunction(obj) else []
        if inspect.isclass(obj):
            functions += [(name, f"{name}.{m}", f) for m, f in vars(obj).items() if inspect.isfunction(f)
                          and not m.startswith("_")]
            if dataclasses.is_dataclass(obj):
                yield from ((name, f"{name}.{f.name}", f.type) for f in dataclasses.fields(obj))
        for owner, label, f in functions:
            yield from ((owner if owner != label.split(".")[0] else label, f"{label}({p})", a)
                        for p, a in f.__annotations__.items())


def _used_across() -> set[tuple[str, str]]:
    """(module, name) of every name a module of another layer imports from it (``from triage.x.y import name``,
    or ``from triage.x import y`` and then ``y.name``)."""
    used = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        init = parts[-1] == "__init__"
        here = ".".join(parts[:-1] if init else parts)
        package = here.split(".") if init else here.split(".")[:-1]
        aliases = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                source = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    if importlib.util.find_spec(f"{source}.{a.name}") is not None \
                            if hasattr(importlib.import_module(source), "__path__") else False:
                        aliases[a.asname or a.name] = f"{source}.{a.name}"
                    elif _layer_of(source) not in (None, _layer_of(here)):
                        used.add((source, a.name))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                source = aliases[node.value.id]
                if _layer_of(source) not in (None, _layer_of(here)):
                    used.add((source, node.attr))
    return used


def _layer_of(module: str) -> str | None:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), None)


def _names(module, owner: str, label: str) -> set[str]:
    """The names an allowance may give for an annotation: its module, owner, function or method."""
    top = label.split(".")[0].split("(")[0]
    return {module.__name__, f"{module.__name__}.{owner}", f"{module.__name__}.{top}",
            f"{module.__name__}.{label.split('(')[0]}"}


def _crossing_untyped():
    used = _used_across()
    found = []
    for m in _modules():
        for owner, label, annotation in _public(m):
            top = label.split(".")[0].split("(")[0]
            if (m.__name__, top) in used and _untyped(annotation, m) and not _names(m, owner, label) & ALLOWED:
                found.append(f"{m.__name__}.{label}: {annotation}")
    return found


def test_no_layer_hands_another_an_untyped_dict():
    assert _crossing_untyped() == []


def test_every_allowance_is_still_needed():
    # an entry that no longer crosses untyped is taken off the list (so it cannot hide a new one)
    used = _used_across()
    live = set()
    for m in _modules():
        for owner, label, annotation in _public(m):
            top = label.split(".")[0].split("(")[0]
            if (m.__name__, top) in used and _untyped(annotation, m):
                live |= _names(m, owner, label)
    assert ALLOWED - live == set()


def test_the_check_sees_annotations_and_aliases():
    # the scan reads what it claims to: a card's change crosses typed ...
    public = {label: a for _, label, a in _public(importlib.import_module("triage.analysis.cannot_act"))}
    assert public["warnings(change)"] == "Change"
    # ... a module that hands over a dict of anything is found, and so is an alias of one
    module = types.ModuleType("fake")
    exec("from __future__ import annotations\nfrom collections.abc import Mapping\nfrom typing import Any\n"
         "Spec = Mapping[str, Any]\n"
         "def report(rows: list) -> dict[str, Any]:\n    return {}\n"
         "def read(spec: Spec) -> int:\n    return 0\n", module.__dict__)
    found = {label: a for _, label, a in _public(module)}
    assert _untyped(found["report(return)"], module) and _untyped(found["read(spec)"], module)
    assert _untyped(found["Spec"], module)
