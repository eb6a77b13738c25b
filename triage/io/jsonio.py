"""Strict, bounded JSON reading (config.json files, measurement files)."""

from __future__ import annotations

import json
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError

MAX_DEPTH = LIMITS.nesting


def _depth(data: Any) -> int:
    """Levels of nesting of parsed JSON, counted without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def load_json(text: str, label: str) -> Any:
    """Strict JSON: no NaN or Infinity, no duplicate keys, bounded nesting; UserError with the position."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise ValueError("duplicate key (one object gives a key twice)")   # the key: the file's text
            out[k] = v
        return out

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise UserError([Problem(label, exc.lineno, exc.colno, "$", f"JSON: {exc.msg}")]) from None
    except (ValueError, RecursionError) as exc:
        message = str(exc) if isinstance(exc, ValueError) else "nesting too deep"
        raise UserError([Problem(label, path="$", message=f"JSON: {message}")]) from None
    if _depth(data) > MAX_DEPTH:
        raise UserError([Problem(label, path="$", message=f"JSON: nesting deeper than {MAX_DEPTH} levels")])
    return data
