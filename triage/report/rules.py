"""The decision rules in words, with what each reads, for the README's rule table (tests/test_readme.py keeps
that table equal to this one); the thresholds are read from defaults.py, so the words cannot drift from them."""

from __future__ import annotations

from ..analysis.decision import RULES, Rule
from ..defaults import ACCURACY_BAND, FAR_MODEL_FACTOR, PERPLEXITY_BAND, PERPLEXITY_GATE, REGRESSION_TOLERANCE

_PPL_GATE, _PPL_BAND = f"+{PERPLEXITY_GATE * 100:g} %", f"+{PERPLEXITY_BAND * 100:g} %"

# A cell's verdict, first rule that matches (model/verdicts.py): (verdict, when, what the rule reads).
CELL_RULES: tuple[tuple[str, str, str], ...] = (
    ("DOES-NOT-FIT", "the claim does not fit memory at the cell's batch", "workload: memory, batch, context"),
    ("NO-GO", f"quality beyond its kind's band: a perplexity increase above {_PPL_BAND}, or the worst task below "
              f"{ACCURACY_BAND:g} of the baseline (never an average, never a perplexity read as accuracy)",
     "evidence kind: `quality.figures`"),
    ("", "evidence the method class needs is missing: a declared format under 4 bits needs a perplexity and a "
         "task figure; a lossy change to the KV cache or attention needs long-context retrieval on long-context "
         "cells", "mechanism property: declared bits, touched groups"),
    ("", "the method cannot run in the cell's stack (it needs attention scores a fused kernel never writes, or "
         "conflicts with a serving feature the stack uses)",
     "mechanism property `requires` / `conflicts`; workload: attention, stack"),
    ("", "the bound (both sides at 100 % of peak) is below `min_gain`, for a change inside the step, on a "
         "workload without traffic (one with traffic is judged by its simulation)", "workload: `min_gain`, traffic"),
    ("", "the gain over the class's **incumbent** — what engines already ship in its place: fp8 KV for KV "
         "quantization, int8 weight-only or fp8 W8A8 for weight and activation quantization — is below "
         "`min_gain`; a format at or above the incumbent's bits is the incumbent's own kind and is judged against "
         "the baseline", "mechanism class: incumbent (`classes.yaml`, with its source)"),
    ("", "a KV-cache format whose kernel is the paper's alone (below) **and** no quality figure at all: the "
         "integration's cost is certain and its quality unknown", "mechanism property `kv_format`; evidence kind"),
    ("", "the end-to-end gain is below `min_gain` with a kernel present; a change that serves on more GPUs "
         "(tensor parallelism) is judged by GPU-seconds per request. `min_gain` is the bar a reproduction must "
         "clear: for an exact change whose kernel an engine already ships (no regret) the bar, here and for the "
         f"bound, is 1.00×, or {REGRESSION_TOLERANCE * 100:g} % above it on a workload with traffic (the "
         "simulation's resolution)",
     "workload: GPUs, `min_gain`, traffic; evidence kind: `quality.retained` 1.0, `implementation.kernel_in`"),
    ("CONDITIONAL", "the gain needs a kernel that reads the new format (`kernel: false`)",
     "evidence kind: implementation"),
    ("", f"quality unreported, within the band (a perplexity increase of {_PPL_GATE} to {_PPL_BAND}, the worst "
         f"task {ACCURACY_BAND:g} to the gate), or measured on a model more than {FAR_MODEL_FACTOR:g}× the cell's",
     "evidence kind; workload: model size"),
    ("", "a long-context cell with no long-context evidence", "workload: context; evidence kind"),
    ("", "a KV-cache format (`kv_format` in the registry) whose kernel is the paper's alone "
         "(`implementation.kernel_in`): every attention backend of an engine (paged, prefix-cached, chunked "
         "prefill) must read it, online, with state across tokens",
     "mechanism property: `kv_format`, class integration"),
    ("", "the SLO is still missed", "workload: SLO"),
    ("GO", "otherwise", ""),
)

# The decision across the matrix (analysis/decision.py), first rule that matches.
DECISION_RULES: tuple[str, ...] = (
    "**NO-GO** when the method cannot run in the stack that serves half the requests or more;",
    "**NO-GO**, naming the blocker, when no request is GO or CONDITIONAL (stack, quality, evidence, the "
    "incumbent, unproven integration, the bound — the first that applies);",
    "**GO, no regret**: exact (quality retained 1.0), no workload slower (one with traffic within "
    f"{REGRESSION_TOLERANCE * 100:g} %, the simulation's resolution, counted as unchanged), the fleet gaining "
    "with it so counted, some GO requests and no CONDITIONAL ones;",
    "**GO**: the fleet gain — over the incumbent where the class has one — clears `min_gain`, some requests are "
    "GO, no workload where the feature is switched on carries a condition, none fails quality, evidence or the "
    f"stack, nothing stops fitting and no workload is more than {REGRESSION_TOLERANCE * 100:g} % slower;",
    "below the threshold: **CONDITIONAL** when some workload gains `min_gain` in GPU-time per request (\"enable "
    "it where they run\"), else **NO-GO**;",
    "otherwise **CONDITIONAL**: the fleet gains on conditions stated per workload, or some workload regresses.",
)


# The words of each decision rule (analysis/decision.py RULES): the memo's "… by the rule: …" and the JSON's
# decision.rule.
_WORDS = {
    "none_served": "no workload both sides can serve",
    "stack": "the method cannot run in the stack that serves most of the requests",
    "incompatible": "the method cannot run in the stack that serves the requests",
    "quality_fail": "quality beyond its kind's band on every workload it could serve",
    "evidence_missing": "evidence the method class needs is missing (see the workloads' reasons)",
    "incumbent_low": "the shipped alternative gets within the threshold of it on every workload",
    "unproven_integration": "every attention backend would have to read a format whose quality no figure states",
    "theory_low": "the bound is below the threshold on every workload",
    "no_gain": "no workload gains {min_gain:.2f}x or more",
    "clears": "the fleet gain clears the {min_gain:.2f}x threshold, no workload regresses and none has a condition "
              "left",
    "below": "the fleet gain is below the {min_gain:.2f}x threshold",
    "below_some_pay": "the fleet gain is below the {min_gain:.2f}x threshold, but some workloads pay: enable it "
                      "where they run",
    "regresses": "the fleet gains, but some workload is slower: enable it per workload",
    "conditions": "the fleet gains, on conditions stated per workload",
}
assert set(_WORDS) == set(RULES) - {"no_regret"}


def rule_words(rule: Rule) -> str:
    """The decision rule in words, with the numbers it compared."""
    if rule.code == "no_regret":
        return ("no regret: exact (quality retained 1.0) and no workload slower"
                + (f" (a simulated one within the serving simulation's ±{REGRESSION_TOLERANCE * 100:g} % counted "
                   f"as unchanged)" if rule.tolerated else "")
                + (", its kernel shipped in an engine: any gain pays" if rule.engine_kernel else ""))
    return _WORDS[rule.code].format(min_gain=rule.min_gain)


def markdown() -> str:
    """The README's rule tables."""
    rows = ["| verdict | when | reads |", "|---|---|---|"]
    rows += [f"| {f'**{v}**' if v else ''} | {when} | {reads} |" for v, when, reads in CELL_RULES]
    steps = [f"{i}. {text}" for i, text in enumerate(DECISION_RULES, 1)]
    return "\n".join(rows) + "\n\nThe decision across the matrix (`triage/analysis/decision.py`), first rule " \
        "that matches; the fleet gain is total GPU-time over total GPU-time for the same requests, never a mean " \
        "of ratios:\n\n" + "\n".join(steps)
