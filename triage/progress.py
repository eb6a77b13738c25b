"""Progress of long work as the layers below the command line report it: through a Progress they are given,
never by printing; codes and numbers only (the command line words and draws them: triage/cli/progress.py).
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """What a long piece of work tells as it runs: each stage as it begins, and how far the stage is."""

    def stage(self, stage: str, count: int = 0) -> None:
        """Stage ``stage`` (a code: loading, pricing, simulating, analysing, calibrating, fitting, sweeping)
        begins, on ``count`` things (cells, serving workloads, rows, chips; 0 where it names none)."""

    def advance(self, done: float, total: float, unit: str) -> None:
        """``done`` of ``total`` ``unit`` (a code: cells, rows, chips, token-steps) of the current stage are done;
        ``total`` is the most the stage can take (for token-steps, the run's limit, not a forecast)."""


class _Silent:
    """Reports to no one: the default, so that a library call prints nothing."""

    def stage(self, stage: str, count: int = 0) -> None:
        pass

    def advance(self, done: float, total: float, unit: str) -> None:
        pass


SILENT: Progress = _Silent()
