"""Renderers: the Markdown decision memo (Jinja2) and the JSON document, chosen by --format."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from . import units
from .mechanisms import REGISTRY
from .resources import resource_dir
from .result import Result

MAX_MEMO_CELLS = 200   # a memo lists at most this many cells; the JSON always has all of them
MARKER = "<!-- triage decision memo"
BRIEF_MARKER = "<!-- triage reading-group brief"


def _cell_view(cell: dict[str, Any]) -> dict[str, Any]:
    """Display-ready facts of one cell: the fractions the template must not compute."""
    base = cell["baseline"]
    kv = base["bytes_by_group"]["attention"] or 0.0
    flops, nbytes = base["flops_per_step"] or 0.0, base["bytes_per_step"] or 1.0
    label = f"{cell['workload']} ({cell['phase']}, {cell['context']:,} tokens, batch {cell['batch']})"
    return {**cell,
            "label": label,
            "kv_fraction": kv / nbytes,
            "intensity": flops / nbytes}


def _failure_conditions(d: dict[str, Any], long_cells: bool) -> list[dict[str, str]]:
    """The course's three failure conditions (§5.4), checked against the card."""
    claim = d["claim"]
    setting = claim["claim"].get("setting", {})
    has_setting = "batch" in setting and "context" in setting
    kernel = claim["implementation"]["kernel"]
    tested = claim["quality"]["long_context_tested"]
    return [
        {"condition": "1. tokens/s reported without batch and sequence length",
         "status": "ok" if has_setting else "FLAG",
         "detail": (f"the card states batch {setting['batch']} and context {setting['context']:,}"
                    if has_setting else "the card's claim.setting lacks batch or context: the number cannot be "
                                        "compared with any workload")},
        {"condition": "2. no kernel reads the compressed format (the saving stays theoretical)",
         "status": "ok" if kernel else "FLAG",
         "detail": ("the card says a kernel reads the new format in place" if kernel else
                    "implementation.kernel is false: reads keep the old bytes, only storage shrinks")},
        {"condition": "3. quality holds on average but drops on needle-in-a-haystack",
         "status": "ok" if tested else ("FLAG" if long_cells else "untested"),
         "detail": ("long-context retrieval was evaluated" if tested else
                    "no long-context evaluation reported" + (": the long-context workloads are CONDITIONAL"
                                                             if long_cells else ""))},
    ]


def figure_data(result: Result, d: dict[str, Any]) -> dict[str, str]:
    """The two SVG figures of a memo: roofline and gain heatmap (name → SVG text)."""
    from . import figures

    m, g = result.matrix, result.gaps
    hardware = [{"name": h.key, "peak": h.peak(m.blocks[0].precision["compute"]), "bandwidth": h.bandwidth_bytes_per_s}
                for h in m.hardware]
    points = []
    for i in range(min(len(m), 40)):
        b, c = g.base, g.claim
        points.append({"label": d["cells"][i]["workload"], "hardware_index": int(m.hardware_idx[i]),
                       "base_intensity": float(b.cost.total_flops[i] / b.cost.total_bytes[i]),
                       "base_flops": float(b.cost.total_flops[i] / b.time_theoretical[i]),
                       "claim_intensity": float(c.cost.total_flops[i] / c.cost.total_bytes[i]),
                       "claim_flops": float(c.cost.total_flops[i] / c.time_theoretical[i])})
    out = {"roofline": figures.roofline(hardware, points, f"Roofline: {result.claim.title}")}
    crossing = d["analysis"]["crossover"]
    if crossing:
        first = crossing[0]
        out["gain"] = figures.heatmap(first["grid"]["contexts"], first["grid"]["batches"], first["grid"]["theoretical"],
                                      first["min_gain"], f"Bound over context × batch: {first['model']} on "
                                                         f"{first['hardware']} (decode)")
    return out


def context(result: Result, figures: list[dict[str, str]] | str = "") -> dict[str, Any]:
    """The memo's typed context: the JSON document plus display-ready views."""
    d = result.to_dict()
    cells = [_cell_view(c) for c in d["cells"][:MAX_MEMO_CELLS]]
    changes = [REGISTRY[k].describe(v) for k, v in d["claim"]["change"].items()]
    quality = d["claim"]["quality"]
    gates = sorted({b.quality_gate for b in result.matrix.blocks})
    return {
        "d": d,
        "claim": d["claim"],
        "check": d["paper_check"],
        "cells": cells,
        "omitted": len(d["cells"]) - len(cells),
        "changes": changes,
        "conditions": _failure_conditions(d, any(c["long_context"] for c in d["cells"])),
        "quality_retained": quality["retained"],
        "gates": gates,
        "decision": d["decision"],
        "assumptions": d["assumptions"],
        "analysis": d["analysis"],
        "measured": d["measured"],
        "figures": figures if isinstance(figures, list) else [],
        "figures_note": figures if isinstance(figures, str) else "",
        "marker": MARKER,
    }


def _bytecode_cache() -> Any:
    """Compiled templates under the user's cache folder (keyed by source checksum), if writable."""
    import os
    from pathlib import Path

    import jinja2

    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "triage" / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder)) if os.access(folder, os.W_OK) else None


def _questions(d: dict[str, Any]) -> list[dict[str, str]]:
    """The three questions to ask the authors, with what the card already answers."""
    claim = d["claim"]
    setting = claim["claim"].get("setting", {})
    quality = claim["quality"]
    return [
        {"question": "At what batch size and sequence lengths was the headline number measured, and against "
                     "which baseline?",
         "answer": (f"batch {setting['batch']}, context {setting['context']:,}" if "batch" in setting
                    and "context" in setting else "not stated")
                   + (f"; baseline: {claim['claim']['baseline']}" if claim["claim"].get("baseline") else "")},
        {"question": "Does a kernel read the new format in place, at what fraction of the baseline's bandwidth?",
         "answer": ("yes, at " + units.fmt_percent(claim["implementation"]["bandwidth_efficiency"], 0)
                    if claim["implementation"]["kernel"] else "no: the saving is storage only")},
        {"question": "Does quality hold on long-context retrieval (needle-in-a-haystack), not only on average?",
         "answer": ("tested" if quality["long_context_tested"] else "not tested")
                   + (f"; {units.fmt_percent(quality['retained'])} retained" if quality["retained"] is not None
                      else "; no quality figure")},
    ]


def render_brief(result: Result) -> str:
    """The one-page reading-group brief."""
    ctx = {**context(result, "none in a brief"), "marker": BRIEF_MARKER}
    return _env().get_template("brief.md.j2").render(questions=_questions(ctx["d"]), **ctx)


def _env() -> Any:
    import jinja2  # heavy: only when a memo is rendered

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
                             undefined=jinja2.StrictUndefined, autoescape=False, bytecode_cache=_bytecode_cache(),
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


def render_markdown(result: Result, figures: list[dict[str, str]] | str = "") -> str:
    """The decision memo; ``figures`` are [{title, path}] written beside it, or why there are none."""
    return _env().get_template("memo.md.j2").render(**context(result, figures or "figures are written only "
                                                                                    "beside a memo file (-o)"))


def render_json(result: Result) -> str:
    """The JSON contract: stable key order, no NaN, trailing newline."""
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


RENDERERS: dict[str, Callable[[Result], str]] = {"md": render_markdown, "json": render_json, "brief": render_brief}
