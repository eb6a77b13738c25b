"""Fit the shipped engine profiles (triage/inputs/catalog/engines.yaml) from the measurement corpus.

Run with:  .venv/bin/python bench/fit_profiles.py          (rewrites the catalog file; review the diff)

First the corpus default, what a workload naming no engine uses (workloads.yaml's efficiency and fixed-cost
defaults, rewritten in place); then per engine a default fitted on all its rows the model can state
(bench/fidelity.py's selection), and a value per chip with at least as many rows as parameters, each pulled
toward the level above (bench/profiles.py); each entry's source names its rows and the error of a fit on half
of them predicting the other half. An engine with too few rows keeps the corpus default, and says so. Last,
a chip the step corpus has no row of but the engine's max-load runs cover gets an entry fitted by simulating
those runs (bench/serving_profiles.py; a minute on 16 cores).
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import calibrate  # noqa: E402
from triage.inputs.catalog import FittedRange  # noqa: E402
from triage.report.calibration import short_words  # noqa: E402

from bench import fidelity, profiles, serving_profiles  # noqa: E402

OUT = ROOT / "triage" / "inputs" / "catalog" / "engines.yaml"
ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "gpt-fast", "hf-transformers", "lmdeploy", "exllamav2",
           "mlc-llm")


def _values(p: dict[str, float]) -> str:
    costs = ", ".join(f"{k[:-2]}: {p.get(k, 0.0) * 1e3:.3g} ms" for k in calibrate.LINEAR)
    return f"{{bandwidth: {p['bandwidth']:g}, compute: {p['compute']:g}, {costs}}}"


def _pinned(f: calibrate.Fitted) -> list[str]:
    """The short form of the fit's warnings: what sits on a bound."""
    return [short_words(e) for e in calibrate.edges(f)]


def _range(span: FittedRange) -> str:
    """A chip entry's regime as the catalog writes it: cells outside it take the engine's default values."""
    return (f"{{phases: [{', '.join(span.phases)}], batch: [{span.batch[0]:g}, {span.batch[1]:g}], "
            f"context: [{span.context[0]:g}, {span.context[1]:g}], weights: [{', '.join(span.weights)}], "
            f"tp: [{span.tp[0]:g}, {span.tp[1]:g}]}}")


def _simulated(hw: str, e: serving_profiles.Entry) -> list[str]:
    """A chip entry fitted by simulation on max-load runs, with the comment that says so."""
    return [f"    # fitted by simulation on {len(e.items)} max-load runs of data/measurements/{e.files} (every request "
            f"at once; bench/serving_profiles.py): compute and layer_overhead, the engine default's other values; "
            f"median |err| {e.median_abs:.0%}" + (f"; on the search's edge: {', '.join(e.edges)}" if e.edges else ""),
            f"    {hw}: {_values(e.params)[:-1]}, range: {_range(e.range)}}}"]


def _simulated_source(chips: dict[str, serving_profiles.Entry]) -> str:
    """What an engine's source adds for its chips fitted by simulation (empty without any)."""
    return "".join(f"; {hw}: fitted by simulation on {len(e.items)} max-load runs of {e.files} "
                   f"(bench/serving_profiles.py), median |err| {e.median_abs:.0%}" for hw, e in chips.items())


def _half(rows: list[calibrate.Row]) -> str:
    """The median absolute error of a fit on every other row predicting the rest."""
    train, test = rows[::2], rows[1::2]
    p = calibrate.fit(train)
    if p is None or not test:
        return "too few rows to test"
    errs = [abs(e) for e in fidelity.errors(test, p)]
    return f"half-and-half median |err| {statistics.median(errs):.0%}"


WORKLOADS = ROOT / "triage" / "inputs" / "catalog" / "workloads.yaml"
# the lines of workloads.yaml's defaults this script owns, from the comment above them to the last fixed cost
OWNED = re.compile(r"  # Achieved fraction of peak.*?\n  sequence_overhead: [^\n]*\n", re.S)


def _defaults_lines(fit: calibrate.Fitted, rows: list[calibrate.Row]) -> str:
    """workloads.yaml's efficiency and fixed-cost defaults: the corpus default, with where it comes from."""
    p = fit.params
    sources = len({r.spec.source for r in rows})
    return (f"  # Achieved fraction of peak and fixed costs when no engine is named: the corpus default, one fit\n"
            f"  # over {len(rows)} rows of data/measurements/ from {sources} sources, each source weighing as much as"
            f" another\n"
            f"  # (bench/fit_profiles.py writes these five lines; bench/fidelity.py: its error on held-out sources).\n"
            f"  efficiency: {{bandwidth: {p['bandwidth']:g}, compute: {p['compute']:g}}}\n"
            + f"  overhead: {p['overhead_s'] * 1e3:.3g} ms".ljust(27) + " # fixed per-step cost (launches, scheduler)\n"
            + f"  request_overhead: {p['request_overhead_s'] * 1e3:.3g} ms".ljust(27) + " "
            + "# a request's fixed cost, paid with its prefill (TTFT)\n"
            + f"  layer_overhead: {p['layer_overhead_s'] * 1e3:.3g} ms".ljust(27) + " "
            + "# a step's fixed cost per layer of the model (kernel launches)\n"
            + f"  sequence_overhead: {p['sequence_overhead_s'] * 1e6:.3g} µs".ljust(27) + " "
            + "# a step's fixed cost per sequence it carries (sampling, detokenizing)\n")


def main() -> None:
    group, _ = fidelity.priced()
    corpus = profiles.corpus_default(group)
    text = WORKLOADS.read_text(encoding="utf-8")
    if len(OWNED.findall(text)) != 1:
        raise SystemExit(f"{WORKLOADS}: the defaults' efficiency lines are not where this script writes them")
    WORKLOADS.write_text(OWNED.sub(lambda _: _defaults_lines(corpus, group), text), encoding="utf-8")
    print(f"wrote {WORKLOADS} (the corpus default)")
    fits = profiles.fit(group, corpus.params)
    lines = ["# Engine profiles: achieved bandwidth and compute efficiency (shares of the dense peaks) and the fixed",
             "# costs (per step, per layer of a step, per prefill step, per sequence of a step), by default and per",
             "# chip, fitted by bench/fit_profiles.py from data/measurements/ (the rows bench/fidelity.py can state).",
             "# Regenerate with that script after the corpus changes; review the diff. A workload names one with",
             "# `engine:`; its own efficiency/overhead keys still win.", ""]
    defaults = corpus.params
    simulated = serving_profiles.entries({e: fits[e].params if e in fits else defaults for e in ENGINES})
    for engine in ENGINES:
        p = fits.get(engine)
        lines.append(f"{engine}:")
        extra = [line for hw, e in simulated.get(engine, {}).items() for line in _simulated(hw, e)]
        sim = _simulated_source(simulated.get(engine, {}))
        if p is None:
            rows = sum(r.spec.engine == engine for r in group)
            lines.append(f"  default: {_values(defaults)}")
            lines += ["  hardware:", *extra] if extra else []
            lines.append(f'  source: "{rows} corpus row(s) the model can state, fewer than the {profiles.NEEDED} '
                         f'parameters: the corpus default{sim}"')
            lines.append("")
            continue
        lines.append(f"  default: {_values(p.params)}")
        if p.chips or extra:
            lines.append("  hardware:")
            for hw, chip in p.chips.items():
                note = (f"    # {len(chip.rows)} rows; fitted: "
                        f"{', '.join(k[:-2] for k in chip.fit.free) or 'efficiencies'}")
                note += f"; on a bound: {', '.join(_pinned(chip.fit))}" if _pinned(chip.fit) else ""
                lines += [note, f"    {hw}: {_values(chip.fit.params)[:-1]}, range: {_range(chip.range)}}}"]
            lines += extra
        files = sorted({r.spec.source for r in p.rows})
        if p.fit is None:
            lines.append(f'  source: "default: the corpus default (its {len(p.rows)} rows of data/measurements/, '
                         f'{", ".join(files)}, are of one chip: its entry); {_half(p.rows)}{sim}"')
            lines.append("")
            continue
        edges = "; on a bound (the model lacks a term these rows need): " + ", ".join(_pinned(p.fit)) \
            if _pinned(p.fit) else ""
        lines.append(f'  source: "fitted on {len(p.rows)} rows of data/measurements/ ({", ".join(files)}); '
                     f'{_half(p.rows)}{edges}{sim}"')
        lines.append("")
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
