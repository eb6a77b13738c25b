"""The result of evaluating one claim over a matrix: arrays inside, a JSON-ready dict outside."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import units
from .cards import DIRECTIONS, Claim
from .costmodel import GROUPS
from .gaps import Gaps, Variant
from .verdict import LABELS, Verdicts, decision, reasons
from .workloads import Matrix

JSON_VERSION = 1


def _num(x: Any) -> float | None:
    """A finite Python float, or None (JSON has no NaN)."""
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass
class Result:
    """Everything `triage run` knows about one claim on one matrix."""

    claim: Claim
    matrix: Matrix
    gaps: Gaps
    verdicts: Verdicts
    paper_check: dict[str, Any]
    parts: list[tuple[Claim, Gaps]] = field(default_factory=list)   # a stack's cards, each alone
    models: dict[str, Any] = field(default_factory=dict)             # the catalog's, for re-evaluations
    measured: dict[str, Any] = field(default_factory=dict)           # filled by triage.measured.apply
    _analysis: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def analysis(self) -> dict[str, Any]:
        """Where the claim pays (crossover), throughput at the SLO, sensitivity, and the verification plan.

        Computed once per result: it re-evaluates the claim on derived matrices, and a memo written with
        its figures asks for it twice.
        """
        from . import sweep, verification

        if self._analysis is None:
            self._analysis = {"crossover": sweep.crossover(self, self.models),
                              "slo_throughput": sweep.slo_throughput(self, self.models),
                              "sensitivity": sweep.sensitivity(self, self.models),
                              "verification_plan": verification.plan(self)}
        return self._analysis

    def __len__(self) -> int:
        return len(self.matrix)

    def decision(self) -> dict[str, Any]:
        return decision(self.matrix, self.claim, self.gaps, self.verdicts)

    def _variant(self, v: Variant, i: int, e2e_batch: float | None = None) -> dict[str, Any]:
        m = self.matrix
        tokens = m.batch[i] * (1.0 if m.decode[i] else m.context[i])
        return {
            "bytes_per_step": _num(v.cost.total_bytes[i]),
            "flops_per_step": _num(v.cost.total_flops[i]),
            "bytes_by_group": {g: _num(v.cost.bytes[g][i]) for g in GROUPS},
            "flops_by_group": {g: _num(v.cost.flops[g][i]) for g in GROUPS},
            "memory_bytes": _num(v.memory_bytes[i]),
            "weights_bytes": _num(v.mem.weights[i]),
            "kv_bytes": _num(v.mem.kv_per_sequence[i] * m.batch[i]),
            "fits": bool(v.fits[i]),
            "max_batch": int(v.max_batch[i]),
            "time_s": {"theoretical": _num(v.time_theoretical[i]),
                       "implementation": _num(v.time_implementation[i]),
                       "end_to_end": _num(v.time_end_to_end[i])},
            "tokens_per_s": _num(tokens / v.time_end_to_end[i]),
            "compute_bound_fraction": _num(v.compute_bound_fraction[i]),
        }

    def cell(self, i: int) -> dict[str, Any]:
        """One cell as the JSON contract describes it."""
        m, g, c = self.matrix, self.gaps, self.claim
        settings = m.blocks[m.block_idx[i]]
        base_t, claim_t = g.base, g.claim
        saved = {k: _num(1.0 - getattr(claim_t, f"time_{k}")[i] / getattr(base_t, f"time_{k}")[i])
                 for k in ("theoretical", "implementation", "end_to_end")}
        return {
            "workload": settings.name,
            "model": m.models[m.model_idx[i]].key,
            "hardware": m.hardware[m.hardware_idx[i]].key,
            "phase": settings.phase,
            "context": int(m.context[i]),
            "batch": int(m.batch[i]),
            "share": _num(m.share[i]),
            "long_context": bool(m.long_context[i]),
            "baseline": self._variant(base_t, i),
            "claim": self._variant(claim_t, i),
            "bytes_saved_fraction": _num(1.0 - claim_t.cost.total_bytes[i] / base_t.cost.total_bytes[i]),
            "time_saved_fraction": saved,
            "speedup": {"claimed": c.claimed_speedup,
                        "theoretical": _num(g.speedup_theoretical[i]),
                        "implementation": _num(g.speedup_implementation[i]),
                        "end_to_end": _num(g.speedup_end_to_end[i])},
            "end_to_end_baseline_batch": None if not np.isfinite(g.e2e_baseline_batch[i])
            else int(g.e2e_baseline_batch[i]),
            "slo_s": _num(g.slo[i]),
            **({"stack": self._stack_cell(i)} if self.parts else {}),
            "verdict": LABELS[self.verdicts.code[i]],
            "reasons": reasons(i, m, c, g, self.verdicts),
        }

    def _stack_cell(self, i: int) -> dict[str, Any]:
        """Each stacked card's bound alone, their product, and the stack's: savings add, they do not multiply."""
        alone = {c.id: _num(g.speedup_theoretical[i]) for c, g in self.parts}
        product = 1.0
        for value in alone.values():
            product *= value or 1.0
        return {"individual_theoretical": alone, "product": _num(product),
                "combined": _num(self.gaps.speedup_theoretical[i])}

    def assumptions(self) -> list[dict[str, str]]:
        """Every constant the numbers rest on, with its source."""
        m = self.matrix
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
                                  f"H_kv={mod.num_key_value_heads}, d={mod.head_dim})"),
                        "source": mod.source})
        for s in m.blocks:
            target = ("TPOT", s.slo_tpot_s) if s.phase == "decode" else ("TTFT", s.slo_ttft_s)
            slo = f"{target[0]} ≤ {units.fmt_time(target[1])}" if target[1] is not None else f"no {target[0]} target"
            out.append({"what": f"workload {s.name}",
                        "value": (f"{s.phase}, precision weights {s.precision['weights']} / KV {s.precision['kv']} / "
                                  f"activations {s.precision['activations']} / compute {s.precision['compute']}; "
                                  f"efficiency bandwidth {s.bandwidth_efficiency:g}, compute {s.compute_efficiency:g}; "
                                  f"overhead {units.fmt_time(s.overhead_s)} per step; SLO {slo}; quality gate "
                                  f"{units.fmt_percent(s.quality_gate)}; min gain {s.min_gain:g}×; reserve "
                                  f"{units.fmt_gib(s.reserve_bytes)}; KV fragmentation "
                                  f"{units.fmt_percent(s.memory_waste)}; attention {s.attention}; tensor parallel "
                                  f"{s.tp}; batch slots {units.fmt_percent(s.batch_utilization)} useful"),
                        "source": m.source})
        out.append({"what": "cost model",
                    "value": ("per operator group t = max(FLOPs/(peak·eff), bytes/(BW·eff)), summed; compulsory "
                              "HBM traffic only (weights, KV, embedding rows, fp32 logits): activations stay on "
                              "chip; decode reads every weight once per step except the embedding (one row per "
                              "token) and reads the LM head whole; prefill attention is causal, P(P+1)/2 pairs; "
                              "attention FLOPs 4·L·H·d per query-key pair"),
                    "source": "course module 12.4 §3-4; Williams, Waterman & Patterson 2009 (roofline)"})
        out.append({"what": "units",
                    "value": "GB = 1e9 B, GiB = 2^30 B, TB/s = 1e12 B/s; times are unit-exact, so they sit ~7 % "
                             "above figures that divide GiB by TB/s",
                    "source": "SI and IEC 80000-13"})
        return out

    def to_dict(self, with_analysis: bool = True) -> dict[str, Any]:
        """Exactly the JSON `triage run --format json` prints (``with_analysis=False`` leaves out the
        'analysis' key, which `triage compare` does not use)."""
        question, number, failure = DIRECTIONS[self.claim.direction]
        claim = self.claim.to_dict()
        claim["direction_question"] = {"question": question, "number": number, "failure_mode": failure}
        return {
            "version": JSON_VERSION,
            "claim": claim,
            "paper_check": self.paper_check,
            "workloads": self.matrix.source,
            "cells": [self.cell(i) for i in range(len(self))],
            "decision": self.decision(),
            **({"analysis": self.analysis()} if with_analysis else {}),
            "measured": self.measured,
            "assumptions": self.assumptions(),
        }
