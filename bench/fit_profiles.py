"""Fit the shipped engine profiles (triage/inputs/catalog/engines.yaml) from the measurement corpus.

Run with:  .venv/bin/python bench/fit_profiles.py          (rewrites the catalog file; review the diff)

Per engine: a default fitted on all its rows the model can state (bench/fidelity.py's selection), and a
value per chip with at least as many rows as parameters; each entry's source names its rows and the error
of a fit on half of them predicting the other half. An engine with too few rows keeps the shipped defaults,
and says so.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import calibrate  # noqa: E402
from triage.report.calibration import short_words  # noqa: E402

from bench import fidelity  # noqa: E402

OUT = ROOT / "triage" / "inputs" / "catalog" / "engines.yaml"
ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp", "gpt-fast", "hf-transformers", "lmdeploy", "exllamav2",
           "mlc-llm")
NEEDED = 3                      # rows a fit needs: the two efficiencies and the per-step overhead


def _values(p: dict[str, float]) -> str:
    costs = ", ".join(f"{k[:-2]}: {p.get(k, 0.0) * 1e3:.3g} ms" for k in calibrate.LINEAR)
    return f"{{bandwidth: {p['bandwidth']:g}, compute: {p['compute']:g}, {costs}}}"


def _pinned(f: calibrate.Fitted) -> list[str]:
    """The short form of the fit's warnings: what sits on a bound."""
    return [short_words(e) for e in calibrate.edges(f)]


def _range(rows: list[calibrate.Row]) -> str:
    """The regime a chip entry's rows span (a whole generation covers both phases): cells outside it take the
    engine's default values."""
    phases = sorted({p for r in rows for p in (("decode", "prefill") if r.spec["phase"] == "generation"
                                                 else (r.spec["phase"],))})
    batch = [float(r.spec["batch"]) for r in rows]
    context = [float(r.spec["context"]) for r in rows]
    weights = sorted({str(r.spec["weights"]) for r in rows})
    return (f"{{phases: [{', '.join(phases)}], batch: [{min(batch):g}, {max(batch):g}], "
            f"context: [{min(context):g}, {max(context):g}], weights: [{', '.join(weights)}]}}")


def _half(rows: list[calibrate.Row]) -> str:
    """The median absolute error of a fit on every other row predicting the rest."""
    train, test = rows[::2], rows[1::2]
    p = calibrate.fit(train)
    if p is None or not test:
        return "too few rows to test"
    errs = [abs(e) for e in fidelity.errors(test, p)]
    return f"half-and-half median |err| {statistics.median(errs):.0%}"


def main() -> None:
    group, _ = fidelity.priced()
    by_engine: dict[str, list[calibrate.Row]] = defaultdict(list)
    for r in group:
        by_engine[r.spec["engine"]].append(r)
    lines = ["# Engine profiles: achieved bandwidth and compute efficiency (shares of the dense peaks) and the fixed",
             "# costs (per step, per layer of a step, per request), by default and per chip, fitted by",
             "# bench/fit_profiles.py from data/measurements/ (the rows bench/fidelity.py can state). Regenerate with",
             "# that script after the corpus changes; review the diff. A workload names one with `engine:`; its own",
             "# efficiency/overhead keys still win.", ""]
    defaults = calibrate.defaults()
    for engine in ENGINES:
        rows = by_engine.get(engine, [])
        fit = calibrate.solve(rows) if len(rows) >= NEEDED else None
        lines.append(f"{engine}:")
        if fit is None:
            lines.append(f"  default: {_values(defaults)}")
            lines.append(f'  source: "{len(rows)} corpus row(s) the model can state, fewer than the {NEEDED} '
                         f'parameters: the shipped defaults"')
            lines.append("")
            continue
        lines.append(f"  default: {_values(fit.params)}")
        chips = defaultdict(list)
        for r in rows:
            chips[r.spec["hardware"]].append(r)
        shown = {hw: calibrate.solve(rs) for hw, rs in sorted(chips.items()) if len(rs) >= NEEDED}
        if shown:
            lines.append("  hardware:")
            for hw, p in shown.items():
                note = f"    # {len(chips[hw])} rows; fitted: {', '.join(k[:-2] for k in p.free) or 'efficiencies'}"
                note += f"; on a bound: {', '.join(_pinned(p))}" if _pinned(p) else ""
                lines += [note, f"    {hw}: {_values(p.params)[:-1]}, range: {_range(chips[hw])}}}"]
        files = sorted({r.spec["source"] for r in rows})
        edges = "; on a bound (the model lacks a term these rows need): " + ", ".join(_pinned(fit)) \
            if _pinned(fit) else ""
        lines.append(f'  source: "fitted on {len(rows)} rows of data/measurements/ ({", ".join(files)}); '
                     f'{_half(rows)}{edges}"')
        lines.append("")
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
