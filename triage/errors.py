"""The user-error taxonomy: one exception type carrying every addressed problem."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .defaults import LIMITS

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
NEAR = "{near}"     # where a Problem's message takes its suggestion (Problem.near), filled only when shown


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` most likely means (a prefix match first: 'a100' means an A100 before an A10G), or None."""
    import difflib  # loads when a name is wrong, not on every start

    names = sorted(choices)
    longer = [c for c in names if c.startswith(word)]
    close = difflib.get_close_matches(word, longer, n=1, cutoff=0.0) if longer else \
        difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'kv_bytes'?)' or '': the suggestion is one of ``choices``, never ``word`` itself."""
    match = closest(word, choices)
    return f" (did you mean {match!r}?)" if match is not None else ""


def escape(text: str, limit: int | None = None) -> str:
    """Text safe for one terminal line: control characters as \\xNN, lone surrogates replaced, cut to
    ``limit`` characters with '…' (names and quoted values in errors: LIMITS.name_chars)."""
    text = text if valid_text(text) else text.encode("utf-8", "replace").decode("utf-8")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def valid_text(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate, so it can be written as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in one input, addressed as FILE:LINE:COL $.path."""

    file: str
    line: int = 0
    col: int = 0
    path: str = "$"
    message: str = ""
    near: tuple[str, Iterable[str]] | None = field(default=None, compare=False)   # (word, the names it may mean)

    def text(self) -> str:
        """The message with its suggestion at NEAR: a did-you-mean is searched only for a problem shown, so
        thousands of misspelt names cost one search each of the few printed, not one each against all."""
        return self.message if self.near is None else self.message.replace(NEAR, did_you_mean(*self.near), 1)

    def __str__(self) -> str:
        """One line: FILE:LINE:COL $.path: message, every part escaped and the name and path cut to length."""
        name = escape(self.file, LIMITS.name_chars)
        where = f"{name}:{self.line}:{self.col}" if self.line else name
        message = escape(self.text(), 4 * LIMITS.name_chars)
        path = escape(self.path, LIMITS.name_chars)
        return f"{where} {path}: {message}" if self.path else f"{where}: {message}"

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line or None, "col": self.col or None,
                "path": self.path, "message": self.text()}


class UserError(Exception):
    """Bad input: printed without a traceback, exit status 1."""

    def __init__(self, problems: list[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(file="triage", path="", message=problems)]
        self.problems = sorted(set(problems))
        super().__init__()

    def __str__(self) -> str:
        """The problems as the command line prints them: the first LIMITS.problems_shown, then how many more
        (made when asked for, so a suggestion is searched only for a problem someone reads)."""
        shown = self.problems[:LIMITS.problems_shown]
        more = len(self.problems) - len(shown)
        return "\n".join([*map(str, shown), *([f"and {more:,} more problems"] if more else [])])
