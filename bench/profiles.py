"""Engine profiles fitted from corpus rows: the one fit that bench/fit_profiles.py ships and bench/fidelity.py
repeats with each source held out.

- The corpus default (what a workload naming no engine uses: workloads.yaml's defaults): one fit over every row,
  each source weighing as much as another (one source's hundred rows do not outvote another's ten), pulled
  lightly toward ANCHOR.
- Per engine: a default fitted on the engine's rows where they span two chips or more (else the corpus
  default: one chip's rows say nothing of another's — vLLM on ROCm of vLLM on CUDA), and an entry per chip
  with at least as many rows as parameters, with the regime those rows span; an engine with fewer rows keeps
  the corpus default. Each is
  pulled toward the level above (PROFILE_PULL): an engine's rows are one or two sources, often one benchmark
  setup, and held out source by source a free per-engine fit transfers worse than the corpus default
  (bench/fidelity.py prints both).
- A row is predicted by its engine's chip entry when it lies in that entry's range, else by the engine's
  default, else by the corpus default (an engine the fit never saw).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import calibrate  # noqa: E402
from triage.inputs.catalog import FittedRange  # noqa: E402

NEEDED = 3                      # rows a fit needs: the two efficiencies and the per-step overhead
# the assumption the corpus default starts from, pulled toward with calibrate.PULL (weak): decode GEMV and
# attention kernels at 80-90 % of HBM bandwidth, large prefill GEMMs at 60-75 % of the dense peak, no fixed
# costs (the shipped defaults before they were fitted; workloads.yaml until 2026-12)
ANCHOR = {"bandwidth": 0.85, "compute": 0.70, **{k: 0.0 for k in calibrate.LINEAR}}
# the pull of an engine's fit toward the corpus default and of a chip's toward its engine's: at 1, a 10 % departure
# of an efficiency costs 1 x 0.1^2 = 1e-2 of mean squared log error, what a 10 % rms error costs, so an engine's
# rows move it only as far as they agree. Chosen among PULLS by leave-one-source-out (the median held-out error of
# the profiles; tests/test_measurement_corpus.py holds the choice to the corpus); bench/fidelity.py prints each
# and the nested figure, the pull chosen again inside every fold without the source it then predicts
PULLS = (0.01, 0.1, 1.0, 10.0)
PULL_TIE = 0.001              # pulls within 0.1 point of the best are a tie: the weakest of them is chosen (it keeps
                              # the most of each engine's own rows), so a small corpus change does not flip it
PROFILE_PULL = 1.0
# the parameters only rows that pay a prefill identify (a prefill or a whole generation): the compute efficiency
# and the per-request cost. A profile fits them from such rows of at least PREFILL_SOURCES independent sources
# and otherwise keeps the level above's: one source's prefills are one setup (Hugging Face Transformers' two
# sources disagree by 2x on them), which a profile that learns from it carries to every other source
PREFILL_SOURCES = 2
PREFILL_PARAMETERS = ("compute", "request_overhead_s")


@dataclass
class Chip:
    """A per-chip entry: its fit, its rows and the regime they span."""

    fit: calibrate.Fitted
    rows: list[calibrate.Row]
    range: FittedRange


@dataclass
class Profile:
    """An engine's fit: its default (``fit`` None: the corpus default, its rows being of one chip, which say
    nothing of another's), its rows and its chips."""

    params: dict[str, float]
    fit: calibrate.Fitted | None
    rows: list[calibrate.Row]
    chips: dict[str, Chip]


def _phases(r: calibrate.Row) -> tuple[str, ...]:
    return ("decode", "prefill") if r.spec.phase == "generation" else (r.spec.phase,)


def fitted_range(rows: list[calibrate.Row]) -> FittedRange:
    """The regime rows span (a whole generation covers both phases): phases, batch, context, weight formats,
    tensor-parallel degrees."""
    batch = [float(r.spec.batch) for r in rows]
    context = [float(r.spec.context) for r in rows]
    tp = [float(r.spec.tp) for r in rows]
    return FittedRange(tuple(sorted({p for r in rows for p in _phases(r)})), (min(batch), max(batch)),
                       (min(context), max(context)), tuple(sorted({str(r.spec.weights) for r in rows})),
                       (min(tp), max(tp)))


def in_range(r: calibrate.Row, span: FittedRange) -> bool:
    """Whether a row lies in a chip entry's regime, every phase it covers (the catalog's own test)."""
    batch, context = float(r.spec.batch), float(r.spec.context)
    return all(bool(span.contains(p == "decode", batch, context, str(r.spec.weights))) for p in _phases(r))


def corpus_default(rows: list[calibrate.Row]) -> calibrate.Fitted:
    """One fit over every row, each source's rows together weighing as much as another's."""
    count = Counter(r.spec.source for r in rows)
    return calibrate.solve(rows, np.array([1.0 / count[r.spec.source] for r in rows]), prior=ANCHOR)


def held(rows: list[calibrate.Row]) -> tuple[str, ...]:
    """The parameters a profile keeps from the level above: the prefill's, where fewer than PREFILL_SOURCES
    sources' rows pay a prefill."""
    paying = {r.spec.source for r in rows if r.spec.phase != "decode"}
    return PREFILL_PARAMETERS if len(paying) < PREFILL_SOURCES else ()


def fit(rows: list[calibrate.Row], default: dict[str, float], pull: float = PROFILE_PULL) -> dict[str, Profile]:
    """Each engine with enough rows: its default fit (pulled toward ``default``, the corpus default) and its
    chips' entries (pulled toward the engine's)."""
    by_engine: dict[str, list[calibrate.Row]] = defaultdict(list)
    for r in rows:
        by_engine[r.spec.engine].append(r)
    out = {}
    for engine, mine in by_engine.items():
        if len(mine) < NEEDED:
            continue
        chips: dict[str, list[calibrate.Row]] = defaultdict(list)
        for r in mine:
            chips[r.spec.hardware].append(r)
        own = calibrate.solve(mine, prior=default, pull=pull, hold=held(mine)) if len(chips) > 1 else None
        params = own.params if own is not None else dict(default)
        out[engine] = Profile(params, own, mine, {hw: Chip(calibrate.solve(rs, prior=params, pull=pull,
                                                                           hold=held(rs)), rs, fitted_range(rs))
                                                  for hw, rs in sorted(chips.items()) if len(rs) >= NEEDED})
    return out


def chosen(r: calibrate.Row, profiles: dict[str, Profile], default: dict[str, float]) -> dict[str, float]:
    """The parameters a row is predicted with: its engine's chip entry inside the entry's range, else the
    engine's default, else (an engine the fit never saw) the corpus default."""
    p = profiles.get(r.spec.engine)
    if p is None:
        return default
    chip = p.chips.get(r.spec.hardware)
    return chip.fit.params if chip is not None and in_range(r, chip.range) else p.params
