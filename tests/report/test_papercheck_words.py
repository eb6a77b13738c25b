"""The paper check is numbers and codes (analysis/papercheck.py); the report words each code (issue 22: typed
results, words only in report/). Every code has words, and the JSON keeps its contract's keys."""

from triage.analysis.papercheck import ASSUMED, KINDS, MISFITS, NO_BOUND, SOURCES, Item, PaperCheck, PaperSetting
from triage.report import papercheck as words

ASSUMED_EXAMPLES = {"hardware": Item("hardware", ("a100-80gb",)), "phase": Item("phase", ("prefill",)),
                    "batch": Item("batch", (1, 8)), "context": Item("context", (4096, 1024, 4096)),
                    "speculative-assumption": Item("speculative-assumption", ("acceptance 0.7",))}
SOURCE_EXAMPLES = {"offload": Item("offload"), "weak-baseline": Item("weak-baseline", ("",)),
                   "capacity-bound": Item("capacity-bound", (3.5,)),
                   "batch-beyond-memory": Item("batch-beyond-memory", (12, 40)), "batch-sizes": Item("batch-sizes"),
                   "kernel": Item("kernel"), "metric": Item("metric")}
KIND_EXAMPLES = {"equal-batch": Item("equal-batch"), "end-to-end": Item("end-to-end", (3, 1024)),
                 "scope": Item("scope", ("attention",)), "capacity": Item("capacity")}
SETTING = PaperSetting((("tp", 2), ("offload", {"weights": 0.5, "link": "64 GB/s"})), "llama-2-70b", "a100-80gb",
                       "decode", 8, 4096, ("context",))


def test_every_code_has_words():
    assert set(ASSUMED_EXAMPLES) == set(ASSUMED) and set(SOURCE_EXAMPLES) == set(SOURCES)
    assert set(KIND_EXAMPLES) == set(KINDS) and set(MISFITS) == {"weights", "kv"}
    for code in NO_BOUND:
        assert words.as_json(PaperCheck(2.0, no_bound=code), {})["note"]
    assert all(words._assumed(a) for a in ASSUMED_EXAMPLES.values())
    assert all(words._source(s) for s in SOURCE_EXAMPLES.values())
    assert all(words._kind(k) for k in KIND_EXAMPLES.values())
    # the context search, capped at the model's window (the card states none), as a reader sees it
    assert words._assumed(ASSUMED_EXAMPLES["context"]) == (
        "context not stated: searched 1,024, 4,096 tokens where both sides fit, up to the model's 4,096-token "
        "window (its trained context: a longer one that fits is not one it serves)")
    assert words._misfit(Item("kv", (64, 32768, 12))) == (
        "the paper's baseline does not fit in memory in its stated setting: its weights fit, but not the KV of "
        "batch 64 at 32,768 tokens (it fits 12 sequences); the bound assumes it ran")


def test_the_setting_says_what_was_searched():
    assert words.setting_words(SETTING) == ("llama-2-70b on a100-80gb, tp 2, decode, batch 8, context 4,096 "
                                            "(searched), 50 % of the weights offloaded over 64 GB/s")


def test_the_json_keeps_its_keys_in_order():
    c = PaperCheck(2.0, 1.5, True, metric="tpot", scope="end-to-end", setting=SETTING,
                   likely_sources=(Item("kernel"),))
    out = words.as_json(c, {"claim.speedup": {"quote": "2x"}})
    assert list(out) == ["reported", "bound", "exceeds_bound", "tolerance", "metric", "scope", "bound_kind",
                         "setting", "setting_words", "baseline_fits", "capacity_bound", "capacity_batches",
                         "assumed", "likely_sources", "note", "evidence", "warnings", "stated_batch_replaced",
                         "predicted_end_to_end", "predicted_above_reported", "prediction"]
    assert list(out["setting"]) == ["tp", "offload", "model", "hardware", "phase", "batch", "context"]
    assert out["bound_kind"] == "equal batch" and out["note"] == ""
    assert list(words.as_json(PaperCheck(2.0, no_bound="no-model"), {})) == [
        "reported", "bound", "exceeds_bound", "assumed", "evidence", "note"]
