"""A mechanism today's stack already runs is its baseline, said so (issue 42, item 3): iteration-level batching
on the default matrix (continuous batching, every batch slot useful) and paged KV on a paged stack move nothing,
and the memo's warning says the workloads already run them, not only that the step is the same."""

import triage

from conftest import CLAIMS


def _no_effect(result):
    return [n for n in result.evaluation.warnings if n.code == "no-effect"]


def test_continuous_batching_on_the_default_stack_is_its_baseline():
    (notice,) = _no_effect(triage.evaluate(CLAIMS / "course-continuous-batching.yaml", analyse=False))
    assert notice.key == "already-in-stack"
    assert notice.value == "batch slots 100 % useful, scheduler policy continuous"
    assert set(notice.names) == {"chat-4k", "docqa-128k", "chat-4k-b16", "prefill-2k", "serve-conv"}


def test_pagedattention_on_a_paged_stack_is_its_baseline():
    (notice,) = _no_effect(triage.evaluate(CLAIMS / "pagedattention-vllm.yaml", analyse=False))
    assert (notice.key, notice.value) == ("already-in-stack", "KV fragmentation 0 %, scheduler kv paged")


def test_a_stack_that_lacks_it_is_not_told_it_has_it():
    # the same card on static batches that leave 40 % of the slots idle: the change acts, no such warning
    w = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb", "batch_utilization": 0.6},
         "workloads": [{"name": "static", "phase": "decode", "context": 4096, "batch": 16}]}
    r = triage.evaluate(CLAIMS / "course-continuous-batching.yaml", w, analyse=False)
    assert not [n for n in _no_effect(r) if n.key == "already-in-stack"]
    assert r.to_dict()["cells"][0]["speedup"]["end_to_end"] > 1.5            # 1 / 0.6 of the slots, about
