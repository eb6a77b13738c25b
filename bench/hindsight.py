"""Hindsight: the decision against what the field did with each paper, and how the decision moves with the
workload.

Run with:  .venv/bin/python bench/hindsight.py          (not part of the test suite; about three minutes)

1. Agreement. Each shipped card whose method has a cited adoption outcome (bench/hindsight/labels-*.yaml:
   shipped as a flag, option or doc page in vLLM, SGLang or TensorRT-LLM, or passed over, each with a quote and
   where it stands) is decided as its paper stood when it appeared: against the stack the paper improved on (its
   setting's baseline keys, `--baseline paper`, where the card states them) and with the kernel the paper had
   (an engine kernel first shipped after the paper's year counts as the paper's own). Two matrices: the shipped
   default and a Llama-3-8B H100 serving mix (bench/hindsight/llama-3-8b-h100-mix.yaml). Adopted agrees with GO
   or CONDITIONAL, passed over with NO-GO; the balanced agreement weighs both classes alike (the mean of the two
   classes' agreement rates), so a tool that says GO to everything scores 0.5. A run the tool refuses (a
   mechanism that cannot act there: GQA-8 on a model that has 8 KV heads) is left out and counted, and so is a
   run where the change moves no workload at all (every cell 1.000x with its does-not-act warning): the
   matrix's baseline already runs it (the default stack runs continuous batching and split-KV decoding) or
   none of its cells is one the method acts on (sparse prefill with no long prompt): the run says nothing
   of the method's fate.
2. Flips. Each card decided on one workload at a time, then with one large change: batch 1 vs 256, context
   4k vs 128k, A100 80GB vs H200. The share of (card, change) pairs whose decision differs says how much
   the matrix, not the card, decides.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import pipeline  # noqa: E402
from triage.analysis.decision import Rule  # noqa: E402
from triage.errors import UserError  # noqa: E402
from triage.inputs import catalog  # noqa: E402
from triage.inputs.claim import Claim  # noqa: E402
from triage.report.rules import rule_words  # noqa: E402

HERE = ROOT / "bench" / "hindsight"
MIX = HERE / "llama-3-8b-h100-mix.yaml"
AGREES = {"adopted": {"GO", "CONDITIONAL"}, "passed_over": {"NO-GO"}}

# one workload, and the same with one large change (the model has a 128k window: Qwen2.5-7B)
ONE = {"model": "qwen2.5-7b", "hardware": "a100-80gb", "phase": "decode", "context": 4096, "batch": 16}
FLIPS = (("batch 1 vs 256", {"batch": 1}, {"batch": 256}),
         ("context 4k vs 128k", {"context": 4096, "batch": 1}, {"context": 131072, "batch": 1}),
         ("A100 vs H200", {"hardware": "a100-80gb"}, {"hardware": "h200"}))


def labels() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in sorted(HERE.glob("labels-*.yaml")):
        out.update(yaml.safe_load(f.read_text()) or {})
    return {k: v for k, v in out.items() if v.get("outcome") in AGREES}


def as_published(card: Path, since: str | None = None) -> Claim:
    """The card as its paper stood: an engine kernel counts as the paper's own unless an engine shipped it by
    the paper's year (``since``, the label's first cited shipping date, YYYY-MM)."""
    claim = pipeline.load_claim(card, catalog.resolve(None))
    year = claim.paper.year
    shipped_before = bool(since and year and int(str(since)[:4]) <= int(year))
    later = claim.kernel_in == "engine" and not shipped_before
    return dataclasses.replace(claim, kernel_in="paper") if later else claim


def decide(claim: Claim, workloads: object = None) -> tuple[str, Rule, bool]:
    """(verdict, the rule that decided it, whether the change moves any workload: False where every cell is
    1.000x with a does-not-act warning)."""
    baseline = "paper" if pipeline.paper_baseline(claim) else "current"
    ev = pipeline.evaluate(claim, workloads, analyse=False, baseline=baseline)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = ev.gaps.base_request_s / ev.gaps.claim_request_s
    moves = not (ev.warnings and np.all(np.abs(ratio[np.isfinite(ratio)] - 1.0) < 1e-9))
    return ev.decision.verdict, ev.decision.rule, moves


def one(**change: object) -> dict:
    cell = {**ONE, **change}
    return {"defaults": {"model": cell.pop("model"), "hardware": cell.pop("hardware")},
            "workloads": [{"name": "one", **cell}]}


def main() -> None:
    table = labels()
    runs = {"adopted": [], "passed_over": []}
    refused = same = 0
    print(f"{'card':28s} {'outcome':12s} {'default matrix':14s} {'llama-3-8b mix':14s} rule that decided")
    for cid, label in table.items():
        path = ROOT / "claims" / f"{cid}.yaml"
        if not path.exists():
            continue
        claim = as_published(path, label.get("since"))
        for name, source in (("default", None), ("mix", MIX)):
            try:
                verdict, decided, moves = decide(claim, source)
                rule = rule_words(decided)
                if not moves:
                    verdict, rule = "SAME", "the change moves no workload of this matrix"
            except UserError as err:
                verdict, rule = "ERROR", str(err).splitlines()[0]
            ok = verdict in AGREES[label["outcome"]] or verdict == "SAME"
            if verdict == "ERROR":           # the mechanism cannot act on this matrix (refused, never 1.00x): no run
                refused += 1
            elif verdict == "SAME":          # priced against itself: no run
                same += 1
            else:
                runs[label["outcome"]].append(ok)
            if name == "default":
                first = (verdict, ok, rule)
            else:
                mark = lambda v, k: f"{v}{'' if k else ' ✗'}"  # noqa: E731
                print(f"{cid:28s} {label['outcome']:12s} {mark(first[0], first[1]):14s} {mark(verdict, ok):14s} "
                      f"{first[2] if not first[1] else rule if not ok else ''}")
    rates = {k: sum(v) / len(v) for k, v in runs.items() if v}
    print(f"\nadopted -> GO or CONDITIONAL: {sum(runs['adopted'])} of {len(runs['adopted'])} runs "
          f"({rates.get('adopted', float('nan')):.2f})")
    print(f"passed over -> NO-GO: {sum(runs['passed_over'])} of {len(runs['passed_over'])} runs "
          f"({rates.get('passed_over', float('nan')):.2f})")
    print(f"balanced agreement: {sum(rates.values()) / len(rates):.3f} "
          f"({len(table)} labelled cards, two matrices each; left out: {refused} runs refused as a mechanism that "
          f"cannot act there, {same} where the change moves no workload of the matrix)")

    flips: dict[str, list[bool]] = {name: [] for name, _, _ in FLIPS}
    for card in sorted((ROOT / "claims").glob("*.yaml")):
        claim = pipeline.load_claim(card, catalog.resolve(None))
        for name, a, b in FLIPS:
            try:
                flips[name].append(decide(claim, one(**a))[0] != decide(claim, one(**b))[0])
            except UserError:
                continue
    total = [f for v in flips.values() for f in v]
    print("\ndecisions that flip under one large matrix change (every shipped card, one workload at a time: "
          f"{ONE['model']}, {ONE['phase']}):")
    for name, v in flips.items():
        print(f"  {name:20s} {sum(v)} of {len(v)} cards ({sum(v) / len(v):.0%})")
    print(f"  {'all':20s} {sum(total)} of {len(total)} ({sum(total) / len(total):.0%})")


if __name__ == "__main__":
    main()
