"""Serving scenarios as benchmarks run them (issue 24): offline (every request at once), closed loop (N clients),
and systems of replicas x pipeline stages, each against a hand calculation on an engine whose every iteration
takes 10 ms."""

import numpy as np
import pytest

import triage
from triage.errors import UserError
from triage.inputs.traffic import Lengths, Scheduler, Traffic
from triage.model.iteration import IterationCost
from triage.model.roofline import GROUPS
from triage.serving.deployment import Side, serve, staged

STEP = 0.010          # seconds: every iteration, prefill or decode, whatever its batch


def _flat(free_bytes=1e9, weight_bytes=0.0):
    zero = np.zeros((len(GROUPS), 5))
    return IterationCost(zero, zero.copy(), 1.0, np.zeros(2), STEP, 0.0, 0.0, 1.0, free_bytes,
                         weight_bytes=weight_bytes)


def _closed(scenario, n, clients=0, prompt=10, output=5, warmup=0.1):
    return Traffic((), "poisson", 1.0, None, Lengths("fixed", prompt), Lengths("fixed", output), n, 0, warmup,
                   None, None, None, scenario=scenario, clients=clients or n)


def test_offline_prefills_everyone_then_decodes_together():
    # by hand: 100 prompts of 10 tokens fit one prefill iteration (1,000 tokens <= 8,192), whose first tokens
    # come at 10 ms; four decode iterations follow: every request ends at 50 ms, 500 tokens in 0.05 s
    r = Side(_flat(), Scheduler(max_seqs=128)).run(_closed("offline", 100), np.inf)
    assert r.ttft_s.p50 == pytest.approx(STEP) and r.ttft_s.p99 == pytest.approx(STEP)
    assert r.simulated_s == pytest.approx(5 * STEP)
    assert r.output_tokens_per_s == pytest.approx(100 * 5 / (5 * STEP))
    assert r.mean_batch == pytest.approx(100)


def test_one_client_sends_one_request_at_a_time():
    # by hand: each request alone, 10 ms of prefill and 4 decodes: 50 ms; 20 of them end at 1.0 s. The first
    # two (10 % warm-up) are left out: 18 completions from 0.1 s to 1.0 s, 20 requests/s, 100 tokens/s
    r = Side(_flat(), Scheduler()).run(_closed("closed_loop", 20, clients=1), np.inf)
    assert r.simulated_s == pytest.approx(20 * 5 * STEP)
    assert r.throughput_rps == pytest.approx(20.0)
    assert r.output_tokens_per_s == pytest.approx(100.0)
    assert r.ttft_s.p99 == pytest.approx(STEP) and r.tpot_s.p50 == pytest.approx(STEP)
    assert r.mean_batch == pytest.approx(1.0)


def test_two_clients_on_a_one_sequence_engine_queue_behind_each_other():
    # by hand: max_seqs 1 runs one request at a time (50 ms each, 20 requests/s as with one client); the other
    # client's request waits out the running one: 50 ms of queue + 10 ms of prefill
    r = Side(_flat(), Scheduler(max_seqs=1)).run(_closed("closed_loop", 40, clients=2), np.inf)
    assert r.throughput_rps == pytest.approx(20.0, rel=0.01)
    assert r.ttft_s.p50 == pytest.approx(5 * STEP + STEP)
    # two in flight, less the drain (the last request alone) and the warm-up one still queued as the window opens
    assert 1.9 <= r.littles_law.in_system <= 2.0


def test_replicas_each_take_their_share_of_the_clients_and_the_system_adds_them_up():
    # by hand: 4 replicas of one client each: 4 x 20 requests/s; 4 GPUs at tp 1
    side = Side(_flat(), Scheduler(replicas=4))
    r = side.run(_closed("closed_loop", 400, clients=4), np.inf)
    assert r.throughput_rps == pytest.approx(80.0, rel=0.01)
    assert r.ttft_s.p99 == pytest.approx(STEP)
    assert side.gpus() == 4
    assert Side(_flat(), Scheduler(replicas=3, pp=2), tp=4).gpus() == 24


def test_a_pipeline_spreads_the_weights_and_runs_a_micro_batch_per_stage():
    # by hand: 40 GB of weights on a GPU at tp leave 30 GB; two stages hold 20 GB each: 50 GB free per GPU.
    # Two micro-batches in flight: two engines of one client each, the iteration the tp engine's (10 ms)
    cost = _flat(free_bytes=30e9, weight_bytes=40e9)
    assert staged(cost, 1) is cost
    assert staged(cost, 2).free_bytes == pytest.approx(50e9)
    assert staged(cost, 4).free_bytes == pytest.approx(60e9)
    r = Side(staged(cost, 2), Scheduler(pp=2)).run(_closed("closed_loop", 200, clients=2), np.inf)
    assert r.throughput_rps == pytest.approx(40.0, rel=0.01)
    assert r.tpot_s.p50 == pytest.approx(STEP)


def test_a_closed_runs_gain_is_output_tokens_per_gpu():
    # by hand: the claim's engine runs twice the sequences at once on twice the GPUs (tp 2): the same per GPU
    base = Side(_flat(), Scheduler(max_seqs=1))
    claim = Side(_flat(), Scheduler(max_seqs=2), tp=2)
    s = serve(base, claim, _closed("closed_loop", 200, clients=2))
    assert s.basis == "output_tokens_per_s" and s.baseline.max_rate_at_slo_rps is None
    assert s.claim.rates[0].output_tokens_per_s == pytest.approx(2 * s.baseline.rates[0].output_tokens_per_s, rel=0.01)
    assert s.gain == pytest.approx(1.0, rel=0.01)


def _workload(traffic, scheduler=None):
    return {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
            "workloads": [{"name": "w", "traffic": traffic, **({"scheduler": scheduler} if scheduler else {})}]}


KV = {"id": "c", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5}}


@pytest.mark.parametrize(("traffic", "scheduler", "says"), [
    ({"scenario": "closed_loop", "requests": 100}, None, "needs clients"),
    ({"scenario": "offline", "requests": 100, "rates": [1]}, None, "no rates"),
    ({"scenario": "server", "rates": [1], "clients": 4}, None, "belong to scenario: closed_loop"),
    ({"scenario": "offline", "requests": 100}, {"policy": "disaggregated"}, "not simulated"),
])
def test_a_scenario_that_cannot_run_is_refused_with_its_address(traffic, scheduler, says):
    with pytest.raises(UserError) as exc:
        triage.evaluate(KV, _workload(traffic, scheduler), analyse=False)
    assert says in str(exc.value)


def test_an_offline_workload_prices_a_cache_claim_in_output_tokens_per_gpu():
    r = triage.evaluate(KV, _workload({"scenario": "offline", "requests": 400, "prompt_tokens": 1024,
                                       "output_tokens": 512}), analyse=False).evaluation
    s = next(iter(r.serving.values()))
    assert s.basis == "output_tokens_per_s"
    assert s.claim.kv_tokens == pytest.approx(2 * s.baseline.kv_tokens)
    assert s.gain >= 1.0


def test_a_prefill_step_pays_the_request_cost_once_however_many_prompts_it_starts():
    # by hand: 100 prompts start in one iteration: 10 ms + 5 ms of request cost, once (the step model's prefill
    # step of batch 100 pays it once, and calibration fits it so): first tokens at 15 ms, not 10 + 100 x 5 ms
    cost = _flat()
    charged = IterationCost(cost.compute, cost.memory, 1.0, np.zeros(2), STEP, 0.005, 0.0, 1.0, 1e9)
    r = Side(charged, Scheduler(max_seqs=128)).run(_closed("offline", 100), np.inf)
    assert r.ttft_s.p99 == pytest.approx(STEP + 0.005)
    assert r.simulated_s == pytest.approx(5 * STEP + 0.005)


def _open(rate, n, output):
    return Traffic((rate,), "poisson", 1.0, None, Lengths("fixed", 10), Lengths("fixed", output), n, 0, 0.1,
                   None, None, None)


def test_a_run_too_short_for_its_requests_is_not_a_steady_state():
    # by hand: at 10 requests/s a request of 1,000 tokens takes about 10 s (10 ms a step) and the system holds
    # λW = 100 of them; 200 requests arrive over 20 s, so the run is mostly the system filling from empty (its
    # warm-up, 2 s, is shorter than W): about (18 - 10) x 10 = 80 of the window's 180 arrivals complete in it,
    # whatever the engine's capacity (a batch of 128 at 10 ms a step serves 12,800 tokens/s, 10,000 asked).
    # 2,000 requests (200 s, a warm-up of 20 s) reach a steady state.
    short = Side(_flat(), Scheduler(max_seqs=128)).run(_open(10.0, 200, 1000), 10.0)
    assert short.throughput_rps < 0.6 * 10.0
    assert not short.slo_met
    long = Side(_flat(), Scheduler(max_seqs=128)).run(_open(10.0, 2000, 1000), 10.0)
    assert long.throughput_rps >= 0.9 * 10.0
    assert long.slo_met


def test_chunked_prefill_on_the_continuous_policy_is_the_chunked_iteration_at_its_token_limit():
    from triage.inputs.traffic import keys, scheduler
    s = scheduler(keys({"policy": "continuous", "chunked_prefill": True, "max_batched_tokens": 2048, "max_seqs": 64}))
    assert (s.policy, s.token_budget, s.max_seqs) == ("chunked", 2048, 64)
    assert scheduler(keys({"chunked_prefill": False})).policy == "continuous"
    # a budget below the sequences it runs is refused as vLLM refuses it
    with pytest.raises(UserError, match="token_budget"):
        triage.evaluate(KV, _workload({"rates": [1], "requests": 100}, {"chunked_prefill": True,
                                                                          "max_batched_tokens": 64}), analyse=False)


@pytest.mark.parametrize(("traffic", "scheduler", "says"), [
    ({"scenario": "offline", "requests": 100}, {"replicas": 64, "pp": 2}, "leave each 1 measured"),
    ({"scenario": "closed_loop", "clients": 5, "requests": 400}, {"replicas": 4}, "do not split evenly"),
    ({"scenario": "offline", "requests": 400}, {"pp": 64}, "64 pipeline stages for 32 layers"),
    ({"rates": [1], "requests": 100}, {"policy": "static", "chunked_prefill": True}, "belongs to the continuous"),
])
def test_a_system_the_requests_cannot_spread_over_is_refused(traffic, scheduler, says):
    with pytest.raises(UserError, match=says):
        triage.evaluate(KV, _workload(traffic, scheduler), analyse=False)


def test_an_offline_system_is_its_engines_each_with_its_share_of_the_requests():
    # by hand: 200 requests on 4 replicas are 4 engines of 50 each: the system's tokens/s four times one
    # engine's offline run of 50 requests (the same GPUs' worth each)
    one = Side(_flat(), Scheduler()).run(_closed("offline", 50, output=20), np.inf)
    four = Side(_flat(), Scheduler(replicas=4)).run(_closed("offline", 200, output=20), np.inf)
    assert four.output_tokens_per_s == pytest.approx(4 * one.output_tokens_per_s)
    assert four.requests + four.warmup_requests == 50


def test_the_json_says_how_many_engines_a_sides_figures_are_split_over():
    r = triage.evaluate(KV, _workload({"scenario": "offline", "requests": 400}, {"replicas": 4}))
    served = r.to_dict()["cells"][0]["serving"]
    assert served["baseline"]["engines"] == served["claim"]["engines"] == 4
    assert served["baseline"]["gpus"] == 4


def test_multi_step_scheduling_holds_a_finished_sequence_to_the_end_of_its_call():
    # by hand (vLLM's num_scheduler_steps 8, one client, 5 output tokens): the prefill (a call of one step) gives
    # the first token at 10 ms; the decode call runs 8 steps, the request's last token at the 4th (50 ms), its
    # slot held to the call's end (90 ms); the client's next request, sent at 50 ms, starts there: a TTFT of
    # 40 + 10 ms, a request every 90 ms (11.1 requests/s), where single-step scheduling serves one every 50 ms
    multi = Side(_flat(), Scheduler(scheduler_steps=8)).run(_closed("closed_loop", 20, clients=1), np.inf)
    assert multi.ttft_s.p50 == pytest.approx(5 * STEP)
    assert multi.tpot_s.p50 == pytest.approx(STEP)
    assert multi.throughput_rps == pytest.approx(1 / (9 * STEP))
    # a call of 4 steps ends with the request's last token: nothing waits, as without multi-step
    even = Side(_flat(), Scheduler(scheduler_steps=4)).run(_closed("closed_loop", 20, clients=1), np.inf)
    assert even.ttft_s.p50 == pytest.approx(STEP)
    assert even.throughput_rps == pytest.approx(20.0)


def test_a_request_arriving_inside_a_multi_step_call_waits_for_its_end():
    # by hand: 100 requests at once, 10 prompts each, one prefill (10 ms) and a call of 8 decode steps (to 90 ms)
    # in which every request ends at its 4th (50 ms); an offline run measures its requests' own tokens: TTFT
    # 10 ms, the last token at 50 ms. Against single-step, only the slots are held longer.
    r = Side(_flat(), Scheduler(max_seqs=128, scheduler_steps=8)).run(_closed("offline", 100), np.inf)
    assert r.ttft_s.p99 == pytest.approx(STEP)
    assert r.simulated_s == pytest.approx(5 * STEP)
    # two waves: max_seqs 50 takes half the requests; the other half waits for the first call to end (90 ms),
    # its prefill ends at 100 ms, its last token at 140 ms
    r = Side(_flat(), Scheduler(max_seqs=50, scheduler_steps=8)).run(_closed("offline", 100), np.inf)
    assert r.ttft_s.p99 == pytest.approx(10 * STEP)
    assert r.simulated_s == pytest.approx(14 * STEP)


def test_a_multi_step_call_takes_the_kv_for_all_its_steps_when_it_starts():
    # by hand: a KV cache of 30 tokens (block 1), two requests of 10 prompt and 9 output tokens prefilled
    # together (their first tokens at 10 ms, 20 tokens held). A call of 8 steps needs 2 x 8 = 16 more: 10 are
    # free, so the latest is preempted as the call is scheduled (vLLM's lookahead slots) and the first decodes
    # alone, ending at its 8th step (90 ms). The other is prefilled again (90-100 ms, its second token) and
    # finishes 7 steps later (170 ms). Single-step, both run 5 steps, the cache fills, the latest is preempted
    # then: 90 ms and 120 ms.
    from triage.serving.policies import simulate
    from triage.serving.requests import requests
    req = requests(_closed("offline", 2, prompt=10, output=9, warmup=0.0), 1.0, 1e9)
    multi = simulate(req, _flat(free_bytes=30), Scheduler(scheduler_steps=8, block_size=1))
    assert multi.done == pytest.approx([9 * STEP, 17 * STEP]) and multi.preemptions == 1
    single = simulate(req, _flat(free_bytes=30), Scheduler(block_size=1))
    assert single.done == pytest.approx([9 * STEP, 12 * STEP]) and single.preemptions == 1


@pytest.mark.parametrize("scheduler", [{"policy": "chunked", "scheduler_steps": 8},
                                       {"chunked_prefill": True, "max_batched_tokens": 2048, "scheduler_steps": 8},
                                       {"policy": "static", "scheduler_steps": 8}])
def test_multi_step_scheduling_off_the_continuous_policy_is_refused(scheduler):
    with pytest.raises(UserError, match=r"scheduler\.scheduler_steps: scheduler_steps \(multi-step"):
        triage.evaluate(KV, _workload({"rates": [1], "requests": 100}, scheduler), analyse=False)


def test_the_memo_names_the_multi_step_calls_it_priced():
    from triage.report.memo import render_markdown
    text = render_markdown(triage.evaluate(KV, _workload({"rates": [1], "requests": 100}, {"scheduler_steps": 8})))
    assert "scheduler continuous (8 decode steps a scheduler call) → continuous (8 decode steps a scheduler call)" \
        in text


def test_a_whole_number_of_scheduler_steps_written_as_a_float_is_that_number():
    # JSON Schema's integer takes 8.0; the engine counts steps with it
    traffic = {"scenario": "closed_loop", "clients": 4, "requests": 100}
    runs = [triage.evaluate(KV, _workload(traffic, {"scheduler_steps": n}), analyse=False).to_dict()
            for n in (8, 8.0)]
    assert runs[0]["cells"][0]["serving"] == runs[1]["cells"][0]["serving"]
