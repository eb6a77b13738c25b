"""`triage compare`: several claims on one workload matrix, ranked per workload and overall.

The course's Monday-morning question is which to do first, and its answer
depends on the traffic mix: per workload the claims are ranked by their
end-to-end gain (the bound where end-to-end is undefined); overall by the
share-weighted gain, beside the reproduction cost and the gain per 1000
GPU-hours.
"""

from __future__ import annotations

from typing import Any

from .result import Result
from .templates import render


def _gain(cell: dict[str, Any]) -> float:
    s = cell["speedup"]
    value = s["end_to_end"] if s["end_to_end"] is not None else s["theoretical"]
    return value if value is not None else 0.0


def comparison(results: list[Result]) -> dict[str, Any]:
    """The JSON of a comparison: per-cell rankings and the overall table."""
    docs = [r.to_dict(with_analysis=False) for r in results]
    ids = [d["claim"]["id"] for d in docs]
    cells = []
    for i, first in enumerate(docs[0]["cells"]):
        ranking = sorted(({"claim": d["claim"]["id"], "gain": _gain(d["cells"][i]),
                           "theoretical": d["cells"][i]["speedup"]["theoretical"],
                           "verdict": d["cells"][i]["verdict"]} for d in docs),
                         key=lambda row: -row["gain"])
        cells.append({k: first[k] for k in ("workload", "model", "hardware", "phase", "context", "batch", "share")}
                     | {"ranking": ranking, "best": ranking[0]["claim"] if ranking[0]["gain"] > 1.0 else None})
    overall = []
    for d in docs:
        dec = d["decision"]
        gain = dec["weighted_speedup"]["end_to_end"] or dec["weighted_speedup"]["theoretical"] or 1.0
        hours = dec["reproduction_gpu_hours"]
        overall.append({"claim": d["claim"]["id"], "title": d["claim"]["title"], "decision": dec["verdict"],
                        "weighted_speedup": gain, "theoretical": dec["weighted_speedup"]["theoretical"],
                        "gpu_hours": hours,
                        "gain_per_1000_gpu_hours": (gain - 1.0) / hours * 1000 if hours else None,
                        "traffic_won": sum(c["share"] for c in cells if c["best"] == d["claim"]["id"])})
    overall.sort(key=lambda row: -row["weighted_speedup"])
    first = overall[0]
    return {"claims": ids, "workloads": docs[0]["workloads"], "cells": cells, "overall": overall,
            "recommendation": {"first": first["claim"] if first["weighted_speedup"] > 1.0 else None,
                               "reason": _reason(overall)}}


def _reason(overall: list[dict[str, Any]]) -> str:
    best = overall[0]
    if best["weighted_speedup"] <= 1.0:
        return "no claim speeds up this traffic mix"
    text = (f"{best['claim']} has the highest share-weighted gain ({best['weighted_speedup']:.3f}x) and wins "
            f"{best['traffic_won'] * 100:.0f} % of the traffic")
    if len(overall) > 1:
        nxt = overall[1]
        text += f"; next {nxt['claim']} at {nxt['weighted_speedup']:.3f}x"
        cheap = [o for o in overall if o["gain_per_1000_gpu_hours"] is not None]
        if cheap:
            value = max(cheap, key=lambda o: o["gain_per_1000_gpu_hours"])
            if value["claim"] != best["claim"]:
                text += (f"; per GPU-hour of reproduction {value['claim']} returns more "
                         f"({value['gain_per_1000_gpu_hours']:.3f} of speedup per 1000 GPU-hours)")
    return text


def render_markdown(results: list[Result]) -> str:
    """The comparison memo."""
    return render("compare.md.j2", c=comparison(results), marker="<!-- triage comparison")
