"""The mechanism registry (triage/inputs/mechanisms.yaml) is the one place a mechanism is described: the claim
schema's `change` section is generated from it, and a key's words come from it or from one describer."""

import json
import os

from triage.inputs.registry import change_schema, registry
from triage.report.describe import DESCRIBE, describe

from conftest import ROOT

SCHEMA = ROOT / "schemas" / "claim.schema.json"


def test_the_claim_schemas_change_section_is_generated_from_the_registry():
    """schemas/claim.schema.json (what editors and `triage validate` read) holds the registry's fragments, in
    the registry's order (TRIAGE_UPDATE_GOLDEN=1 rewrites it)."""
    doc = json.loads(SCHEMA.read_text(encoding="utf-8"))
    if os.environ.get("TRIAGE_UPDATE_GOLDEN"):
        doc["properties"]["change"] = change_schema()
        SCHEMA.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert json.dumps(doc["properties"]["change"], indent=2) == json.dumps(change_schema(), indent=2), \
        "schemas/claim.schema.json drifted from triage/inputs/mechanisms.yaml (TRIAGE_UPDATE_GOLDEN=1 refreshes it)"


def test_every_mechanism_has_words_once():
    """A key is worded by its registry template or by one describer function, never both, never neither."""
    for key, info in registry().items():
        assert (info.words is None) == (key in DESCRIBE), key
    assert set(DESCRIBE) <= set(registry())


def test_the_registry_words_render_the_examples():
    # the templates read the value ({value}) or a mapping's keys: kv_latent {elements: 576}, low_rank {rank: 1024}
    assert describe({"kv_latent": {"elements": 576}, "low_rank": {"rank": 1024}, "kv_bytes": 0.5}) == [
        "latent KV cache of 576 per layer", "rank-1024 factorized projections", "KV bytes per token × 0.5"]
    for key, info in registry().items():
        assert describe({key: info.example})[0], key
