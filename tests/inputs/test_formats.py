"""Float element formats (triage/inputs/formats.yaml) in weight_quant and kv_quant, and per-channel scales: a
card writes FP6 weights as `{format: e3m2, scales: per-channel}`, not as int6 bits with an invented group size
(issue 47, item 6)."""

import pytest

import triage
from triage.errors import UserError
from triage.inputs import cards
from triage.inputs.catalog import load
from triage.inputs.change import parse
from triage.inputs.registry import float_formats

from conftest import cell

# llama-3.2-1b (catalog: hidden 2,048, 16 layers, 32 heads and 8 KV heads of 64, MLP 8,192, vocabulary 128,256,
# tied embeddings), by hand:
#   one layer: q and o 2,048 × 2,048 = 4,194,304 each, k and v 2,048 × 512 = 1,048,576 each, gate, up and down
#   2,048 × 8,192 = 16,777,216 each, two norms 2,048 each: 60,821,504; 16 layers + final norm 2,048 =
#   973,146,112 block weights (the embedding, tied, is the LM head: 128,256 × 2,048 = 262,668,288, kept 16-bit)
#   output channels (rows) of one layer: q 2,048 + k 512 + v 512 + o 2,048 + gate 8,192 + up 8,192 + down 2,048 =
#   23,552; 16 layers: 376,832
BLOCK_WEIGHTS = 973_146_112
ROWS = 376_832
HEAD_BYTES = 262_668_288 * 2


def _priced(change, phase="decode"):
    card = {"id": "f", "title": "t", "direction": "weights", "change": change}
    w = {"defaults": {"model": "llama-3.2-1b", "hardware": "h100-sxm"},
         "workloads": [{"name": "d", "phase": phase, "context": 1, "batch": 1}]}
    return cell(triage.evaluate(card, w, analyse=False), "d")


def test_each_format_has_its_bits_from_the_specifications():
    """1 sign bit + exponent + mantissa: OCP Microscaling Formats (MX) v1.0 defines FP4 E2M1 (4 bits) and FP6
    E3M2 and E2M3 (6 bits); the OCP 8-bit floating point specification (OFP8) E4M3 and E5M2 (8 bits)."""
    assert {k: f.bits for k, f in float_formats().items()} == {"e2m1": 4, "e3m2": 6, "e2m3": 6, "e4m3": 8, "e5m2": 8}
    assert all("OCP" in f.source for f in float_formats().values())


def test_e3m2_weights_with_per_channel_scales_are_priced_by_hand():
    """FP6-LLM's format: 6 bits = 0.75 B per weight (never 6 // 8 = 0), plus one fp16 scale per output channel:
    973,146,112 × 0.75 + 376,832 rows × 2 B = 729,859,584 + 753,664 = 730,613,248 B of block weights read by a
    decode step; stored, with the 16-bit LM head: 730,613,248 + 525,336,576 = 1,255,949,824 B."""
    c = _priced({"weight_quant": {"format": "e3m2", "scales": "per-channel"}})
    assert c["claim"]["bytes_by_group"]["linear"] == BLOCK_WEIGHTS * 0.75 + ROWS * 2 == 730_613_248
    assert c["claim"]["weights_bytes"] == 730_613_248 + HEAD_BYTES == 1_255_949_824
    assert c["baseline"]["bytes_by_group"]["linear"] == BLOCK_WEIGHTS * 2


def test_mxfp4_is_four_and_a_quarter_bits_per_weight():
    """MXFP4 (OCP MX v1.0): 32 E2M1 elements share one 8-bit E8M0 scale, 4 + 8/32 = 4.25 bits = 0.53125 B per
    weight: 973,146,112 × 0.53125 = 516,983,872 B."""
    c = _priced({"weight_quant": {"format": "e2m1", "group_size": 32, "scale_bits": 8}})
    assert c["claim"]["bytes_by_group"]["linear"] == 516_983_872


def test_per_tensor_scales_add_nothing_and_integer_bits_still_work():
    # int8 with one scale per matrix: 973,146,112 × 1 B; int4 group 128 fp16 scale: × (0.5 + 16/1024) = 0.515625
    assert _priced({"weight_quant": {"bits": 8, "scales": "per-tensor"}})["claim"]["bytes_by_group"]["linear"] \
        == BLOCK_WEIGHTS
    assert _priced({"weight_quant": {"bits": 4, "group_size": 128}})["claim"]["bytes_by_group"]["linear"] \
        == BLOCK_WEIGHTS * 0.515625


def test_an_e4m3_kv_cache_is_one_byte_per_element():
    """The KV of one token: 2 × 16 layers × 8 KV heads × 64 = 16,384 elements: 32,768 B in fp16, 16,384 B in
    e4m3 (8 bits, per-tensor scale)."""
    c = _priced({"kv_quant": {"format": "e4m3"}})
    assert (c["baseline"]["kv_bytes"], c["claim"]["kv_bytes"]) == (32_768, 16_384)


def test_output_channels_of_a_mixture_of_experts():
    """Mixtral 8x7B (hidden 4,096, 32 layers, 32 heads and 8 KV heads of 128, 8 experts of 14,336): attention
    rows per layer 4,096 + 1,024 + 1,024 + 4,096 = 10,240, × 32 = 327,680; each expert 14,336 × 2 + 4,096 =
    32,768 rows, × 8 experts × 32 layers = 8,388,608."""
    assert load().models["mixtral-8x7b"].output_channels() == (327_680, 8_388_608)


def test_a_float_format_declares_its_element_bits():
    """FP4 weights are a low-bit class (4 bits or fewer: perplexity and a task needed); FP6 is not."""
    assert parse({"weight_quant": {"format": "e3m2", "scales": "per-channel"}}).weight_bits == 6
    assert parse({"kv_quant": {"format": "e5m2"}}).kv_bits == 8
    assert parse({"weight_quant": {"format": "e2m1", "group_size": 32}}).needs
    assert not parse({"weight_quant": {"format": "e3m2", "scales": "per-channel"}}).needs


@pytest.mark.parametrize("spec, message", [
    ({"bits": 6, "format": "e3m2", "group_size": 128},
     "expected bits (an integer format) or format (a float format such as e3m2), one of the two, got a mapping"),
    ({"format": "e3m2", "group_size": 128, "scales": "per-channel"},
     "expected group_size (weights per scale) or scales (per-channel, per-tensor), one of the two, got a mapping"),
])
def test_a_weight_format_names_one_width_and_one_scaling(spec, message):
    card = {"id": "f", "title": "t", "direction": "weights", "change": {"weight_quant": spec}}
    with pytest.raises(UserError) as err:
        cards.load(card)
    assert [p.message for p in err.value.problems] == [message]


def test_fp6_compute_is_a_dtype_a_chip_may_lack():
    """compute_dtype takes fp6 (Blackwell lists a dense fp6 peak: catalog b200 4,500 TFLOP/s); a Hopper chip has
    none, and the memo says the linear layers keep the workload's rate there."""
    card = {"id": "f", "title": "t", "direction": "weights", "change": {"compute_dtype": "fp6"}}
    w = {"defaults": {"model": "llama-3.2-1b", "hardware": "h100-sxm"},
         "workloads": [{"name": "p", "phase": "prefill", "context": 2048, "batch": 1}]}
    warnings = triage.evaluate(card, w, analyse=False).to_dict()["warnings"]
    assert {"code": "dtype-missing", "message": "compute_dtype fp6: h100-sxm has no dense fp6 peak, so the linear "
            "layers there keep the workload's rate (no gain from the dtype)"} in warnings
