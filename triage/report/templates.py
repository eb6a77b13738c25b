"""The one Jinja environment every Markdown output renders through: StrictUndefined, formatting filters only.

Templates are compiled in memory, once per process; nothing compiled is read back from disk.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ..inputs import units
from ..io.resources import resource_dir


@cache
def environment() -> Any:
    """The environment (jinja2 is imported here, only when Markdown is rendered)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, autoescape=False,
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
        "hours": lambda x: "—" if x is None else f"{x:,.0f} GPU-hours",
    })
    return env


def render(name: str, **context: Any) -> str:
    """Render one template with its context."""
    return str(environment().get_template(name).render(**context))
