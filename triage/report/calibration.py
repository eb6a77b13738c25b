"""The calibration report and the workload file that uses its fitted values."""

from __future__ import annotations

from typing import Any

import yaml

from ..analysis.calibrate import defaults
from ..inputs import units


def workload_file(report: dict[str, Any], engine: str = "calibrated") -> str:
    """An engine profile (the fitted values per chip) and one workload per measured configuration that uses
    it: a workload file, and a profile any other workload file can name by this file's path."""
    entries = []
    hardware = {}
    for h in report["hardware"]:
        f = h["parameters"]
        hardware[h["hardware"]] = {"bandwidth": f["bandwidth"], "compute": f["compute"],
                                   "overhead": f"{f['overhead_s'] * 1e3:g} ms",
                                   "request_overhead": f"{f.get('request_overhead_s', 0.0) * 1e3:g} ms"}
        if h["uncertainty"]:
            u = h["uncertainty"]
            hardware[h["hardware"]]["uncertainty"] = {"bandwidth": round(u["bandwidth"], 4),
                                                      "compute": round(u["compute"], 4),
                                                      "overhead": f"{u['overhead_s'] * 1e3:.3g} ms"}
        for n, p in enumerate(h["points"]):
            # the row's own phase and formats (a 2,048-token TTFT row stays a prefill; int4 weights stay int4);
            # a generation row becomes its decode steps at the mean context
            phase = "prefill" if p["phase"] == "prefill" else "decode"
            context = int(float(p["context"])) + (int(p["output_tokens"] or 0) // 2 if p["phase"] == "generation"
                                                   else 0)
            entry = {"name": f"{h['hardware']}-{n + 1}", "model": p["model"], "hardware": h["hardware"],
                     "phase": phase, "context": context, "batch": int(p["batch"] or 1), "tp": int(p["tp"] or 1),
                     "precision": {"weights": "bf16" if p["weights"] in ("bf16", "fp16") else p["weights"],
                                   "kv": p["kv"] or "bf16", "compute": p["compute"] or "bf16"},
                     "attention": p["attention"] or "fused", "engine": engine}
            if p["phase"] == "generation":
                entry["output_tokens"] = int(p["output_tokens"])
            entries.append(entry)
    d = defaults()
    profile = {"description": f"fitted by `triage calibrate {report['source']}`",
               "source": f"{sum(h['rows'] for h in report['hardware'])} measured rows of {report['source']}",
               "default": {"bandwidth": d["bandwidth"], "compute": d["compute"],
                           "overhead": f"{d['overhead_s'] * 1e3:g} ms",
                           "request_overhead": f"{d['request_overhead_s'] * 1e3:g} ms"},
               "hardware": hardware}
    header = (f"# triage workload file: calibrated by `triage calibrate {report['source']}`\n"
              f"# the engine profile {engine!r} (efficiencies and overhead fitted per chip from measured times) and\n"
              f"# one workload per measured row; other workload files use the profile with engine: <this file>\n"
              f"# (a row's weight grouping and scale bits are the calibration's; a workload prices int4/int8 weights\n"
              f"# at 0.5/1 B each: int4 in groups of 32 with fp16 scales reads 0.5625 B, about a tenth more)\n")
    return header + yaml.safe_dump({"engines": {engine: profile},
                                    "defaults": {"precision": {"weights": "bf16", "kv": "bf16",
                                                               "activations": "bf16", "compute": "bf16"}},
                                    "workloads": entries}, sort_keys=False, width=120)


def render_markdown(report: dict[str, Any]) -> str:
    """The calibration report: fitted values and the error before and after, per point."""
    lines = ["<!-- triage calibration report -->", f"# Calibration: `{report['source']}`", ""]
    for h in report["hardware"]:
        f, u = h["parameters"], h["uncertainty"] or {}
        pm = {name: f" ± {u[name]:.2f}" if name in u else "" for name in ("bandwidth", "compute")}

        verb = "Fitted" if h["fitted"] else "Not fitted, the defaults"
        loo = h["error_leave_one_out"]
        lines += [f"## {h['hardware']} ({h['rows']} measurements)", "",
                  f"{verb}: bandwidth efficiency **{f['bandwidth']:.2f}**{pm['bandwidth']}, compute efficiency "
                  f"**{f['compute']:.2f}**{pm['compute']}, overhead **{units.fmt_time(f['overhead_s'])}**"
                  + (f" ± {units.fmt_time(u['overhead_s'])}" if "overhead_s" in u else "")
                  + f" per step (defaults {defaults()['bandwidth']:.2f}, {defaults()['compute']:.2f}, 0 s; ± is the "
                  f"jackknife standard error). Mean absolute prediction error: "
                  f"**{units.fmt_percent(h['error_before'])} → {units.fmt_percent(h['error_after'])}** in sample"
                  + (f", **{units.fmt_percent(loo)}** leaving each row out" if loo is not None else "") + ".", ""]
        lines += [f"> **Warning:** {w}." for w in h["warnings"]] + ([""] if h["warnings"] else [])
        lines += ["| model | weights | phase | tp | batch | context | measured | predicted before | predicted after | "
                  "source |", "|---|---|---|--:|--:|--:|--:|--:|--:|---|"]
        for p in h["points"]:
            lines.append(f"| {p['model']} | {p['weights']} | {p['phase']} | {p['tp'] or 1} | {p['batch'] or 1} | "
                         f"{p['context']} | {units.fmt_time(p['measured_s'])} | {units.fmt_time(p['before_s'])} | "
                         f"{units.fmt_time(p['after_s'])} | {p['source'] or ''} |")
        lines.append("")
    return "\n".join(lines)
