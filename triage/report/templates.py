"""The one Jinja environment every Markdown output renders through: StrictUndefined, formatting filters only.

Compiled templates are cached per user, and a cache is trusted only as far as it is provably the user's own:
a folder the user owns with mode 0700 (no symlink), regular files the user owns that no one else can write,
each carrying the SHA-256 of its payload. Anything else — another owner, loose permissions, a truncated or
altered file, a full disk — is ignored and the template is compiled in memory.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import escape
from ..inputs import units
from ..io.private import owned_file, private_folder, write_owned
from ..io.resources import resource_dir

_MAX_CACHE_BYTES = 4 << 20     # a compiled memo template is ~100 kB


def _bytecode_cache() -> Any:
    import jinja2

    class PrivateCache(jinja2.BytecodeCache):
        """Checked, content-hashed compiled templates; every failure means 'compile it again'."""

        def __init__(self, folder: Path) -> None:
            self.folder = folder

        def _path(self, bucket: Any) -> Path:
            return self.folder / f"{bucket.key}.bin"

        def load_bytecode(self, bucket: Any) -> None:
            data = owned_file(self._path(bucket), _MAX_CACHE_BYTES)
            if data is None:
                return
            digest, payload = data[:32], data[32:]
            try:
                if hashlib.sha256(payload).digest() == digest:
                    bucket.bytecode_from_string(payload)
            except Exception:  # noqa: BLE001 - a cache that cannot be read is no cache
                bucket.reset()

        def dump_bytecode(self, bucket: Any) -> None:
            try:
                payload = bucket.bytecode_to_string()
            except Exception:  # noqa: BLE001 - a template jinja cannot serialise only costs the next run a compile
                return
            write_owned(self._path(bucket), hashlib.sha256(payload).digest() + payload)   # a failure: compile again

    folder = private_folder("templates")
    return PrivateCache(folder) if folder is not None else None


_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "*": "\\*", "`": "\\`", "[": "\\[", "]": "\\]",
                           "<": "&lt;", "\n": " ", "\r": " ", "\t": " "})


def markdown_text(value: Any) -> Any:
    """Every value a template prints, made inert: text that came from a card or a workload file cannot break a
    table row, open an HTML tag, start emphasis or a code span, or reach the terminal as a control character."""
    if not isinstance(value, str) or isinstance(value, Trusted):
        return value
    return escape(value.translate(_MARKDOWN))


class Trusted(str):
    """Markup triage itself writes (the marker comment): printed as it is."""


def setting_text(setting: dict[str, Any]) -> str:
    """A paper's setting in words: 'model llama-2-7b, batch 8, context 4,096 tokens, precision: compute int8'."""
    parts = []
    for key, value in setting.items():
        if key == "offload":
            parts.append(f"offload: {units.fmt_percent(value['weights'], 0)} of the weights over {value['link']}")
        elif isinstance(value, dict):
            parts.append(f"{key}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
        elif key == "context":
            parts.append(f"context {value:,} tokens")
        elif key in ("memory_waste", "batch_utilization"):
            parts.append(f"{key.replace('_', ' ')} {units.fmt_percent(value, 1)}")
        elif isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"{key} {value:,}")
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts)


@cache
def environment() -> Any:
    """The environment (jinja2 is imported here, only when Markdown is rendered)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, autoescape=False, finalize=markdown_text,
                             bytecode_cache=_bytecode_cache(),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update({
        "bytes": lambda x: "—" if x is None else units.fmt_bytes(x),
        "gib": lambda x: "—" if x is None else units.fmt_gib(x),
        "time": lambda x: "—" if x is None else units.fmt_time(x),
        "ratio": units.fmt_ratio,
        "pct": units.fmt_percent,
        "flops": lambda x: "—" if x is None else units.fmt_flops(x),
        "intensity": lambda x: f"{x:.1f} FLOP/B",
        "tps": lambda x: "—" if x is None else f"{x:,.1f} tok/s",
        "int": lambda x: "—" if x is None else f"{x:,}",
        "num": lambda x: "—" if x is None or x != x else f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}",
        "hours": lambda x: "—" if x is None else f"{x:,.0f} GPU-hours" if round(x) != 0 or x == 0 else
        f"{x:.2g} GPU-hours",           # under one, its sign and two digits: a -0.08 saving is not '0' or '-0'
        "count": lambda n, noun: f"{n:g} {noun}" + ("" if n == 1 else "s"),
        "setting": setting_text,
    })
    return env


def render(name: str, **context: Any) -> str:
    """Render one template with its context."""
    return str(environment().get_template(name).render(**context))
