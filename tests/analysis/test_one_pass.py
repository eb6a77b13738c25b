"""One pass through the data (issue 22): an evaluation reads and checks every input (the catalogs, the workload
file, the card, the paper's own setting) before it prices anything, each once, and nothing it computes goes back
into the inputs' loaders; the cost model runs as often as the analyses shown need, no more."""

import sys
import threading

import pytest

import triage
from triage.inputs import cards, catalog, validation, workloads
from triage.io import yamlio
from triage.model import evidence

from conftest import CLAIMS, ROOT

LOADERS = {f.__code__: name for name, f in (
    ("catalog.resolve", catalog.resolve), ("workloads.definitions", workloads.definitions),
    ("workloads.load", workloads.load), ("workloads.paper_setting", workloads.paper_setting),
    ("cards.load", cards.load), ("validate", validation.validate), ("load_file", yamlio.load_file))}


def _walk(monkeypatch, card, source, **options):
    """The evaluation's loader calls (name and what they read) and its pricing passes, in order."""
    events = []
    compute = evidence.compute

    def counted(*args, **kwargs):
        events.append(("compute", ""))
        return compute(*args, **kwargs)
    monkeypatch.setattr(evidence, "compute", counted)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in LOADERS:
            name = LOADERS[frame.f_code]
            what = frame.f_locals.get("path") or frame.f_locals.get("source") or frame.f_locals.get("doc") or ""
            events.append((name, str(getattr(what, "file", what))))
    sys.setprofile(profile)
    threading.setprofile(profile)           # the sensitivity's variants price on worker threads
    try:
        triage.evaluate(card, source, **options)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return events


def test_inputs_are_read_once_and_before_any_pricing(monkeypatch):
    # a card whose paper check prices its setting (AWQ: a reported speedup in a stated setting) over a user file
    events = _walk(monkeypatch, CLAIMS / "awq.yaml", ROOT / "examples" / "mix-chat.yaml")
    # the package's own data (the mechanism classes, read when first asked for, once a process) is no input
    events = [(name, what) for name, what in events if not what.startswith(str(ROOT / "triage"))]
    first = next(i for i, (name, _) in enumerate(events) if name == "compute")
    assert all(name == "compute" for name, _ in events[first:]), events[first:]
    loads = [(name, what) for name, what in events[:first]]
    # the user's workload file: read once, checked against the schema once, resolved once
    assert sum(1 for name, what in loads if name == "load_file" and what.endswith("mix-chat.yaml")) == 1
    assert sum(1 for name, what in loads if name == "validate" and what.endswith("mix-chat.yaml")) == 1
    # in order: the workload file (the names a card may use), the card, then the paper's setting the card states,
    # twice: as a bound, and as the memo prices a workload (the prediction set beside the paper's measurement)
    order = [name for name, what in loads if name in ("cards.load", "workloads.paper_setting")
             or name == "workloads.definitions" and what.endswith("mix-chat.yaml")]
    assert order == ["workloads.definitions", "cards.load", "workloads.paper_setting", "workloads.paper_setting"]


@pytest.mark.slow
def test_the_cost_model_runs_as_often_as_the_analyses_need(monkeypatch):
    # kv2x on the shipped matrix: the evaluation's own pass; crossover (both model × chip pairs in one grid),
    # throughput at the SLO and the latency-throughput frontier, one pass each on their own small grids; the
    # sensitivity's 8 variants, of which 4 price (efficiency 0.5, 0.75, 1.0 and no kernel: the kernel-yes and
    # the three quality variants are judged on the evaluation's own prices); no paper check (the card reports
    # memory, no speedup) and no shipped alternative to price (its class has none)
    passes = [name for name, _ in _walk(monkeypatch, CLAIMS / "kv2x.yaml", None)]
    assert passes.count("compute") == 1 + 3 + 4
    # a sweep's pricing (no analysis shown): the one pass
    passes = [name for name, _ in _walk(monkeypatch, CLAIMS / "kv2x.yaml", None, analyse=False)]
    assert passes.count("compute") == 1
    # AWQ without analysis: its own pass, one for each shipped alternative of its class (int8 weight-only and
    # fp8 W8A8, each its own change), and its paper check's setting (batch and context stated: no search), as a
    # bound and as the memo prices a workload (the prediction beside the paper's measurement)
    passes = [name for name, _ in _walk(monkeypatch, CLAIMS / "awq.yaml", None, analyse=False)]
    assert passes.count("compute") == 1 + 2 + 1 + 1
