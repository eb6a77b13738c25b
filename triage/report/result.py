"""The JSON document of one evaluation, built once from columns; the same columns as a frame for sweeps."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis import pipeline
from ..analysis.evaluation import LOSSES, Evaluation, Measured
from ..analysis.where_it_pays import Analysis
from ..inputs import oneoff, units
from ..inputs.catalog import Engine
from ..inputs.claim import Claim, stated
from ..inputs.workloads import Settings
from ..io.yamlio import Document
from ..model.evidence import Gaps
from ..model.matrix import Matrix
from ..progress import SILENT, Progress
from ..records import record
from . import cells as cells_mod
from . import fixed_costs, notices, papercheck, plan
from .directions import DIRECTIONS
from .reasons import decision_reasons
from .rules import rule_words
from .where_it_pays import analysis_dict

JSON_VERSION = 1



_LOST_IN = {"nothing": "nothing: the measured gain exceeds the bound (a slower baseline, or a setting that differs)",
            "implementation": "implementation (kernels below the bound)",
            "end-to-end": "end-to-end (serving overheads, batching, launch)"}
assert set(_LOST_IN) == set(LOSSES)


def measured_json(m: Measured | None) -> dict[str, Any]:
    """What --measured added, as the JSON contract names it (predicted against measured, and where the gain was
    lost, in words); {} without measurements."""
    if m is None:
        return {}
    return {"source": m.source, "workloads": [
        {"workload": c.workload, "hardware": c.hardware, "metric": c.metric,
         "predicted": {"theoretical": c.theoretical, "implementation": c.implementation, "baseline_s": c.baseline_s,
                       "claim_s": c.claim_s},
         "measured": {"baseline_s": c.measured_baseline_s, "claim_s": c.measured_claim_s, "speedup": c.speedup,
                      "quality_ratio": c.quality_ratio},
         "lost_in": _LOST_IN[c.lost_in] if c.lost_in is not None else None} for c in m.workloads]}

@record
class Result:
    """One evaluation and the documents made from it: ``to_dict`` (the JSON), ``to_frame`` (one row per cell)."""

    evaluation: Evaluation
    # the arguments of `triage run` that price this evaluation again (rerun_arguments), None where an input was a
    # Python object no command can name
    arguments: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.evaluation)

    @property
    def claim(self) -> Claim:
        return self.evaluation.claim

    @property
    def matrix(self) -> Matrix:
        return self.evaluation.matrix

    @property
    def gaps(self) -> Gaps:
        return self.evaluation.gaps

    @property
    def analysis(self) -> Analysis | None:
        return self.evaluation.analysis

    def decision(self) -> dict[str, Any]:
        """The decision as the JSON contract describes it."""
        d = self.evaluation.decision
        saved = (None if d.gpu_seconds_per_request_baseline is None or d.gpu_seconds_per_request_claim is None
                 else (d.gpu_seconds_per_request_baseline - d.gpu_seconds_per_request_claim) * 1e6 / 3600.0)
        return {"verdict": d.verdict, "rule": rule_words(d.rule), "shares": d.shares,
                "share_is": "fraction of requests",
                "weighted_speedup": {"theoretical": d.weighted_theoretical, "end_to_end": d.weighted_end_to_end},
                "gpu_seconds_per_request": {"baseline": d.gpu_seconds_per_request_baseline,
                                            "claim": d.gpu_seconds_per_request_claim},
                "gpu_hours_saved_per_million_requests": saved,
                "share_only_claim_serves": d.share_only_claim_serves,
                "share_claim_cannot_serve": d.share_claim_cannot_serve,
                "reproduction_gpu_hours": d.reproduction_gpu_hours,
                "incumbent": None if d.incumbent is None else {"name": d.incumbent,
                                                               "fleet_gain_over": d.weighted_over_incumbent},
                "reasons": decision_reasons(d, self.claim)}

    def cells(self, limit: int | None = None, start: int = 0) -> list[dict[str, Any]]:
        """The cells from ``start`` up to ``limit`` (the end when None) as JSON objects."""
        return cells_mod.cells(self.evaluation, limit, start)

    def columns(self) -> dict[str, np.ndarray]:
        """Every cell field but the reasons, one array per dotted JSON name (a sweep's columns)."""
        return cells_mod.columns(self.evaluation)

    def to_frame(self) -> Any:
        """The cells as a pandas DataFrame, one row per cell, columns named as the JSON's, flattened
        (``baseline.time_s.end_to_end``); reasons are words and stay in the JSON. Needs the ``frame`` extra."""
        try:
            import pandas as pd  # optional: pip install 'llm-triage[frame]'
        except ImportError as exc:
            raise ImportError("Result.to_frame needs pandas: pip install 'llm-triage[frame]'") from exc
        return pd.DataFrame(self.columns())

    def assumptions(self) -> list[dict[str, str]]:
        """Every constant the numbers rest on, with its source: the catalog's, the workloads', the card's own."""
        return assumptions(self.matrix) + card_assumptions(self.evaluation.claim.to_dict())

    def document(self, cell_limit: int | None = None, with_analysis: bool = True) -> dict[str, Any]:
        """The JSON document, its cells cut to ``cell_limit`` (a memo shows a few; the JSON has all)."""
        ev = self.evaluation
        question, number, failure = DIRECTIONS[ev.claim.direction]
        claim = ev.claim.to_dict()
        claim["direction_question"] = {"question": question, "number": number, "failure_mode": failure}
        with_analysis = with_analysis and ev.analysis is not None
        analysis = self.analysis_dict() if with_analysis else {}
        return {
            "version": JSON_VERSION,
            "claim": claim,
            "paper_check": papercheck.as_json(ev.paper_check, ev.claim.evidence),
            "warnings": notices.as_json(ev.warnings),
            "workloads": ev.matrix.source,
            "cells": self.cells(cell_limit),
            "decision": self.decision(),
            # what was computed and is shown: a sweep or `analyse=False` pays for no analysis and says so
            "analyses": list(analysis),
            **({"analysis": analysis} if with_analysis else {}),
            "measured": measured_json(ev.measured),
            "baseline": {"kind": "paper" if ev.baseline is not None else "current",
                         "setting": stated(ev.baseline) if ev.baseline is not None else {},
                         "fleet_gain_on_current_stack": ev.current_fleet_gain},
            "assumptions": self.assumptions(),
        }

    def analysis_dict(self) -> dict[str, Any]:
        """Crossover, throughput at the SLO, sensitivity and the verification plan, as JSON."""
        if self.evaluation.analysis is None:
            return {}
        return {**analysis_dict(self.evaluation.analysis),
                "verification_plan": plan.plan(self.evaluation, self.arguments)}

    def to_dict(self, with_analysis: bool = True) -> dict[str, Any]:
        """Exactly the JSON `triage run --format json` prints (``with_analysis=False`` leaves out the
        'analysis' key, which `triage compare` does not use)."""
        return self.document(None, with_analysis)


def evaluate(card: Any, workloads: Any = None, model: str | None = None, analyse: bool = True,
             baseline: str = "current", catalog_file: Path | str | None = None,
             progress: Progress = SILENT) -> Result:
    """Evaluate a claim card over a workload matrix: see triage.evaluate (``progress`` hears its stages)."""
    return Result(pipeline.evaluate(card, workloads, model, analyse, baseline, catalog_file, progress=progress),
                  rerun_arguments(card, workloads, model, baseline, catalog_file))


def sweep(card: Any, workloads: Any = None, model: str | None = None, baseline: str = "current",
          catalog_file: Path | str | None = None) -> tuple[int, Iterator[dict[str, np.ndarray]]]:
    """A sweep's rows as a stream of column chunks (analysis.pipeline.sweep): the number of cells, then each
    chunk's columns, named as ``Result.columns`` names them. Inputs are checked before the first chunk."""
    n, chunks = pipeline.sweep(card, workloads, model, baseline, catalog_file)
    return n, map(cells_mod.columns, chunks)        # map holds no chunk once its columns are out


def with_measurements(result: Result, path: Path | str) -> Result:
    """The result with measured times in its end-to-end layer (analysis.measured.apply)."""
    from ..analysis import measured  # loads for --measured only

    return Result(measured.apply(result.evaluation, path),
                  None if result.arguments is None else (*result.arguments, "--measured", str(path)))


def _attention_text(mod: Any) -> str:
    """How a model's attention is priced, in its own terms (MLA, sliding window or standard)."""
    decode, prefill = mod.attention_flops_per_pair(True), mod.attention_flops_per_pair(False)
    if mod.is_mla:
        text = (f"MLA: {decode:,.0f} FLOP per query-key pair at decode (2·H·(2·d_c + d_rope)·L, up-projections "
                f"absorbed), {prefill:,.0f} at prefill (2·H·(d_nope + d_rope + d_v)·L)")
    else:
        text = f"attention {decode:,.0f} FLOP per query-key pair (4·L·H·d)"
    if mod.sliding_window:
        text += (f"; {mod.window_fraction:.0%} of layers attend within a {mod.sliding_window:,}-token window "
                 f"(decode reads at most W tokens there, prefill pairs are causal within W)")
    return text


def _engine_text(m: Matrix, b: int, s: Settings) -> str:
    """The efficiencies and fixed costs a workload is priced at: its own, or its engine profile's per chip (the
    values its cells used: a chip entry inside the range its rows span, the profile's default outside it)."""
    def values(v: dict[str, float]) -> str:
        return f"efficiency bandwidth {v['bandwidth']:g}, compute {v['compute']:g}; {fixed_costs.phrase(v)}"
    if s.engine is None:
        return values(s.engine_values(""))
    chip_at = {hw.key: h for h, hw in enumerate(m.hardware)}           # the matrix holds every chip it names
    parts = []
    for hw in s.hardware:
        outside = m.outside_fit.get((b, chip_at[hw]))
        if outside is None:
            parts.append(f"on {hw} {values(s.engine_values(hw))}")
        elif int(outside.sum()) == int(((m.block_idx == b) & (m.hardware_idx == chip_at[hw])).sum()):
            parts.append(f"on {hw} (outside its {hw} entry's range) {values(s.engine_values(hw, fitted=False))}")
        else:
            parts.append(f"on {hw} {values(s.engine_values(hw))}; on the {int(outside.sum())} {hw} cell(s) "
                         f"outside that entry's range {values(s.engine_values(hw, fitted=False))}")
    return f"engine profile {s.engine.key}: " + "; ".join(parts)


def _engine_assumption(engine: Engine, chips: list[str]) -> dict[str, str]:
    """An engine profile's row: on which chips it is priced with its own fitted entry and where with its
    default (a per-chip entry is used only on its own chip), and where it comes from."""
    own = [hw for hw in chips if hw in engine.hardware]
    rest = [hw for hw in chips if hw not in engine.hardware]
    value = "; ".join([*([f"{', '.join(own)}: its entry for the chip"] if own else []),
                       *([f"{', '.join(rest)}: its default (no entry for the chip)"] if rest else [])])
    return {"what": f"engine profile {engine.key}" + (f": {engine.description}" if engine.description else ""),
            "value": value + "; the values are in the workload rows",
            "source": f"{engine.source}; {engine.file}" if engine.file else engine.source}


def assumptions(m: Matrix) -> list[dict[str, str]]:
    """Every constant the numbers rest on, with its source."""
    out = []
    for hw in m.hardware:
        peaks = ", ".join(f"{k} {units.fmt_compute(v, ops=k.startswith('int'))}"
                          for k, v in hw.compute_flops_per_s.items())
        out.append({"what": f"{hw.key}: {hw.name}",
                    "value": (f"memory {units.fmt_gib(hw.memory_bytes)} ({hw.memory_bytes:,.0f} B), "
                              f"bandwidth {units.fmt_bandwidth(hw.bandwidth_bytes_per_s)}, dense {peaks}"),
                    "source": "; ".join(f"{k}: {v}" for k, v in hw.source.items())})
    for mod in m.models:
        out.append({"what": f"{mod.key}: {mod.name}",
                    "value": (f"{mod.params:,.0f} parameters ({mod.body_params:,.0f} read whole per step, "
                              f"LM head {mod.lm_head_params:,.0f}, embedding {mod.embedding_params:,.0f} "
                              f"read one row per token); KV {mod.kv_elements_per_token:,.0f} elements per token "
                              f"(L={mod.num_hidden_layers}, H={mod.num_attention_heads}, "
                              f"H_kv={mod.num_key_value_heads}, d={mod.head_dim}); {_attention_text(mod)}"),
                    "source": mod.source})
    used: dict[tuple[str, str], tuple[Engine, list[str]]] = {}      # each profile once, with every chip it priced
    for s in m.blocks:
        if s.engine is not None:
            chips = used.setdefault((s.engine.key, s.engine.file), (s.engine, []))[1]
            chips += [hw for hw in s.hardware if hw not in chips]
    out += [_engine_assumption(e, chips) for e, chips in used.values()]
    for b, s in enumerate(m.blocks):
        target = ("TPOT", s.slo_tpot_s) if s.phase == "decode" else ("TTFT", s.slo_ttft_s)
        slo = f"{target[0]} ≤ {units.fmt_time(target[1])}" if target[1] is not None else f"no {target[0]} target"
        out.append({"what": f"workload {s.name}",
                    "value": (f"{s.phase}, precision weights {s.precision['weights']} / KV {s.precision['kv']} / "
                              f"activations {s.precision['activations']} / compute {s.precision['compute']}; "
                              f"{_engine_text(m, b, s)}; SLO {slo}; quality gate "
                              f"{units.fmt_percent(s.quality_gate)}; min gain {s.min_gain:g}×; reserve "
                              f"{units.fmt_gib(s.reserve_bytes)}; KV fragmentation "
                              f"{units.fmt_percent(s.memory_waste)}; attention {s.attention}; tensor parallel "
                              f"{s.tp}; batch slots {units.fmt_percent(s.batch_utilization)} useful"),
                    "source": m.source})
    out.append({"what": "cost model",
                "value": ("per operator group t = max(FLOPs/(peak·eff), bytes/(BW·eff)), summed; compulsory "
                          "HBM traffic only (weights, KV, embedding rows, fp32 logits): activations stay on "
                          "chip; decode reads every weight once per step except the embedding (one row per "
                          "token) and reads the LM head whole; prefill attention is causal (P(P+1)/2 query-key "
                          "pairs, fewer within a sliding window); attention FLOPs per pair as each model's row "
                          "says"),
                "source": "course module 12.4 §3-4; Williams, Waterman & Patterson 2009 (roofline)"})
    out.append({"what": "units",
                "value": "GB = 1e9 B, GiB = 2^30 B, TB/s = 1e12 B/s; times are unit-exact, so they sit ~7 % "
                         "above figures that divide GiB by TB/s",
                "source": "SI and IEC 80000-13"})
    return out


def plain(value: Any) -> Any:
    """A card value in words: a mapping as "key value, …", a list as "a, b"."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(str(plain(v)) for v in value)
    return value


def evidence_rows(card: dict[str, Any]) -> list[dict[str, str]]:
    """Each number of the card with the source's words and where they stand."""
    rows = []
    for path, entry in card["evidence"].items():
        node: Any = {k: card.get(k) for k in ("claim", "quality", "change", "implementation")}
        for part in path.split("."):
            if isinstance(node, list):
                node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
            else:
                node = node.get(part) if isinstance(node, dict) else None
        rows.append({"path": path, "value": plain(node), **entry})
    return rows


def card_assumptions(card: dict[str, Any]) -> list[dict[str, str]]:
    """The card's values that rest on a labelled assumption rather than a quote (a hit rate the card chose, a
    scale's bits the code does not state): the assumptions a number of the memo rests on, beside the catalog's."""
    return [{"what": f"card {row['path']}", "value": str(row["value"]), "source": f"assumption: {row['assumption']}"}
            for row in evidence_rows(card) if row.get("assumption")]


def rerun_arguments(card: Any, workloads: Any = None, model: str | None = None, baseline: str = "current",
                    catalog_file: Path | str | None = None) -> tuple[str, ...] | None:
    """The arguments after `triage run` that price the same evaluation again: the cards (--stack for several),
    the matrix (-w FILE, or the flags it was built from), --model, --catalog and --baseline as given; None where
    a card or the matrix is a Python object (a dict) that no command line can name."""
    cards = card if isinstance(card, list) else [card]
    if not all(isinstance(c, (str, Path)) for c in cards):
        return None
    args = [str(c) for c in cards] + (["--stack"] if len(cards) > 1 else [])
    flags = oneoff.flags_of(workloads.file) if isinstance(workloads, Document) else None
    if flags is not None:
        args += shlex.split(flags)                  # the flags' matrix names its own --model
    elif isinstance(workloads, (str, Path)):
        args += ["-w", str(workloads)]
    elif workloads is not None:
        return None
    if model is not None:
        args += ["--model", model]
    if catalog_file is not None:
        args += ["--catalog", str(catalog_file)]
    if baseline != "current":
        args += ["--baseline", baseline]
    return tuple(args)


def command(result: Result, *extra: str, program: str = "run") -> str | None:
    """The shell command that regenerates a document of ``result`` (each word quoted), ``extra`` the output's own
    flags (-o FILE, --brief, --figures none); None where the evaluation's inputs were Python objects."""
    if result.arguments is None:
        return None
    return shlex.join(("triage", program, *result.arguments, *extra))
