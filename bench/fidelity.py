"""Fidelity: how far the cost model's layers are from published measurements (data/measurements/).

Run with:  .venv/bin/python bench/fidelity.py          (not part of the test suite)

Every corpus row whose model and hardware are in the catalog and whose formats and metric the calibration
can state is priced as a calibration row (a decode step, a prefill, or a whole generation), then predicted:

- theoretical: full efficiency, no fixed costs, no communication — a lower bound on every measured row;
- implementation: the shipped default efficiencies (and all-reduces);
- end-to-end: the same plus the shipped default fixed costs.

Then, with the calibration (per hardware): in sample; out of source (each engine's rows predicted from a
fit on the other engines' rows, each engine weighing as much as another); and half-and-half within an
engine (fit on every other row of the engine, test on the rest). A multi-GPU row is a tensor-parallel
group unless its engine splits by layers (stages in sequence) or by rows (left out: see LAYER_SPLIT).
Printed: the median and maximum absolute error per layer, phase, batch regime and tensor
parallelism, the rows where the theoretical layer is not a lower bound, and a peer's error on the same rows
(llm-analysis, when installed).
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import calibrate  # noqa: E402
from triage.errors import UserError  # noqa: E402
from triage.inputs import catalog  # noqa: E402

DATA = ROOT / "data" / "measurements"
FORMATS = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4"}
COMPUTE = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "int8"}
METRICS = {("decode", "tpot_s"): "tpot_s", ("decode", "tokens_per_s"): "tokens_per_s",
           ("prefill", "ttft_s"): "ttft_s", ("generation", "e2e_s"): "e2e_s",
           ("generation", "tokens_per_s"): "tokens_per_s"}


# models the corpus names by another name with the same shapes (layers, widths, heads, vocabulary): Llama 3.1 8B
# is Llama 3 8B's architecture (claims/configs/llama-3.1-8b-instruct.json against tests/configs/llama-3-8b.json:
# 32 layers, hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocabulary 128256; only RoPE scaling and the window
# differ)
SAME_SHAPE = (("3.1 8b", "llama-3-8b"), ("3.1-8b", "llama-3-8b"))


def _model(r: dict[str, str]) -> str:
    if r["model"]:
        return r["model"]
    name = r["hf_model"].lower().replace("llama v3", "llama 3").replace("llama-v3", "llama 3")
    return next((m for key, m in SAME_SHAPE if key in name), "")


# how an engine spreads a model over several GPUs when the row does not say: ExLlamaV2 fills one GPU's
# allocation with modules in order, then the next ("Advance current_idx until module fits in allocation",
# turboderp/exllamav2 exllamav2/model.py `set_device_map`, commit 00ab0084): a layer split, the stages in
# sequence. llama.cpp before ggml-org/llama.cpp#4606 (merged January 2024; the llm-perf-bench rows pin commit
# 9476b01 of 2023-10-02) split each weight matrix by rows and gathered every product on the main GPU: neither
# tensor parallelism nor a pipeline, so those rows are left out (counted as such).
LAYER_SPLIT = {"exllamav2"}
ROW_SPLIT = {"llama.cpp"}


def rows(left_out: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """The corpus rows the calibration can state, as calibration rows (plus their engine and source); the rows
    left out for a split the model does not price are counted in ``left_out``."""
    cat = catalog.load()
    out = []
    for f in sorted(DATA.glob("*.csv")):
        for r in csv.DictReader(f.read_text(encoding="utf-8").splitlines()):
            key = METRICS.get((r["phase"], r["metric"]))
            weights = FORMATS.get(r["weights"] or "bf16")
            # a KV format the source does not state: the most favourable it allows (an fp8 engine's fp8 cache),
            # so the theoretical layer stays a bound
            kv = FORMATS.get(r["kv"] or ("fp8" if r["weights"] == "fp8" else "bf16"))
            model = _model(r)
            if not key or not weights or not kv or model not in cat.models or r["hardware"] not in cat.hardware:
                continue
            prompt = int(r["prompt_tokens"] or 0)
            output = int(r["output_tokens"] or 0)
            if r["phase"] == "generation" and not output or r["phase"] == "prefill" and not prompt:
                continue
            notes = r["notes"].lower()
            if not r["batch"] or "request rate" in notes or "queueing" in notes:
                continue                  # a batch the source does not state, or a serving number (queueing)
            gpus = int(r["gpus"] or 1)
            if gpus > 1 and r["engine"] in ROW_SPLIT:
                if left_out is not None:
                    left_out["llama.cpp row split (a gather to the main GPU after every product)"] += 1
                continue
            layer_split = gpus > 1 and r["engine"] in LAYER_SPLIT
            # a decode row's context: the prompt plus half the output, the mean over its steps
            context = prompt + output // 2 if r["phase"] == "decode" else prompt
            out.append({"model": model, "hardware": r["hardware"], "phase": r["phase"],
                        "context": str(max(context, 1)), "batch": r["batch"] or "1",
                        "tp": "1" if layer_split else str(gpus), "pipeline": str(gpus) if layer_split else "1",
                        "weights": weights, "kv": kv, "compute": COMPUTE.get(r["compute"] or "bf16", "bf16"),
                        "output_tokens": str(output) if output else "",
                        key: r["value"], "source": f"{f.name}", "engine": r["engine"]})
    return out


# a peer on the same rows: llm-analysis (PyPI, `pip install llm-analysis`; not a dependency of triage) under
# its own default efficiencies, where it knows the model and the chip (its model and GPU configuration names)
PEER_MODELS = {"llama-2-7b": "NousResearch_Llama-2-7b-hf", "llama-2-70b": "upstage_Llama-2-70b-instruct-v2",
               "opt-6.7b": "facebook_opt-6.7b", "opt-175b": "facebook_opt-175b"}
PEER_GPUS = {"a100-80gb": "a100-sxm-80gb", "a100-40gb": "a100-sxm-40gb", "h100-sxm": "h100-sxm-80gb",
             "h100-pcie": "h100-pcie-80gb", "a10g": "a10g-pcie-24gb", "rtx-a6000": "a6000-48gb",
             "v100-sxm2-32gb": "v100-sxm-32gb"}
PEER_DTYPES = {"bf16": "w16a16e16", "fp16": "w16a16e16", "int8": "w8a16e16", "int4": "w4a16e16"}


def peer(group: list[calibrate.Row]) -> tuple[list[float], list[float]] | None:
    """llm-analysis's relative errors on the rows it can state, and triage's shipped-defaults errors on the same
    rows (None when llm-analysis is not installed)."""
    try:
        from llm_analysis.analysis import infer
    except ImportError:
        return None
    theirs: list[float] = []
    stated: list[calibrate.Row] = []
    defaults = {k: calibrate.defaults()[k] for k in ("bandwidth", "compute")}
    for r in group:
        s = r.spec
        names = (PEER_MODELS.get(s["model"]), PEER_GPUS.get(s["hardware"]), PEER_DTYPES.get(s["weights"]))
        if None in names or s.get("compute", "bf16") not in ("bf16", "fp16"):
            continue
        prompt, output, batch = int(s["context"]), int(s["output_tokens"] or 1), int(s["batch"])
        try:
            out = infer(model_name=names[0], gpu_name=names[1], dtype_name=names[2], batch_size_per_gpu=batch,
                        tp_size=int(s["tp"]), seq_len=prompt, num_tokens_to_generate=output, log_level="ERROR")
        except (AssertionError, ValueError, ZeroDivisionError):
            continue                            # the peer refuses the configuration (memory, shapes)
        predicted = {"decode": out["decode_latency"], "prefill": out["prefill_latency"],
                     "generation": out["total_latency"]}[s["phase"]]
        theirs.append(predicted / r.measured_s - 1.0)
        stated.append(r)
    return theirs, errors(stated, defaults) if stated else []


def priced() -> tuple[list[calibrate.Row], dict[str, int]]:
    """The statable rows priced, and the rows left out by reason."""
    cat = catalog.load()
    out = []
    left_out: dict[str, int] = defaultdict(int)
    for n, raw in enumerate(rows(left_out)):
        try:
            row = calibrate.price({k: v for k, v in raw.items() if k != "engine"}, raw["source"], n, cat)
        except UserError:
            left_out["the configuration does not fit the stated GPUs"] += 1
            continue
        row.spec["engine"] = raw["engine"]
        out.append(row)
    return out, left_out


def errors(group: list[calibrate.Row], params: dict[str, float], comm: bool = True) -> list[float]:
    pred = calibrate.predict(group, params, comm=comm)
    return [float(p / r.measured_s - 1.0) for p, r in zip(pred, group, strict=True)]


def errors_by_hardware(group: list[calibrate.Row], params: dict[str, dict[str, float]]) -> list[float]:
    """Relative errors, each row at its chip's parameters (the defaults for a chip without), one vectorized
    prediction per chip."""
    by_hw: dict[str, list[calibrate.Row]] = defaultdict(list)
    for r in group:
        by_hw[r.spec["hardware"]].append(r)
    return [e for hw, rows in by_hw.items() for e in errors(rows, params.get(hw, calibrate.defaults()))]


def fitted(train: list[calibrate.Row], balance: bool = False) -> dict[str, dict[str, float]]:
    """Parameters per hardware fitted on ``train`` (the defaults where too few rows); ``balance``: each engine's
    rows weigh as much as another's together (one source's hundred rows do not outvote another's ten)."""
    by_hw: dict[str, list[calibrate.Row]] = defaultdict(list)
    for r in train:
        by_hw[r.spec["hardware"]].append(r)
    out = {}
    for hw, g in by_hw.items():
        count = {e: sum(r.spec["engine"] == e for r in g) for e in {r.spec["engine"] for r in g}}
        weights = np.array([1.0 / count[r.spec["engine"]] for r in g]) if balance else None
        out[hw] = calibrate.fit(g, weights) or calibrate.defaults()
    return out


def summary(name: str, errs: list[float]) -> str:
    if not errs:
        return f"  {name:<44} —"
    a = [abs(e) for e in errs]
    bias = statistics.median(errs)
    return (f"  {name:<44} n={len(errs):>4}  median |err| {statistics.median(a):6.1%}  max {max(a):7.1%}  "
            f"median bias {bias:+6.1%}")


def regime(r: calibrate.Row) -> str:
    b = int(r.spec["batch"])
    return "batch 1" if b == 1 else "batch 2-16" if b <= 16 else "batch > 16"


def main() -> None:
    group, left_out = priced()
    print(f"corpus rows the model can state: {len(group)} (of {sum(1 for _ in DATA.glob('*.csv'))} files; left out: "
          + "; ".join(f"{n} {why}" for why, n in sorted(left_out.items())) + ")")
    engines = sorted({r.spec["engine"] for r in group})
    print("engines:", ", ".join(f"{e} {sum(r.spec['engine'] == e for r in group)}" for e in engines))
    ones = {"bandwidth": 1.0, "compute": 1.0}
    theo = errors(group, ones, comm=False)
    impl = errors(group, {"bandwidth": calibrate.defaults()["bandwidth"], "compute": calibrate.defaults()["compute"]})
    e2e = errors(group, calibrate.defaults())
    print("\nlayers, shipped defaults:")
    for name, errs in (("theoretical", theo), ("implementation", impl), ("end-to-end", e2e)):
        print(summary(name, errs))
    above = [(r, e) for r, e in zip(group, theo, strict=True) if e > 1e-9]
    print(f"  theoretical above the measurement (not a lower bound): {len(above)} of {len(group)} rows")
    for r, e in above[:8]:
        print(f"    {r.spec['source']}: {r.spec['model']} {r.spec['hardware']} {r.spec['phase']} batch "
              f"{r.spec['batch']} tp {r.spec['tp']}: {e:+.1%}")

    compared = peer(group)
    if compared is None:
        print("  peer: llm-analysis is not installed (pip install llm-analysis) — no comparison")
    else:
        print(summary("peer llm-analysis, the rows it can state", compared[0]))
        print(summary("triage implementation, the same rows", compared[1]))

    print("\nimplementation layer by phase, batch and tp (shipped defaults):")
    for label, key in (("phase", lambda r: r.spec["phase"]), ("batch", regime),
                       ("tp", lambda r: "tp 1" if int(r.spec["tp"]) == 1 else "tp > 1")):
        for value in sorted({key(r) for r in group}):
            print(summary(f"{label}: {value}", [e for r, e in zip(group, impl, strict=True) if key(r) == value]))

    profiles = catalog.load().engines
    by_profile: dict[tuple[str, str], list[calibrate.Row]] = defaultdict(list)
    for r in group:
        by_profile[(r.spec["engine"], r.spec["hardware"])].append(r)
    shipped = [e for (engine, hw), rows in by_profile.items()
               for e in errors(rows, profiles[engine].values(hw) if engine in profiles else calibrate.defaults())]
    print(summary("end-to-end, the shipped engine profiles (in sample)", shipped))

    print("\ncalibrated per hardware:")
    params = fitted(group)
    print(summary("in sample", errors_by_hardware(group, params)))
    held: list[float] = []
    halves: list[float] = []
    for engine in engines:
        train = [r for r in group if r.spec["engine"] != engine]
        test = [r for r in group if r.spec["engine"] == engine]
        p = fitted(train, balance=True)
        e = errors_by_hardware(test, p)
        held += e
        print(summary(f"out of source: {engine} held out", e))
        a, b = test[::2], test[1::2]
        if len(a) >= 3 and b:
            pa = fitted(a)
            halves += errors_by_hardware(b, pa)
    print(summary("out of source, all engines held out in turn", held))
    print(summary("half of each engine's rows -> the other half", halves))


if __name__ == "__main__":
    main()
