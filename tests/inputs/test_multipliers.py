"""A multiplier of a baseline quantity set above 1 grows what it names (kv_bytes: 2 for a 2× compression): a
warning in `triage validate` and in the memo, never a silent NO-GO (issue 47, item 4). The multipliers are a
property of their registry entries (mechanisms.yaml: multiplies), not a list in code."""

import pytest
from click.testing import CliRunner

import triage
from triage.cli import main
from triage.inputs.change import parse
from triage.inputs.registry import registry

WARNING = ("change.kv_bytes: 2 grows KV bytes per token 2× — a 2× saving is kv_bytes: 0.5 (the multiplier is "
           "the claim's KV bytes per token ÷ the baseline's)")
CARD = "id: grow\ntitle: t\ndirection: cache\nchange: {{kv_bytes: {value}}}\n"


def test_the_registry_marks_each_fraction_of_baseline_multiplier():
    """The keys whose schema is a multiplier of the baseline's quantity (a fused kernel's score traffic 0, a
    halved KV 0.5): each names the quantity it multiplies."""
    marked = {key: info.multiplies for key, info in registry().items() if info.multiplies}
    assert marked == {"kv_bytes": "KV bytes per token", "attention_flops": "attention FLOPs",
                      "prefill_attention_flops": "prefill attention FLOPs",
                      "score_bytes": "attention score traffic", "weight_bytes": "bytes per weight",
                      "linear_flops": "linear-layer FLOPs"}


def test_only_a_multiplier_above_one_grows():
    change = parse({"kv_bytes": 2, "weight_bytes": 0.5, "linear_flops": 1.0, "kv_heads": 8})
    assert change.growing == (("kv_bytes", 2.0),)


@pytest.mark.parametrize("value, warned", [(2, True), (0.5, False)])
def test_validate_warns_and_still_passes(tmp_path, value, warned):
    card = tmp_path / "grow.yaml"
    card.write_text(CARD.format(value=value), encoding="utf-8")
    for strict in ([], ["--strict"]):
        res = CliRunner().invoke(main, ["validate", *strict, str(card)])
        assert res.exit_code == 0, res.stderr
        assert res.stderr == (f"warning: {card}: {WARNING}\n" if warned else "") + "1 file valid\n"


def test_a_stacked_card_is_warned_of_under_its_own_file(tmp_path):
    (tmp_path / "grow.yaml").write_text(CARD.format(value=2), encoding="utf-8")
    (tmp_path / "half.yaml").write_text(CARD.format(value=0.5).replace("grow", "half"), encoding="utf-8")
    (tmp_path / "both.yaml").write_text("id: both\ntitle: t\ndirection: cache\nstack: [grow.yaml, half.yaml]\n",
                                        encoding="utf-8")
    res = CliRunner().invoke(main, ["validate", str(tmp_path / "both.yaml"), str(tmp_path / "grow.yaml")])
    assert res.exit_code == 0, res.stderr
    assert res.stderr == f"warning: {tmp_path / 'grow.yaml'}: {WARNING}\n2 files valid\n"


@pytest.mark.parametrize("value, warned", [(2, True), (0.5, False)])
def test_the_memo_says_it(tmp_path, value, warned):
    card = tmp_path / "grow.yaml"
    card.write_text(CARD.format(value=value), encoding="utf-8")
    found = [w for w in triage.evaluate(card).to_dict()["warnings"] if w["code"] == "multiplier-grows"]
    assert found == ([{"code": "multiplier-grows", "message": WARNING}] if warned else [])
    memo = CliRunner().invoke(main, ["run", str(card)])
    assert memo.exit_code == 0, memo.stderr
    assert (f"> **Warning:** {WARNING}." in memo.stdout) is warned
