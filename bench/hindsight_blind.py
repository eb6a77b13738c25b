"""The blind hindsight set: the decision on papers its rules never saw, scored against what the field did.

Run with:  .venv/bin/python bench/hindsight_blind.py [--split train|held-out] [--matrix default,mix,traffic]
           .venv/bin/python bench/hindsight_blind.py --register      (once: writes SHA256SUMS, never over one)
           .venv/bin/python bench/hindsight_blind.py --check         (the files against their registered sums)

bench/hindsight/blind/ holds papers.yaml (registered first), split.yaml (bench/hindsight_split.py), cards/ (one
per paper, written from the paper alone by a writer who never saw a label or a verdict), labels/ (each method's
fate in the engines, written from engine sources alone by a labeller who never saw a card), SHA256SUMS (the
registration: every card, label, paper and split file, committed before any card was run) and errata.yaml (a
card changed after registration for a plain error, with its reason and new sum). docs/hindsight.md says how the
set was built and how to add a paper.

Scoring refuses files that differ from their registered (or errata) sums. Each card is decided as its paper
stood: its own kernel_in (the writer states paper or none) against the stack its paper improved on (bench/
hindsight.py's decide). Adopted agrees with GO or CONDITIONAL (balanced) or GO alone (strict), passed over with
NO-GO; balanced agreement is the mean of the two classes' rates, so a constant verdict scores 0.5. A run the
tool refuses (an error, or a paper no mechanism expresses) is not covered: coverage is decided runs over all.
The held-out split is scored only by asking for it, and each such scoring is appended to looks.yaml (date,
commit, figures): a held-out figure seen many times is a train figure.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.analysis import pipeline  # noqa: E402
from triage.errors import UserError  # noqa: E402
from triage.inputs import catalog  # noqa: E402
from triage.report.rules import rule_words  # noqa: E402

from bench.hindsight import AGREES, MIX, decide  # noqa: E402

BLIND = ROOT / "bench" / "hindsight" / "blind"
SUMS = BLIND / "SHA256SUMS"
ERRATA = BLIND / "errata.yaml"
LOOKS = BLIND / "looks.yaml"
MATRICES = {"default": None, "mix": MIX, "traffic": ROOT / "bench" / "hindsight" / "llama-3-8b-traffic.yaml"}
DIRECTIONS = ("cache", "attention", "weights", "decoding", "system")


def registered_files() -> list[Path]:
    """Every file the registration covers: the paper list, the split, each card (or its unexpressible note)
    and each label file."""
    return [BLIND / "papers.yaml", BLIND / "split.yaml", *sorted((BLIND / "cards").iterdir()),
            *sorted((BLIND / "labels").glob("*.yaml"))]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def register() -> None:
    if SUMS.exists():
        sys.exit(f"error: {SUMS.relative_to(ROOT)} exists: the registration is written once (a plain error in a "
                 "card goes to errata.yaml)")
    SUMS.write_text("".join(f"{sha256(f)}  {f.relative_to(BLIND)}\n" for f in registered_files()))
    print(f"wrote {SUMS.relative_to(ROOT)}: {len(registered_files())} files")


def check() -> list[str]:
    """Problems with the registration: its files (file_problems), and SHA256SUMS not committed as it is."""
    problems = file_problems()
    committed = subprocess.run(["git", "log", "-1", "--format=%H", "--", str(SUMS)], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
    if not committed:
        problems.append("SHA256SUMS is not committed: the registration must precede every scoring")
    elif subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(SUMS)], cwd=ROOT).returncode:
        problems.append("SHA256SUMS differs from its committed version: the registration is never rewritten")
    return problems


def file_problems() -> list[str]:
    """A registered file changed without an errata entry, missing, or a file not registered."""
    if not SUMS.exists():
        return [f"{SUMS.relative_to(ROOT)} is missing: register the set (--register) and commit it first"]
    sums = {name: digest for digest, name in (line.split("  ", 1) for line in SUMS.read_text().splitlines())}
    for fix in yaml.safe_load(ERRATA.read_text()) or [] if ERRATA.exists() else []:
        sums[fix["file"]] = fix["sha256"]
    present = {str(f.relative_to(BLIND)): f for f in registered_files()}
    problems = [f"{name}: registered but missing" for name in sums if name not in present]
    problems += [f"{name}: not registered (a paper added later goes through docs/hindsight.md)"
                 for name in present if name not in sums]
    problems += [f"{name}: differs from its registered sum and has no errata entry"
                 for name, f in present.items() if name in sums and sha256(f) != sums[name]]
    return problems


def papers() -> dict[str, str]:
    """Each registered paper's direction."""
    listed = yaml.safe_load((BLIND / "papers.yaml").read_text())
    return {pid: direction for direction, ids in listed.items() for pid in ids}


def labels() -> dict[str, str]:
    """Each labelled paper's outcome (adopted / passed_over); dropped ones are left out."""
    out: dict[str, str] = {}
    for f in sorted((BLIND / "labels").glob("*.yaml")):
        out.update({pid: v["outcome"] for pid, v in (yaml.safe_load(f.read_text()) or {}).items()})
    return {pid: outcome for pid, outcome in out.items() if outcome in AGREES}


def run(pid: str, source: Path | None) -> tuple[str, str, str]:
    """(verdict or REFUSED, the deciding rule's code, its words) for one card on one matrix."""
    card = BLIND / "cards" / f"{pid}.yaml"
    if not card.exists():
        return "REFUSED", "unexpressible", "no mechanism expresses the method (the writer's note in cards/)"
    try:
        claim = pipeline.load_claim(card, catalog.resolve(None))
        verdict, rule, _ = decide(claim, source)
    except UserError as err:
        return "REFUSED", "refused", str(err).splitlines()[0][:160]
    return verdict, rule.code, rule_words(rule)


def rates(rows: list[tuple[str, str]]) -> tuple[float, float, float, int]:
    """(balanced, strict, coverage, runs) over (outcome, verdict) rows."""
    decided = [(o, v) for o, v in rows if v != "REFUSED"]
    by = {o: [v for oo, v in decided if oo == o] for o in AGREES}
    if not all(by.values()):
        return float("nan"), float("nan"), len(decided) / len(rows) if rows else float("nan"), len(rows)
    passed = sum(v == "NO-GO" for v in by["passed_over"]) / len(by["passed_over"])
    balanced = (sum(v in AGREES["adopted"] for v in by["adopted"]) / len(by["adopted"]) + passed) / 2
    strict = (sum(v == "GO" for v in by["adopted"]) / len(by["adopted"]) + passed) / 2
    return balanced, strict, len(decided) / len(rows), len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("train", "held-out"), default="train")
    ap.add_argument("--matrix", default=",".join(MATRICES), help="comma-separated: " + ", ".join(MATRICES))
    ap.add_argument("--register", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.register:
        register()
        return
    problems = check()
    if problems or args.check:
        print("\n".join(f"error: {p}" for p in problems) or f"{len(registered_files())} files match their sums")
        sys.exit(1 if problems else 0)
    split = yaml.safe_load((BLIND / "split.yaml").read_text())
    direction, label = papers(), labels()
    ids = sorted(pid for pid in label if split[pid] == args.split)
    matrices = [m for m in args.matrix.split(",") if m]
    rows: dict[str, list[tuple[str, str, str, str, str]]] = defaultdict(list)
    for pid in ids:
        for m in matrices:
            verdict, code, words = run(pid, MATRICES[m])
            rows[m].append((pid, label[pid], verdict, code, words))
    n = {o: sum(label[p] == o for p in ids) for o in AGREES}
    print(f"blind hindsight set, split {args.split}: {len(ids)} labelled papers ({n['adopted']} adopted, "
          f"{n['passed_over']} passed over) of {len(direction)} registered")
    print(f"\n{'matrix':8s} {'direction':10s} {'papers':>6s} {'balanced':>9s} {'strict':>7s} {'coverage':>9s}")
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for m in matrices:
        figures[m] = {}
        for d in ("all", *DIRECTIONS):
            sub = [(o, v) for pid, o, v, _, _ in rows[m] if d == "all" or direction[pid] == d]
            b, s, c, k = rates(sub)
            figures[m][d] = {"balanced": round(b, 3), "strict": round(s, 3), "coverage": round(c, 3), "runs": k}
            shown = [f"{x:.2f}" if x == x else "n/a" for x in (b, s)]       # n/a: one class only
            print(f"{m:8s} {d:10s} {k:6d} {shown[0]:>9s} {shown[1]:>7s} {c:9.2f}")
    print("(n/a: the direction has papers of one class only in this split; balanced agreement needs both)")
    print("\nper paper (✗: disagrees with the field; balanced reading)")
    print(f"{'paper':28s} {'direction':10s} {'outcome':12s} " + " ".join(f"{m:12s}" for m in matrices))
    for i, pid in enumerate(ids):
        cells = [rows[m][i] for m in matrices]
        marks = [f"{v}{'' if v in AGREES[o] else ' ✗' if v != 'REFUSED' else ''}" for _, o, v, _, _ in cells]
        print(f"{pid:28s} {direction[pid]:10s} {label[pid]:12s} " + " ".join(f"{x:12s}" for x in marks))
    grouped: dict[str, list[str]] = defaultdict(list)
    words: dict[str, str] = {}
    for m in matrices:
        for pid, o, v, code, w in rows[m]:
            if v not in AGREES[o]:
                grouped[code].append(f"{pid} ({m}: {v}, {o.replace('_', ' ')})")
                words.setdefault(code, w)
    print("\ndisagreements and refusals by the rule that decided them:")
    for code, items in sorted(grouped.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):3d}  {code}: {words[code]}")
        print("       " + "; ".join(items))
    if args.split == "held-out":
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "triage", "bench"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        entry = [{"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "commit": head + (" with uncommitted changes" if dirty else ""), "split": args.split,
                  "figures": figures}]
        looks = len(yaml.safe_load(LOOKS.read_text()) or []) if LOOKS.exists() else 0
        with LOOKS.open("a") as f:
            f.write(yaml.safe_dump(entry, sort_keys=False))
        print(f"\nheld-out look {looks + 1}: appended to {LOOKS.relative_to(ROOT)} (commit it)")


if __name__ == "__main__":
    main()
