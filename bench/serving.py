"""Serving simulation: speed on 100,000 requests, and published serving results reproduced.

Run with:  .venv/bin/python bench/serving.py [--rows FILE]     (not part of the test suite; --rows writes section
           3's every priced row, its workload's system and the prediction, as CSV for review)

1. Speed: 100,000 requests of the Azure conversation trace (examples/serving-conv.yaml; Patel et al.,
   Splitwise, ISCA 2024, CC-BY 4.0), Mistral 7B on an A100 80GB, at 5 requests/s, each scheduler.
2. Published results, each with its source and the error:
   - Kwon et al. 2023 (vLLM, arXiv 2309.06180v1) Fig. 13: average batched requests, OPT-13B on one A100 40GB
     (12 GB of KV: Table 1), ShareGPT at 2 requests/s and Alpaca at 30 requests/s, for Orca (Max / Pow2 /
     Oracle reservations) and vLLM (paged). Length shapes are an assumption (log-normal, sigma 1, the
     papers' means: Fig. 11).
   - Kwon et al. 2023 §6.2: vLLM sustains "2.7x-8x" the request rate of Orca (Max) (the largest rate whose
     P90 TTFT stays within 5 s, our stand-in for "sustain").
   - Agrawal et al. 2024 (Sarathi-Serve, OSDI) abstract: 2.6x the capacity of vLLM for Mistral-7B on one
     A100 (P99 TBT <= 100 ms, median scheduling delay <= 2 s; Table 3, §5.1), openchat_sharegpt4 lengths
     (Table 2: median prompt 1730, P90 5696; output median 415, P90 834 -> log-normal sigmas 0.93 and 0.55),
     vLLM at max batch 128 (figure-5-6 configs), Sarathi-Serve at budget 512.
   vidur (PyPI `vidur`) downloads its GPU profiles from the Hugging Face Hub at run time, which this machine
   cannot reach: no comparison is run.
3. The serving corpus (bench/serving_corpus.py: data/serving/ and the serving rows of data/measurements/), each
   published system figure stated as a workload and simulated, held out by source (no figure of it trained the
   profile that prices it): median and max |error| by scenario, model class and chip vendor, and the rows left out.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import triage  # noqa: E402
from triage.analysis import serving  # noqa: E402
from triage.inputs.traffic import Lengths, Scheduler  # noqa: E402
from triage.serving.deployment import Side  # noqa: E402
from triage.serving.policies import simulate  # noqa: E402
from triage.serving.requests import requests  # noqa: E402

from bench import serving_corpus  # noqa: E402

KV = {"id": "c", "title": "t", "direction": "cache", "change": {"kv_bytes": 1.0}}


def cost_of(workloads):
    """The iteration model, traffic and trained window of a workload file's first workload (baseline side)."""
    ev = triage.evaluate(KV, workloads, analyse=False).evaluation
    m = ev.matrix
    return serving.cell_cost(m, ev.claim, ev.gaps, 0), m.blocks[0].traffic, float(m.models[0].max_context or np.inf)


def speed() -> None:
    cost, t, _ = cost_of(ROOT / "examples" / "serving-conv.yaml")
    t = dataclasses.replace(t, requests=100_000)
    req = requests(t, 5.0, cost.kv_tokens)
    print("1. 100,000 requests of the Azure conversation trace at 5 requests/s, Mistral 7B on an A100 80GB:")
    for policy in ("continuous", "chunked", "static"):
        start = time.perf_counter()
        out = simulate(req, cost, Scheduler(policy=policy, max_seqs=128))
        took = time.perf_counter() - start
        print(f"   {policy:<11} {took:6.2f} s  ({out.busy_s:,.0f} s of engine time simulated, "
              f"{len(req) / took:,.0f} requests/s)")


def err(got: float, want: float) -> str:
    return f"{got:8.2f}  published {want:8.2f}  error {got / want - 1:+7.1%}"


def fig13() -> list[float]:
    print("\n2a. vLLM paper Fig. 13: average batched requests, OPT-13B, one A100 40GB (KV 15.7K token slots)")
    cost, t, window = cost_of(ROOT / "examples" / "serving-sharegpt.yaml")
    errors = []
    sets = (("ShareGPT", 2.0, 161.31, 337.99, (7.00, 9.81, 13.62, 30.42)),
            ("Alpaca", 30.0, 19.31, 58.45, (7.00, 43.24, 72.75, 132.44)))
    for name, rate, mean_in, mean_out, published in sets:
        median = np.exp(-0.5)                           # log-normal sigma 1: median = mean x e^(-1/2)
        tt = dataclasses.replace(t, requests=3000, prompt=Lengths("lognormal", mean_in * median, 1.0),
                                 output=Lengths("lognormal", mean_out * median, 1.0))
        systems = (("Orca (Max)", Scheduler(kv="reserve", reserve="max", max_length=2048)),
                   ("Orca (Pow2)", Scheduler(kv="reserve", reserve="pow2")),
                   ("Orca (Oracle)", Scheduler(kv="reserve", reserve="oracle")),
                   ("vLLM", Scheduler(kv="paged")))
        for (system, sched), want in zip(systems, published, strict=True):
            got = Side(cost, sched, window).run(tt, rate).mean_batch
            errors.append(got / want - 1)
            print(f"   {name:<9} {rate:4g} req/s  {system:<14} {err(got, want)}")
    return errors


def paged_gain() -> None:
    print("\n2b. vLLM paper §6.2: vLLM sustains 2.7x-8x the request rate of Orca (Max)")
    r = triage.evaluate(ROOT / "claims" / "pagedattention-vllm.yaml", ROOT / "examples" / "serving-sharegpt.yaml",
                        analyse=False)
    g = next(iter(r.evaluation.serving.values()))
    print(f"   OPT-13B, ShareGPT-like, A100 40GB: {g.gain:.2f}x "
          f"({g.baseline.max_rate_at_slo_rps:.3g} -> {g.claim.max_rate_at_slo_rps:.3g} requests/s); "
          f"published range 2.7x-8x")


def sarathi() -> float:
    print("\n2c. Sarathi-Serve: capacity against vLLM, Mistral-7B, one A100, strict SLO")
    w = {"defaults": {"model": "mistral-7b", "hardware": "a100-80gb"},
         "workloads": [{"name": "sharegpt4", "context": 2048,
                        "traffic": {"rates": [1.0], "prompt_tokens": {"lognormal": {"median": 1730, "sigma": 0.93}},
                                    "output_tokens": {"lognormal": {"median": 415, "sigma": 0.55}},
                                    "requests": 1024, "seed": 5,
                                    "slo": {"ttft": "2 s", "ttft_at": "p50", "tbt": "100 ms"}},
                        "scheduler": {"policy": "continuous", "max_seqs": 128, "max_batched_tokens": 8192}}]}
    r = triage.evaluate(ROOT / "claims" / "sarathi-serve.yaml", w, analyse=False)
    g = next(iter(r.evaluation.serving.values()))
    gain = g.gain
    print(f"   capacity {g.baseline.max_rate_at_slo_rps:.3g} -> {g.claim.max_rate_at_slo_rps:.3g} "
          f"requests/s: {err(gain, 2.6)} (abstract; §5.2 reports 3.5x at budget 512)")
    return gain / 2.6 - 1


def corpus(rows: Path | None) -> None:
    print("\n3. The serving corpus, held out by source (no figure of it trained the profile that prices it)")
    start = time.perf_counter()
    priced, skipped = serving_corpus.price()
    if rows is not None:
        serving_corpus.write_rows(priced, rows)
    print(f"   {len(priced)} published figures priced in {time.perf_counter() - start:.0f} s; left out:")
    for why, n in sorted(skipped.items(), key=lambda kv: -kv[1]):
        print(f"     {n:4d}  {why}")
    print(f"   {'rows':<58} {'n':>4}  median |err|  max |err|")
    for name, n, median, worst in serving_corpus.table(priced):
        print(f"   {name:<58} {n:4d}  {median:11.1%}  {worst:8.1%}")


def main() -> None:
    rows = Path(sys.argv[sys.argv.index("--rows") + 1]) if "--rows" in sys.argv else None
    speed()
    errors = fig13()
    paged_gain()
    errors.append(sarathi())
    a = np.abs(errors)
    print(f"\nmedian |error| over the {len(a)} published numbers: {np.median(a):.1%} (max {a.max():.1%})")
    corpus(rows)


if __name__ == "__main__":
    main()
