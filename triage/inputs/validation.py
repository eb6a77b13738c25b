"""JSON Schema validation that reports every error, addressed, in triage's words: what was expected, never
what the file says (a file named by mistake, a stray /etc/shadow, must not end up in a CI log)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ..errors import Problem, closest, did_you_mean
from ..io import known_valid
from ..io.resources import schema as load_schema
from ..io.resources import schema_text
from ..io.yamlio import Document, Path_

KEYS_SHOWN = 6      # the known keys an unknown-key error lists before '…'


def _resolve(root: dict[str, Any], sub: dict[str, Any]) -> dict[str, Any]:
    ref = sub.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return node
    return {}


def _known_keys(root: dict[str, Any], sub: dict[str, Any]) -> list[str]:
    """The property names ``sub`` allows, in the schema's order (its $ref's and allOf parts' included)."""
    keys = dict.fromkeys(sub.get("properties", {}))
    target = _resolve(root, sub)
    if target:
        keys.update(dict.fromkeys(_known_keys(root, target)))
    for part in sub.get("allOf", []):
        keys.update(dict.fromkeys(_known_keys(root, part)))
    return list(keys)


def _unknown_key(word: str, known: list[str]) -> str:
    """'unknown key (expected one of: a, b, …; the closest is 'a')': triage's keys only, never ``word``."""
    if not known:
        return "unknown key (this mapping takes none)"
    listed = ", ".join(known[:KEYS_SHOWN]) + (", …" if len(known) > KEYS_SHOWN else "")
    match = closest(word, known)
    return f"unknown key (expected one of: {listed}" + (f"; the closest is {match!r})" if match else ")")


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a text", "number": "a number",
               "integer": "an integer", "boolean": "true or false", "null": "null"}


def _describe(value: Any) -> str:
    """What a value is, quoting it only when it is a number or true/false (text may be anything, a secret too)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return "text" if isinstance(value, str) else f"a {type(value).__name__}"     # an API dict's date, say


def _branches(root: dict[str, Any], options: list[dict[str, Any]]) -> str:
    """What a oneOf/anyOf accepts, from its branches' x-expected or types: 'a number or a text'."""
    wanted = []
    for option in options:
        sub = _resolve(root, option) or option
        if "x-expected" in sub:
            wanted.append(sub["x-expected"])
        elif "type" in sub:
            types = [sub["type"]] if isinstance(sub["type"], str) else sub["type"]
            wanted += [_TYPE_NAMES.get(t, t) for t in types]
    return " or ".join(dict.fromkeys(wanted)) or "one of the forms the schema allows"


_BOUNDS = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}
_AT_MOST = {"maxItems": "items", "maxLength": "characters", "maxProperties": "keys"}


# (the path printed, the path pointed at: a key's when it differs, the message)
_Message = tuple[Path_, Path_, str]


def _messages(err: Any, root: dict[str, Any]) -> list[_Message]:
    """The addressed messages of one jsonschema error, none quoting a key or text of the instance."""
    path = tuple(err.absolute_path)
    v, value, sch = err.validator, err.instance, err.schema
    if "propertyNames" in err.relative_schema_path and isinstance(value, str):
        # the instance is a key of the mapping at ``path``: point at it, name only what a key must be
        want = sch.get("x-expected", f"text matching {sch.get('pattern', 'the schema')}")
        return [(path, path + (value,), f"a key here must be {want}")]
    if v in ("additionalProperties", "unevaluatedProperties") and isinstance(value, dict):
        known = _known_keys(root, sch)
        return [(path, path + (k,), _unknown_key(str(k), known)) for k in value if k not in known]
    if v == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message     # the schema's word
        return [(path, path, f"missing required key {missing!r}")]
    if v == "type":
        wanted = err.validator_value
        wanted = [wanted] if isinstance(wanted, str) else wanted
        want = " or ".join(_TYPE_NAMES.get(w, w) for w in wanted)
        return [(path, path, f"expected {want}, got {_describe(value)}")]
    if v == "enum":
        opts = [str(o) for o in err.validator_value]
        got = f"other {_describe(value)}" if isinstance(value, str) else _describe(value)
        hint = did_you_mean(value, opts) if isinstance(value, str) else ""      # a schema's few options
        return [(path, path, f"expected one of {', '.join(opts)}; got {got}{hint}")]
    if v == "const":
        return [(path, path, f"expected {err.validator_value!r}, got {_describe(value)}")]
    if v in _BOUNDS:
        return [(path, path, f"expected a number {_BOUNDS[v]} {err.validator_value}, got {_describe(value)}")]
    if v == "pattern":
        want = sch.get("x-expected", f"text matching {err.validator_value}")
        return [(path, path, f"expected {want}, got other text")]
    if v in ("minItems", "minLength", "minProperties"):
        least = err.validator_value
        what = {"minItems": "items", "minLength": "characters", "minProperties": "keys"}[v]
        return [(path, path, "must not be empty" if least == 1 else f"needs at least {least} {what}")]
    if v in _AT_MOST:
        return [(path, path, f"expected at most {err.validator_value} {_AT_MOST[v]}")]
    if v == "uniqueItems":
        return [(path, path, "expected a list without repeated items")]
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
            expected = _branches(root, err.validator_value)
        return [(path, path, f"expected {expected}, got {_describe(value)}")]
    # a keyword the schemas do not use today: name the rule, never jsonschema's message (it quotes the instance)
    return [(path, path, f"does not meet the schema's {v} rule")]


def validate(doc: Document, schema_name: str, prefix: tuple[Any, ...] = ()) -> list[Problem]:
    """Every schema error of ``doc`` as addressed Problems (empty when valid).

    ``prefix`` wraps the document, so a catalog file (a mapping of names) is
    checked as the ``hardware`` or ``models`` part of the workload schema.
    """
    if not prefix and not isinstance(doc.data, dict):
        # a file that is no YAML mapping (a stray /etc/passwd): say what it is, never what it says
        kind = {list: "a list", str: "text", type(None): "nothing"}.get(type(doc.data), "a single value")
        return [doc.problem((), f"expected a mapping of keys (a YAML document), got {kind}")]
    instance: Any = doc.data
    for key in reversed(prefix):
        instance = {key: instance}
    # the same document under the same schema and validator passed before: no need to load jsonschema again
    seen = known_valid.digest(schema_text(schema_name), instance, _validator_salt())
    if known_valid.known(seen):
        return []
    from jsonschema import Draft202012Validator  # heavy: imported only when validating

    root = load_schema(schema_name)
    problems = []
    for err in Draft202012Validator(root).iter_errors(instance):
        for path, at, message in _messages(err, root):
            problems.append(doc.problem(path[len(prefix):], message, key=at != path, at=at[len(prefix):]))
    if not problems:
        known_valid.remember(seen)
    return problems


@cache
def _validator_salt() -> str:
    """What decides validity besides the schema's text (in the digest): the installed jsonschema, by its file and
    modification time, read without importing it, so an upgrade forgets every digest."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("jsonschema")
    origin = spec.origin if spec is not None and spec.origin else ""
    try:
        stamp = os.stat(origin).st_mtime_ns if origin else 0
    except OSError:
        stamp = 0
    return f"jsonschema {origin} {stamp}"
