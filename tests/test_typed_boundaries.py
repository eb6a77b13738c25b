"""Typed results between the layers (issue 22): no public function, method or dataclass of model/, serving/ and
analysis/ takes or hands over a `dict[str, Any]`. A card's validated sections cross as read-only Mappings
(inputs/claim.py: Change, Spec, Section), results as dataclasses, a user's measurement row as a TypedDict."""

import dataclasses
import importlib
import inspect
import pkgutil
import types

LAYERS = ("triage.model", "triage.serving", "triage.analysis")


def _modules():
    for layer in LAYERS:
        package = importlib.import_module(layer)
        yield package
        for info in pkgutil.walk_packages(package.__path__, layer + "."):
            yield importlib.import_module(info.name)


def _public(module):
    """(name, annotation text) of every public function's parameters and return, every public class's methods,
    and every public dataclass's fields, defined in ``module``."""
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        functions = [(name, obj)] if inspect.isfunction(obj) else []
        if inspect.isclass(obj):
            functions += [(f"{name}.{m}", f) for m, f in vars(obj).items() if inspect.isfunction(f)
                          and not m.startswith("_")]
            if dataclasses.is_dataclass(obj):
                yield from ((f"{name}.{f.name}", str(f.type)) for f in dataclasses.fields(obj))
        for label, f in functions:
            yield from ((f"{label}({p})", str(a)) for p, a in f.__annotations__.items())
    for name, obj in vars(module).items():          # type aliases
        if not name.startswith("_") and isinstance(obj, type(dict[str, int])):
            yield name, str(obj)


def test_no_public_boundary_is_an_untyped_dict():
    found = [f"{m.__name__}.{label}: {text}" for m in _modules() for label, text in _public(m)
             if "dict[str, Any]" in text.replace("typing.", "")]
    assert found == []


def test_the_check_sees_annotations():
    # the scan reads what it claims to: cannot_act.warnings takes the card's change section, typed Change ...
    assert dict(_public(importlib.import_module("triage.analysis.cannot_act")))["warnings(change)"] == "Change"
    # ... and a module that hands over a dict of anything is found
    module = types.ModuleType("fake")
    exec("from __future__ import annotations\nfrom typing import Any\n"
         "def report(rows: list) -> dict[str, Any]:\n    return {}\n", module.__dict__)
    assert dict(_public(module))["report(return)"] == "dict[str, Any]"
