"""Fidelity: how far the cost model's layers are from published measurements (data/measurements/), on sources
the fit never saw.

Run with:  .venv/bin/python bench/fidelity.py          (not part of the test suite)

Every corpus row whose model and hardware are in the catalog and whose formats and metric the calibration
can state is priced as a calibration row (a decode step, a prefill, or a whole generation). Held out source by
source (each file of data/measurements/ in turn; nothing fitted on the rows it predicts), the layers are:

- theoretical: full efficiency, no fixed costs, no communication — a lower bound on every measured row;
- implementation: the corpus default's efficiencies (and all-reduces), no fixed costs;
- end-to-end, no engine named: the corpus default — one fit over the other sources, each source weighing as
  much as another (bench/profiles.py) — efficiencies and fixed costs;
- end-to-end, engine profiles: each engine's profile fitted on the other sources (its chip entry where the row
  lies in that entry's range, else its default), the corpus default for an engine the other sources lack.

Peers on the same rows: llm-analysis (PyPI, when installed) at its own default efficiencies, and LLM-Viewer
(bench/peers/llm_viewer.py, its method reproduced offline) as published (no derating) and derated to the
implementation layer's efficiencies. Printed per layer, then by phase, batch regime, weight format and tensor
parallelism; then the shipped files in sample (engines.yaml as shipped, calibration per hardware) for comparison.
A multi-GPU row is a tensor-parallel group unless its engine splits by layers (stages in sequence) or by rows
(left out: see LAYER_SPLIT).

Speedup fidelity (issue 43; `--only speedups` prints it alone): for every card whose paper reports a speedup in a
setting triage prices end to end (claims/, examples/cards/ and the blind hindsight cards, whose adoption labels it
never reads), the paper check's own prediction there (PaperCheck.predicted: the memo's pricing at the setting's
batch and context) against the paper's measurement, median and worst of |predicted / measured - 1|, by direction.
"""

from __future__ import annotations

import csv
import math
import os
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import calibrate  # noqa: E402
from triage.errors import UserError  # noqa: E402
from triage.inputs import catalog  # noqa: E402
from triage.inputs.calibration_rows import step_row  # noqa: E402
from triage.inputs.measurements import Record  # noqa: E402

from bench import profiles  # noqa: E402
from bench.peers import llm_viewer  # noqa: E402

DATA = ROOT / "data" / "measurements"
FORMATS = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4"}
COMPUTE = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8", "int8": "int8"}
# the corpus metric -> the calibration's column (a prefill's prompt tokens/s is the batch's prompt tokens over the
# prefill's time, as the calibration reads a prefill row's tokens_per_s)
METRICS = {("decode", "tpot_s"): "tpot_s", ("decode", "tokens_per_s"): "tokens_per_s",
           ("prefill", "ttft_s"): "ttft_s", ("prefill", "prompt_tokens_per_s"): "tokens_per_s",
           ("generation", "e2e_s"): "e2e_s", ("generation", "tokens_per_s"): "tokens_per_s"}


# models the corpus names by the source's own name, matched on the name with spaces, hyphens and "v" versions
# unified ("LLaMA v3.1 70B", "amd/Llama-3.1-70B-Instruct-FP8-KV" -> "llama 3.1 70b"): the catalog's entry, or
# one with the same shapes. The Llama 3.1 8B, 70B and 405B, GPT-J 6B and InternLM 20B entries cite their
# config.json in triage/inputs/catalog/models.yaml; Llama 3.3 70B cites a recipe table of its shapes.
NAMES = (("llama 3.1 8b", "llama-3.1-8b"), ("llama 3.1 70b", "llama-3.1-70b"), ("llama 3.1 405b", "llama-3.1-405b"),
         ("llama 3.3 70b", "llama-3.3-70b"),
         ("gpt j 6b", "gpt-j-6b"), ("internlm 20b", "internlm-20b"))


def _model(r: dict[str, str]) -> str:
    if r["model"]:
        return r["model"]
    name = re.sub(r"[\s_/-]+", " ", r["hf_model"].lower()).replace(" v3", " 3")
    return next((m for key, m in NAMES if key in name), "")


# how an engine spreads a model over several GPUs when the row does not say: ExLlamaV2 fills one GPU's
# allocation with modules in order, then the next ("Advance current_idx until module fits in allocation",
# turboderp/exllamav2 exllamav2/model.py `set_device_map`, commit 00ab0084): a layer split, the stages in
# sequence. llama.cpp before ggml-org/llama.cpp#4606 (merged January 2024; the llm-perf-bench rows pin commit
# 9476b01 of 2023-10-02) split each weight matrix by rows and gathered every product on the main GPU: neither
# tensor parallelism nor a pipeline, so those rows are left out (counted as such). A row whose notes say
# "(a layer split)" is one whatever its engine (AutoAWQ loads with accelerate's balanced device map: whole
# layers on each GPU, run in sequence).
LAYER_SPLIT = {"exllamav2"}
# a serving figure, not a static batch: requests arriving at a rate, queueing, or a client issuing every request
# at once to a continuously batching server (max-load throughput): priced by bench/serving.py, not here
SERVING = ("request rate", "under load", "(includes queueing)", "infinite rate", "max-load")
ROW_SPLIT = {"llama.cpp"}


def rows(left_out: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """The corpus rows the calibration can state, as calibration rows (plus their engine and source); the rows
    left out for a split the model does not price are counted in ``left_out``."""
    cat = catalog.load()
    out = []
    seen: dict[tuple[str, ...], list[tuple[str, str, float]]] = {}
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
            if not r["batch"] or any(w in notes for w in SERVING):
                continue                  # a batch the source does not state, or a serving number (queueing)
            if r["phase"] == "prefill" and "concurrent requests" in notes:
                # the mean first-token latency of N requests issued together depends on how the engine schedules
                # their prefills (one batch, one at a time, chunks): a serving figure, not a batch-N prefill
                if left_out is not None:
                    left_out["the first-token latency of concurrent requests (a scheduling figure)"] += 1
                continue
            # one measurement counted once: the same configuration in another unit (seconds and tokens/s) or the
            # same row repeated in a source (a source quoting another's figure: priced() below). Two techniques
            # in one format (int4 by GPTQ and by AWQ) or two runs are two measurements.
            same = (r["engine"], r["engine_version"], r["hf_model"], model, r["hardware"], r["gpus"], weights, kv,
                    r["compute"], r["phase"], r["batch"], r["prompt_tokens"], r["output_tokens"])
            earlier = seen.setdefault(same, [])
            value = float(r["value"])
            why = ("the same measurement in another unit" if any(f2 == f.name and m != r["metric"]
                                                                  for f2, m, _ in earlier) else
                   "a row repeated in its source" if (f.name, r["metric"], value) in earlier else "")
            if why:
                if left_out is not None:
                    left_out[why] += 1
                continue
            earlier.append((f.name, r["metric"], value))
            gpus = int(r["gpus"] or 1)
            if gpus > 1 and r["engine"] in ROW_SPLIT:
                if left_out is not None:
                    left_out["llama.cpp row split (a gather to the main GPU after every product)"] += 1
                continue
            layer_split = gpus > 1 and (r["engine"] in LAYER_SPLIT or "(a layer split)" in notes)
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


def peer(group: list[calibrate.Row]) -> tuple[list[int], list[float]] | None:
    """The rows llm-analysis can state (indices into ``group``) and its relative errors on them (None when
    llm-analysis is not installed)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")     # its tokenizer library's note on PyTorch
    try:
        from llm_analysis.analysis import infer
    except ImportError:
        return None
    theirs: list[float] = []
    stated: list[int] = []
    for i, r in enumerate(group):
        s = r.spec
        names = (PEER_MODELS.get(s.model), PEER_GPUS.get(s.hardware), PEER_DTYPES.get(s.weights))
        if None in names or (s.compute or "bf16") not in ("bf16", "fp16") or int(s.pipeline) > 1:
            continue
        output, batch = int(s.output_tokens or 1), int(s.batch)
        # the row's prompt (a decode row is priced at prompt + output/2; llm-analysis prices its KV at its
        # seq_len + num_tokens_to_generate itself)
        prompt = max(int(s.context) - (int(s.output_tokens or 0) // 2 if s.phase == "decode" else 0), 1)
        try:
            out = infer(model_name=names[0], gpu_name=names[1], dtype_name=names[2], batch_size_per_gpu=batch,
                        tp_size=int(s.tp), seq_len=prompt, num_tokens_to_generate=output, log_level="ERROR")
        except (AssertionError, ValueError, ZeroDivisionError):
            continue                            # the peer refuses the configuration (memory, shapes)
        predicted = {"decode": out["decode_latency"], "prefill": out["prefill_latency"],
                     "generation": out["total_latency"]}[s.phase]
        theirs.append(predicted / r.measured_s - 1.0)
        stated.append(i)
    return stated, theirs


def priced() -> tuple[list[calibrate.Row], dict[str, int]]:
    """The statable rows priced, and the rows left out by reason."""
    cat = catalog.load()
    out = []
    left_out: dict[str, int] = defaultdict(int)
    quoted: dict[tuple[object, ...], str] = {}          # a figure -> the first source that states it
    for n, raw in enumerate(rows(left_out)):
        try:
            row = calibrate.price(step_row(Record(raw["source"], n, dict(raw)), cat), cat)
        except UserError:
            left_out["the configuration does not fit the stated GPUs"] += 1
            continue
        # a source quoting another's figure (the same configuration and time, to 4 significant figures, in another
        # file: lmdeploy's docs quote MLC's blog, AMD's pages one another): priced once, else the copy would train
        # the fit that predicts the original when its source is held out
        s = row.spec
        figure = (s.engine, s.model, s.hardware, s.tp, s.pipeline, s.weights, s.phase, s.batch,
                  s.context, s.output_tokens, float(f"{row.measured_s:.4g}"))
        if quoted.setdefault(figure, s.source) != s.source:
            left_out["another source's figure quoted"] += 1
            continue
        out.append(row)
    return out, left_out


def errors(group: list[calibrate.Row], params: dict[str, float], comm: bool = True) -> list[float]:
    pred = calibrate.predict(group, params, comm=comm)
    return [float(p / r.measured_s - 1.0) for p, r in zip(pred, group, strict=True)]


def errors_each(group: list[calibrate.Row], params_of: Callable[[calibrate.Row], dict[str, float]]) -> list[float]:
    """Relative errors in ``group``'s order, each row at its own parameters: one vectorized prediction per distinct
    set of parameters, not one per row."""
    sets: dict[tuple[tuple[str, float], ...], list[int]] = defaultdict(list)
    chosen = [params_of(r) for r in group]
    for i, params in enumerate(chosen):
        sets[tuple(sorted(params.items()))].append(i)
    out = [0.0] * len(group)
    for idx in sets.values():
        for i, e in zip(idx, errors([group[i] for i in idx], chosen[idx[0]]), strict=True):
            out[i] = e
    return out


def errors_by_hardware(group: list[calibrate.Row], params: dict[str, dict[str, float]]) -> list[float]:
    """Relative errors, each row at its chip's parameters (the defaults for a chip without)."""
    return errors_each(group, lambda r: params.get(r.spec.hardware, calibrate.defaults()))


def fitted(train: list[calibrate.Row], balance: bool = False) -> dict[str, dict[str, float]]:
    """Parameters per hardware fitted on ``train`` (the defaults where too few rows); ``balance``: each engine's
    rows weigh as much as another's together (one source's hundred rows do not outvote another's ten)."""
    by_hw: dict[str, list[calibrate.Row]] = defaultdict(list)
    for r in train:
        by_hw[r.spec.hardware].append(r)
    out = {}
    for hw, g in by_hw.items():
        count = {e: sum(r.spec.engine == e for r in g) for e in {r.spec.engine for r in g}}
        weights = np.array([1.0 / count[r.spec.engine] for r in g]) if balance else None
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
    b = int(r.spec.batch)
    return "batch 1" if b == 1 else "batch 2-16" if b <= 16 else "batch > 16"


def _predicted(train: list[calibrate.Row], rows: list[calibrate.Row], pulls: tuple[float, ...]
               ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """``rows``' relative errors from fits on ``train`` alone: 'implementation', 'defaults' (the corpus default),
    and f'profiles {pull}' for each pull (the engine profiles pulled toward the level above with it); and the
    implementation's efficiencies. The corpus default is fitted once, whatever the pulls."""
    default = profiles.corpus_default(train).params
    own = {k: default[k] for k in ("bandwidth", "compute")}
    out = {"implementation": errors(rows, own), "defaults": errors(rows, default)}
    for pull in pulls:
        fits = profiles.fit(train, default, pull)
        out[f"profiles {pull:g}"] = errors_each(rows, lambda r, f=fits, d=default: profiles.chosen(r, f, d))
    return out, own


def _folds(group: list[calibrate.Row]) -> Iterator[tuple[list[calibrate.Row], list[int]]]:
    """Each source in turn: the other sources' rows, and the indices of its own."""
    for source in sorted({r.spec.source for r in group}):
        yield ([r for r in group if r.spec.source != source],
               [i for i, r in enumerate(group) if r.spec.source == source])


def held_out(group: list[calibrate.Row], pulls: tuple[float, ...] = (profiles.PROFILE_PULL,)
             ) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    """Each layer's relative error on every row (in ``group``'s order), every source predicted from a fit on the
    others (_predicted's layers; 'profiles' is the first pull's); and each row's implementation efficiencies
    (its fold's)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(group))
    efficiencies: list[dict[str, float]] = [{}] * len(group)
    for train, test in _folds(group):
        layers, own = _predicted(train, [group[i] for i in test], pulls)
        for name, errs in layers.items():
            for i, e in zip(test, errs, strict=True):
                out[name][i] = e
        for i in test:
            efficiencies[i] = own
    out["profiles"] = out[f"profiles {pulls[0]:g}"]
    return dict(out), efficiencies


def _median_abs(errs: list[float]) -> float:
    return statistics.median(abs(e) for e in errs)


def chosen_pull(group: list[calibrate.Row]) -> float:
    """The pull among profiles.PULLS whose engine profiles predict ``group``'s sources best, each held out (the
    weakest within profiles.PULL_TIE of the best)."""
    held = held_out(group, profiles.PULLS)[0]
    error = {p: _median_abs(held[f"profiles {p:g}"]) for p in profiles.PULLS}
    return min(p for p in profiles.PULLS if error[p] <= min(error.values()) + profiles.PULL_TIE)


def nested(group: list[calibrate.Row]) -> tuple[list[float], dict[float, int]]:
    """The engine profiles' error on every row with the pull itself chosen without the row's source: for each
    source, the pull the other sources choose (leave one of them out in turn), then the profiles at that pull
    fitted on them; and how many folds chose each pull."""
    out = [0.0] * len(group)
    picks: dict[float, int] = {}
    for train, test in _folds(group):
        pull = chosen_pull(train)
        picks[pull] = picks.get(pull, 0) + 1
        errs = _predicted(train, [group[i] for i in test], (pull,))[0][f"profiles {pull:g}"]
        for i, e in zip(test, errs, strict=True):
            out[i] = e
    return out, picks


def viewer(group: list[calibrate.Row], efficiencies: list[dict[str, float]]) -> list[tuple[float, float]]:
    """LLM-Viewer's relative error on each row, as published and derated to the row's ``efficiencies`` (NaN where
    it cannot state the row: a layer split)."""
    cat = catalog.load()
    bits = {"fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
    out = []
    for r, eff in zip(group, efficiencies, strict=True):
        s = r.spec
        if int(s.pipeline) > 1:
            out.append((math.nan, math.nan))
            continue
        m, hw = cat.models[s.model], cat.hardware[s.hardware]
        compute = (s.compute or "bf16")
        a_bits = 8 if compute in ("fp8", "int8") else 16
        phase = s.phase
        shape = dict(layers=m.num_hidden_layers, hidden=m.hidden_size, heads=m.num_attention_heads,
                     kv_heads=m.num_key_value_heads, intermediate=m.intermediate_size, vocab=m.vocab_size,
                     gated_mlp=m.gated_mlp, batch=int(s.batch), prompt=int(s.context),
                     output=int(s.output_tokens or 0) if phase == "generation" else 0, phase=phase,
                     tp=int(s.tp), w_bits=bits[s.weights], a_bits=a_bits, kv_bits=bits[s.kv],
                     peak_flops=hw.peak("fp16"), bandwidth=hw.bandwidth_bytes_per_s,
                     peak_flops_int8=hw.peak("int8") if hw.has_peak("int8") else hw.peak("fp8")
                     if hw.has_peak("fp8") else None)
        steps = r.counts.sum() if phase == "decode" else 1.0      # a decode row: its steps' mean, as priced
        published = llm_viewer.latency(**shape) * steps
        derated = llm_viewer.latency(**shape, bandwidth_eff=eff["bandwidth"], compute_eff=eff["compute"]) * steps
        out.append((published / r.measured_s - 1.0, derated / r.measured_s - 1.0))
    return out


SPEEDUP_CARDS = ("claims", "examples/cards", "bench/hindsight/blind/cards")


def speedups() -> None:
    """The paper check's prediction in each card's own setting against the paper's measured speedup."""
    from triage.analysis import papercheck
    from triage.inputs import cards

    cat = catalog.load()
    pairs, skipped = [], defaultdict(int)
    for folder in SPEEDUP_CARDS:
        for path in sorted((ROOT / folder).glob("*.yaml")):
            try:
                claim = cards.load(path, cat)
                loaded = papercheck.load(claim, cat.merged({}, claim.models))
                check = loaded if isinstance(loaded, papercheck.PaperCheck) else papercheck.check(claim, loaded)
            except UserError:
                skipped["refused"] += 1
                continue
            if check.predicted is None or check.reported is None:
                skipped[check.no_bound or (f"scope {check.scope}" if check.scope in papercheck.SCOPES else
                                           f"metric {check.metric}" if check.metric == "memory" else
                                           "no prediction (another model's baseline)")] += 1
                continue
            # a named cause in the memo: the paper check's likely sources where the paper beats the bound, the
            # prediction-above and prediction-below notices where triage predicts more, or under half
            named = bool(check.likely_sources) or check.predicted_above or check.predicted_below
            pairs.append((f"{Path(folder).name}/{path.stem}", check.predicted, check.reported, named))
    errs = [p / m - 1.0 for _, p, m, _ in pairs]
    print(f"\nspeedup fidelity: {len(pairs)} cards whose paper reports a speedup in a setting priced end to end "
          f"(left out: " + "; ".join(f"{n} {why}" for why, n in sorted(skipped.items())) + ")")
    if not pairs:
        return
    above = sorted((e, name, p, m, n) for (name, p, m, n), e in zip(pairs, errs, strict=True) if e > 0)
    below = sorted((e, name, p, m, n) for (name, p, m, n), e in zip(pairs, errs, strict=True) if e <= 0)
    far = [n for (_, _, _, n), e in zip(pairs, errs, strict=True) if abs(e) > 0.5]
    print(f"  median |predicted / measured - 1| {statistics.median(abs(e) for e in errs):.1%}; "
          f"{len(above)} predicted above the paper, {len(below)} at or below; {len(far)} beyond 50 %, "
          f"{sum(far)} of them with a named cause in the memo (the paper check's likely sources, or the "
          f"prediction-above or prediction-below notice)")
    for label, side in (("above", above[::-1]), ("below", below)):
        for e, name, p, m, n in side[:5]:
            print(f"    {label}: {name}: predicted {p:.2f}x, measured {m:.2f}x ({e:+.1%})"
                  + ("" if abs(e) <= 0.5 or n else ": no cause named"))


def main() -> None:
    if sys.argv[1:] == ["--only", "speedups"]:
        speedups()
        return
    group, left_out = priced()
    sources = sorted({r.spec.source for r in group})
    print(f"corpus rows the model can state: {len(group)} from {len(sources)} sources (of "
          f"{sum(1 for _ in DATA.glob('*.csv'))} files; left out: "
          + "; ".join(f"{n} {why}" for why, n in sorted(left_out.items())) + ")")
    engines = sorted({r.spec.engine for r in group})
    print("engines:", ", ".join(f"{e} {sum(r.spec.engine == e for r in group)}" for e in engines))

    theo = errors(group, {"bandwidth": 1.0, "compute": 1.0}, comm=False)
    above = [(r, e) for r, e in zip(group, theo, strict=True) if e > 1e-9]
    print(f"\ntheoretical layer (the roofline alone): median |err| {statistics.median(abs(e) for e in theo):.1%}; "
          f"above the measurement (not a lower bound): {len(above)} of {len(group)} rows")
    for r, e in above[:8]:
        print(f"    {r.spec.source}: {r.spec.model} {r.spec.hardware} {r.spec.phase} batch "
              f"{r.spec.batch} tp {r.spec.tp}: {e:+.1%}")

    others = tuple(p for p in profiles.PULLS if p != profiles.PROFILE_PULL)
    held, eff = held_out(group, (profiles.PROFILE_PULL, *others))
    print("\nleave one source out (every source predicted from fits on the others):")
    print(summary("implementation (corpus default efficiencies)", held["implementation"]))
    print(summary("end-to-end, no engine named (corpus default)", held["defaults"]))
    print(summary("end-to-end, engine profiles", held["profiles"]))
    prefill = [i for i, r in enumerate(group) if r.spec.phase == "prefill"]
    print(summary("end-to-end, engine profiles: prefill/TTFT rows", [held["profiles"][i] for i in prefill]))
    print(summary("end-to-end, no engine named: prefill/TTFT rows", [held["defaults"][i] for i in prefill]))
    for pull in others:
        other = held[f"profiles {pull:g}"]
        print(f"    engine profiles pulled {pull:g} instead of {profiles.PROFILE_PULL:g}: median |err| "
              f"{_median_abs(other):.1%}, prefill {_median_abs([other[i] for i in prefill]):.1%}")
    inner, picks = nested(group)
    print(summary("engine profiles, the pull chosen in each fold", inner))
    print(summary("  the same, prefill/TTFT rows", [inner[i] for i in prefill])
          + "   (pulls chosen: " + ", ".join(f"{p:g} by {n} folds" for p, n in sorted(picks.items())) + ")")

    print("\npeers on the same rows (each against triage's held-out layers on exactly the rows it states):")
    compared = peer(group)
    if compared is None:
        print("  llm-analysis is not installed (pip install llm-analysis): no comparison")
    else:
        idx, theirs = compared
        print(summary("llm-analysis, its default efficiencies", theirs))
        print(summary("  triage, no engine named, same rows", [held["defaults"][i] for i in idx]))
        print(summary("  triage, engine profiles, same rows", [held["profiles"][i] for i in idx]))
    lv = viewer(group, eff)
    stated = [i for i, (e, _) in enumerate(lv) if not math.isnan(e)]
    print(summary("LLM-Viewer as published (no derating)", [lv[i][0] for i in stated]))
    print(summary("LLM-Viewer derated to the implementation's", [lv[i][1] for i in stated]))
    print(summary("  triage, no engine named, same rows", [held["defaults"][i] for i in stated]))
    print(summary("  triage, engine profiles, same rows", [held["profiles"][i] for i in stated]))

    print("\nheld out, by phase, batch, weight format and tp (engine profiles | no engine named):")
    for label, key in (("phase", lambda r: r.spec.phase), ("batch", regime),
                       ("weights", lambda r: r.spec.weights),
                       ("tp", lambda r: "tp 1" if int(r.spec.tp) == 1 else "tp > 1")):
        for value in sorted({key(r) for r in group}):
            rows_ = [i for i, r in enumerate(group) if key(r) == value]
            print(summary(f"{label}: {value}", [held["profiles"][i] for i in rows_])
                  + f"   | {statistics.median(abs(held['defaults'][i]) for i in rows_):6.1%}")
    print("\nheld out, by source (engine profiles):")
    for source in sources:
        print(summary(source, [held["profiles"][i] for i, r in enumerate(group) if r.spec.source == source]))

    print("\nin sample, for comparison:")
    shipped_defaults = calibrate.defaults()
    print(summary("workload defaults as shipped (workloads.yaml)", errors(group, shipped_defaults)))
    cat_profiles = catalog.load().engines

    def shipped(r: calibrate.Row) -> dict[str, float]:
        p = cat_profiles.get(r.spec.engine)
        if p is None:
            return shipped_defaults
        span = p.ranges.get(r.spec.hardware)
        return p.values(r.spec.hardware, span is None or profiles.in_range(r, span))
    print(summary("engine profiles as shipped (engines.yaml)", errors_each(group, shipped)))
    params = fitted(group)
    print(summary("calibrated per hardware, in sample", errors_by_hardware(group, params)))
    halves: list[float] = []
    for engine in engines:
        test = [r for r in group if r.spec.engine == engine]
        a, b = test[::2], test[1::2]
        if len(a) >= 3 and b:
            halves += errors_by_hardware(b, fitted(a))
    print(summary("half of each engine's rows -> the other half", halves))
    speedups()


if __name__ == "__main__":
    main()
