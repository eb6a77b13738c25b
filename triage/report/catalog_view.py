"""`triage catalog`: the shipped hardware, models and workloads as tables or JSON, with derived figures."""

from __future__ import annotations

import json
from typing import Any

from ..defaults import LONG_CONTEXT_TOKENS
from ..inputs import catalog, units, workloads
from ..inputs.specs import bytes_per_element
from . import fixed_costs


def hardware_rows(cat: catalog.Catalog) -> list[dict[str, Any]]:
    """One row per accelerator: capacity, bandwidth, dense peaks, ridge point, sources."""
    rows = []
    for hw in cat.hardware.values():
        rows.append({
            "key": hw.key, "name": hw.name, "memory_bytes": hw.memory_bytes,
            "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s, "compute_flops_per_s": hw.compute_flops_per_s,
            "ridge_point_fp16_flop_per_byte": hw.ridge_point("fp16"),
            "interconnect": {"kind": hw.interconnect_kind, "bytes_per_s": hw.interconnect_bytes_per_s},
            "source": hw.source,
        })
    return rows


def model_rows(cat: catalog.Catalog) -> list[dict[str, Any]]:
    """One row per model: parameters (total, active), KV bytes per token at fp16, architecture, source."""
    rows = []
    for m in cat.models.values():
        kinds = [k for k, on in (("MoE", m.is_moe), ("MLA", m.is_mla), ("sliding window", bool(m.sliding_window)))
                 if on] or ["dense"]
        rows.append({
            "key": m.key, "name": m.name, "params": m.params, "active_params": m.active_params,
            "published_params": m.published_params, "layers": m.num_hidden_layers,
            "heads": m.num_attention_heads, "kv_heads": m.num_key_value_heads,
            "kv_bytes_per_token_fp16": m.kv_elements_per_token * bytes_per_element("fp16"),
            "architecture": ", ".join(kinds), "source": m.source,
        })
    return rows


def workload_rows(cat: catalog.Catalog) -> list[dict[str, Any]]:
    """One row per shipped workload."""
    rows = []
    for block in workloads.load(None, cat).blocks:
        s = block.settings
        long = s.long_context if s.long_context is not None else s.context >= LONG_CONTEXT_TOKENS
        rows.append({"name": s.name, "phase": s.phase, "context": s.context, "batch": s.batch, "share": s.share,
                     "models": list(s.models), "hardware": list(s.hardware),
                     "slo_s": s.slo_tpot_s if s.phase == "decode" else s.slo_ttft_s,
                     "long_context": long, "description": s.description})
    return rows


def engine_rows(cat: catalog.Catalog) -> list[dict[str, Any]]:
    """One row per engine profile: its default values, the chips it was fitted on, its source."""
    return [{"name": e.key, "default": e.default, "hardware": e.hardware, "source": e.source}
            for e in cat.engines.values()]


ROWS = {"hardware": hardware_rows, "models": model_rows, "workloads": workload_rows, "engines": engine_rows}


def _table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def _peak(hw: dict[str, Any], dtype: str) -> str:
    value = hw["compute_flops_per_s"].get(dtype)
    return "—" if value is None else units.fmt_compute(value, ops=dtype.startswith("int"))


def render(section: str, fmt: str, cat: catalog.Catalog | None = None) -> str:
    """The section as a Markdown table (``md``) or JSON (``json``), of ``cat`` (default: the shipped catalog)."""
    rows = ROWS[section](cat or catalog.load())
    if fmt == "json":
        return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    if section == "hardware":
        return _table(
            ["hardware", "memory", "bandwidth", "fp16 dense", "fp8 dense", "int8 dense", "int4 dense", "fp4 dense",
             "ridge (fp16)", "interconnect", "source"],
            [[r["key"], units.fmt_gib(r["memory_bytes"]), units.fmt_bandwidth(r["bandwidth_bytes_per_s"]),
              _peak(r, "fp16"), _peak(r, "fp8"), _peak(r, "int8"), _peak(r, "int4"), _peak(r, "fp4"),
              f"{r['ridge_point_fp16_flop_per_byte']:.0f} FLOP/B",
              (f"{r['interconnect']['kind'] or 'a link'}, {units.fmt_bandwidth(r['interconnect']['bytes_per_s'])} "
               f"per direction" if r["interconnect"]["bytes_per_s"] else "—"),
              r["source"].get("url", r["source"].get("all", ""))] for r in rows])
    if section == "engines":
        def values(v: dict[str, float]) -> str:
            return (f"bandwidth {units.fmt_percent(v['bandwidth'], 0)}, compute {units.fmt_percent(v['compute'], 0)}, "
                    f"{fixed_costs.phrase(v)}")
        return _table(["engine", "default", "per chip", "source"],
                      [[r["name"], values(r["default"]),
                        "; ".join(f"{hw}: {values({**r['default'], **v})}" for hw, v in r["hardware"].items()) or "—",
                        r["source"]] for r in rows])
    if section == "models":
        return _table(
            ["model", "parameters", "active per token", "layers", "heads / KV heads", "KV per token (fp16)",
             "architecture", "source"],
            [[r["key"], f"{r['params'] / 1e9:,.2f} B", f"{r['active_params'] / 1e9:,.2f} B", str(r["layers"]),
              f"{r['heads']} / {r['kv_heads']}", units.fmt_gib(r["kv_bytes_per_token_fp16"]), r["architecture"],
              r["source"]] for r in rows])
    return _table(
        ["workload", "phase", "context", "batch", "share", "models", "hardware", "SLO", "long context"],
        [[r["name"], r["phase"], f"{r['context']:,}", str(r["batch"]), units.fmt_percent(r["share"]),
          ", ".join(r["models"]), ", ".join(r["hardware"]),
          (f"{'TPOT' if r['phase'] == 'decode' else 'TTFT'} ≤ {units.fmt_time(r['slo_s'])}" if r["slo_s"]
           else "no target"),
          "yes" if r["long_context"] else "no"] for r in rows])
