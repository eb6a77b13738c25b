"""The mechanism registry (triage/inputs/mechanisms.yaml) is the one place a mechanism is described: the claim
schema's `change` section is generated from it, and a key's words come from it or from one describer."""

import json
import os

from triage.inputs.change import parse
from triage.inputs.registry import change_schema, float_format_schema, registry, scheduler_properties
from triage.report.describe import DESCRIBE, describe

from conftest import ROOT

SCHEMA = ROOT / "schemas" / "claim.schema.json"
WORKLOADS = ROOT / "schemas" / "workloads.schema.json"


def test_the_claim_schemas_change_section_is_generated_from_the_registry():
    """schemas/claim.schema.json (what editors and `triage validate` read) holds the registry's fragments, in
    the registry's order (TRIAGE_UPDATE_GOLDEN=1 rewrites it)."""
    doc = json.loads(SCHEMA.read_text(encoding="utf-8"))
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        doc["properties"]["change"] = change_schema()
        doc["$defs"]["float_format"] = float_format_schema()
        SCHEMA.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert json.dumps(doc["properties"]["change"], indent=2) == json.dumps(change_schema(), indent=2), \
        "schemas/claim.schema.json drifted from triage/inputs/mechanisms.yaml (TRIAGE_UPDATE_GOLDEN=1 refreshes it)"
    assert doc["$defs"]["float_format"] == float_format_schema(), \
        "schemas/claim.schema.json's float_format drifted from triage/inputs/formats.yaml (TRIAGE_UPDATE_GOLDEN=1)"


def test_the_workload_schemas_scheduler_keys_are_generated_from_the_registry():
    """A workload's `scheduler:` block and a card's `change.scheduler` take the same keys, described once in the
    registry (TRIAGE_UPDATE_GOLDEN=1 rewrites schemas/workloads.schema.json's copy)."""
    doc = json.loads(WORKLOADS.read_text(encoding="utf-8"))
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        doc["$defs"]["scheduler"]["properties"] = scheduler_properties()
        WORKLOADS.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    assert doc["$defs"]["scheduler"]["properties"] == scheduler_properties(), \
        "schemas/workloads.schema.json's scheduler drifted from triage/inputs/mechanisms.yaml (TRIAGE_UPDATE_GOLDEN=1)"


def test_every_mechanism_has_words_once():
    """A key is worded by its registry template, as the quantity it multiplies, or by one describer function:
    exactly one of the three."""
    for key, info in registry().items():
        assert [info.words is not None, info.multiplies is not None, key in DESCRIBE].count(True) == 1, key
    assert set(DESCRIBE) <= set(registry())


def test_the_registry_words_render_the_examples():
    # the templates read the value ({value}) or a mapping's keys: kv_latent {elements: 576}, low_rank {rank: 1024}
    assert describe(parse({"kv_latent": {"elements": 576}, "low_rank": {"rank": 1024}, "kv_bytes": 0.5})) == [
        "latent KV cache of 576 per layer", "rank-1024 factorized projections", "KV bytes per token × 0.5"]
    for key, info in registry().items():
        assert describe(parse({key: info.example}))[0], key


def test_every_mechanism_is_a_declared_multiplier_or_has_one_function():
    from triage.model.mechanisms import _FUNCTIONS
    for key, info in registry().items():
        assert bool(info.scales) != (key in _FUNCTIONS), key
    assert set(_FUNCTIONS) <= set(registry())


def test_a_prefill_only_sparsity_key_is_one_registry_entry():
    """prefill_attention_flops was added as one entry of mechanisms.yaml (a multiplier on attention FLOPs, phases
    [prefill]) and nothing else: the schema takes it, `triage new` offers it, the memo words it, the model prices
    it on prefill cells only and the decode cell says it does not act there. Llama 2 7B, a 2,048-token prompt,
    causal attention by hand: 2 matmuls x 2 FLOP x 4,096 (heads x head dim) x 32 layers x 2,048 x 2,049 / 2 pairs
    = 1.100048498688e12 FLOP, halved by 0.5."""
    import triage
    from triage.report.scaffold import change_lines

    assert "prefill_attention_flops" in change_schema()["properties"]
    assert any("prefill_attention_flops" in line for line in change_lines("attention"))
    assert describe(parse({"prefill_attention_flops": 0.5})) == ["prefill attention FLOPs × 0.5"]
    card = {"id": "p", "title": "t", "direction": "attention", "change": {"prefill_attention_flops": 0.5}}
    w = {"defaults": {"model": "llama-2-7b", "hardware": "h100-sxm"},
         "workloads": [{"name": "p", "phase": "prefill", "context": 2048, "batch": 1},
                       {"name": "d", "phase": "decode", "context": 2048, "batch": 1}]}
    d = triage.evaluate(card, w, analyse=False).to_dict()
    prefill, decode = d["cells"]
    attention = 2 * 2 * 4096 * 32 * 2048 * 2049 / 2
    assert prefill["baseline"]["flops_by_group"]["attention"] == attention
    assert prefill["claim"]["flops_by_group"]["attention"] == attention / 2
    assert decode["claim"]["flops_by_group"] == decode["baseline"]["flops_by_group"]
    assert any("acts at prefill only: d is priced unchanged" in x["message"] for x in d["warnings"])
