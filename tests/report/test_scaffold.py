"""`triage new` is generated from the mechanism registry: every template is a valid card, and no mechanism
is missing from or invented by the templates."""

import re

import pytest
import yaml

from triage.inputs import cards, catalog
from triage.inputs.registry import registry
from triage.io.yamlio import document
from triage.report.scaffold import PRIMARY, card_text

DIRECTIONS = ["attention", "cache", "weights", "decoding", "system"]


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_every_template_is_a_valid_card_of_a_real_mechanism(direction):
    text = card_text(f"t-{direction}", direction)
    data = yaml.safe_load(text)
    claim = cards.from_document(document("new.yaml", data), catalog.load())
    assert set(claim.change) == {PRIMARY[direction]}
    assert direction in registry()[PRIMARY[direction]].directions


def test_every_mechanism_is_offered_by_some_direction_and_none_is_invented():
    offered = set()
    for direction in DIRECTIONS:
        offered |= set(re.findall(r"^  (?:# )?([a-z_]+):", card_text("t", direction).split("\nchange:")[1]
                                  .split("\nimplementation:")[0], re.M))
    assert offered == set(registry())
