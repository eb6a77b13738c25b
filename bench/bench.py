"""Benchmark: sweep throughput, linear outputs, `triage sweep` to CSV, `triage run` start-up, vectorization.

Run with:  .venv/bin/python bench/bench.py          (not part of the test suite)

0. triage.evaluate + to_dict() on 10,000 and 100,000 cells (fresh processes): the ratio should be ~10.

1. claims/kv2x.yaml over a 1,000,000-cell grid (1000 contexts × 1000 batches,
   llama-2-7b on h100-sxm) through triage.evaluate: cells/s and peak memory
   (a fresh process, so its peak RSS is the sweep's).
2. `triage run claims/kv2x.yaml` wall time (best and median of several runs),
   and the slowest imports of that command from `python -X importtime`.
3. The same work as a naive per-cell loop (one cell at a time through the same
   engine) on a sample of cells, extrapolated to the million.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARD = ROOT / "claims" / "kv2x.yaml"
CONTEXTS = [128 * (i + 1) for i in range(1000)]      # 128 … 128,000 tokens
BATCHES = list(range(1, 1001))                        # 1 … 1000
GRID = {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
        "grid": {"phase": ["decode"], "context": CONTEXTS, "batch": BATCHES}}

SWEEP = """
import resource, sys, time
sys.path.insert(0, {root!r})
import triage
from bench.bench import CARD, GRID
t0 = time.perf_counter(); r = triage.evaluate(CARD, GRID, analyse=False); cold = time.perf_counter() - t0
warm = []
for _ in range(3):
    t0 = time.perf_counter(); r = triage.evaluate(CARD, GRID, analyse=False); warm.append(time.perf_counter() - t0)
print(len(r), cold, min(warm), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def sweep() -> None:
    out = subprocess.run([sys.executable, "-c", SWEEP.format(root=str(ROOT))], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    cells, cold, warm, peak = int(out[0]), float(out[1]), float(out[2]), float(out[3])
    print(f"1. sweep: {cells:,} cells; first call {cold:.2f} s (imports and catalog included), "
          f"warm {warm:.3f} s = {cells / warm:,.0f} cells/s; peak memory {peak / 2**30:.2f} GiB")


OUTPUTS = """
import sys, time
sys.path.insert(0, {root!r})
import triage
n = {n}
g = {{"defaults": {{"model": "llama-2-7b", "hardware": "h100-sxm"}},
     "grid": {{"phase": ["decode"], "context": [128 * (i + 1) for i in range(n // 100)],
              "batch": list(range(1, 101))}}}}
triage.evaluate({card!r}, {{"defaults": g["defaults"], "grid": {{**g["grid"], "context": [128]}}}}).to_dict()
t0 = time.perf_counter(); triage.evaluate({card!r}, g).to_dict(); print(time.perf_counter() - t0)
"""


def outputs(runs: int = 3) -> None:
    """evaluate + to_dict, fresh process per run, best of ``runs``, at 10k and 100k cells."""
    best = {}
    for n in (10_000, 100_000):
        code = OUTPUTS.format(root=str(ROOT), n=n, card=str(CARD))
        best[n] = min(float(subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                                           text=True).stdout) for _ in range(runs))
    print(f"0. evaluate + to_dict(): 10,000 cells {best[10_000]:.3f} s, 100,000 cells {best[100_000]:.3f} s "
          f"(x{best[100_000] / best[10_000]:.1f} for 10x the cells; best of {runs} fresh processes)")


def sweep_csv() -> None:
    """`triage sweep` of the million-cell grid to CSV and Parquet, the whole command timed."""
    import tempfile

    import yaml

    exe = shutil.which("triage", path=str(Path(sys.executable).parent)) or "triage"
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "grid.yaml"
        grid.write_text(yaml.safe_dump(GRID))
        for suffix in ("csv", "parquet"):
            out = Path(tmp) / f"cells.{suffix}"
            t0 = time.perf_counter()
            subprocess.run([exe, "sweep", str(CARD), "-w", str(grid), "-o", str(out)], cwd=ROOT, check=True,
                           capture_output=True)
            print(f"   `triage sweep` 1,000,000 cells -> {suffix}: {time.perf_counter() - t0:.1f} s, "
                  f"{out.stat().st_size / 1e6:,.0f} MB")


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def startup(runs: int = 7) -> None:
    exe = shutil.which("triage", path=str(Path(sys.executable).parent)) or shutil.which("triage")
    cmd = [exe, "run", str(CARD)] if exe else [sys.executable, "-m", "triage", "run", str(CARD)]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    numpy = min(_wall([sys.executable, "-c", "import numpy"]) for _ in range(runs))
    print(f"2. `triage run claims/kv2x.yaml`: best {min(times):.3f} s, median {statistics.median(times):.3f} s "
          f"over {runs} runs; `python -c 'import numpy'` best {numpy:.3f} s (x{min(times) / numpy:.1f})")
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "triage", "run", str(CARD)], cwd=ROOT,
                         check=True, capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            if not name.startswith("  "):                 # top-level imports only
                rows.append((int(cumulative), name.strip()))
    top = ", ".join(f"{name} {us / 1e3:.0f} ms" for us, name in sorted(rows, reverse=True)[:6])
    print(f"   slowest top-level imports: {top}")


def naive(sample: int = 2000) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    import triage
    from triage.inputs import cards, catalog, workloads
    from triage.model import layers, matrix, verdicts

    cat = catalog.load()
    claim = cards.load(CARD)
    grid = matrix.build(workloads.load(GRID))
    t0 = time.perf_counter()
    triage.evaluate(claim, grid, analyse=False)
    vec = time.perf_counter() - t0
    idx = np.linspace(0, len(grid) - 1, sample).astype(int)
    t0 = time.perf_counter()
    for i in idx:                                       # the naive way: one cell at a time
        one = grid.take(np.array([i]))
        verdicts.decide(one, claim, layers.compute(one, claim, cat.models))
    per_cell = (time.perf_counter() - t0) / sample
    print(f"3. naive per-cell loop: {per_cell * 1e6:.0f} µs per cell = {1 / per_cell:,.0f} cells/s, "
          f"{per_cell * len(grid):.0f} s for the million (extrapolated from {sample:,}); vectorized "
          f"{vec:.3f} s: {per_cell * len(grid) / vec:,.0f}x faster")


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {platform.system()} {platform.release()}")
    outputs()
    sweep()
    sweep_csv()
    startup()
    naive()


if __name__ == "__main__":
    main()
