"""The calibration report and the workload file that uses its fitted values."""

from __future__ import annotations

from typing import Any

import yaml

from ..analysis.calibrate import (
    FIT_NOTES,
    LINEAR,
    PARAMETERS,
    POINT_COLUMNS,
    REQUEST_MAX,
    Calibration,
    FitNote,
    HardwareFit,
    defaults,
)
from ..errors import escape
from ..inputs import units
from . import fixed_costs


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.6g} ms"


def _values(p: dict[str, float]) -> dict[str, Any]:
    """A profile's values as the workload file writes them: efficiencies, and each fixed cost in ms."""
    return {"bandwidth": p["bandwidth"], "compute": p["compute"],
            **{k[:-2]: _ms(p.get(k, 0.0)) for k in LINEAR}}


def _kept(h: HardwareFit) -> str:
    """The parameters of a chip the rows did not fit, each with the default the profile keeps, under the
    profile's own keys ('compute 0.5, request_overhead 2.56 ms'); empty where every one was fitted."""
    default = _values(h.default)
    return ", ".join(f"{key} {default[key]}" for key in (k if k in ("bandwidth", "compute") else k[:-2]
                                                          for k in PARAMETERS if k not in h.identified))


def workload_file(report: Calibration, engine: str = "calibrated") -> str:
    """An engine profile (the fitted values per chip) and one workload per measured configuration that uses
    it: a workload file, and a profile any other workload file can name by this file's path."""
    entries = []
    hardware = {}
    split = 0
    for h in report.hardware:
        hardware[h.hardware] = _values(h.parameters)
        if h.uncertainty:
            u = h.uncertainty
            hardware[h.hardware]["uncertainty"] = {
                **{k: round(u[k], 4) for k in ("bandwidth", "compute") if k in u},
                **{k[:-2]: _ms(u[k]) for k in LINEAR if k in u}}
        for n, p in enumerate(h.points):
            if int(p.get("pipeline") or 1) > 1:           # a workload prices tensor parallelism, not a layer split
                split += 1
                continue
            # the row's own phase and formats (a 2,048-token TTFT row stays a prefill; int4 weights stay int4);
            # a generation row becomes its decode steps at the mean context
            phase = "prefill" if p.get("phase") == "prefill" else "decode"
            context = int(float(p.get("context"))) + (int(p.get("output_tokens") or 0) // 2
                                                       if p.get("phase") == "generation" else 0)
            entry = {"name": f"{h.hardware}-{n + 1}", "model": p.get("model"), "hardware": h.hardware,
                     "phase": phase, "context": context, "batch": int(p.get("batch") or 1), "tp": int(p.get("tp") or 1),
                     "precision": {"weights": "bf16" if p.get("weights") in ("bf16", "fp16") else p.get("weights"),
                                   "kv": p.get("kv") or "bf16", "compute": p.get("compute") or "bf16"},
                     "attention": p.get("attention") or "fused", "engine": engine}
            if p.get("phase") == "generation":
                entry["output_tokens"] = int(p.get("output_tokens"))
            entries.append(entry)
    d = defaults()
    kept = "; ".join(f"{escape(h.hardware)}: {_kept(h)}" for h in report.hardware if _kept(h))
    profile = {"description": f"fitted by `triage calibrate {report.source}`",
               "source": f"{sum(h.rows for h in report.hardware)} measured rows of {report.source}"
                         + (f"; not fitted (the rows do not identify them), the default kept: {kept}" if kept else ""),
               "default": _values(d),
               "hardware": hardware}
    source = escape(report.source)          # a file name's line breaks escaped: a comment stays one line
    header = (f"# triage workload file: calibrated by `triage calibrate {source}`\n"
              f"# the engine profile {engine!r} (efficiencies and fixed costs fitted per chip from measured times)\n"
              f"# and one workload per measured row; other workload files use the profile with engine: <this file>\n"
              f"# (a row's weight grouping and scale bits are the calibration's; a workload prices int4/int8 weights\n"
              f"# at 0.5/1 B each: int4 in groups of 32 with fp16 scales reads 0.5625 B, about a tenth more)\n"
              + (f"# {split} layer-split (pipeline) row(s) are in the fit but not written as workloads: a workload\n"
                 f"# prices tensor parallelism only\n" if split else "")
              + (f"# not fitted (the rows do not identify them), the default kept: {kept}\n" if kept else ""))
    return header + yaml.safe_dump({"engines": {engine: profile},
                                    "defaults": {"precision": {"weights": "bf16", "kv": "bf16",
                                                               "activations": "bf16", "compute": "bf16"}},
                                    "workloads": entries}, sort_keys=False, width=120)


def _cost_name(name: str) -> str:
    return name.replace("_s", "").replace("_", " ")


_PINNED = ("the rows ask for more than the model's terms can give (a kernel far from its peak, a floor, an "
           "unstated setting); read the error, not the parameter")


def short_words(n: FitNote) -> str:
    """What a note is about, in a few words: the parameter and the value it sits at."""
    if n.code in ("lowest", "highest"):
        return f"{n.name} {n.value:g}"
    if n.code == "negative":
        return f"{_cost_name(n.name)} 0 s"
    if n.code == "request-overhead":
        return f"request overhead {n.value * 1e3:.3g} ms"
    if n.code == "mixed-engines":
        return f"{n.value:.0f} engines ({escape(n.name, 200)})"
    assert n.code == "not-fitted", n.code
    return f"not fitted: {n.value:.0f} row{'s' if n.value != 1 else ''}"


_NOTES = {
    "lowest": "{what} is the lowest value the fit may take: " + _PINNED,
    "highest": "{what} is the highest value the fit may take: " + _PINNED,
    "negative": "{what} is its lower bound and the rows ask for less: the model prices them slower than measured",
    "request-overhead": "{what} is more than a request's fixed cost can be ({most_ms:g} ms): the rows' TTFT includes "
                        "queueing",
    "not-fitted": "{what} for 3 parameters; the defaults stay (add rows)",
    "mixed-engines": "the rows name {what}: one profile fitted on several engines describes none of them (their "
                     "kernels and fixed costs differ); calibrate each engine's rows on their own",
}
assert set(_NOTES) == set(FIT_NOTES)


def note_words(n: FitNote) -> str:
    """One note of a fit, as the report and the JSON print it."""
    return _NOTES[n.code].format(what=short_words(n), most_ms=REQUEST_MAX * 1e3)


def _fit_json(h: HardwareFit) -> dict[str, Any]:
    return {"hardware": h.hardware, "rows": h.rows, "default": h.default,
            "warnings": [note_words(n) for n in h.warnings], "fitted": h.fitted, "parameters": h.parameters,
            "free": list(h.free), "uncertainty": h.uncertainty, "compute_identified": h.compute_identified,
            "parameters_fitted": {k: k in h.identified for k in PARAMETERS},
            "error_before": h.error_before, "error_after": h.error_after,
            "error_leave_one_out": h.error_leave_one_out,
            "points": [{**dict(zip(POINT_COLUMNS, p.columns, strict=True)), "measured_s": p.measured_s,
                        "before_s": p.before_s, "after_s": p.after_s} for p in h.points]}


def as_json(report: Calibration) -> dict[str, Any]:
    """The calibration report as `triage calibrate --format json` prints it (its keys a contract): each note of a
    fit in words."""
    return {"source": report.source, "hardware": [_fit_json(h) for h in report.hardware],
            "left_out": list(report.left_out)}


def _value(h: HardwareFit, k: str, per: str = "") -> str:
    """One parameter as the report shows it: its fitted value with its standard error, or the default it kept."""
    name = f"{k} efficiency" if k in ("bandwidth", "compute") else k[:-2].replace("_", " ")
    shown = (lambda v: f"{v:.2f}") if k in ("bandwidth", "compute") else units.fmt_time
    per = f" {per}" if per else ""
    if k not in h.identified:
        return f"{name} not fitted (default {shown(h.default[k])}{per})"
    u = h.uncertainty or {}
    return f"{name} **{shown(h.parameters[k])}**" + (f" ± {shown(u[k])}" if k in u else "") + per


def render_markdown(report: Calibration) -> str:
    """The calibration report: fitted values and the error before and after, per point."""
    lines = ["<!-- triage calibration report -->", f"# Calibration: `{escape(report.source)}`", ""]
    if report.left_out:
        lines += [f"Left out: {len(report.left_out):,} vLLM result(s) of another build than the baseline "
                  f"(--metadata variant other than baseline: they time the method, not the stack a profile "
                  f"describes): {', '.join(escape(f) for f in report.left_out)}.", ""]
    for h in report.hardware:
        verb = "Fitted" if h.fitted else "Defaults kept"
        loo = h.error_leave_one_out
        d = defaults()

        costs = "; ".join(_value(h, k, per) for k, per in zip(LINEAR, fixed_costs.PER.values(), strict=True))
        lines += [f"## {h.hardware} ({h.rows} measurements)", "",
                  f"{verb}: {_value(h, 'bandwidth')}, {_value(h, 'compute')}; "
                  + costs
                  + f" (default efficiencies {d['bandwidth']:.2f}, {d['compute']:.2f}; ± is the jackknife standard "
                  f"error). Mean absolute prediction error: "
                  f"**{units.fmt_percent(h.error_before)} → {units.fmt_percent(h.error_after)}** in sample"
                  + (f", **{units.fmt_percent(loo)}** leaving each row out" if loo is not None else "") + ".", ""]
        lines += [f"> **Warning:** {note_words(w)}." for w in h.warnings] + ([""] if h.warnings else [])
        lines += ["| model | weights | phase | tp | batch | context | measured | predicted before | predicted after | "
                  "source |", "|---|---|---|--:|--:|--:|--:|--:|--:|---|"]
        for p in h.points:
            gpus = f"{p.get('tp') or 1}" + (f" × {p.get('pipeline')} stages" if int(p.get("pipeline") or 1) > 1 else "")
            lines.append(f"| {p.get('model')} | {p.get('weights')} | {p.get('phase')} | {gpus} | "
                         f"{p.get('batch') or 1} | {p.get('context')} | {units.fmt_time(p.measured_s)} | "
                         f"{units.fmt_time(p.before_s)} | "
                         f"{units.fmt_time(p.after_s)} | {p.get('source') or ''} |")
        lines.append("")
    return "\n".join(lines)
