"""Renderers: the Markdown decision memo, the reading-group brief and the JSON document, chosen by --format."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..defaults import JSON_WINDOW_CELLS, LIMITS
from ..inputs import units
from ..io.files import Content
from ..model.verdicts import DOES_NOT_FIT, GO, LABELS
from . import serving as serving_view
from .describe import describe
from .result import Result, command, evidence_rows
from .templates import Trusted, render
from .where_it_pays import INPUT_WORDS, sensitivity_value

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


def figure_data(result: Result) -> dict[str, str]:
    """The SVG figures of a memo: roofline, gain heatmap (a panel per chip), latency–throughput, serving
    (name → SVG text)."""
    from . import figures as figures_mod  # the SVG writer loads when figures are drawn (-o), not for text

    ev = result.evaluation
    m, g = ev.matrix, ev.gaps
    n = min(len(m), LIMITS.figure_points)
    names = m.labels("blocks")[:n]
    b, c = g.base, g.claim
    # a roofline plots a step at full efficiency (for speculation: the verification step, not time per token)
    base_step, claim_step = (np.broadcast_to(v.step_theoretical, m.batch.shape)[:n] for v in (b, c))
    claim_dtype = ev.claim.change.compute_dtype
    points, roofs = [], {}
    for i in range(n):
        hw = m.hardware[m.hardware_idx[i]]
        base_dtype = m.blocks[m.block_idx[i]].precision["compute"]
        dtypes = [base_dtype] + ([claim_dtype] if claim_dtype and hw.has_peak(claim_dtype) else [])
        for dtype in dtypes:            # a roof for every compute dtype a plotted point runs at
            roofs[(hw.key, dtype)] = {"hardware": hw.key, "dtype": dtype, "peak": hw.peak(dtype),
                                      "bandwidth": hw.bandwidth_bytes_per_s}
        points.append({"label": str(names[i]), "hardware": hw.key,
                       "base_intensity": float(b.cost.total_flops[i] / b.cost.total_bytes[i]),
                       "base_flops": float(b.cost.total_flops[i] / base_step[i]),
                       "claim_intensity": float(c.cost.total_flops[i] / c.cost.total_bytes[i]),
                       "claim_flops": float(c.cost.total_flops[i] / claim_step[i])})
    title = (f"Roofline, theoretical layer: {ev.claim.title}"
             + (f" (first {n} of {len(m):,} cells)" if len(m) > n else ""))
    out = {"roofline": figures_mod.roofline(list(roofs.values()), points, title)}
    if ev.analysis is not None and ev.analysis.crossover:
        # one panel per chip of the matrix, for the first model (the crossover runs per model × chip)
        model = ev.analysis.crossover[0].model
        chips = [x for x in ev.analysis.crossover if x.model == model]
        panels = [figures_mod.Panel(x.hardware, x.contexts.tolist(), x.batches.tolist(), x.theoretical.tolist(),
                                    x.fits.tolist(), x.min_gain) for x in chips[:figures_mod.MOST_PANELS]]
        more = f", first {len(panels)} of {len(chips)} chips" if len(chips) > len(panels) else ""
        out["gain"] = figures_mod.heatmap(
            panels, f"Theoretical bound over context × batch: {model}, decode, one panel per chip{more}")
    series, slo, title = _frontier(result)
    if series:
        out["latency"] = figures_mod.latency_throughput(series, slo, title)
    served, bounds, title = serving_view.figure_series(ev)
    if served:
        out["serving"] = figures_mod.latency_rate(served, bounds, title)
    return out


def _frontier(result: Result) -> tuple[list[dict[str, Any]], float | None, str]:
    """Series of tokens/s per GPU against TPOT, baseline and claim, over the frontier's batches."""
    ev = result.evaluation
    f = ev.analysis.frontier if ev.analysis is not None else None
    if f is None:
        return [], None, ""
    m = ev.matrix
    series = []
    for name, t, tpot, fits in (("baseline", f.base_time_s, f.base_tpot_s, f.base_fits),
                                ("claim", f.claim_time_s, f.claim_tpot_s, f.claim_fits)):
        # TPOT: a step's time, what the SLO judges; throughput: useful tokens over the per-token time
        series.append({"name": name, "batch": f.batches[fits].tolist(), "tpot_s": tpot[fits].tolist(),
                       "tokens_per_s_per_gpu": (f.batches[fits] / t[fits] / f.gpus).tolist()})
    i = f.cell
    title = (f"Latency–throughput: {m.blocks[m.block_idx[i]].name}, {m.models[m.model_idx[i]].label} on "
             f"{m.hardware[m.hardware_idx[i]].key}, {int(m.context[i]):,}-token context")
    return series, f.slo_s, title


FIRST_SCREEN_ROWS = 12     # rows of the first screen's verdict table (the full table follows)


def _first_screen(result: Result, d: dict[str, Any]) -> dict[str, Any]:
    """What decides, in at most ~25 lines: one row per workload (hardware collapsed where the verdict and the
    gains are the same), what blocks GO, and what would flip the decision."""
    slo_gain = {t["cell"]: t["gain"] for t in d.get("analysis", {}).get("slo_throughput", [])}
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for i, c in enumerate(d["cells"]):
        # a workload with traffic: the serving simulation's gain at its SLO (the largest rate meeting it)
        e2e = c["speedup"]["end_to_end"]
        at_slo = c["serving"]["gain"]["end_to_end"] if "serving" in c else slo_gain.get(i)
        key = (c["workload"], c["model"], c["phase"], c["context"], c["batch"], c["verdict"], c.get("marginal"),
               None if e2e is None else round(e2e, 3), None if at_slo is None else round(at_slo, 2))
        row = groups.setdefault(key, {"workload": c["workload"], "model": c["model"], "phase": c["phase"],
                                      "context": c["context"], "batch": c["batch"], "hardware": [], "share": 0.0,
                                      "end_to_end": e2e, "at_slo": at_slo, "verdict": c["verdict"],
                                      "marginal": bool(c.get("marginal"))})
        row["hardware"].append(c["hardware"])
        row["share"] += c["share"]
    rows = list(groups.values())
    v, m = result.evaluation.verdicts, result.matrix
    names = m.labels("blocks")
    not_go = v.code != GO
    facts = [("the method cannot run in this stack", v.incompatible),
             ("the shipped alternative gets within the threshold of it", v.incumbent_low),
             ("quality between its gate and its band", v.quality_band),
             ("quality measured on a far larger model", v.far_model),
             ("a KV format only the paper's kernel reads (attention-backend integration)", v.integration),
             ("that integration with no quality figure at all", v.unproven_integration),
             ("the claim does not fit memory at the workload's batch", v.code == DOES_NOT_FIT),
             ("quality beyond its band", v.quality_fail),
             ("the bound is below the min_gain threshold", v.theory_low),
             ("no kernel reads the new format", v.kernel_missing),
             ("the end-to-end gain is below the min_gain threshold",
              v.e2e_low & ~v.theory_low & ~v.kernel_missing & ~v.no_regret),
             ("no gain the model resolves there", v.e2e_low & ~v.theory_low & v.no_regret),
             ("no quality figure for the gate", np.full(len(m), v.quality_untested) & np.isnan(v.measured_quality)),
             ("no long-context (needle-in-a-haystack) evaluation", v.long_untested),
             ("the SLO is missed", v.slo_missed)]
    blockers = [f"{what} ({', '.join(dict.fromkeys(names[not_go & np.asarray(mask, dtype=bool)].tolist()))})"
                for what, mask in facts if (not_go & np.asarray(mask, dtype=bool)).any()]
    current = d["decision"]["verdict"]
    flips = [f"{r['input']} {r['value']} makes the decision {r['decision']}"
             for r in d.get("analysis", {}).get("sensitivity", []) if r["decision"] != current]
    analysis = result.evaluation.analysis
    for sens in analysis.sensitivity if analysis is not None else ():
        changed = (sens.codes != v.code) if sens.input != "quality_retained" else np.zeros(len(m), dtype=bool)
        if changed.any():
            moved = dict.fromkeys(f"{n} {LABELS[c]}" for n, c in zip(names[changed].tolist(),
                                                                      sens.codes[changed].tolist(), strict=True))
            flips.append(f"{INPUT_WORDS[sens.input]} {sensitivity_value(sens)}: " + ", ".join(list(moved)[:4]))
    return {"rows": rows[:FIRST_SCREEN_ROWS], "more_rows": max(len(rows) - FIRST_SCREEN_ROWS, 0),
            "marginal": any(r["marginal"] for r in rows),
            "blockers": blockers if current != "GO" else [],
            "not_go": [what for what, mask in facts if (not_go & np.asarray(mask, dtype=bool)).any()]
            if current == "GO" else [],
            "flips": flips[:5]}


def _figures_text(figures: list[dict[str, Any]]) -> str:
    """The card's quality figures in words, the worst of each kind first named (what the gate reads)."""
    if not figures:
        return ""
    ppl = [f for f in figures if f["kind"] == "perplexity"]
    tasks = [f for f in figures if f["kind"] != "perplexity"]
    out = []
    if ppl:
        f = max(ppl, key=lambda f: f["claim"] / f["baseline"])
        out.append(f"perplexity {f['task']} {units.fmt_pair(f['baseline'], f['claim'])} "
                   f"(+{units.fmt_percent(f['claim'] / f['baseline'] - 1)}) on {f['model']}")
    if tasks:
        f = min(tasks, key=lambda f: f["claim"] / f["baseline"])
        out.append(f"worst task {f['task']} {units.fmt_pair(f['baseline'], f['claim'])} "
                   f"({units.fmt_percent(f['claim'] / f['baseline'])} retained) on {f['model']}")
    return "; ".join(out) + f" ({len(figures)} figure{'s' if len(figures) > 1 else ''})"


def context(result: Result, figures: list[dict[str, str]] | str = "", output: tuple[str, ...] = ()) -> dict[str, Any]:
    """The memo's typed context: the JSON document (cells cut to the memo's limit) plus display-ready views;
    ``output`` the command's own flags after the evaluation's (-o FILE, --figures, --brief), for the header."""
    d = result.document(LIMITS.memo_cells)
    cells = [_cell_view(c) for c in d["cells"]]
    quality = d["claim"]["quality"]
    gates = sorted({b.quality_gate for b in result.matrix.blocks})
    analysis = result.analysis
    return {
        "d": d,
        "first": _first_screen(result, d),
        "claim": d["claim"],
        "check": d["paper_check"],
        "evidence": evidence_rows(d["claim"]),
        "cite": {k: v["where"] if "where" in v else f"assumed: {v['assumption']}"
                 for k, v in d["claim"]["evidence"].items()},
        "warnings": d["warnings"],
        "cells": cells,
        "omitted": len(result) - len(cells),
        "memo_cells": LIMITS.memo_cells,
        "slo_omitted": (analysis.slo_cells_total - len(analysis.slo_throughput)) if analysis else 0,
        "changes": describe(result.evaluation.claim.change),
        "conditions": _failure_conditions(d, bool(result.matrix.long_context.any())),
        "quality_retained": quality["retained"],
        "quality_figures": _figures_text(quality.get("figures", [])),
        "gates": gates,
        "decision": d["decision"],
        "assumptions": d["assumptions"],
        "analysis": d["analysis"],
        "measured": d["measured"],
        "figures": figures if isinstance(figures, list) else [],
        "figures_missing": ("" if result.matrix.decode.any() else
                            "no gain heatmap or latency–throughput figure: both picture decode, and no workload "
                            "here decodes"),
        "figures_note": figures if isinstance(figures, str) else "",
        "figure_points": LIMITS.figure_points,
        "serving": serving_view.views(result.evaluation),
        "marker": Trusted(MARKER),
        "rerun": command(result, *output),
    }


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


def render_brief(result: Result, output: tuple[str, ...] = ()) -> str:
    """The one-page reading-group brief; ``output`` as for render_markdown."""
    ctx = {**context(result, "none in a brief", (*output, "--brief")), "marker": Trusted(BRIEF_MARKER)}
    return render("brief.md.j2", questions=_questions(ctx["d"]), **ctx)


def render_markdown(result: Result, figures: list[dict[str, str]] | str = "", output: tuple[str, ...] = ()) -> str:
    """The decision memo; ``figures`` are [{title, path}] written beside it, or why there are none; ``output`` the
    command's flags that shape the document (-o FILE, --figures none), repeated in its regenerate line."""
    return render("memo.md.j2", **context(result, figures or "figures are written only beside a memo file (-o)",
                                          output))


_CELLS_KEY = '\n  "cells": [],\n'     # where the document without cells holds them, at the top level


def write_json(result: Result, window: int = JSON_WINDOW_CELLS) -> Callable[[BinaryIO], None]:
    """The JSON contract (stable key order, no NaN, trailing newline), written a window of cells at a time:
    what the command holds is one window's cell objects (~32 kB each), not every cell's (issue 46: 250,000
    cells built at once took 7.9 GB). The bytes are those of json.dumps of the whole document."""
    def write(fh: BinaryIO) -> None:
        doc = result.document(cell_limit=0)
        head, tail = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False).split(_CELLS_KEY, 1)
        fh.write(head.encode("utf-8"))
        total = len(result)
        if total == 0:
            fh.write(_CELLS_KEY.encode("utf-8"))
        else:
            fh.write(b'\n  "cells": [\n')
            for start in range(0, total, window):
                chunk = result.cells(min(start + window, total), start)
                text = ",\n".join(_indented(json.dumps(c, indent=2, ensure_ascii=False, allow_nan=False))
                                  for c in chunk)
                fh.write(((",\n" if start else "") + text).encode("utf-8"))
            fh.write(b"\n  ],\n")
        fh.write((tail + "\n").encode("utf-8"))
    return write


def _indented(text: str) -> str:
    return "    " + text.replace("\n", "\n    ")


# each format's output: text, or (JSON) a writer that streams it a window of cells at a time
RENDERERS: dict[str, Callable[[Result], Content]] = {"md": render_markdown, "json": write_json, "brief": render_brief}
