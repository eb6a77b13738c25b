"""`triage new`: a commented claim card for one direction, with the questions the course says to ask.

The change section is generated from the mechanism registry (inputs/mechanisms.yaml: each mechanism's
directions, example and schema description), so a new card can never offer a
mechanism that does not exist or miss one that does.
"""

from __future__ import annotations

from ..inputs.cards import PLACEHOLDER
from ..inputs.registry import registry
from .describe import flow
from .directions import DIRECTIONS

# The mechanism a fresh card of each direction starts from; the direction's others follow, commented out.
PRIMARY = {"attention": "score_bytes", "cache": "kv_bytes", "weights": "weight_quant", "decoding": "speculative",
           "system": "batching"}


def change_lines(direction: str) -> list[str]:
    """The change section's lines: the direction's primary mechanism as a placeholder with its example, then
    the others commented out."""
    keys = [PRIMARY[direction]] + [k for k, info in registry().items()
                                    if direction in info.directions and k != PRIMARY[direction]]
    lines = []
    for n, key in enumerate(keys):
        info = registry()[key]
        help_text = info.schema.get("description", "")
        if n == 0:
            lines.append(f"  {key}: {PLACEHOLDER}  # e.g. {flow(info.example)}: {help_text}")
        else:
            lines.append(f"  # {key}: {flow(info.example)}  # {help_text}")
    return lines


_QUESTIONS = [
    "At what batch size and sequence lengths was the headline number measured? (tokens/s without them "
    "cannot be compared)",
    "Does a kernel read the new format in place, or is the saving theoretical only?",
    "Does quality hold on long-context retrieval (needle-in-a-haystack), not only on average scores?",
]


def card_text(card_id: str, direction: str) -> str:
    """The text of a new card: every field, commented; its placeholders (PLACEHOLDER) are refused by
    `validate` and `run` until the paper's values replace them."""
    question, number, failure = DIRECTIONS[direction]
    change = "\n".join(change_lines(direction))
    questions = "\n".join(f"#   {i}. {q}" for i, q in enumerate(_QUESTIONS, 1))
    todo = PLACEHOLDER
    return f"""# yaml-language-server: $schema=../schemas/claim.schema.json
# A claim card: what the paper claims, and its method as a change to the cost model.
# Direction '{direction}'. The course's question: {question}
# Its number: {number}. Its failure mode: {failure}.
# Ask the authors:
{questions}
# Check it with `triage validate {card_id}.yaml`; judge it with `triage run {card_id}.yaml`.
id: {card_id}
title: "{todo}: the method in a few words"
direction: {direction}
paper:
  title: "{todo}: the paper's title"
  authors: []
  year: {todo}                   # the year of the version you read
  url: https://arxiv.org/abs/{todo}
claim:
  text: "{todo}: the headline, quoted from the abstract"
  # speedup: 1.9              # the headline gain as a ratio
  metric: tpot                # tpot | ttft | throughput | memory
  baseline: "{todo}: what the paper compared against (a weak or offloading baseline inflates the gain)"
  source: "{todo}: table or figure of the number"
  # scope: end-to-end         # end-to-end | kernel | attention | training | serving: what it times
  # setting: {{model: llama-2-7b, hardware: a100-80gb, phase: decode, batch: 1, context: 4096}}  # what it states
change:                       # replace {todo} with the paper's value (the example shows the shape)
{change}
implementation:
  kernel: true                # false: no kernel reads the new format, reads keep the old bytes
  bandwidth_efficiency: 1.0   # the changed kernels' bandwidth relative to the baseline's
quality:
  # retained: 0.99            # fraction of the baseline's quality (the gate is 99 %)
  evaluated_on: []
  long_context_tested: false  # needle-in-a-haystack or similar
# cost: {{gpus: 8, weeks: 2}}   # to reproduce: 8 x 2 x 168 = 2688 GPU-hours
# evidence:                   # one entry per number; `triage validate --strict` requires them on paper cards
#   claim.speedup: {{quote: "TODO: the sentence or table cell, verbatim", where: "TODO: Table 3, arXiv 2401.12345v2"}}
#   claim.setting.batch: {{quote: "TODO", where: "TODO: section, and the source's version"}}
#   quality.retained: {{quote: "TODO: both scores", where: "TODO"}}
"""
