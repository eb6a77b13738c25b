"""`triage compare`: several claims on one workload matrix, ranked per workload and overall.

The course's Monday-morning question is which to do first, and its answer
depends on the traffic mix: per workload the claims are ranked by their
end-to-end gain (the bound where end-to-end is undefined), and a workload's best is the highest gain among
the claims whose verdict there is GO or CONDITIONAL; overall by decision first (GO, then CONDITIONAL, then
NO-GO: a NO-GO is never recommended, whatever its gain), then by the fleet gain (GPU-time over GPU-time for
the same requests), beside the reproduction cost and the gain per 1000 GPU-hours.
"""

from __future__ import annotations

import shlex
from typing import Any

import numpy as np

from ..analysis.evaluation import Evaluation
from ..model.verdicts import CONDITIONAL, LABELS, NO_GO
from . import notices
from .reasons import decision_reasons
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
    pays = np.where(np.stack([ev.verdicts.code <= CONDITIONAL for ev in evs]) & (gains > 1.0), gains, 0.0)
    best = np.where(pays.max(axis=0) > 1.0, pays.argmax(axis=0), -1)  # the best claim a cell would adopt
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
                        "traffic_won": float(m.share[best == k].sum()), "warnings": notices.as_json(ev.warnings),
                        "reasons": decision_reasons(ev.decision, ev.claim)})
    overall.sort(key=lambda row: (LABELS.index(row["decision"]), -row["weighted_speedup"]))
    first = overall[0]
    adoptable = first["decision"] != LABELS[NO_GO] and first["weighted_speedup"] > 1.0
    # the arguments every card shares (the matrix, --model, --catalog): the first card's after its own file
    named = [r.arguments for r in results if r.arguments is not None]
    shared = named[0][1:] if len(named) == len(results) else None
    return {"claims": ids, "files": [ev.claim.file for ev in evs], "workloads": m.source,
            "rerun": "" if shared is None else shlex.join(shared),
            "command": None if shared is None else shlex.join(("triage", "compare", *(a[0] for a in named),
                                                                *shared)),
            "cells": cells, "overall": overall,
            "recommendation": {"first": first["claim"] if adoptable else None, "reason": _reason(overall)}}


def _reason(overall: list[dict[str, Any]]) -> str:
    """Why the first is first (overall is sorted by decision, then fleet gain)."""
    best = overall[0]
    if best["decision"] == LABELS[NO_GO]:
        return "every claim is NO-GO on this matrix"
    if best["weighted_speedup"] <= 1.0:
        return "no claim speeds up this traffic mix"
    better = [o for o in overall if o["weighted_speedup"] > best["weighted_speedup"]]
    text = (f"{best['claim']} is {best['decision']} with a fleet gain of {best['weighted_speedup']:.3f}x and is "
            f"the best adoptable claim on {best['traffic_won'] * 100:.0f} % of the requests")
    if better:
        text += "; " + "; ".join(f"{o['claim']} gains more ({o['weighted_speedup']:.3f}x) but is {o['decision']}"
                                 + (f" ({o['reasons'][0]})" if o["reasons"] else "") for o in better)
    if len(overall) > 1:
        nxt = overall[1]
        if nxt not in better:
            text += f"; next {nxt['claim']} ({nxt['decision']}, {nxt['weighted_speedup']:.3f}x)"
        cheap = [o for o in overall if o["gain_per_1000_gpu_hours"] is not None and o["decision"] != LABELS[NO_GO]]
        if cheap:
            value = max(cheap, key=lambda o: o["gain_per_1000_gpu_hours"])
            if value["claim"] != best["claim"]:
                text += (f"; per GPU-hour of reproduction {value['claim']} returns more "
                         f"({value['gain_per_1000_gpu_hours']:.3f} of speedup per 1000 GPU-hours)")
    return text


def render_markdown(results: list[Result]) -> str:
    """The comparison memo."""
    return render("compare.md.j2", c=comparison(results), marker=Trusted("<!-- triage comparison"))
