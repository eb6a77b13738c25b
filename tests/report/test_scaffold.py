"""`triage new` is generated from the mechanism registry: every template is a valid card, and no mechanism
is missing from or invented by the templates."""

import re

import pytest
import yaml

import triage
from triage.inputs import cards, catalog
from triage.inputs.registry import registry
from triage.io.yamlio import document
from triage.report.scaffold import PRIMARY, card_text

DIRECTIONS = ["attention", "cache", "weights", "decoding", "system"]


def _filled(data: dict, direction: str) -> dict:
    """The template with each placeholder replaced as a user would: text, a year, a URL, the example."""
    key = PRIMARY[direction]
    return {**data, "title": "a method", "paper": {**data["paper"], "title": "a paper", "year": 2024,
                                                    "url": "https://arxiv.org/abs/2401.00001"},
            "claim": {**data["claim"], "text": "a headline", "baseline": "fp16", "source": "Table 1"},
            "change": {key: registry()[key].example}}


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_every_template_is_a_valid_card_of_a_real_mechanism_once_filled(direction):
    data = yaml.safe_load(card_text(f"t-{direction}", direction))
    claim = cards.from_document(document("new.yaml", _filled(data, direction)), catalog.load())
    assert set(claim.change.keys) == {PRIMARY[direction]}
    assert direction in registry()[PRIMARY[direction]].directions


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_an_untouched_template_is_refused_at_every_placeholder(direction):
    """The newcomer's untouched card passed validate --strict and run printed a 2.302x fleet gain from its
    placeholder values: each placeholder is now an addressed error, and nothing else is reported."""
    data = yaml.safe_load(card_text(f"t-{direction}", direction))
    with pytest.raises(triage.UserError) as err:
        cards.from_document(document("new.yaml", data), catalog.load())
    assert {p.path for p in err.value.problems} == {
        "$.title", "$.paper.title", "$.paper.year", "$.paper.url", "$.claim.text", "$.claim.baseline",
        "$.claim.source", f"$.change.{PRIMARY[direction]}"}
    assert all("placeholder from `triage new`" in p.message for p in err.value.problems)


def test_every_mechanism_is_offered_by_some_direction_and_none_is_invented():
    offered = set()
    for direction in DIRECTIONS:
        offered |= set(re.findall(r"^  (?:# )?([a-z_]+):", card_text("t", direction).split("\nchange:")[1]
                                  .split("\nimplementation:")[0], re.M))
    assert offered == set(registry())
