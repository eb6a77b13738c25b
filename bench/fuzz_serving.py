"""Fuzz the serving surface: random and hostile `traffic:` blocks, `scheduler:` blocks, request traces and engine
profiles, each run as `triage run` in its own process under a 2 GiB address-space cap and a 30 s timeout.

Run with:  .venv/bin/python bench/fuzz_serving.py [SECONDS]      (default 300; not part of the test suite)

Every example must exit 0 (priced) or 1 (refused with an addressed error), never 3 (an internal error) or by a
signal, within 30 s and 2 GiB. The script prints how many examples each exit code took, the slowest and the
largest, and each failing example's workload file (kept under the printed folder) with its last error line.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CARDS = [ROOT / "claims" / name for name in ("kv2x.yaml", "sarathi-serve.yaml", "distserve.yaml")]
CAP = 2 << 30            # bytes of address space an example may map
TIMEOUT = 30.0           # seconds an example may run

HOSTILE_NUMBERS = [0, -1, 1, 2, 2.0, 8.0, 10, 1e-300, 5e-324, 1e300, 1e308, 1e7, 2 ** 63, 10 ** 30, 0.5, 3.7, 9 ** 99]
HOSTILE_TEXT = ["", "x", "nan", "inf", "-5 s", "1e400 ms", "5", "50 ms", "1e-300 s", "300 GB/s", "1e-300 B/s",
                "2 s", "1 TB/s", "∞", "\x00", "9" * 400]


def pick(rng: random.Random, good: list, p: float = 0.93):
    """A plausible value with probability p, else a hostile one."""
    if rng.random() < p:
        return rng.choice(good)
    return rng.choice(HOSTILE_NUMBERS + HOSTILE_TEXT + [None, [], {}, [1, 2], {"a": 1}])


def lengths(rng: random.Random):
    kind = rng.random()
    if kind < 0.5:
        return pick(rng, [1, 16, 128, 512, 2048, 30000])
    if kind < 0.75:
        return {"lognormal": {"median": pick(rng, [64, 512, 4096]), "sigma": pick(rng, [0.1, 1.0, 3.0, 50.0])}}
    if kind < 0.9:
        return {"uniform": [pick(rng, [1, 100, 1000]), pick(rng, [10, 2000, 100000])]}
    return "trace"


def trace_file(rng: random.Random, folder: Path, n: int) -> str:
    """A CSV or JSONL trace: mostly sane rows, some hostile ones."""
    rows = []
    t = 0.0
    for _ in range(n):
        t += rng.choice([0.0, 1e-6, 0.01, 0.5, 3.0, 1e6]) if rng.random() < 0.9 else rng.choice(HOSTILE_NUMBERS)
        rows.append([t if rng.random() < 0.95 else rng.choice(HOSTILE_NUMBERS + HOSTILE_TEXT),
                     pick(rng, [10, 100, 1000, 8000], 0.95), pick(rng, [1, 50, 500], 0.95)])
    if rng.random() < 0.5:
        path = folder / f"t{rng.randrange(10 ** 9)}.jsonl"
        text = "".join(json.dumps({"arrival_s": a, "prompt_tokens": p, "output_tokens": o}) + "\n" for a, p, o in rows)
        if rng.random() < 0.1:
            text += "[" * rng.choice([10, 1000, 100000]) + "\n"
    else:
        path = folder / f"t{rng.randrange(10 ** 9)}.csv"
        text = "arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{a},{p},{o}\n" for a, p, o in rows)
    path.write_text(text)
    return str(path)


def traffic(rng: random.Random, folder: Path) -> dict:
    out: dict = {}
    if rng.random() < 0.8:
        out["rates"] = [pick(rng, [0.1, 1, 4, 20, 200]) for _ in range(rng.randint(1, 3))]
    arrivals = rng.random()
    if arrivals < 0.3:
        out["arrivals"] = {"gamma": pick(rng, [0.5, 1, 2, 8, 0.001, 100])}
    elif arrivals < 0.6:
        out["arrivals"] = {"trace": trace_file(rng, folder, rng.choice([2, 20, 300]))}
    out["prompt_tokens"] = lengths(rng)
    out["output_tokens"] = lengths(rng)
    out["requests"] = pick(rng, [10, 50, 300, 2000, 20000], 0.8)
    if rng.random() < 0.5:
        out["warmup"] = pick(rng, [0, 0.1, 0.5, 0.9])
    if rng.random() < 0.3:
        out["seed"] = pick(rng, [0, 1, 12345])
    if rng.random() < 0.7:
        out["slo"] = {k: pick(rng, ["50 ms", "2 s", "100 ms", "1 ms"]) for k in rng.sample(["ttft", "tbt", "tpot"],
                                                                                           rng.randint(1, 3))}
    if rng.random() < 0.2:
        out["shared_prefix"] = {"share": pick(rng, [0.1, 0.5, 1.0]), "tokens": pick(rng, [16, 512, 4096])}
    if rng.random() < 0.1:
        out["duration"] = pick(rng, ["10 s", "1 h", "1e9 s"])
    return out


def scheduler(rng: random.Random) -> dict:
    keys = {"policy": ["static", "continuous", "chunked", "disaggregated"], "max_seqs": [1, 8, 64, 256, 4096],
            "max_batched_tokens": [1, 512, 8192], "token_budget": [1, 256, 512, 4096],
            "preemption": ["recompute", "swap"], "kv": ["paged", "reserve"], "reserve": ["oracle", "pow2", "max"],
            "max_length": [1, 2048, 100000], "prefill_gpus": [1, 2, 8], "decode_gpus": [1, 2, 8],
            "link": ["300 GB/s", "25 GB/s", "1 TB/s"], "host_link": ["25 GB/s", "64 GB/s"],
            "link_latency": [0, "10 us", "1 ms"], "prefix_caching": [True, False], "block_size": [1, 16, 256],
            "chunked_prefill": [True, False], "replicas": [1, 2, 8], "pp": [1, 2, 4],
            "scheduler_steps": [1, 2, 8, 256]}
    return {k: pick(rng, v, 0.85) for k, v in keys.items() if rng.random() < 0.4}


def engine_file(rng: random.Random, folder: Path) -> str:
    values = {"bandwidth": pick(rng, [0.3, 0.85, 1.0]), "compute": pick(rng, [0.3, 0.7, 1.0]),
              "overhead": pick(rng, ["0 ms", "5 ms", "1 s"]), "layer_overhead": pick(rng, ["0 ms", "0.2 ms"]),
              "request_overhead": pick(rng, ["0 ms", "40 ms"]),
              "sequence_overhead": pick(rng, ["0 us", "6 us", "2 ms"])}
    profile = {"default": {k: v for k, v in values.items() if rng.random() < 0.8}}
    if rng.random() < 0.5:
        chip = dict(values)
        if rng.random() < 0.5:       # the regime its rows span (a cell outside it takes the default)
            chip["range"] = {"batch": pick(rng, [[1, 64], [8, 1], [1, 1e12]]),
                             "tp": pick(rng, [[1, 1], [2, 8], [8, 1]])}
        profile["hardware"] = {rng.choice(["a100-80gb", "h100-sxm", "nope"]): chip}
    path = folder / f"e{rng.randrange(10 ** 9)}.yaml"
    path.write_text(yaml.safe_dump({"engines": {"fuzz": profile}}, allow_unicode=True))
    return str(path)


def example(rng: random.Random, folder: Path) -> Path:
    wl: dict = {"name": "fuzz", "context": pick(rng, [128, 1024, 4096], 0.9), "batch": 1,
                "traffic": traffic(rng, folder)}
    if rng.random() < 0.7:
        wl["scheduler"] = scheduler(rng)
    if rng.random() < 0.3:
        wl["engine"] = engine_file(rng, folder)
    doc = {"defaults": {"model": rng.choice(["llama-2-7b", "mistral-7b", "llama-3-8b", "mixtral-8x7b"]),
                        "hardware": rng.choice(["a100-80gb", "h100-sxm", "l40s"])}, "workloads": [wl]}
    path = folder / f"w{rng.randrange(10 ** 9)}.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run_command(command: list[str]) -> tuple[int, float, int, str]:
    """One example in its own process under CAP and TIMEOUT: (exit code, -999 on a timeout; seconds; the
    largest child's peak resident bytes so far; the last line of its error output)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_cap,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}, text=True)
    try:
        _, err = proc.communicate(timeout=TIMEOUT)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        code = -999
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)         # the largest child so far (Linux: KiB)
    lines = [x for x in (err or "").splitlines() if x.strip()]
    return code, time.perf_counter() - start, usage.ru_maxrss * 1024, lines[-1][:300] if lines else ""


def drive(make: Callable[[int], tuple[str, str, list[str]]], seconds: float, folder: Path) -> None:
    """Run examples ``make(n)`` -> (family, label, command) for ``seconds``, each by run_command; print the
    exit codes per family, the slowest, the largest and every failure (an exit other than 0 or 1, or past
    TIMEOUT), and exit 1 if there was one."""
    codes: dict[str, dict[int, int]] = {}
    slowest, largest, bad = (0.0, ""), 0, []
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        family, label, command = make(n)
        code, took, rss, last = run_command(command)
        n += 1
        codes.setdefault(family, {})[code] = codes.get(family, {}).get(code, 0) + 1
        if took > slowest[0]:
            slowest = (took, label)
        largest = max(largest, rss)
        if code not in (0, 1) or took > TIMEOUT:
            bad.append((family, code, round(took, 1), label, last))
    print(f"{n} examples in {seconds:.0f} s (inputs kept in {folder})")
    for family, c in codes.items():
        print(f"  {family:17s} {sum(c.values()):4d} examples, exit codes "
              + ", ".join(f"{k}: {v}" for k, v in sorted(c.items())))
    print(f"slowest {slowest[0]:.1f} s ({slowest[1][:160]}); largest resident {largest / 2 ** 30:.2f} GiB (the "
          f"children's peak; each example capped at {CAP / 2 ** 30:.0f} GiB of address space and {TIMEOUT:.0f} s)")
    for item in bad:
        print("FAIL", *item)
    sys.exit(1 if bad else 0)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    folder = Path(tempfile.mkdtemp(prefix="triage-fuzz-"))
    rng = random.Random(27)

    def make(_n: int) -> tuple[str, str, list[str]]:
        w = example(rng, folder)
        card = rng.choice(CARDS)
        return "serving", f"{card.name} {w}", [sys.executable, "-m", "triage", "run", str(card), "-w", str(w),
                                               "-f", "json"]

    drive(make, seconds, folder)


if __name__ == "__main__":
    main()
