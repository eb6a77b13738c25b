"""The numbers a verdict rests on are on the memo's page (issue 47): the serving table and figure show each side's
largest rate at the SLO, and the paper check says which setting it compared, when it replaced the card's batch,
and when triage's own prediction is above the paper's measurement."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from triage.cli import main

from conftest import CLAIMS


@pytest.fixture(scope="module")
def kv2x(tmp_path_factory):
    out = tmp_path_factory.mktemp("kv2x") / "memo.md"
    res = CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(CliRunner().invoke(main, ["run", str(CLAIMS / "kv2x.yaml"), "-f", "json"]).stdout)
    return out, doc


def test_kv2x_serving_table_and_figure_show_both_sides_largest_rate_at_the_slo(kv2x):
    out, doc = kv2x
    (cell,) = [c for c in doc["cells"] if "serving" in c]
    serving = cell["serving"]
    best = {side: serving[side]["max_rate_at_slo_rps"] for side in ("baseline", "claim")}
    assert best["claim"] > best["baseline"] > 0              # the claim serves more at the SLO (the verdict's gain)
    memo = out.read_text(encoding="utf-8")
    for side, rate in best.items():
        label = f"| {rate:.3g} (largest at the SLO: {side}) |"
        rows = [line for line in memo.splitlines() if line.startswith(label)]
        assert len(rows) == 2, label                        # the baseline's row and the claim's at that rate
    # at the baseline's largest rate both sides meet the SLO; at the claim's only the claim does
    at = {(r["rate_rps"], side): r["slo_met"] for side in best for r in serving[side]["rates"]}
    assert at[(best["baseline"], "baseline")] and at[(best["baseline"], "claim")]
    assert at[(best["claim"], "claim")] and not at[(best["claim"], "baseline")]
    svg = out.with_name("memo.serving.svg").read_text(encoding="utf-8")
    for side, rate in best.items():                         # a legend entry, wrapped after its comma
        assert ">largest rate at the SLO,</text>" in svg and f">{side}: {rate:.3g} req/s</text>" in svg


def _memo(card: str) -> str:
    res = CliRunner().invoke(main, ["run", str(CLAIMS / card)])
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_a_prediction_above_the_paper_s_measurement_is_flagged():
    """qserve.yaml: the paper measured 1.20× throughput (omniserve README, A100 table, Llama-3-8B); triage's own
    end-to-end price in that setting is higher than 1.05 × 1.20 = 1.26×: flagged, with what to do."""
    memo = _memo("qserve.yaml")
    line = next(x for x in memo.splitlines() if x.startswith("- **Prediction above the measurement:**"))
    predicted = float(line.split("triage predicts ")[1].split("×")[0])
    assert predicted > 1.26
    assert "above the paper's own measured 1.200×" in line and "implementation.bandwidth_efficiency" in line
    first_screen = memo.split("## The claim")[0]                  # and on the first screen, as a warning
    assert f"in the paper's own setting triage predicts {predicted:.2f}× end to end, above the paper's measured " \
           f"1.20×" in first_screen


def test_a_prediction_below_the_paper_s_measurement_is_stated_not_flagged():
    """snapkv.yaml reports 3.6× and the roofline bound is below it: triage's own price, under the bound, is set
    beside the measurement without the flag."""
    memo = _memo("snapkv.yaml")
    assert "Prediction above the measurement" not in memo
    line = next(x for x in memo.splitlines() if x.startswith("- *Prediction:*"))
    assert "not above the paper's measured 3.600×" in line


def test_the_paper_check_says_when_it_replaced_the_card_s_batch():
    """h2o.yaml states batch 8 and throughput: the bound is taken at each side's largest batch (capacity). At
    the stated batch 8 the step is the offloaded weights crossing a 16 GB/s host link (92 % of OPT-30B's ~60 GB
    of fp16 weights: ~3.4 s a step), against the KV read from the T4's memory (2·48 layers·7,168·2 B = 1.38 MB a
    token × 8 × 1,024 tokens = 11.3 GB at 320 GB/s: ~35 ms), so saving even all of the KV moves the step by
    about 1 %: the memo says the batch was replaced and what the bound was at the card's own batch."""
    memo = _memo("h2o.yaml")
    line = next(x for x in memo.splitlines() if x.startswith("- *Setting replaced:*"))
    assert "the card states batch 8" in line and "(8 against 40)" in line
    at_stated = float(line.split("at the stated batch 8 it is ")[1].split("×")[0])
    assert 1.0 <= at_stated < 1.011
