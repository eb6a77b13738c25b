"""JSON Schema validation that reports every error, addressed, with a did-you-mean."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from ..errors import Problem
from ..io.resources import schema as load_schema
from ..io.yamlio import Document


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'kv_bytes'?)' or ''."""
    names = sorted(choices)
    longer = [c for c in names if c.startswith(word)]      # 'a100' means an A100 before it means an A10G
    close = difflib.get_close_matches(word, longer, n=1, cutoff=0.0) if longer else \
        difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _resolve(root: dict[str, Any], sub: dict[str, Any]) -> dict[str, Any]:
    ref = sub.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return node
    return {}


def _known_keys(root: dict[str, Any], sub: dict[str, Any]) -> set[str]:
    keys = set(sub.get("properties", {}))
    target = _resolve(root, sub)
    if target:
        keys |= _known_keys(root, target)
    for part in sub.get("allOf", []):
        keys |= _known_keys(root, part)
    return keys


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a text", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _messages(err: Any, root: dict[str, Any]) -> list[tuple[tuple[Any, ...], str, bool]]:
    """(path, message, point-at-key) for one jsonschema error."""
    path = tuple(err.absolute_path)
    v, value, sch = err.validator, err.instance, err.schema
    if v in ("additionalProperties", "unevaluatedProperties") and isinstance(value, dict):
        known = _known_keys(root, sch)
        extra = [k for k in value if k not in known]
        return [(path + (k,), f"unknown key {k!r}{did_you_mean(str(k), known)}", True) for k in extra]
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return [(path, f"missing required key {missing!r}", False)]
    if v == "type":
        wanted = err.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        want = " or ".join(_TYPE_NAMES.get(w, w) for w in wanted)
        return [(path, f"expected {want}, got {_describe(value)}", False)]
    if v == "enum":
        opts = [str(o) for o in err.validator_value]
        hint = did_you_mean(str(value), opts) if isinstance(value, str) else ""
        return [(path, f"expected one of {', '.join(opts)}; got {_describe(value)}{hint}", False)]
    bounds = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}
    if v in bounds:
        return [(path, f"expected a number {bounds[v]} {err.validator_value}, got {_describe(value)}", False)]
    if v == "pattern":
        want = sch.get("x-expected", f"text matching {err.validator_value}")
        return [(path, f"expected {want}, got {_describe(value)}", False)]
    if v in ("minItems", "minLength", "minProperties"):
        least = err.validator_value
        what = {"minItems": "items", "minLength": "characters", "minProperties": "keys"}[v]
        return [(path, "must not be empty" if least == 1 else f"needs at least {least} {what}", False)]
    if v in ("oneOf", "anyOf"):
        expected = sch.get("x-expected")
        if expected is None and err.context:
            # the branch that got furthest explains best (e.g. kv_tokens: {keep: 2}), among the branches whose
            # required keys are present (a chain draft's by_domain is not judged by the tree draft's rules)
            shaped = {e.relative_schema_path[0] for e in err.context if e.validator == "required"
                      and len(e.absolute_path) == len(err.absolute_path)}
            candidates = [e for e in err.context if e.relative_schema_path[0] not in shaped] or list(err.context)
            deepest = max(candidates, key=lambda e: len(e.absolute_path))
            if len(deepest.absolute_path) > len(err.absolute_path) or deepest.validator in (
                    "additionalProperties", "required"):
                return _messages(deepest, root)
            expected = " or ".join(str(e.message) for e in err.context[:2])
        return [(path, f"expected {expected}, got {_describe(value)}", False)]
    return [(path, err.message, False)]


def validate(doc: Document, schema_name: str, prefix: tuple[Any, ...] = ()) -> list[Problem]:
    """Every schema error of ``doc`` as addressed Problems (empty when valid).

    ``prefix`` wraps the document, so a catalog file (a mapping of names) is
    checked as the ``hardware`` or ``models`` part of the workload schema.
    """
    from jsonschema import Draft202012Validator  # heavy: imported only when validating

    if not prefix and not isinstance(doc.data, dict):
        # a file that is no YAML mapping (a stray /etc/passwd): say what it is, never what it says
        kind = {list: "a list", str: "text", type(None): "nothing"}.get(type(doc.data), "a single value")
        return [doc.problem((), f"expected a mapping of keys (a YAML document), got {kind}")]
    root = load_schema(schema_name)
    instance: Any = doc.data
    for key in reversed(prefix):
        instance = {key: instance}
    problems = []
    for err in Draft202012Validator(root).iter_errors(instance):
        for path, message, at_key in _messages(err, root):
            problems.append(doc.problem(path[len(prefix):], message, key=at_key))
    return problems
