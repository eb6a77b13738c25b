"""The blind hindsight set's split: within each direction, papers ranked by SHA-256 of their id, alternately
train and held-out (the first in the ranking train), so each direction is halved and no one chose which half a
paper fell in. Written once, at registration, to bench/hindsight/blind/split.yaml; a paper added later takes the
parity of its hash's first byte (odd: held-out), so the registered split never moves.

Run with:  .venv/bin/python bench/hindsight_split.py   (prints the split; --write writes split.yaml, never over one;
           --append appends the papers added since, leaving every registered line as it is)
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import yaml

BLIND = Path(__file__).resolve().parent / "hindsight" / "blind"
SPLITS = ("train", "held-out")


def digest(pid: str) -> str:
    return hashlib.sha256(pid.encode()).hexdigest()


def split_of_registered(papers: dict[str, dict[str, dict]]) -> dict[str, str]:
    """Each paper's split: the first registered, per direction, by rank of its id's hash, alternating; one
    marked ``added`` by the parity of its hash."""
    out: dict[str, str] = {}
    for ids in papers.values():
        first = [pid for pid, paper in ids.items() if "added" not in paper]
        for rank, pid in enumerate(sorted(first, key=digest)):
            out[pid] = SPLITS[rank % 2]
        out.update({pid: split_of_added(pid) for pid, paper in ids.items() if "added" in paper})
    return out


def split_of_added(pid: str) -> str:
    """A paper added after registration: the parity of its hash's first byte."""
    return SPLITS[int(digest(pid)[:2], 16) % 2]


def main() -> None:
    papers = yaml.safe_load((BLIND / "papers.yaml").read_text())
    split = split_of_registered(papers)
    text = ("# The blind set's split, written once at registration by bench/hindsight_split.py (per direction, ids\n"
            "# ranked by SHA-256, alternating train / held-out). Never edited; a paper added later takes the parity\n"
            "# of its hash (split_of_added).\n" + yaml.safe_dump(dict(sorted(split.items())), sort_keys=False))
    target = BLIND / "split.yaml"
    if "--write" in sys.argv[1:]:
        if target.exists():
            sys.exit(f"error: {target} exists: the registered split is never rewritten (--append adds new papers)")
        target.write_text(text)
    elif "--append" in sys.argv[1:]:
        known = yaml.safe_load(target.read_text())
        new = {pid: s for pid, s in split.items() if pid not in known}
        with target.open("a") as f:
            f.write(yaml.safe_dump(new, sort_keys=False))
        text = yaml.safe_dump(new, sort_keys=False)
    print(text, end="")


if __name__ == "__main__":
    main()
