"""The serving corpus priced: published whole-system serving results (offline throughput, a server's rate at its
latency bounds, closed-loop clients), each stated as a `traffic:` + `scheduler:` workload and simulated, against
the published number. Used by bench/serving.py (section 3).

Rows: data/serving/*.csv (one row a published figure, with its quote and version: data/serving/README.md) and
the serving rows of data/measurements/ that bench/fidelity.py leaves out as serving figures (trtllm-bench's
offline runs "at infinite rate" and the Triton runs at a QPS). Held out by source: a data/measurements row whose
file trained the engine profiles (bench/fidelity.py's step rows), and a data/serving row from a document that
data/measurements also quotes at any version, are left out and counted, and so is every row of a document whose
runs trained a chip's entry by simulation (bench/serving_profiles.py), on that engine and chip: no figure priced
here trained the profile that prices it.
"""

from __future__ import annotations

import copy
import csv
import math
import os
import re
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import triage
from triage.errors import UserError
from triage.inputs import catalog

from . import fidelity

ROOT = Path(__file__).resolve().parent.parent
SERVING = ROOT / "data" / "serving"
KV = {"id": "serving-corpus", "title": "the baseline, priced", "direction": "cache", "change": {"kv_bytes": 1.0}}

# trtllm-bench's requests per run, by input and output length: "For each input and output sequence length
# combination, the table below details the `$num_requests` that were used" (NVIDIA/TensorRT-LLM @ 258c754,
# docs/source/performance/perf-overview.md, Preparing a Dataset)
TRTLLM_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (2048, 128): 3000, (2048, 2048): 1500,
                   (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}
# the same page's Online Serving Measurements: "All data in the table below was generated using version 0.14.0,
# with 500 requests and BF16 precision"
TRITON_REQUESTS = 500
# trtllm-bench's engine as the same page's example output states it: "Max Runtime Batch Size: 4096", "Max Runtime
# Tokens: 8192", "Scheduling Policy: Guaranteed No Evict" (KV reserved for a request's whole length at
# admission); an assumption for every row (the build tunes them from the dataset: "tuning heuristics"). Its
# in-flight batching mixes the phases in one iteration, the chunked policy with the token limit as budget: "With
# this feature, sequences in the context phase can be processed together with sequences in the generation phase"
# (TensorRT-LLM docs, "Paged Attention, IFB, and Request Scheduling", In-flight Batching)
TRTLLM_SCHEDULER = {"policy": "chunked", "max_seqs": 4096, "token_budget": 8192, "kv": "reserve",
                    "reserve": "oracle"}
# MLPerf's LLM runs (data/serving rows name their own): TensorRT-LLM's in-flight batching as above; vLLM's
# defaults (max_num_seqs 256, max_num_batched_tokens 8192 without chunking; paged KV)
SCHEDULERS = {"tensorrt-llm": TRTLLM_SCHEDULER, "vllm": {"policy": "continuous", "max_seqs": 256,
                                                          "max_batched_tokens": 8192}}
# chips the corpus names by another part's name: the GH200 "480GB" superchip carries the 96 GB HBM3 GPU, not
# the catalog's 144 GB HBM3e entry, so its rows are left out (counted) rather than priced on the wrong memory
HARDWARE = {"gb200": "gb200", "gb200 nvl72": "gb200"}


def _measurement_rows(measured: dict[str, list[dict[str, str]]], skipped: Counter[str]) -> list[dict[str, str]]:
    """The serving rows of data/measurements (``measured``: its rows by file; phase generation, no batch, run "at
    infinite rate" or at a stated QPS) as serving-corpus rows."""
    out = []
    for name, rows_ in measured.items():
        for r in rows_:
            notes = r["notes"].lower()
            if r["phase"] != "generation" or r["batch"] or r["metric"] != "tokens_per_s":
                continue
            triton = "online serving measurements" in notes
            rate = re.search(r"request rate qps=(\d+(?:\.\d+)?)", notes)
            if "infinite rate" not in notes and not (triton and rate):
                skipped["a serving figure of unstated load"] += 1
                continue
            isl, osl = int(r["prompt_tokens"]), int(r["output_tokens"])
            n = TRITON_REQUESTS if triton else TRTLLM_REQUESTS.get((isl, osl))
            if n is None:
                skipped["an offline run whose request count the source does not state"] += 1
                continue
            # the Triton runs at a finite QPS: a server at that Poisson rate (the benchmark's arrivals, assumed),
            # no bounds, its output tokens/s what the table reports
            scenario, qps = ("server", rate.group(1)) if rate else ("offline", "")
            out.append({**r, "source": name, "scenario": scenario, "rate": qps, "requests": str(n),
                        "tp": r["gpus"], "pp": "1", "replicas": "1", "clients": "", "lengths": "fixed",
                        "slo_ttft_s": "", "slo_tpot_s": "", "slo_at": ""})
    return out


def _serving_rows() -> list[dict[str, str]]:
    out = []
    for f in sorted(SERVING.glob("*.csv")):
        out += [{**r, "source": f.name} for r in csv.DictReader(f.read_text(encoding="utf-8").splitlines())]
    return out


def document(url: str) -> str:
    """The document a source URL names, whatever its version: a GitHub file as owner/repo/path (any commit or
    branch), a page without its query and fragment."""
    m = re.match(r"https?://github\.com/([^/]+/[^/]+)/(?:blob|tree|raw)/[^/]+/(.+)", url)
    return f"{m.group(1)}/{m.group(2)}".lower() if m else url.split("#")[0].split("?")[0].rstrip("/").lower()


def _statable(r: dict[str, str], measured: set[str]) -> str:
    """Why a serving-corpus row cannot be priced yet, or ''."""
    if document(r["source_url"]) in measured:
        return "a document data/measurements also holds (priced from there, or held out from nothing)"
    if r["lengths"] not in DATASETS and (not r["prompt_tokens"] or not r["output_tokens"]):
        return "the input or output lengths are not stated by a stored source"
    if not r["tp"] and not r["replicas"] and int(r["gpus"] or 1) > 1:
        return "a multi-GPU system whose layout (tp, pp, replicas) the source does not state"
    if not r["weights"]:
        return "a precision the source does not state"
    if r["scenario"] == "offline" and not r["requests"] and r["lengths"] not in DATASETS:
        return "an offline run whose request count the source does not state"
    if r["scenario"] in ("server", "interactive") and not r["slo_ttft_s"] and not r.get("rate"):
        return "a server figure with neither its rate nor its latency bounds"
    return ""


# the max-load runs a chip needs for an entry fitted by simulation (bench/serving_profiles.py): an assumption, three
# runs for each of its two parameters, so that no one run sets one
SIMULATION_RUNS = 6


def simulation_trained(items: list[dict[str, Any]], step_rows: list[dict[str, Any]] | None = None
                       ) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(engine, chip) -> the max-load runs that train its entry by simulation (bench/serving_profiles.py): the
    offline rows of data/measurements for an engine on a chip the step corpus (bench/fidelity.py's rows,
    ``step_rows``) has no row of, where there are SIMULATION_RUNS or more."""
    steps = {(r["engine"], r["hardware"]) for r in (fidelity.rows() if step_rows is None else step_rows)}
    measured = {f.name for f in fidelity.DATA.glob("*.csv")}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for i in items:
        r = i["row"]
        key = (r["engine"], i["hardware"])
        if r["source"] in measured and r["scenario"] == "offline" and key not in steps:
            groups[key].append(i)
    return {k: v for k, v in groups.items() if len(v) >= SIMULATION_RUNS}


def rows(held_out_only: bool = True) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every corpus row the simulation can state, as (row, workload) pairs, and the rows left out by reason;
    ``held_out_only``: without the runs that trained a chip's entry by simulation (simulation_trained)."""
    cat = catalog.load()
    skipped: Counter[str] = Counter()
    step_rows = fidelity.rows()
    trained = {r["source"] for r in step_rows}
    files = {f.name: list(csv.DictReader(f.read_text(encoding="utf-8").splitlines()))
             for f in sorted(fidelity.DATA.glob("*.csv"))}
    measured = _measurement_rows(files, skipped)
    # every document data/measurements quotes, at any version: a serving row from one of them is either a figure
    # the profiles trained on or one priced from data/measurements already
    documents = {document(r["source_url"]) for rows_ in files.values() for r in rows_}
    serving = []
    for r in _serving_rows():
        why = _statable(r, documents)
        if why:
            skipped[why] += 1
        else:
            serving.append(r)
    out = []
    for r in measured + serving:
        if r["source"] in trained:
            skipped["a source that trained the engine profiles (not held out)"] += 1
            continue
        model = fidelity._model(r)
        hw = HARDWARE.get(r["hardware"].lower(), r["hardware"])
        if model not in cat.models:
            skipped["a model not in the catalog"] += 1
            continue
        if hw not in cat.hardware:
            skipped["a chip not in the catalog (or another part of its name)"] += 1
            continue
        if r["metric"] not in METRICS:
            skipped[f"a metric the benchmark does not price yet ({r['metric']})"] += 1
            continue
        out.append({"row": r, "workloads": _workload(r, model, hw), "model": model, "hardware": hw})
    if held_out_only:
        # every row of a document that trained a chip's entry by simulation, on that engine and chip, whatever
        # its scenario: the entry would price it
        fitted = {(document(i["row"]["source_url"]), engine, hw)
                  for (engine, hw), group in simulation_trained(out, step_rows).items() for i in group}
        kept = [i for i in out if (document(i["row"]["source_url"]), i["row"]["engine"], i["hardware"]) not in fitted]
        skipped["a document that trained the chip's entry by simulation (not held out)"] += len(out) - len(kept)
        out = kept
    return out, skipped


def _workload(r: dict[str, str], model: str, hw: str) -> dict[str, Any]:
    """A row as a workload file: the system (tp x pp x replicas), precision, engine, scenario and bounds."""
    weights = r["weights"] or "bf16"
    kv = r["kv"] or ("fp8" if weights in ("fp8", "fp4") else weights)
    compute = r["compute"] or ("fp8" if weights in ("fp8", "fp4") else "bf16" if weights == "bf16" else "fp16")
    gpus = int(r["gpus"] or 1)
    pp = int(r["pp"] or 1)
    tp = int(r["tp"] or gpus // (int(r["replicas"] or 1) * pp))
    replicas = int(r["replicas"] or max(gpus // (tp * pp), 1))
    if r["lengths"] in DATASETS:       # an MLPerf dataset: its lengths; offline, every sample of it
        prompt, output = DATASETS[r["lengths"]]
        requests = int(r["requests"] or r["lengths"].split()[-1])
    else:
        prompt, output = (int(float(r[k])) for k in ("prompt_tokens", "output_tokens"))
        requests = int(r["requests"] or 0)
    if r["scenario"] in ("server", "interactive") and not r["requests"]:
        requests = SERVER_REQUESTS
    traffic: dict[str, Any] = {"scenario": r["scenario"], "requests": requests, "prompt_tokens": prompt,
                               "output_tokens": output, "seed": 1}
    if r["scenario"] == "closed_loop":
        traffic["clients"] = int(r["clients"])
        traffic["requests"] = int(r["requests"] or CLIENT_REQUESTS * int(r["clients"]))
    if r["scenario"] in ("server", "interactive") and r.get("rate"):
        traffic["rates"] = [float(r["rate"])]
        traffic["warmup"] = 0.0        # a benchmark at a rate counts every request it sends
    elif r["scenario"] in ("server", "interactive"):
        traffic["rates"] = [1.0]       # the search's first probe: the largest rate within the bounds is the figure
    slo = {k: f"{float(r[f'slo_{k}_s']) * 1e3:g} ms" for k in ("ttft", "tpot") if r.get(f"slo_{k}_s")}
    traffic["slo"] = slo
    scheduler = {**SCHEDULERS.get(r["engine"], SCHEDULERS["vllm"]), "replicas": replicas, "pp": pp}
    if r.get("max_seqs"):              # the engine's limits as its config states them
        scheduler["max_seqs"] = int(r["max_seqs"])
    if r.get("max_batched_tokens") and scheduler["policy"] == "chunked":
        # a mixed iteration's token limit counts its decodes too: no more sequences run at once than it holds
        # (this lowers six MLPerf rows' stated max_seqs to their token limit: docs/serving.md says so)
        scheduler["token_budget"] = int(r["max_batched_tokens"])
        scheduler["max_seqs"] = min(scheduler["max_seqs"], scheduler["token_budget"])
    elif r.get("max_batched_tokens"):
        scheduler["max_batched_tokens"] = int(r["max_batched_tokens"])
    if r.get("scheduler_steps") and scheduler["policy"] == "continuous":    # vLLM's multi-step scheduling
        scheduler["scheduler_steps"] = int(r["scheduler_steps"])
    return {"defaults": {"model": model, "hardware": hw, "tp": tp,
                         "precision": {"weights": weights, "kv": kv, "compute": compute}},
            "workloads": [{"name": "row", "engine": r["engine"] if r["engine"] in ENGINES else "vllm",
                           "traffic": traffic, "scheduler": scheduler}]}


def _lognormal(median: float, mean: float, cap: float) -> dict[str, Any]:
    """A log-normal with a dataset's median and mean, sigma = sqrt(2 ln(mean / median)), cut at its cap."""
    return {"lognormal": {"median": median, "sigma": math.sqrt(2.0 * math.log(mean / median)), "max": cap}}


def _uniform(mean: float, std: float) -> dict[str, Any]:
    """A uniform with a dataset's mean and standard deviation (half-width sqrt(3) std): for a length whose median
    lies above its mean, which no log-normal has."""
    return {"uniform": [round(mean - math.sqrt(3.0) * std), round(mean + math.sqrt(3.0) * std)]}


# MLPerf's datasets (the corpus's `lengths`): prompt and output lengths, derived from the per-sample token counts
# that Harshith-umesh/mlperf-dashboard @ 5a43d27 (mlperf-data/summaries/*.csv) copies from the official dataset
# files (its rows match the official sample counts, and its Mixtral and 405B output means are the READMEs'
# tokens_per_sample, 144.84 and 684.68): data/serving/mlperf-benchmarks.md, "Length distributions". Outputs: the
# run's own mean where MLCommons states it (Llama 2: "Tokens per sample: 294.45", with the reference answers'
# median/mean shape, 190/218.89); Llama 3.1 8B's 128-token cap, which the runs reach (128.0-129.0 tokens a sample).
# Caps: Llama 2's "input and output sequence lengths" at most 1,024 (processorca.py --seqlen_limit; the reference
# SUT's max_new_tokens 1024), Mixtral's max_seq_len 2,048 and max_new_tokens 1024; Llama 3.1 8B's inputs reach
# 2,540 tokens in the per-sample counts (above the 2,048 its docs state), so that is its cap. The caps lower the
# modelled mean input by at most 3.2 % (Mixtral: 427.39 -> 413.9 tokens).
DATASETS = {
    "open-orca 24576": (_lognormal(152, 222.33, 1024), _lognormal(294.45 * 190 / 218.89, 294.45, 1024)),
    "openorca+gsm8k+mbxp 15000": (_lognormal(283, 427.39, 2048), _lognormal(113, 144.84, 1024)),
    "longbench+longdatacollections+ruler+govreport 8313": (_uniform(9428.64, 4066.94), _uniform(684.68, 260.78)),
    "cnn-dailymail 13368": (_lognormal(784, 870.73, 2540), 128),
}
# requests a server run simulates per engine at each rate (an assumption: MLPerf runs at least ten minutes,
# thousands of requests; two thousand hold a P99 to twenty requests)
SERVER_REQUESTS = 8000

ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmdeploy")
# a closed-loop row whose request count the source does not state: ten requests a client (an assumption: each
# client's first request starts with the others, and ten turns of it reach the steady state the figure reports)
CLIENT_REQUESTS = 10


# the figures a row may state that the simulation gives: the system's output tokens/s, its completed requests/s
METRICS = ("tokens_per_s", "requests_per_s")


def predict(item: dict[str, Any]) -> float:
    """The simulated figure of a row, output tokens/s or completed requests/s of the system (offline and closed
    loop: the run's; server: the run at the largest rate within the bounds)."""
    r = triage.evaluate(KV, item["workloads"], analyse=False).evaluation
    s = next(iter(r.serving.values())).baseline
    row = item["row"]
    tokens = row["metric"] == "tokens_per_s"
    if row["scenario"] == "server" and not row["slo_ttft_s"]:
        # a benchmark at a rate reports its requests over its whole run, to the last completion
        # (benchmark_serving.py's "duration"), not a steady state: a queue that outgrows the run still counts
        x = s.rates[0]
        return float((x.requests + x.warmup_requests) * (float(row["output_tokens"]) if tokens else 1.0)
                     / x.simulated_s)
    if s.max_rate_at_slo_rps is not None:
        # MLPerf's "Completed tokens per second" at the largest rate within the bounds: the run at that rate, its
        # completions' tokens over the window (a served rate may outrun the engine by the 10 % the simulation
        # tolerates; completions are what the figure counts)
        at = copy.deepcopy(item["workloads"])
        at["workloads"][0]["traffic"]["rates"] = [s.max_rate_at_slo_rps]
        s = next(iter(triage.evaluate(KV, at, analyse=False).evaluation.serving.values())).baseline
    x = s.rates[0]
    return float(x.output_tokens_per_s if tokens else x.throughput_rps)


def _predict_or_refusal(item: dict[str, Any]) -> float | str:
    try:
        return predict(item)
    except UserError as exc:
        return "the simulation refuses the system: " + str(exc).split(": ")[-1][:60]


def price() -> tuple[list[dict[str, Any]], Counter[str]]:
    """Every statable row with its prediction and error (predicted / published - 1), the rows simulated in one
    process per core (each row's simulation is its own)."""
    items, skipped = rows()
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        got = list(pool.map(_predict_or_refusal, items, chunksize=4))
    out = []
    for item, g in zip(items, got, strict=True):
        if isinstance(g, str):
            skipped[g] += 1
            continue
        want = float(item["row"]["value"])
        out.append({**item, "predicted": g, "error": g / want - 1 if want else math.nan})
    return out, skipped


def write_rows(priced: list[dict[str, Any]], path: Path) -> None:
    """Every priced row as CSV: its source and figure, the system it was stated as, the prediction, the error."""
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["source", "where", "scenario", "metric", "model", "hardware", "weights", "engine", "tp",
                      "replicas", "pp", "policy", "max_seqs", "tokens_an_iteration", "scheduler_steps", "published",
                      "predicted", "error"])
        for p in priced:
            r, w = p["row"], p["workloads"]
            s = w["workloads"][0]["scheduler"]
            out.writerow([r["source"], r["where"], r["scenario"], r["metric"], p["model"], p["hardware"],
                          w["defaults"]["precision"]["weights"], w["workloads"][0]["engine"], w["defaults"]["tp"],
                          s["replicas"], s["pp"], s["policy"], s["max_seqs"],
                          s.get("token_budget", s.get("max_batched_tokens", "")), s.get("scheduler_steps", 1),
                          r["value"], f"{p['predicted']:.6g}", f"{p['error']:+.4f}"])


def moe(model: str) -> bool:
    return bool(catalog.load().models[model].num_experts)


def vendor(hw: str) -> str:
    return "AMD" if hw.startswith("mi") else "NVIDIA"


def table(priced: list[dict[str, Any]]) -> list[tuple[str, int, float, float]]:
    """Median and max |error|: dense and MoE rows, then by scenario, chip vendor, and source x scenario (a source's
    rows at a rate below saturation are easy, MLPerf's at their bounds are not: the split says which is which)."""
    groups: dict[tuple[int, str], list[float]] = defaultdict(list)
    for p in priced:
        e = abs(p["error"])
        r = p["row"]
        for key in ((0, f"model class {'MoE' if moe(p['model']) else 'dense'}"), (1, f"scenario {r['scenario']}"),
                    (2, f"vendor {vendor(p['hardware'])}"), (3, f"{r['source']}, {r['scenario']}")):
            groups[key].append(e)
    return [(k[1], len(v), float(np.median(v)), float(np.max(v))) for k, v in sorted(groups.items())]
