"""The user-error taxonomy: one exception type carrying every addressed problem."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in one input, addressed as FILE:LINE:COL $.path."""

    file: str
    line: int = 0
    col: int = 0
    path: str = "$"
    message: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        return f"{where} {self.path}: {self.message}" if self.path else f"{where}: {self.message}"

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
