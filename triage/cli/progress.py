"""A long command's progress on standard error: with -v one line as each stage begins, and on a terminal a bar
for a stage that runs past PROGRESS_DELAY_S, erased when the stage ends. The layers below report through the
triage.progress.Progress this implements; they never print. Standard error that is a pipe or a file gets no bar,
so what a command writes there and to standard output is byte for byte what it was without one.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

import click

from ..defaults import PROGRESS_DELAY_S, PROGRESS_REFRESH_S

BAR_CHARS = 24
DEFAULT_COLUMNS = 80         # the width of a terminal that does not say its own


def _some(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


# each stage code's line (triage.progress.Progress.stage), given its count
STAGES: dict[str, Callable[[int], str]] = {
    "loading": lambda _: "loading the inputs",
    "pricing": lambda n: f"pricing {_some(n, 'cell')}",
    "simulating": lambda n: f"simulating {_some(n, 'serving workload')} (per model and chip, baseline and claim)",
    "analysing": lambda _: "analysing: crossover, throughput at the SLO, sensitivity",
    "sweeping": lambda n: f"pricing and writing {_some(n, 'cell')}, a chunk at a time",
    "calibrating": lambda n: f"pricing {_some(n, 'measured row')}",
    "fitting": lambda n: f"fitting {_some(n, 'chip')}",
    "rendering": lambda _: "rendering",
    "writing": lambda _: "writing",
}

# how far, in each unit code (Progress.advance); token-steps count toward the run's limit, not a forecast
UNITS: dict[str, Callable[[float, float], str]] = {
    "cells": lambda done, total: f"{done:,.0f} of {total:,.0f} cells",
    "rows": lambda done, total: f"{done:,.0f} of {total:,.0f} rows",
    "chips": lambda done, total: f"{done:,.0f} of {total:,.0f} chips",
    "token-steps": lambda done, total: (f"{done:,.0f} of at most {total:,.0f} token-steps (limits serving_work and "
                                        f"serving_search_work)"),
}
BOUNDS = {"token-steps"}          # units whose total is a limit: no time left is forecast from them


class Bar:
    """The Progress a command gives the layers below: stage lines (``verbose``) and, where ``draw``, the bar."""

    def __init__(self, stream: TextIO, verbose: bool, draw: bool) -> None:
        self.stream, self.verbose, self.draw = stream, verbose, draw
        self.words = ""
        self.began = time.monotonic()
        self.drawn_at = -math.inf
        self.shown = 0                # characters of the bar on the terminal now

    def stage(self, stage: str, count: int = 0) -> None:
        """A new stage: the bar of the last one erased, its line printed with -v."""
        self.erase()
        self.words = STAGES[stage](count)
        self.began, self.drawn_at = time.monotonic(), -math.inf
        if self.verbose:
            self.stream.write(self.words + "\n")
            self.stream.flush()

    def advance(self, done: float, total: float, unit: str) -> None:
        """The bar redrawn, once the stage has run PROGRESS_DELAY_S and at most every PROGRESS_REFRESH_S."""
        now = time.monotonic()
        if not self.draw or now - self.began < PROGRESS_DELAY_S or now - self.drawn_at < PROGRESS_REFRESH_S:
            return
        self.drawn_at = now
        part = min(max(done / total, 0.0), 1.0) if total > 0 else 0.0
        filled = round(part * BAR_CHARS)
        elapsed = now - self.began
        when = (f"{elapsed:.0f} s" if unit in BOUNDS or part in (0.0, 1.0) else
                f"{elapsed:.0f} s, about {math.ceil(elapsed * (1.0 - part) / part)} s left")
        line = (f"[{'#' * filled}{'-' * (BAR_CHARS - filled)}] {part:4.0%}  {UNITS[unit](done, total)}, {when}"
                f"  ({self.words})")[:max(_columns(self.stream) - 1, 1)]      # the stage's words cut first
        self.stream.write("\r" + line + " " * max(self.shown - len(line), 0))
        self.stream.flush()
        self.shown = len(line)

    def erase(self) -> None:
        """The bar's line blanked, the cursor back at its start: what follows prints as if it had never been."""
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


def _terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):        # no isatty, or a closed stream
        return False


def _columns(stream: TextIO) -> int:
    """The terminal's width: the bar's line must not wrap, or its carriage return redraws only the last row."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns or DEFAULT_COLUMNS                          # a terminal that gives no width


@contextlib.contextmanager
def shown(stdout_busy: bool = False) -> Iterator[Bar]:
    """The command's Bar on standard error, erased however the command ends (before its error is printed). A bar
    only on a terminal and not under --quiet, nor while ``stdout_busy`` streams rows to the same terminal."""
    params = click.get_current_context().find_root().params
    stream = sys.stderr
    draw = not params.get("quiet") and _terminal(stream) and not (stdout_busy and _terminal(sys.stdout))
    bar = Bar(stream, bool(params.get("verbose")), draw)
    try:
        yield bar
    finally:
        bar.erase()
