"""The memo's words for a weight or KV format: a float format by its name and width, its scales as declared
(issue 47, item 6: FP6 weights were worded "int6 weights, group 7168")."""

import pytest

from triage.inputs.change import parse
from triage.report.describe import describe


@pytest.mark.parametrize("change, words", [
    # FP6-LLM: e3m2 = 1 sign + 3 exponent + 2 mantissa bits = 6 bits = 0.75 B, an fp16 scale a row
    ({"weight_quant": {"format": "e3m2", "scales": "per-channel"}},
     "e3m2 (6-bit float) weights, per-channel scales (0.75 B per weight + 16 bits of scale per output channel), "
     "LM head in 16 bits"),
    # MXFP4: 4 bits + an 8-bit scale per 32 = 4.25 bits = 0.53125 B, printed to 4 significant digits
    ({"weight_quant": {"format": "e2m1", "group_size": 32, "scale_bits": 8, "keep_16bit": False}},
     "e2m1 (4-bit float) weights, group 32 (0.5312 B per weight)"),
    # int8 per channel with an fp16 scale and an 8-bit zero point
    ({"weight_quant": {"bits": 8, "scales": "per-channel", "zero_bits": 8, "keep_16bit": False}},
     "int8 weights, per-channel scales (1 B per weight + 16 bits of scale and 8 of zero point per output channel)"),
    # AWQ's int4 group 128, fp16 scale, 4-bit zero: 0.5 + 20/1024 = 0.51953125 B
    ({"weight_quant": {"bits": 4, "group_size": 128, "zero_bits": 4}},
     "int4 weights, group 128 (0.5195 B per weight), LM head in 16 bits"),
    ({"kv_quant": {"format": "e4m3"}}, "e4m3 (8-bit float) KV cache (1 B per element)"),
    ({"kv_quant": {"bits": 2, "group_size": 32, "zero_bits": 16}}, "2-bit KV cache, group 32 (0.375 B per element)"),
])
def test_a_format_is_worded_by_what_it_is(change, words):
    assert describe(parse(change)) == [words]
