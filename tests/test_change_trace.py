"""Following a card's change from loading to the decision (issue 45): every read of the typed change (inputs/
change.py: the Change record and its spec records) is logged with the module that made it, while
`triage.evaluate` loads a card, prices it and reaches its decision (analysis/decision.decide). The change must
stay in at most eight rooms (modules) and never climb back up a floor (io → inputs → model → serving → analysis →
report: a read in a module of an earlier floor after one in a later floor, as model code asking the registry about
the change again would be). The record machinery's own equality and the standard library's (dataclasses.replace)
are not rooms of the house."""

import sys
from pathlib import Path

import pytest

import triage
from triage.analysis import decision, pipeline
from triage.inputs import change as change_mod
from triage.inputs import stack

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("triage.io", "triage.inputs", "triage.model", "triage.serving", "triage.analysis", "triage.report")
RECORDS = (change_mod.Change, *{*change_mod.SPECS.values()})
CARDS = sorted((ROOT / "claims").glob("*.yaml")) + sorted((ROOT / "examples" / "cards").glob("*.yaml"))


def floor(module: str) -> int:
    return next(i for i, f in enumerate(FLOORS) if module == f or module.startswith(f + "."))


def trace(card: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The modules that read the card's change, in order, one entry per stay (consecutive reads in one module)."""
    reads: list[str] = []
    on = [True]
    card_change: set[int] = set()             # the card's Change and its spec records, by identity
    parse, resolve = change_mod.parse, stack.resolve

    def track(out):
        card_change.update({id(out), *(id(v) for v in change_mod.values(out).values() if isinstance(v, RECORDS))})
        return out

    def parsed(*args, **kwargs):              # a card's section (not the registry's incumbents)
        out = parse(*args, **kwargs)
        return track(out) if sys._getframe(1).f_globals["__name__"] == "triage.inputs.cards" else out

    def getattribute(self, name):
        if on[0] and id(self) in card_change:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith("triage.") and caller != "triage.records" and (not reads or reads[-1] != caller):
                reads.append(caller)
        return object.__getattribute__(self, name)

    decide = decision.decide

    def decided(*args, **kwargs):
        out = decide(*args, **kwargs)
        on[0] = False                      # the first decision is the card's: the trace ends there
        return out

    for cls in RECORDS:
        monkeypatch.setattr(cls, "__getattribute__", getattribute, raising=False)
    monkeypatch.setattr(pipeline.decision, "decide", decided)
    monkeypatch.setattr(change_mod, "parse", parsed)
    monkeypatch.setattr(stack, "resolve", lambda chosen: track(resolve(chosen)))     # a stack's cards, composed
    triage.evaluate(card)
    return reads


def climbs(stays: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(stays, stays[1:], strict=False) if floor(b) < floor(a)]


@pytest.mark.slow
@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.stem)
def test_a_cards_change_reaches_its_decision_in_eight_rooms_without_climbing_back(card, monkeypatch):
    stays = trace(card, monkeypatch)
    assert len(set(stays)) <= 8, stays
    assert climbs(stays) == [], stays


def test_the_trace_sees_a_read_and_a_climb(monkeypatch):
    # kv2x's change is read by the mechanisms that price it; a planted read back in inputs/ is a climb
    stays = trace(ROOT / "claims" / "kv2x.yaml", monkeypatch)
    assert "triage.model.mechanisms" in stays
    assert climbs([*stays, "triage.inputs.registry"]) == [(stays[-1], "triage.inputs.registry")]
