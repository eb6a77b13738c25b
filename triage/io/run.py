"""One run's state: the files it read (at most LIMITS.run_files files and LIMITS.run_bytes bytes: an output may
land on none of them) and the results it may reuse (the serving simulation's runs). A CLI command is one run; a
Python API evaluation outside one is a run of its own. The current run is a context variable, so each thread and
each task sees its own, and nothing of a run outlives it in a module global.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError


class ReadLog:
    """Every file the run read and the bytes it took, bounded."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.bytes = 0

    def record(self, path: str, size: int, label: str) -> None:
        self.files.add(os.path.realpath(path))
        self.bytes += size
        if len(self.files) > LIMITS.run_files:
            raise UserError([Problem(label, path="", message=(
                f"this run has read {LIMITS.run_files:,} files, the limit (run_files)"))])
        if self.bytes > LIMITS.run_bytes:
            raise UserError([Problem(label, path="", message=(
                f"this run has read {LIMITS.run_bytes // (1 << 20)} MiB, the limit (run_bytes)"))])


class Run:
    """A run: its reads, and a memo of results worth reusing inside it (keyed by what computed them; the serving
    simulation keeps one side at one rate there, so a sensitivity variant re-simulates only what it changes and
    a comparison's cards share their baseline)."""

    def __init__(self, command: bool = False) -> None:
        self.command = command          # a CLI command: every evaluation inside it adds to this run
        self.reads = ReadLog()
        self.memo: dict[Any, Any] = {}


_CURRENT: ContextVar[Run] = ContextVar("triage_run")


def current() -> Run:
    """The run in progress (a new one where none was started in this context)."""
    try:
        return _CURRENT.get()
    except LookupError:
        return new_run()


def new_run(command: bool = False) -> Run:
    """Start a new run: once per CLI command (``command=True``: every evaluation inside it adds to the same
    run), or once per Python API evaluation."""
    run = Run(command)
    _CURRENT.set(run)
    return run


def new_evaluation() -> None:
    """An evaluation starts: outside a CLI command (the Python API, a notebook) it is a run of its own."""
    if not current().command:
        new_run()
