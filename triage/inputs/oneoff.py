"""A one-off question from command-line flags (`triage run CARD --model M --hardware H --context 2048,32768`):
a workload document with one grid, in the workload file's format, so it is validated and priced as a file is.

Each flag takes comma-separated values; several flags with several values make their Cartesian grid. An
axis not given takes the shipped matrix's default (catalog workloads.yaml: model, hardware, phase decode,
batch 1); the context has no default and is required. Every cell carries an equal share of the requests.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError
from ..io.yamlio import Document, document

# the flags that ask for a matrix of their own (--model alone replaces the model of a workload file's matrix)
AXES = ("hardware", "context", "batch", "phase")
_WHOLE = {"context": "tokens", "batch": "sequences"}
_SUFFIX = {"k": 1024, "K": 1024, "M": 1024 ** 2}
_NUMBER = re.compile(r"[0-9]{1,9}[kKM]?")


def _values(flag: str, text: str) -> list[Any]:
    """A flag's comma-separated values: whole numbers for context and batch, names otherwise; bounded."""
    if text.count(",") >= LIMITS.flag_values:
        raise UserError([Problem(f"--{flag}", path="", message=(
            f"more than {LIMITS.flag_values:,} values (limit flag_values): write the grid in a workload file"))])
    items = [item.strip() for item in text.split(",")]
    if any(not item for item in items):
        raise UserError([Problem(f"--{flag}", path="", message="an empty value: separate values with single commas")])
    if flag not in _WHOLE:
        return items
    out: list[Any] = []
    for item in items:
        ends = item.split("..")
        if len(ends) > 2 or not all(_NUMBER.fullmatch(e) for e in ends):
            raise UserError([Problem(f"--{flag}", path="", message=(
                f"expected whole numbers of {_WHOLE[flag]}, comma-separated, each plain, with k (×1024) or M "
                f"(×1024²) as the memo prints them, or a doubling range LO..HI (e.g. --{flag} "
                f"{'2048,32k,128k' if flag == 'context' else '1..64'})"))])
        lo, hi = (_whole(e) for e in (ends[0], ends[-1]))
        while lo <= hi and len(out) <= LIMITS.flag_values:  # LO, 2·LO, 4·LO … up to HI (one value without ..)
            out.append(lo)
            lo = lo * 2 if lo else hi + 1
    if len(out) > LIMITS.flag_values:
        raise UserError([Problem(f"--{flag}", path="", message=(
            f"more than {LIMITS.flag_values:,} values (limit flag_values): write the grid in a workload file"))])
    return out


def _whole(text: str) -> int:
    """A count as the memo prints it: '4096', '32k' (×1024: the memo's 128k is 131,072 tokens) or '1M'."""
    return int(text[:-1]) * _SUFFIX[text[-1]] if text[-1] in _SUFFIX else int(text)


def label(flags: dict[str, str | None]) -> str:
    """The matrix's name in errors, the memo and the JSON: the flags as a command line repeats them, in the
    angle brackets that mark a source that is no file."""
    return "<flags " + " ".join(f"--{k} {shlex.quote(v)}" for k, v in flags.items() if v is not None) + ">"


def flags_of(source: str) -> str | None:
    """The flags a matrix was built from (its label without the brackets), or None for a file's matrix."""
    return source[len("<flags "):-1] if source.startswith("<flags ") and source.endswith(">") else None


def matrix(model: str | None, hardware: str | None, context: str | None, batch: str | None, phase: str | None,
           engine: str | None) -> Document | None:
    """The workload document the flags ask for, or None when no axis flag is given (the matrix is a file's)."""
    axes = {"hardware": hardware, "context": context, "batch": batch, "phase": phase}
    if all(v is None for v in axes.values()):
        if engine is not None:
            raise UserError([Problem("--engine", path="", message=(
                "--engine goes with the matrix flags (--hardware, --context, --batch, --phase); in a workload "
                "file, set defaults: engine:"))])
        if model is not None and "," in model:
            raise UserError([Problem("--model", path="", message=(
                "several models make a grid: add --context (and --hardware) to build the matrix from flags"))])
        return None
    if context is None:
        raise UserError([Problem("--context", path="", message=(
            "a matrix from flags needs the context in tokens (e.g. --context 4096)"))])
    grid: dict[str, Any] = {"name": "flags", "share": 1.0}
    for key, text in {"model": model, **axes}.items():
        if text is not None:
            grid[key] = _values(key, text)
    data: dict[str, Any] = {"grid": grid}
    if engine is not None:
        data["defaults"] = {"engine": engine}
    return document(label({"model": model, **axes, "engine": engine}), data)
