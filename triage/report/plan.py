"""The verification plan every memo ends with: the A/B to run, as commands where a standard tool exists.

The course's safeguard (module 12.4 §5.4): fixed batch, lengths and hardware;
a quality gate at 99 % of the fp16 baseline; needle-in-a-haystack where the
claim touches KV or attention and a workload is long-context; roll back if any
check fails.
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePath
from typing import Any

import numpy as np

from ..analysis.evaluation import Evaluation
from ..defaults import LIMITS

# lm-evaluation-harness task names (lm_eval/tasks/*, tag v0.4.9.2, commit ad3f4d0) for the names cards give in
# quality.evaluated_on; a name not here has no harness task and is named in the step instead
LM_EVAL_TASKS = {"wikitext": "wikitext", "wikitext2": "wikitext", "wikitext2-perplexity": "wikitext",
                 "mmlu": "mmlu", "mmlu-pro": "mmlu_pro", "gsm8k": "gsm8k", "hellaswag": "hellaswag", "piqa": "piqa",
                 "winogrande": "winogrande", "arc-easy": "arc_easy", "arc-challenge": "arc_challenge",
                 "lambada": "lambada_openai", "openbookqa": "openbookqa", "rte": "rte", "copa": "copa",
                 "truthfulqa": "truthfulqa_mc2", "humaneval": "humaneval", "mbpp": "mbpp", "longbench": "longbench",
                 "ruler": "ruler", "bbh": "bbh", "drop": "drop", "coqa": "coqa", "triviaqa": "triviaqa",
                 "boolq": "boolq", "math": "minerva_math", "c4": "c4", "c4-perplexity": "c4"}
DEFAULT_TASKS = "wikitext,hellaswag,gsm8k"      # where the card names none the harness has
UNSAFE_TASKS = ("humaneval",)                   # runs generated code: lm_eval asks --confirm_run_unsafe_code
# RULER's needle-in-a-haystack tasks as lm-evaluation-harness ships them (lm_eval/tasks/ruler/, v0.4.9.2), the
# lengths through --metadata max_seq_lengths (its ruler/README.md)
NIAH_TASKS = ("niah_single_1,niah_single_2,niah_single_3,niah_multikey_1,niah_multikey_2,niah_multikey_3,"
              "niah_multivalue,niah_multiquery")


def _hf_id(model: Any) -> str:
    """What `vllm bench serve --model` and lm_eval's ``pretrained=`` take for a model: the Hugging Face repository
    its catalog entry cites (Model.hf_repo); for a model read from a local config.json (its key is the file's
    path), the folder holding it, as vLLM serves a folder of config and weights, not a file — or $MODEL, to be
    set, where the file is not named config.json (its folder need not be a model's); else the catalog key."""
    if model.key.endswith(".json"):
        path = PurePath(model.key)
        return str(path.parent) if path.name == "config.json" else "$MODEL"
    return str(model.hf_repo or model.key)


def _word(text: str) -> str:
    """One shell word: quoted, except a $VARIABLE the step asks the reader to set, kept expandable."""
    return f'"{text}"' if text == "$MODEL" else shlex.quote(text)


def _each(models: list[str], template: str) -> str:
    """``template`` (its model as {m}) for one model, or a shell loop over several."""
    if len(models) == 1:
        return template.replace("{m}", _word(models[0]))
    return f"for m in {' '.join(_word(x) for x in models)}; do {template.replace('{m}', '$m')}; done"


def plan(result: Evaluation, rerun: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Steps, each with what to do and a command (A/B commands for the first LIMITS.plan_cells cells); ``rerun``
    the `triage run` arguments of this evaluation, for the last step's comparison with the measurements."""
    m, claim = result.matrix, result.claim
    steps: list[dict[str, str]] = []
    # one A/B command per model × hardware, looping over its workloads (name, input length, output length,
    # concurrency, prompts): the same flags once, not once per cell
    runs: dict[tuple[str, str], dict[str, str]] = {}
    repos = {k: _hf_id(model) for k, model in enumerate(m.models)}      # once a model, not once a cell
    for i in range(min(len(m), LIMITS.plan_cells)):
        s = m.blocks[m.block_idx[i]]
        model_id, hw = repos[int(m.model_idx[i])], m.hardware[m.hardware_idx[i]]
        ctx, batch = int(m.context[i]), int(m.batch[i])
        out_len = s.output_tokens if m.decode[i] else 1
        runs.setdefault((model_id, hw.key), {})[f"{s.name} {ctx} {out_len} {batch} {max(64, 8 * batch)}"] = s.name
    for (model_id, hw_key), workloads in runs.items():
        # names from a workload file's catalog are the user's text: each quoted for the shell (a workload's
        # own name is letters, digits, '.', '_' and '-' by the schema, so `set -- $w` splits it as meant)
        loop = " ".join(f'"{w}"' for w in workloads)
        hw = shlex.quote(hw_key)
        cmd = (f"for w in {loop}; do set -- $w; for VARIANT in baseline claim; do "
               f"vllm bench serve --model {_word(model_id)} --dataset-name random --random-input-len $2 "
               f"--random-output-len $3 --max-concurrency $4 --num-prompts $5 --save-result --result-dir results "
               f"--result-filename $1-{hw}-$VARIANT.json --metadata workload=$1 {shlex.quote('hardware=' + hw_key)} "
               f"variant=$VARIANT; done; done")
        where = ("; set MODEL to the model's Hugging Face id or folder first (its config file alone cannot be "
                 "served)") if model_id == "$MODEL" else ""
        steps.append({"step": f"A/B on {hw_key} ({model_id}{where}): each workload at its batch and lengths, "
                              f"once on the baseline build and once on the claim's (start the matching server "
                              f"before each VARIANT); compare TPOT for decode workloads, TTFT for prefill ones "
                              f"({', '.join(dict.fromkeys(workloads.values()))})", "command": cmd})
    if len(m) > LIMITS.plan_cells:
        steps.append({"step": f"the A/B commands above cover the first {LIMITS.plan_cells} of {len(m):,} cells "
                              f"(limit plan_cells); run the same for the others (the JSON's cells)", "command": ""})
    gates = sorted({b.quality_gate for b in m.blocks})
    models = list(dict.fromkeys(repos.values()))
    named = [LM_EVAL_TASKS.get(t.lower()) for t in claim.evaluated_on]
    tasks = ",".join(dict.fromkeys(t for t in named if t)) or DEFAULT_TASKS
    unmapped = [t for t, n in zip(claim.evaluated_on, named, strict=True) if n is None]
    unsafe = " --confirm_run_unsafe_code" if any(t in UNSAFE_TASKS for t in tasks.split(",")) else ""
    steps.append({"step": f"quality gate: every task at ≥ {gates[0] * 100:g} % of the fp16 baseline's score, for "
                          f"both builds" + (f" (the card's {', '.join(unmapped)}: no lm-evaluation-harness task, run "
                                           f"with the paper's own harness)" if unmapped else ""),
                  "command": _each(models, f"lm_eval --model vllm --model_args pretrained={{m}} --tasks {tasks} "
                                           f"--batch_size auto{unsafe}")})
    long_cells = m.long_context.any()
    if long_cells and "attention" in claim.change.groups:
        ctx = int(m.context[m.long_context].max())
        long_models = list(dict.fromkeys(repos[int(k)] for k in np.unique(m.model_idx[m.long_context])))
        steps.append({"step": f"needle-in-a-haystack at {ctx:,} tokens (RULER's NIAH tasks in lm-evaluation-harness): "
                              f"the change touches KV or attention and a workload is long-context; average scores "
                              f"can hide the drop; both builds",
                      "command": _each(long_models, f"lm_eval --model vllm --model_args pretrained={{m}},"
                                                    f"max_length={ctx} --tasks {NIAH_TASKS} --metadata "
                                                    f"{shlex.quote(json.dumps({'max_seq_lengths': [ctx]}))} "
                                                    f"--batch_size auto")})
    if rerun is not None:
        args = list(rerun)
        if "--measured" in args:                    # a memo priced with measurements: the same, from results/
            del args[args.index("--measured"):args.index("--measured") + 2]
        steps.append({"step": "compare predicted and measured; roll back if any check fails",
                      "command": shlex.join(("triage", "run", *args, "--measured", "results/"))})
    else:
        steps.append({"step": "compare predicted and measured (`triage run CARD --measured results/` with the "
                              "card and matrix this evaluation was given as dicts); roll back if any check fails",
                      "command": ""})
    return steps
