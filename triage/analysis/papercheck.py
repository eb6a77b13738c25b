"""The paper-setting check: the card's own setting, priced by the roofline, against its reported gain.

A reported gain more than 5 % above the theoretical bound of the stated
mechanism in the paper's own setting cannot come from that mechanism alone:
it is an IOU until the setting explains it (course module 12.4: a number the
roofline forbids). Setting details the card does not give get the benefit of
the doubt: the bound is the largest over plausible values, and says so.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import PAPER_BATCHES as BATCHES
from ..defaults import PAPER_CONTEXTS as CONTEXTS
from ..defaults import PAPER_HARDWARE as DEFAULT_HARDWARE
from ..defaults import PAPER_TOLERANCE as TOLERANCE
from ..inputs import workloads
from ..inputs.catalog import Catalog
from ..inputs.claim import Claim
from ..inputs.hfconfig import is_config_path
from ..inputs.registry import outside_the_step
from ..model import layers, matrix
from ..model.roofline import step_cost, step_time

# setting keys the check prices (beside model, hardware, phase, batch, context)
PRICED = ("attention", "memory_waste", "tp", "batch_utilization", "precision")


def _sources(claim: Claim, metric: str, capacity_bound: float | None, bound: float) -> list[str]:
    """Where a gain beyond the bound usually comes from, most likely first."""
    out = []
    baseline = claim.claim.get("baseline", "")
    out.append("a weak or offloading baseline" + (f" (the card: {baseline})" if baseline else "")
               + ": the gain is measured against a system slower than a good implementation of the same step")
    if capacity_bound is not None and capacity_bound > bound * TOLERANCE:
        out.append(f"a larger batch made possible by the freed memory: with each side at its largest batch the "
                   f"throughput bound is {capacity_bound:.2f}×")
    elif metric == "throughput":
        out.append("a larger batch made possible by freed memory (throughput measured at different batch sizes)")
    out.append("a kernel better than the baseline's: part of the gain is implementation, not the method")
    out.append("a different metric: kernel-only or attention-only time, training throughput, or memory reported "
               "as speed")
    return out


def _grid(setting: dict[str, Any], phase: str) -> tuple[list[dict[str, Any]], list[str]]:
    batches = [setting["batch"]] if "batch" in setting else list(BATCHES)
    contexts = [setting["context"]] if "context" in setting else list(CONTEXTS)
    assumed = []
    if "batch" not in setting:
        assumed.append(f"batch not stated: the bound is the largest over batch {', '.join(map(str, BATCHES))}")
    if "context" not in setting:
        assumed.append(f"context not stated: the bound is the largest over {', '.join(f'{c:,}' for c in CONTEXTS)} "
                       f"tokens")
    cells = [{"name": f"paper-{i}", "phase": phase, "context": c, "batch": b}
             for i, (b, c) in enumerate(product(batches, contexts))]
    return cells, assumed


def check(claim: Claim, catalog: Catalog) -> dict[str, Any]:
    """{reported, bound, exceeds_bound, ...}: all three None when the card gives no setting or no number."""
    setting = dict(claim.claim.get("setting", {}))
    reported = claim.claimed_speedup
    empty = {"reported": reported, "bound": None, "exceeds_bound": None}
    if not setting or reported is None:
        return {**empty, "note": "the card states no setting" if not setting else "the card reports no speedup"}
    metric = claim.claim.get("metric", "tpot")
    phase = setting.get("phase", "prefill" if metric == "ttft" else "decode")
    model = setting.get("model")
    assumed = []
    if model is None:
        return {**empty, "note": "the card's setting names no model: no bound can be computed"}
    if is_config_path(model) and not Path(model).is_absolute():
        model = str(Path(claim.file).parent / model)
    hardware = setting.get("hardware")
    if hardware is None:
        hardware = DEFAULT_HARDWARE
        assumed.append(f"hardware not stated: computed on {DEFAULT_HARDWARE} (a decode bound barely depends on "
                       f"the chip)")
    cells, more = _grid(setting, phase)
    assumed += more
    # a bound: full efficiency, no overhead, no reserve; what the setting states; the rest the shipped defaults
    defaults = {"model": model, "hardware": hardware, "efficiency": {"bandwidth": 1.0, "compute": 1.0},
                "overhead": 0, "reserve": 0, **{k: setting[k] for k in PRICED if k in setting}}
    resolved = workloads.load({"defaults": defaults, "workloads": cells}, catalog)
    grid = matrix.build(resolved)
    g = layers.compute(grid, claim, resolved.catalog.models, switch_optional=False)
    if metric == "memory":
        ratios = g.base.memory_bytes / g.claim.memory_bytes
    elif outside_the_step(claim.change):
        # batch slots or capacity: at full efficiency and no overhead the end-to-end layer is the bound
        ratios = np.fmax(g.speedup_theoretical, g.speedup_end_to_end)
    else:
        ratios = g.speedup_theoretical
    best = int(np.nanargmax(ratios))
    bound = float(ratios[best])
    capacity_bound = _capacity_bound(g, grid, best) if metric == "throughput" else None
    out: dict[str, Any] = {
        "reported": reported, "bound": bound, "exceeds_bound": bool(reported > bound * TOLERANCE),
        "tolerance": TOLERANCE,
        "metric": metric, "setting": {**{k: setting[k] for k in PRICED if k in setting},
                                      "model": setting.get("model"), "hardware": hardware, "phase": phase,
                                      "batch": int(grid.batch[best]), "context": int(grid.context[best])},
        "baseline_fits": bool(g.base.fits[best]), "capacity_bound": capacity_bound, "assumed": assumed,
        "likely_sources": [], "note": "",
    }
    if not out["baseline_fits"]:
        out["note"] = ("the baseline does not fit in memory in this setting: the bound assumes it ran (an offloading "
                       "baseline would be far slower)")
    if out["exceeds_bound"]:
        out["likely_sources"] = _sources(claim, metric, capacity_bound, bound)
    return out


def _capacity_bound(g: layers.Gaps, grid: matrix.Matrix, i: int) -> float | None:
    """Theoretical throughput with each side at its largest batch that fits, claim ÷ baseline (None if either
    fits no sequence)."""
    b0, b1 = float(g.base.max_batch[i]), float(g.claim.max_batch[i])
    if b0 < 1 or b1 < 1:
        return None
    hw = layers.machine(grid).take(np.array([i]))
    rates = []
    for inputs, batch in ((g.base.inputs, b0), (g.claim.inputs, b1)):
        x = replace(inputs.take(np.array([i])), batch=np.array([batch]))
        rates.append(batch / step_time(step_cost(x), hw.peak, hw.bandwidth, vector_peak=hw.vector_peak)[0])
    return float(rates[1] / rates[0])
