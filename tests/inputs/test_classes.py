"""The mechanism classes (triage/inputs/classes.yaml): every mechanism names one, and every incumbent — what
engines ship in a class's place, the bar a claim is priced against — carries its source."""

import re

from triage.inputs import registry
from triage.inputs.change import incumbent_candidates

VERSION = re.compile(r"@ [0-9a-f]{7}|PR #\d+|v\d+\.\d+|\d{4}-\d{2}-\d{2}")


def test_every_mechanism_names_a_class_that_exists():
    classes = registry.classes()
    assert {info.klass for info in registry.registry().values()} <= set(classes)


def test_every_incumbent_cites_where_it_shipped():
    incumbents = {k: c.incumbent for k, c in registry.classes().items() if c.incumbent is not None}
    assert set(incumbents) == {"kv-quantization", "weight-quantization", "activation-quantization"}
    for key, inc in incumbents.items():
        assert "TODO" not in inc.shipped and inc.shipped, key
        assert inc.evidence.get("quote") and "TODO" not in inc.evidence["quote"], key
        assert VERSION.search(inc.evidence.get("where", "")), key


def test_an_incumbent_is_priced_at_its_own_bits():
    # fp8 KV is 8 bits a value: a kv_quant candidate declares them; weight formats likewise
    for c in registry.classes().values():
        if c.incumbent is None:
            continue
        for candidate in incumbent_candidates(c.key):
            for key in candidate.keys:        # each format of the candidate, read by its own mechanism's class
                klass = registry.registry()[key].klass
                bits = {"kv-quantization": candidate.kv_bits, "weight-quantization": candidate.weight_bits,
                        "activation-quantization": candidate.activation_bits}[klass]
                assert bits == c.incumbent.bits, (c.key, candidate)
