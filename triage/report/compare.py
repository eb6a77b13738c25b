"""`triage compare`: several claims on one workload matrix, ranked per workload and overall.

The course's Monday-morning question is which to do first, and its answer
depends on the traffic mix: per workload the claims are ranked by their
end-to-end gain (the bound where end-to-end is undefined); overall by the
fleet gain (GPU-time over GPU-time for the same requests), beside the reproduction cost and the gain per 1000
GPU-hours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.evaluation import Evaluation
from ..model.verdicts import LABELS
from .result import Result
from .templates import Trusted, render


def _gains(ev: Evaluation) -> np.ndarray:
    """Per cell: the end-to-end gain, the bound where end-to-end is undefined, 0 where neither is or the claim
    does not fit."""
    g = ev.gaps
    gain = np.where(np.isfinite(g.speedup_end_to_end), g.speedup_end_to_end, g.speedup_theoretical)
    return np.where(np.isfinite(gain) & g.claim.fits, gain, 0.0)      # no credit where the claim cannot serve


def comparison(results: list[Result]) -> dict[str, Any]:
    """The JSON of a comparison: per-cell rankings and the overall table, from the evaluations' columns."""
    evs = [r.evaluation for r in results]
    ids = [ev.claim.id for ev in evs]
    m = evs[0].matrix
    gains = np.stack([_gains(ev) for ev in evs])                      # claims × cells
    theo = [ev.gaps.speedup_theoretical.tolist() for ev in evs]
    verdicts = [np.asarray(LABELS)[ev.verdicts.code].tolist() for ev in evs]
    order = np.argsort(-gains, axis=0, kind="stable")                 # best first, ties in card order
    best = np.where(gains[order[0], np.arange(len(m))] > 1.0, order[0], -1)
    labels = {t: m.labels(t).tolist() for t in ("blocks", "models", "hardware")}
    gain_rows, best_list = gains.T.tolist(), best.tolist()
    cells = []
    for i in range(len(m)):
        ranking = [{"claim": ids[k], "gain": gain_rows[i][k], "theoretical": theo[k][i], "verdict": verdicts[k][i]}
                   for k in order[:, i].tolist()]
        cells.append({"workload": labels["blocks"][i], "model": labels["models"][i],
                      "hardware": labels["hardware"][i], "phase": "decode" if m.decode[i] else "prefill",
                      "context": int(m.context[i]), "batch": int(m.batch[i]), "share": float(m.share[i]),
                      "ranking": ranking, "best": ids[best_list[i]] if best_list[i] >= 0 else None})
    overall: list[dict[str, Any]] = []
    for k, ev in enumerate(evs):
        d = ev.decision
        gain = d.weighted_end_to_end or d.weighted_theoretical or 1.0
        hours = d.reproduction_gpu_hours
        overall.append({"claim": ev.claim.id, "title": ev.claim.title, "decision": d.verdict,
                        "weighted_speedup": gain, "theoretical": d.weighted_theoretical, "gpu_hours": hours,
                        "gain_per_1000_gpu_hours": (gain - 1.0) / hours * 1000 if hours else None,
                        "traffic_won": float(m.share[best == k].sum()), "warnings": list(ev.warnings)})
    overall.sort(key=lambda row: -row["weighted_speedup"])
    first = overall[0]
    return {"claims": ids, "workloads": m.source, "cells": cells, "overall": overall,
            "recommendation": {"first": first["claim"] if first["weighted_speedup"] > 1.0 else None,
                               "reason": _reason(overall)}}


def _reason(overall: list[dict[str, Any]]) -> str:
    best = overall[0]
    if best["weighted_speedup"] <= 1.0:
        return "no claim speeds up this traffic mix"
    text = (f"{best['claim']} has the highest fleet gain ({best['weighted_speedup']:.3f}x) and wins "
            f"{best['traffic_won'] * 100:.0f} % of the requests")
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
    return render("compare.md.j2", c=comparison(results), marker=Trusted("<!-- triage comparison"))
