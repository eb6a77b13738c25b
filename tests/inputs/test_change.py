"""A card's change resolved once into a typed record (issue 45): the records mirror the registry's schema, every
shipped card's change reads back as the card wrote it, and the facts are the registry's, read off by hand."""

import dataclasses
from pathlib import Path

import pytest

from triage.inputs import cards
from triage.inputs.change import DERIVED, SPECS, Change, parse, to_json
from triage.inputs.registry import LONG_CONTEXT, PERPLEXITY_AND_TASK, registry
from triage.io.yamlio import load_file

ROOT = Path(__file__).resolve().parents[2]
CARDS = sorted((ROOT / "claims").glob("*.yaml")) + sorted((ROOT / "examples" / "cards").glob("*.yaml"))


def _properties(schema: dict) -> set[str]:
    """Every property a schema fragment names, across its oneOf branches."""
    out = set(schema.get("properties", {}))
    for branch in schema.get("oneOf", []):
        out |= _properties(branch)
    return out


def test_the_change_record_has_one_field_per_registry_key_in_its_order():
    fields = [f.name for f in dataclasses.fields(Change)]
    assert fields[:len(registry())] == list(registry())


@pytest.mark.parametrize("key", sorted(SPECS))
def test_each_spec_record_holds_its_schemas_properties(key):
    declared = {f.name for f in dataclasses.fields(SPECS[key])} - DERIVED
    expected = _properties(registry()[key].schema)
    if key == "dequant_ops":
        expected = {"kv", "weights"}                 # a number, or {kv, weights}
    assert declared == expected


@pytest.mark.parametrize("card", CARDS, ids=lambda p: p.stem)
def test_every_shipped_change_reads_back_as_written(card):
    written = load_file(card, str(card), trusted=True).data.get("change")
    if written is None:                              # a card that only stacks others
        return
    assert to_json(cards.load(card).change) == written


def test_the_facts_of_a_4bit_weight_and_fp8_kv_change():
    """AWQ-style int4 weights (group 128) beside an fp8 KV: weights at 4 bits need perplexity and a task; an
    8-bit KV needs no long-context retrieval; both formats change what a kernel reads (kernel: false reverts
    the bytes read); the weights act on the linear layers, the KV on attention, both phases."""
    c = parse({"weight_quant": {"bits": 4, "group_size": 128}, "kv_quant": {"format": "e4m3"}})
    assert (c.weight_bits, c.kv_bits) == (4.0, 8.0)
    assert c.needs == (PERPLEXITY_AND_TASK,)
    assert c.changes_format and c.kv_format and not c.switchable
    assert c.groups == {"linear", "attention"} and c.kinds == {"bytes"}
    assert c.keys == ("kv_quant", "weight_quant") and c.order == ("weight_quant", "kv_quant")
    assert {"weight_read_bpe", "head_read_bpe", "kv_read_bpe"} <= c.reverts


def test_eviction_needs_long_context_retrieval_and_speculation_is_switchable():
    assert parse({"kv_tokens": {"budget": 2048}}).needs == (LONG_CONTEXT,)
    spec = parse({"speculative": {"tokens": 4, "acceptance": 0.7, "draft_cost": 0.05}})
    assert spec.switchable and spec.unsimulated == ("speculative",) and spec.acting == (("speculative",
                                                                                         frozenset({"decode"})),)
    # a sensitivity variant replaces the acceptance alone: the facts hold (they depend on the keys set)
    varied = dataclasses.replace(spec, speculative=dataclasses.replace(spec.speculative, acceptance=0.5))
    assert parse(to_json(varied)) == varied
