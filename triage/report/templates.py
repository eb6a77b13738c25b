"""The one Jinja environment every Markdown output renders through: StrictUndefined, formatting filters only.

Templates are compiled from the shipped sources in each process, never loaded compiled from a cache: Jinja's
bytecode cache is a pickle of code, and a cache folder can be a checkout's (issue 46).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..errors import escape
from ..inputs import units
from ..io.resources import resource_dir

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


def code_span(value: str) -> Trusted:
    """A command as an inline code span a reader copies verbatim: nothing escaped inside it (CommonMark shows a code
    span's text literally), fenced by more backticks than its longest run of them, control characters as \\xNN,
    and '-->' (which would end the HTML comment a memo's first line is) as '--\\>'."""
    text = escape(value).replace("-->", "--\\>")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Trusted(f"{fence}{pad}{text}{pad}{fence}")


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
        "code": code_span,
    })
    return env


def render(name: str, **context: Any) -> str:
    """Render one template with its context."""
    return str(environment().get_template(name).render(**context))
