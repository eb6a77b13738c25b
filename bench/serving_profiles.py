"""Chip entries fitted by simulation, for an engine's chips that the step corpus lacks but its max-load runs hold.

A chip with no statable step rows (data/measurements rows of a stated batch, bench/fidelity.py) gets no entry from
bench/profiles.py, and its cells take the engine's default. Where data/measurements holds the engine's max-load
runs on that chip (trtllm-bench offline, every request at once: the rows bench/serving_corpus.py states as offline
workloads), the chip's compute efficiency and per-layer cost are fitted by simulating those runs: a grid, then a
finer one around its best point, by least squared log error, the engine default's other values kept. Two
parameters because the runs tell two things apart: prompt-heavy runs are GEMM-bound, output-heavy runs at the few
hundred sequences their KV holds pay the per-step costs. The runs that train an entry are no longer held out:
bench/serving_corpus.py leaves them out of its table (serving_corpus.simulation_trained names them).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from triage.analysis.calibrate import LINEAR
from triage.inputs.catalog import FittedRange

from . import serving_corpus

# the coarse grid (compute efficiency; per-layer seconds), then the fine one: half steps around the coarse best.
# Wide on purpose (the step corpus's entries sit at 0.5 and 0 to 0.24 ms a layer): a best value on its edge is
# said in the entry's comment (Entry.edges), as bench/profiles.py says a bound
COMPUTE = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
LAYER_S = (0.0, 0.1e-3, 0.2e-3, 0.3e-3, 0.4e-3)
FINE = 0.5                       # the fine grid's step, in coarse steps


@dataclass
class Entry:
    """A chip's entry fitted by simulation: its parameters, the runs it was fitted on, their regime and fit."""

    params: dict[str, float]
    items: list[dict[str, Any]]
    range: FittedRange
    median_abs: float              # the fitted runs' median absolute error
    edges: tuple[str, ...]         # the parameters whose best value is the search's lowest or highest

    @property
    def files(self) -> str:
        """The data/measurements files its runs come from."""
        return ", ".join(sorted({i["row"]["source"] for i in self.items}))


def _workload(item: dict[str, Any], params: dict[str, float]) -> dict[str, Any]:
    """The run's workload with every profile value stated at workload level (so no catalog entry enters)."""
    w = copy.deepcopy(item)
    block = w["workloads"]["workloads"][0]
    block["efficiency"] = {"bandwidth": params["bandwidth"], "compute": params["compute"]}
    for key in LINEAR:
        block[key[:-2]] = f"{params[key] * 1e3:.9g} ms"
    return w


def _log_error(job: tuple[dict[str, Any], dict[str, float]]) -> float:
    item, params = job
    return math.log(serving_corpus.predict(_workload(item, params)) / float(item["row"]["value"]))


def _errors(items: list[dict[str, Any]], points: list[dict[str, float]], pool: ProcessPoolExecutor
            ) -> np.ndarray:
    """points × items: each run's log error at each parameter point."""
    jobs = [(item, p) for p in points for item in items]
    return np.array(list(pool.map(_log_error, jobs, chunksize=2))).reshape(len(points), len(items))


def _points(default: dict[str, float], compute: Iterable[float], layer: Iterable[float]) -> list[dict[str, float]]:
    return [{**default, "compute": round(c, 3), "layer_overhead_s": lay} for c in compute for lay in layer]


def fit(items: list[dict[str, Any]], default: dict[str, float], pool: ProcessPoolExecutor) -> Entry:
    """The chip's compute efficiency and per-layer cost that simulate its runs best (the coarse grid, then half
    steps around its best point), the engine default's other values kept."""
    coarse = _points(default, COMPUTE, LAYER_S)
    err = _errors(items, coarse, pool)
    best = coarse[int(np.argmin((err ** 2).sum(axis=1)))]
    dc, dl = (COMPUTE[1] - COMPUTE[0]) * FINE, (LAYER_S[1] - LAYER_S[0]) * FINE
    fine = _points(default, sorted({max(best["compute"] + d, COMPUTE[0]) for d in (-dc, 0.0, dc)}),
                   sorted({max(best["layer_overhead_s"] + d, 0.0) for d in (-dl, 0.0, dl)}))
    err_fine = _errors(items, fine, pool)
    k = int(np.argmin((err_fine ** 2).sum(axis=1)))
    e = err_fine[k]
    c, lay = fine[k]["compute"], fine[k]["layer_overhead_s"]
    edges = tuple(name for name, v, lo, hi in (("compute", c, COMPUTE[0], COMPUTE[-1] + dc),
                                                ("layer_overhead", lay, 0.0, LAYER_S[-1] + dl))
                  if v <= lo + 1e-12 or v >= hi - 1e-12)
    prompt = [float(i["row"]["prompt_tokens"]) for i in items]
    total = [float(i["row"]["prompt_tokens"]) + float(i["row"]["output_tokens"]) for i in items]
    tp = [float(i["workloads"]["defaults"]["tp"]) for i in items]
    seqs = [float(i["workloads"]["workloads"][0]["scheduler"]["max_seqs"]) for i in items]
    # the runs' regime: both phases; every batch from one (a run's drain, its last sequence alone) to the
    # scheduler's limit; contexts from the shortest prompt to the longest request; their formats and degrees
    span = FittedRange(("decode", "prefill"), (1.0, max(seqs)), (min(prompt), max(total)),
                       tuple(sorted({i["workloads"]["defaults"]["precision"]["weights"] for i in items})),
                       (min(tp), max(tp)))
    return Entry(fine[k], items, span, float(np.median(np.abs(np.expm1(e)))), edges)


def entries(defaults: dict[str, dict[str, float]]) -> dict[str, dict[str, Entry]]:
    """engine -> chip -> its entry fitted by simulation, for every (engine, chip) serving_corpus.simulation_trained
    names; ``defaults``: each engine's default values (what the chip's other values keep)."""
    items, _ = serving_corpus.rows(held_out_only=False)
    groups = serving_corpus.simulation_trained(items)
    out: dict[str, dict[str, Entry]] = {}
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        for (engine, hw), group in sorted(groups.items()):
            out.setdefault(engine, {})[hw] = fit(group, defaults[engine], pool)
    return out
