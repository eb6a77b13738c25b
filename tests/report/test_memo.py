"""Every shipped card's memo: a first screen that decides, and no Python value printed as Python."""

import re

import pytest

import triage
from triage.report.memo import render_brief, render_markdown

from conftest import CLAIMS

CARDS = sorted(CLAIMS.glob("*.yaml"))
DEFAULT_WORKLOADS = ["chat-4k", "docqa-128k", "chat-4k-b16", "prefill-2k"]


class _PerCard(dict):
    """Each card's memo, rendered when a test first asks for that card (not every shipped card up front)."""

    def __missing__(self, card: str) -> str:
        self[card] = render_markdown(triage.evaluate(CLAIMS / f"{card}.yaml"))
        return self[card]


@pytest.fixture(scope="module")
def memos():
    return _PerCard()


# the fast set's cards for the every-card checks: the course's own, a weight format, a serving card, speculation
FAST = ("kv2x", "awq", "sarathi-serve", "speculative-decoding")
EVERY_CARD = [c.stem if c.stem in FAST else pytest.param(c.stem, marks=pytest.mark.slow) for c in CARDS]


@pytest.mark.slow
@pytest.mark.parametrize("card", [c.stem for c in CARDS])
def test_the_first_25_lines_decide(memos, card):
    first = memos[card].splitlines()[:25]
    text = "\n".join(first)
    assert any(line.startswith("**Decision: ") for line in first)
    assert "Fleet gain **" in text
    assert "| workload | model | hardware | phase | context | batch | share of requests | end-to-end |" in text
    for workload in DEFAULT_WORKLOADS:
        assert f"| {workload} |" in text, workload
    assert "What blocks GO" in text or "GO by the rule" in text
    assert "What would flip it" in text


PYTHON = re.compile(r"\bNone\b|\{'|\['|'\]|-0\.0\b|\b1 GPUs\b|\bnan\b|\binf\b|\b0, 0\.0 tok/s|at most batch 0\b")


@pytest.mark.parametrize("card", EVERY_CARD)
def test_no_python_values_in_a_memo_or_brief(memos, card):
    brief = render_brief(triage.evaluate(CLAIMS / f"{card}.yaml"))
    for name, text in (("memo", memos[card]), ("brief", brief)):
        found = sorted({m.group() for m in PYTHON.finditer(text)})
        assert not found, f"{card} {name}: {found}"


def test_a_cell_where_nothing_fits_says_so_in_words():
    w = {"defaults": {"model": "llama-2-70b", "hardware": "a100-40gb"},
         "workloads": [{"name": "huge", "context": 131072, "batch": 8}]}
    text = render_markdown(triage.evaluate(CLAIMS / "kv2x.yaml", w))
    assert "no batch meets it" in text and "does not fit even one sequence" in text
    assert not PYTHON.search(text)


@pytest.mark.parametrize("metric,decode_shows,prefill_shows", [("tpot", True, False), ("ttft", False, True),
                                                               ("throughput", True, False), ("memory", False, False)])
def test_the_claimed_number_sits_only_beside_cells_of_its_metric(metric, decode_shows, prefill_shows):
    card = {"id": "c", "title": "c", "direction": "weights", "change": {"weight_bytes": 0.5},
            "claim": {"speedup": 3.4, "metric": metric}}
    for c in triage.evaluate(card, analyse=False).to_dict()["cells"]:
        shows = decode_shows if c["phase"] == "decode" else prefill_shows
        assert c["speedup"]["claimed"] == (3.4 if shows else None), (metric, c["workload"])


def _reasons(card_name, workload):
    cells = triage.evaluate(CLAIMS / card_name, analyse=False).to_dict()["cells"]
    return next(c for c in cells if c["workload"] == workload)["reasons"]


def test_reasons_name_the_mechanism_that_carries_the_gain():
    spec = _reasons("speculative-decoding.yaml", "chat-4k")[0]
    assert spec.startswith("speculative decoding: 3.60 tokens per step (7 drafted at acceptance 0.75)")
    # the paper's EnDe setting, γ = 7, α = 0.75: (1 − 0.75^8) / (1 − 0.75) = 3.5995 tokens per step
    # (Leviathan et al. 2023, eq. 1), by hand
    # (the card's worst task, Winogrande at 98.1 %, is named first: quality before the mechanism)
    int8_prefill = next(r for r in _reasons("smoothquant.yaml", "prefill-2k") if r.startswith("linear layers"))
    assert int8_prefill.startswith("linear layers computed in int8, attention computed in int8: the step is")
    assert "compute-bound" in int8_prefill
    assert "bytes" not in int8_prefill
    tp = _reasons("course-tp2.yaml", "chat-4k")[0]
    assert tp.startswith("tensor parallel over 2 GPUs (from 1)")


def test_a_verdict_inside_the_cards_uncertainty_is_marked_marginal_and_the_flip_is_named():
    d = triage.evaluate(CLAIMS / "kv2x.yaml").to_dict()
    cells = {(c["workload"], c["hardware"]): c for c in d["cells"]}
    # chat-4k: end-to-end 1.066x against the 1.10x threshold, 3 % away (inside ±5 %): marginal
    assert cells["chat-4k", "a100-80gb"]["marginal"] is True
    # prefill-2k: 1.000x, 9 % below the threshold, and no input of the card moves it: not marginal
    assert cells["prefill-2k", "a100-80gb"]["marginal"] is False
    # chat-4k-b16 is CONDITIONAL (a KV format only the paper's kernel reads) at the card's 0.9 kernel efficiency
    # and NO-GO at 0.5: marginal, and the memo says why
    b16 = cells["chat-4k-b16", "h100-sxm"]
    assert b16["verdict"] == "CONDITIONAL" and b16["marginal"]
    memo = render_markdown(triage.evaluate(CLAIMS / "kv2x.yaml"))
    assert "**CONDITIONAL** (marginal)" in memo
    assert "kernel bandwidth efficiency 0.5: docqa-128k NO-GO, chat-4k-b16 NO-GO" in memo


def test_a_card_value_resting_on_an_assumption_is_listed_with_the_memos_assumptions():
    # issue 21: radixattention's bound is 1 / (1 - the hit rate), a rate the card assumes (0.9), which the memo's
    # Assumptions table left out; it now lists every card value whose evidence is a labelled assumption
    result = triage.evaluate(CLAIMS / "radixattention-sglang.yaml")
    rows = {a["what"]: a for a in result.assumptions()}
    assert rows["card change.prefix_hit"]["value"] == "0.9"
    assert rows["card change.prefix_hit"]["source"].startswith("assumption: 0.9 is the card's choice")
    section = render_markdown(result).split("## Assumptions", 1)[1]
    assert "| card change.prefix_hit | 0.9 | assumption: 0.9 is the card's choice" in section


def test_the_assumptions_name_the_engine_profile_and_the_values_each_chip_was_priced_at():
    # issue 26: with an engine profile the Assumptions still printed the shipped defaults and never named it;
    # TensorRT-LLM's H100 SXM entry (triage/inputs/catalog/engines.yaml) was fitted on fp8 rows: an fp8 workload
    # is priced at the entry's values, an fp16 one at the profile's default, and the row says which
    trt = triage.inputs.catalog.load().engines["tensorrt-llm"]
    entry, default = trt.hardware["h100-sxm"], trt.default
    assert entry["layer_overhead_s"] != default["layer_overhead_s"]
    w = {"defaults": {"hardware": "h100-sxm", "engine": "tensorrt-llm"},
         "workloads": [{"name": "trt", "context": 1024, "batch": 8, "precision": {"weights": "fp8", "kv": "fp8"}},
                       {"name": "fp16", "context": 1024, "batch": 8}]}
    result = triage.evaluate(CLAIMS / "kv2x.yaml", w, analyse=False)
    rows = {a["what"]: a["value"] for a in result.assumptions()}
    inside, outside = rows["workload trt"], rows["workload fp16"]
    assert (f"engine profile tensorrt-llm: on h100-sxm efficiency bandwidth {entry['bandwidth']:g}, compute "
            f"{entry['compute']:g}") in inside
    assert f"{entry['layer_overhead_s'] * 1e6:.2f} µs per layer" in inside
    assert (f"on h100-sxm (outside its h100-sxm entry's range) efficiency bandwidth {default['bandwidth']:g}"
            in outside and f"{default['layer_overhead_s'] * 1e6:.2f} µs per layer" in outside)
    launch = [c["baseline"]["step_terms_s"]["launch"] for c in result.to_dict()["cells"]]
    assert launch == pytest.approx([32 * entry["layer_overhead_s"], 32 * default["layer_overhead_s"]])


def test_assumptions_name_the_engine_profile_and_where_it_comes_from(tmp_path):
    """With `engine: ./prof.yaml` the memo's assumptions name the profile, say on which chip its own entry is
    used and where its default stands in, and give its source and file (issue 26: they said only
    'efficiency bandwidth 0.85, compute 0.7; overhead 0 s')."""
    (tmp_path / "prof.yaml").write_text(
        "engines:\n  mine:\n"
        "    default: {bandwidth: 0.8, compute: 0.6, overhead: 1 ms, layer_overhead: 0 ms, request_overhead: 0 ms}\n"
        "    hardware:\n"
        "      l40s: {bandwidth: 0.6, compute: 0.5, overhead: 3 ms, layer_overhead: 0 ms, request_overhead: 0 ms}\n"
        "    source: fitted on my 6 rows\n")
    (tmp_path / "w.yaml").write_text("workloads:\n  - {name: w, model: llama-3-8b, hardware: [l40s, a100-80gb], "
                                     "context: 2048, batch: 8, engine: ./prof.yaml}\n")
    rows = triage.evaluate(CLAIMS / "kv2x.yaml", tmp_path / "w.yaml").assumptions()
    profile = next(r for r in rows if r["what"] == "engine profile mine")
    assert profile["value"].startswith("l40s: its entry for the chip; a100-80gb: its default (no entry")
    assert profile["source"].startswith("fitted on my 6 rows; ") and profile["source"].endswith("prof.yaml")
    workload = next(r for r in rows if r["what"] == "workload w")["value"]
    assert "engine profile mine: on l40s efficiency bandwidth 0.6, compute 0.5; overhead 3.00 ms per step" in workload
    assert "on a100-80gb efficiency bandwidth 0.8" in workload
