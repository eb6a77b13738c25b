"""The user-error taxonomy: one exception type carrying every addressed problem."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .defaults import LIMITS

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


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

    def __str__(self) -> str:
        """One line: FILE:LINE:COL $.path: message, every part escaped and the name and path cut to length."""
        name = escape(self.file, LIMITS.name_chars)
        where = f"{name}:{self.line}:{self.col}" if self.line else name
        message = escape(self.message, 4 * LIMITS.name_chars)
        path = escape(self.path, LIMITS.name_chars)
        return f"{where} {path}: {message}" if self.path else f"{where}: {message}"

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line or None, "col": self.col or None,
                "path": self.path, "message": self.message}


class UserError(Exception):
    """Bad input: printed without a traceback, exit status 1."""

    def __init__(self, problems: list[Problem] | str) -> None:
        if isinstance(problems, str):
            problems = [Problem(file="triage", path="", message=problems)]
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))
