"""The calibration report and the workload file that uses its fitted values."""

from __future__ import annotations

from typing import Any

import yaml

from ..analysis.calibrate import defaults
from ..inputs import units


def workload_file(report: dict[str, Any]) -> str:
    """A workload file with one workload per measured configuration, at the fitted efficiencies."""
    entries = []
    for h in report["hardware"]:
        f = h["fitted"]
        for n, p in enumerate(h["points"]):
            entries.append({"name": f"{h['hardware']}-{n + 1}", "model": p["model"], "hardware": h["hardware"],
                            "context": int(float(p["context"])), "batch": int(p["batch"] or 1),
                            "tp": int(p["tp"] or 1),
                            "efficiency": {"bandwidth": f["bandwidth"], "compute": f["compute"]},
                            "overhead": f"{f['overhead_s'] * 1e3:g} ms"})
    header = (f"# triage workload file: calibrated by `triage calibrate {report['source']}`\n"
              "# efficiencies and overhead fitted per hardware from measured step times\n")
    return header + yaml.safe_dump({"defaults": {"precision": {"weights": "bf16", "kv": "bf16",
                                                               "activations": "bf16", "compute": "bf16"}},
                                    "workloads": entries}, sort_keys=False, width=120)


def render_markdown(report: dict[str, Any]) -> str:
    """The calibration report: fitted values and the error before and after, per point."""
    lines = ["<!-- triage calibration report -->", f"# Calibration: `{report['source']}`", ""]
    for h in report["hardware"]:
        f = h["fitted"]
        lines += [f"## {h['hardware']} ({h['rows']} measurements)", "",
                  f"Fitted: bandwidth efficiency **{f['bandwidth']:.2f}**, compute efficiency **{f['compute']:.2f}**, "
                  f"overhead **{units.fmt_time(f['overhead_s'])}** per step (defaults {defaults()['bandwidth']:.2f}, "
                  f"{defaults()['compute']:.2f}, 0 s). Mean absolute prediction error: "
                  f"**{units.fmt_percent(h['error_before'])} → {units.fmt_percent(h['error_after'])}**.", "",
                  "| model | weights | tp | batch | context | measured | predicted before | predicted after | source |",
                  "|---|---|--:|--:|--:|--:|--:|--:|---|"]
        for p in h["points"]:
            lines.append(f"| {p['model']} | {p['weights']} | {p['tp'] or 1} | {p['batch'] or 1} | {p['context']} | "
                         f"{units.fmt_time(p['measured_s'])} | {units.fmt_time(p['before_s'])} | "
                         f"{units.fmt_time(p['after_s'])} | {p['source'] or ''} |")
        lines.append("")
    return "\n".join(lines)
