"""The verification plan every memo ends with: the A/B to run, as commands where a standard tool exists.

The course's safeguard (module 12.4 §5.4): fixed batch, lengths and hardware;
a quality gate at 99 % of the fp16 baseline; needle-in-a-haystack where the
claim touches KV or attention and a workload is long-context; roll back if any
check fails.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..analysis.evaluation import Evaluation
from ..defaults import LIMITS
from ..inputs.registry import touched_groups

_REPO = re.compile(r"[\w.-]+/[\w.-]+")


def _hf_id(model: Any) -> str:
    """The Hugging Face repository named in a catalog model's source (the word before 'config.json'), else its
    catalog key. Word by word, each matched whole: linear in the source, which can be a user's text (a
    config.json's model_type), where a search for the pattern anywhere would backtrack quadratically."""
    words = model.source.split()
    for word, following in zip(words, words[1:], strict=False):
        if following.startswith("config.json") and _REPO.fullmatch(word.lstrip("([")):
            return str(word.lstrip("(["))
    return str(model.key)


def plan(result: Evaluation) -> list[dict[str, str]]:
    """Steps, each with what to do and a command (A/B commands for the first LIMITS.plan_cells cells)."""
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
               f"vllm bench serve --model {shlex.quote(model_id)} --dataset-name random --random-input-len $2 "
               f"--random-output-len $3 --max-concurrency $4 --num-prompts $5 --save-result --result-dir results "
               f"--result-filename $1-{hw}-$VARIANT.json --metadata workload=$1 {shlex.quote('hardware=' + hw_key)} "
               f"variant=$VARIANT; done; done")
        steps.append({"step": f"A/B on {hw_key} ({model_id}): each workload at its batch and lengths, once on the "
                              f"baseline build and once on the claim's (start the matching server before each "
                              f"VARIANT); compare TPOT for decode workloads, TTFT for prefill ones "
                              f"({', '.join(dict.fromkeys(workloads.values()))})", "command": cmd})
    if len(m) > LIMITS.plan_cells:
        steps.append({"step": f"the A/B commands above cover the first {LIMITS.plan_cells} of {len(m):,} cells "
                              f"(limit plan_cells); run the same for the others", "command": "see the JSON's cells"})
    gates = sorted({b.quality_gate for b in m.blocks})
    tasks = ",".join(claim.evaluated_on) if claim.evaluated_on else "wikitext,hellaswag,gsm8k"
    steps.append({"step": f"quality gate: every task at ≥ {gates[0] * 100:g} % of the fp16 baseline's score, for "
                          f"both builds", "command": f"lm_eval --model vllm --model_args pretrained=MODEL "
                                                     f"--tasks {tasks} --batch_size auto"})
    long_cells = m.long_context.any()
    if long_cells and "attention" in touched_groups(claim.change):
        ctx = int(m.context[m.long_context].max())
        steps.append({"step": f"needle-in-a-haystack at {ctx:,} tokens: the change touches KV or attention and a "
                              f"workload is long-context; average scores can hide the drop",
                      "command": f"RULER niah tasks at sequence length {ctx} (github.com/NVIDIA/RULER), both builds"})
    steps.append({"step": "compare predicted and measured; roll back if any check fails",
                  "command": f"triage run {shlex.quote(str(claim.file))} --measured results/"})
    return steps
