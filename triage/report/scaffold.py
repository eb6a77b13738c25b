"""`triage new`: a commented claim card for one direction, with the questions the course says to ask."""

from __future__ import annotations

from .directions import DIRECTIONS

# The change a fresh card starts from, per direction, and what to replace it with.
_CHANGES = {
    "attention": ("attention_flops: 0.5", "attention FLOPs x m (sparse or approximate attention)"),
    "cache": ("kv_bytes: 0.5", "KV bytes per token x m: int8 KV 0.5, int4 with scales ~0.28, GQA 8 of 32 heads 0.25"),
    "weights": ("weight_bytes: 0.5", "bytes per weight x m: int8 0.5, int4 with group-128 fp16 scales ~0.27"),
    "decoding": ("linear_flops: 1.0", "speculative decoding is priced in a later release; state the draft and "
                                      "acceptance in claim.text meanwhile"),
    "system": ("kv_tokens: {keep: 1.0}", "what the system changes: KV kept, bytes, FLOPs"),
}

_QUESTIONS = [
    "At what batch size and sequence lengths was the headline number measured? (tokens/s without them "
    "cannot be compared)",
    "Does a kernel read the new format in place, or is the saving theoretical only?",
    "Does quality hold on long-context retrieval (needle-in-a-haystack), not only on average scores?",
]


def card_text(card_id: str, direction: str) -> str:
    """The text of a new card: every field, commented, valid as written."""
    question, number, failure = DIRECTIONS[direction]
    change, change_help = _CHANGES[direction]
    questions = "\n".join(f"#   {i}. {q}" for i, q in enumerate(_QUESTIONS, 1))
    return f"""# yaml-language-server: $schema=../schemas/claim.schema.json
# A claim card: what the paper claims, and its method as a change to the cost model.
# Direction '{direction}'. The course's question: {question}
# Its number: {number}. Its failure mode: {failure}.
# Ask the authors:
{questions}
# Check it with `triage validate {card_id}.yaml`; judge it with `triage run {card_id}.yaml`.
id: {card_id}
title: "TODO: the method in a few words"
direction: {direction}
paper:
  title: "TODO: the paper's title"
  authors: []
  year: 2026
  url: https://arxiv.org/abs/TODO
claim:
  text: "TODO: the headline, quoted from the abstract"
  # speedup: 1.9              # the headline gain as a ratio
  metric: tpot                # tpot | ttft | throughput | memory
  baseline: "TODO: what the paper compared against (a weak or offloading baseline inflates the gain)"
  source: "TODO: table or figure of the number"
  # setting: {{model: llama-2-7b, hardware: a100-80gb, phase: decode, batch: 1, context: 4096}}
change:
  {change}  # {change_help}
implementation:
  kernel: true                # false: no kernel reads the new format, reads keep the old bytes
  bandwidth_efficiency: 1.0   # the changed kernels' bandwidth relative to the baseline's
quality:
  # retained: 0.99            # fraction of the baseline's quality (the gate is 99 %)
  evaluated_on: []
  long_context_tested: false  # needle-in-a-haystack or similar
cost: {{gpus: 8, weeks: 2}}     # to reproduce: 8 x 2 x 168 = 2688 GPU-hours
"""
