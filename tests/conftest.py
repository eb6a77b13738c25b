"""Shared paths and helpers for the test suite."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import triage

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT / "claims"
COURSE = ROOT / "examples" / "course.yaml"

GB, GiB, MiB = 1e9, 2.0**30, 2.0**20


def cell(result: Any, workload: str, hardware: str | None = None, **match: Any) -> dict[str, Any]:
    """The one cell of a result (as JSON) with this workload name (and hardware, and other fields)."""
    found = [c for c in result.to_dict()["cells"] if c["workload"] == workload
             and (hardware is None or c["hardware"] == hardware)
             and all(c[k] == v for k, v in match.items())]
    assert len(found) == 1, f"{len(found)} cells match {workload} {hardware} {match}"
    return found[0]


def course_matrix(**overrides: Any) -> dict[str, Any]:
    """The course's setting as a workload dict: course-7b on a 2 TB/s, 1000 TFLOP/s, 80 GiB card, no fixed cost."""
    matrix: dict[str, Any] = {
        "hardware": {"course-gpu": {"memory": "80 GiB", "bandwidth": "2 TB/s", "compute": {"fp16": "1000 TFLOP/s"}}},
        "defaults": {"model": "course-7b", "hardware": "course-gpu", "efficiency": {"bandwidth": 1.0, "compute": 1.0},
                     "overhead": 0, "sequence_overhead": 0, "reserve": 0},
        "workloads": [{"name": "A", "phase": "decode", "context": 4096, "batch": 1},
                      {"name": "B", "phase": "decode", "context": 131072, "batch": 1}],
    }
    matrix.update(overrides)
    return matrix


def card(change: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A minimal valid card dict with this change."""
    return {"id": "t", "title": "test card", "direction": "cache", "change": change, **extra}


@pytest.fixture
def evaluate():
    return triage.evaluate


def load_workloads(source: Any) -> Any:
    """A workload file or dict built into the matrix of numpy columns."""
    from triage.inputs import workloads
    from triage.model import matrix

    return matrix.build(workloads.load(source))


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Each test session gets its own private triage folder (compiled templates, the record of outputs)."""
    import os

    folder = tmp_path_factory.mktemp("cache")
    folder.chmod(0o700)
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True)
def _no_user_catalog(monkeypatch):
    """Tests see the shipped catalog only: a user's $TRIAGE_CATALOG would change names and numbers."""
    monkeypatch.delenv("TRIAGE_CATALOG", raising=False)


class Overtime(BaseException):
    """The watchdog's alarm: not an Exception, so neither triage's handler nor CliRunner swallows it."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail the test once the block has run ``seconds``, instead of waiting for a hang or a cubic layout."""
    def ring(signum: int, frame: Any) -> None:
        raise Overtime(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# A watchdog that only catches a hang: how fast a command runs is bench/'s to say, never a unit test's (a busy
# 2-core machine runs the same test several times slower; issue 45).
HANG_S = 120


def run(*args: Any, **kwargs: Any) -> Result:
    """`triage ARGS` in process: exit 0, 1 or 2, never a traceback; failed by the watchdog only on a hang
    (HANG_S). A hostile input's bound is on its work (cells, bytes, an early refusal), asserted where it is
    tested."""
    from triage.cli import main

    with deadline(HANG_S):
        res = CliRunner().invoke(main, [str(a) for a in args], **kwargs)
    assert res.exit_code in (0, 1, 2), (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output and "internal error" not in res.output
    return res
