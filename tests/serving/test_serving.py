"""The serving simulation: its iterations price what the cost model prices, and its queue obeys queueing
theory (Little's law; a near-empty system serves each request at the step times; overload grows the queue)."""

import dataclasses
import math
import types

import numpy as np
import pytest

import triage
from triage.analysis import serving
from triage.inputs.traffic import Lengths, Scheduler, Traffic
from triage.serving.deployment import Side
from triage.serving.engine import Engine
from triage.serving.metrics import Percentiles
from triage.serving.policies import POLICIES, simulate
from triage.serving.requests import Requests, requests
from triage.serving.search import max_rate

from conftest import CLAIMS

ROOT = CLAIMS.parent
KV = {"id": "c", "title": "t", "direction": "cache", "change": {"kv_bytes": 1.0}}


def _priced(cells, **defaults):
    """Cells of llama-2-7b on an A100 80GB, priced; and one cell's iteration model."""
    w = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb", **defaults}, "workloads": cells}
    r = triage.evaluate(KV, w, analyse=False)
    return r.evaluation


def _cost(ev, i=0):
    return serving.cell_cost(ev.matrix, ev.claim, ev.gaps, i)


def _traffic(**kw):
    base = dict(rates=(1.0,), arrivals="poisson", cv=1.0, trace=None, prompt=Lengths("fixed", 512),
                output=Lengths("fixed", 128), requests=400, seed=0, warmup=0.1, slo_ttft_s=None, slo_tbt_s=None,
                slo_tpot_s=None)
    return Traffic(**{**base, **kw})


def test_an_iteration_prices_what_a_step_prices():
    # the cost model's own end-to-end step: a decode of 8 sequences at 4,096 tokens (fused attention, so the
    # SM occupancy of 8 x 32 heads on 108 SMs applies) and a prefill of one 2,048-token prompt
    ev = _priced([{"name": "d", "phase": "decode", "context": 4096, "batch": 8},
                  {"name": "p", "phase": "prefill", "context": 2048, "batch": 1}],
                 overhead="1 ms", layer_overhead="0.01 ms", request_overhead="3 ms", sequence_overhead="20 us")
    step = ev.gaps.base.time_end_to_end
    decode, prefill = _cost(ev, 0), _cost(ev, 1)
    assert decode.scalar(8, 8, 8 * 4096, 0, 0) == pytest.approx(step[0], rel=1e-9)
    assert prefill.scalar(2048, 1, 0, 2048 * 2049 / 2, 1) == pytest.approx(step[1], rel=1e-9)
    line, const = decode.decode_line(8, 8 * 4096)
    assert Engine.step_times(line, const, 3, math.inf)[0] == pytest.approx(step[0], rel=1e-9)
    assert Engine.step_times(line, const, 300, math.inf)[0] == pytest.approx(step[0], rel=1e-9)
    # by hand: the 8 sequences' own cost is 8 x 20 µs = 0.16 ms of each decode iteration; a 64-sequence one pays
    # 64 x 20 µs = 1.28 ms (the per-iteration CPU work that grows with the batch)
    free = dataclasses.replace(decode, sequence_s=0.0)
    assert decode.scalar(8, 8, 8 * 4096, 0, 0) - free.scalar(8, 8, 8 * 4096, 0, 0) == pytest.approx(1.6e-4)
    assert decode.scalar(64, 64, 64 * 4096, 0, 0) - free.scalar(64, 64, 64 * 4096, 0, 0) == pytest.approx(1.28e-3)
    assert decode.decode_line(64, 0.0)[1] - free.decode_line(64, 0.0)[1] == pytest.approx(1.28e-3)


def test_a_near_empty_system_serves_each_request_at_the_step_times():
    # at 0.01 requests/s no request waits or shares a step: TTFT is the 512-token prefill, TPOT the batch-1
    # decode step at the mean context (512 + 64), both from the cost model
    ev = _priced([{"name": "p", "phase": "prefill", "context": 512, "batch": 1},
                  {"name": "d", "phase": "decode", "context": 576, "batch": 1}])
    prefill, decode = ev.gaps.base.time_end_to_end
    side = Side(_cost(ev), Scheduler())
    r = side.run(_traffic(rates=(0.01,), requests=100), 0.01)
    assert r.ttft_s.p50 == pytest.approx(prefill, rel=0.01)
    assert r.tpot_s.p50 == pytest.approx(decode, rel=0.01)
    assert r.mean_batch == pytest.approx(1.0, abs=0.05)


def test_littles_law_holds_and_overload_grows_the_queue():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    side = Side(_cost(ev), Scheduler(policy="continuous", max_seqs=64))
    ok = side.run(_traffic(requests=2000), 8.0)
    law = ok.littles_law
    assert law.in_system == pytest.approx(law.rate_times_latency, rel=0.05)       # L = λW
    assert ok.throughput_rps == pytest.approx(8.0, rel=0.1)
    # far above what the engine completes: the queue (and TTFT) grows with the stream's length, goodput falls
    short, long = (side.run(_traffic(requests=n, slo_ttft_s=2.0), 60.0) for n in (1000, 2000))
    assert long.ttft_s.p50 > 1.5 * short.ttft_s.p50
    assert long.throughput_rps < 40.0 and long.goodput_rps < 0.5 * long.throughput_rps


def test_the_azure_conversation_trace_at_low_rate():
    # issue 13's check: at a low rate the median TTFT is the cost model's prefill of the median prompt
    ev = triage.evaluate(KV, ROOT / "examples" / "serving-conv.yaml", analyse=False).evaluation
    t = dataclasses.replace(ev.matrix.blocks[0].traffic, requests=1000)
    median = float(np.median(t.trace.prompt[:1000]))
    pre = _priced([{"name": "p", "phase": "prefill", "context": int(median), "batch": 1}], model="mistral-7b")
    r = Side(_cost(ev), Scheduler()).run(t, 0.02)
    assert r.ttft_s.p50 == pytest.approx(float(pre.gaps.base.time_end_to_end[0]), rel=0.05)
    busy = Side(_cost(ev), Scheduler()).run(t, 4.0).littles_law
    assert busy.in_system == pytest.approx(busy.rate_times_latency, rel=0.05)


@pytest.mark.slow
def test_orca_max_holds_seven_sequences_of_opt_13b_on_an_a100_40gb():
    # Kwon et al. 2023 (arXiv 2309.06180v1), Table 1: 12 GB of KV = 15.7K token slots for OPT-13B on one
    # A100 40GB; Orca (Max) reserves 2,048 tokens a request, so at most floor(15,700 / 2,048) = 7 run at once --
    # Fig. 13a reports 7.00 batched requests at 2 requests/s
    ev = triage.evaluate(KV, ROOT / "examples" / "serving-sharegpt.yaml", analyse=False).evaluation
    cost = _cost(ev)
    assert cost.kv_tokens == pytest.approx(15_700, rel=0.01)
    t = dataclasses.replace(ev.matrix.blocks[0].traffic, requests=600)
    orca = Scheduler(policy="continuous", kv="reserve", reserve="max", max_length=2048)
    r = Side(cost, orca).run(t, 2.0)
    assert 6.3 <= r.mean_batch <= 7.0
    paged = Side(cost, dataclasses.replace(orca, kv="paged")).run(t, 2.0)
    assert paged.mean_batch > 2 * r.mean_batch


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_a_cache_too_small_for_the_batch_preempts_and_still_serves_everyone(preemption):
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    cost = dataclasses.replace(_cost(ev), free_bytes=_cost(ev).kv_bytes_per_token * 6000)   # 6,000 KV tokens
    req = requests(_traffic(requests=300, output=Lengths("fixed", 512)), 20.0, cost.kv_tokens)
    out = simulate(req, cost, Scheduler(preemption=preemption))
    assert out.preemptions > 0 and np.isfinite(out.done).all() and (out.done >= out.first).all()


def test_static_batches_wait_for_their_longest_request():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    req = Requests(np.zeros(3), np.array([64.0, 64.0, 64.0]), np.array([10.0, 400.0, 10.0]))
    out = simulate(req, _cost(ev), Scheduler(policy="static", max_seqs=2))
    # three requests at once, two slots: the third starts only when the first batch (10 and 400 tokens) is done;
    # iteration-level scheduling starts it when the 10-token request leaves
    assert out.first[2] > out.done[1] > out.done[0]
    cont = simulate(req, _cost(ev), Scheduler(policy="continuous", max_seqs=2))
    assert cont.first[2] < cont.done[1]


def test_disaggregation_prices_each_pool_and_counts_its_gpus():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    cost = _cost(ev)
    sched = Scheduler(policy="disaggregated", prefill_gpus=2, decode_gpus=1, link_bytes_per_s=300e9)
    side = Side(cost, sched)
    assert side.gpus() == 3
    r = side.run(_traffic(requests=200), 0.05)
    # nothing waits: TTFT is the prefill; the first decode waits for the KV over the link (512 tokens x
    # 512 KiB / 300 GB/s = 0.9 ms)
    assert r.ttft_s.p50 == pytest.approx(cost.scalar(512, 1, 0, 512 * 513 / 2, 1), rel=1e-6)


def test_the_same_seed_gives_the_same_simulation():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    a, b = (Side(_cost(ev), Scheduler(policy="chunked")).run(_traffic(requests=300), 5.0) for _ in range(2))
    assert a == b


def test_prefix_caching_prefills_a_shared_prefix_once():
    # every prompt is 512 tokens of which the first 400 are shared: with prefix caching a request prefills its
    # last 112 tokens after 400 cached ones (112 x 400 + 112 x 113 / 2 query-key pairs), without it all 512
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    cost = _cost(ev)
    t = dataclasses.replace(_traffic(requests=100), prefix_share=1.0, prefix_tokens=400)
    cached = Side(cost, Scheduler(prefix_caching=True)).run(t, 0.01)
    plain = Side(cost, Scheduler()).run(t, 0.01)
    assert cached.ttft_s.p50 == pytest.approx(cost.scalar(112, 1, 400, 112 * 400 + 112 * 113 / 2, 1), rel=1e-6)
    assert plain.ttft_s.p50 == pytest.approx(cost.scalar(512, 1, 0, 512 * 513 / 2, 1), rel=1e-6)


@pytest.mark.parametrize("policy,preemption", [("chunked", "swap"), ("chunked", "recompute"),
                                               ("disaggregated", "recompute"), ("continuous", "swap")])
def test_a_small_cache_under_every_policy_balances_its_kv_and_serves_everyone(policy, preemption):
    # review repros: chunked + swap drove the prefill count negative and overran the cache; a decode pool with
    # recompute preemption leaked the KV of a request it could not prefill
    from triage.serving.engine import Engine
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    cost = dataclasses.replace(_cost(ev), free_bytes=_cost(ev).kv_bytes_per_token * 20_000)
    req = requests(_traffic(requests=200, prompt=Lengths("fixed", 1000), output=Lengths("fixed", 1500)),
                           4.0, cost.kv_tokens)
    sched = Scheduler(policy=policy, preemption=preemption, token_budget=512)
    out = simulate(req, cost, sched)
    assert np.isfinite(out.done).all() and (out.done >= out.first).all()
    if policy != "disaggregated":
        e = Engine(req, cost, sched, POLICIES[policy])
        peak = 0.0
        original = e.advance

        def watch(t, batch):
            nonlocal peak
            peak = max(peak, e.kv_used)
            assert e.prefilling >= 0
            original(t, batch)
        e.advance = watch
        e.run()
        assert peak <= e.kv_cap + 1e-6 and e.kv_used == pytest.approx(0.0, abs=1e-6)


def test_a_disaggregated_request_has_output_less_one_gaps():
    # two requests of 10 tokens: 9 gaps each, the first from the prefill pool's token to the decode pool's
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    req = Requests(np.array([0.0, 5.0]), np.array([512.0, 512.0]), np.array([10.0, 10.0]))
    out = simulate(req, _cost(ev), Scheduler(policy="disaggregated", link_bytes_per_s=300e9))
    gaps, weights = out.token_gaps()
    assert weights.sum() == 18
    assert out.max_gap[0] == pytest.approx(out.done[0] - out.first[0] - 8 * min(gaps), rel=0.5)


def test_the_search_finds_small_capacities_and_a_tbt_only_slo_needs_a_stable_queue():
    class Stub:                      # a side whose SLO holds below a known rate
        def __init__(self, capacity):
            self.capacity = capacity

        def run(self, traffic, rate):     # a TBT over its bound in proportion to the rate over the capacity
            tbt = Percentiles(*[0.1 * rate / self.capacity] * 4)
            return types.SimpleNamespace(slo_met=rate <= self.capacity, rate_rps=rate, throughput_rps=rate,
                                         ttft_s=tbt, tbt_s=tbt, tpot_s=tbt)
    t = _traffic(slo_tbt_s=0.1)
    for capacity in (0.003, 0.0045, 0.0075, 3.0, 700.0):
        assert max_rate(Stub(capacity), t, 2.0) == pytest.approx(capacity, rel=0.01)
    # a TBT bound alone: far above capacity the queue grows and the rate fails, whatever the gaps say
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    side = Side(_cost(ev), Scheduler(policy="chunked"))
    best = max_rate(side, dataclasses.replace(t, requests=300), 4.0)
    assert 5.0 < best < 200.0
    over = side.run(dataclasses.replace(t, requests=2000), 4 * best)
    assert not over.slo_met and 0 < over.throughput_rps < 0.9 * 4 * best


def test_gpus_count_each_instances_tensor_parallel_group():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    assert Side(_cost(ev), Scheduler(), tp=2).gpus() == 2
    assert Side(_cost(ev), Scheduler(policy="disaggregated", prefill_gpus=2), tp=4).gpus() == 12


def test_the_warm_up_requests_gaps_are_left_out():
    # 100 requests of 128 tokens at a low rate, the first half warm-up: the kept gaps are 50 x 127 tokens
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    t = _traffic(requests=100, warmup=0.5)
    req = requests(t, 0.5, 1e6)
    out = simulate(req, _cost(ev), Scheduler(), measured=np.arange(100) >= 50)
    assert out.token_gaps()[1].sum() == 50 * 127
    assert simulate(req, _cost(ev), Scheduler()).token_gaps()[1].sum() == 100 * 127


@pytest.mark.parametrize("batch", [1, 64, 2048])
def test_an_moe_iteration_reads_the_experts_its_tokens_touch(batch):
    """Mixtral 8x7B on two H100s: each iteration reads, of the 45,097,156,608 routed expert weights
    (32 layers x 8 experts x 3 matrices x 4,096 x 14,336), the share its B tokens touch, 1 - (1 - 2/8)^B: a
    quarter at batch 1, all but 1e-8 at 64, all at 2,048, so an iteration prices what the cost model's step
    prices (the affine fit alone, from probes of 1 and 2 tokens, read 2,048 x a quarter of them at 2,048: the
    9-33 s TPOT of the issue's MoE rows)."""
    ev = triage.evaluate(KV, {"defaults": {"model": "mixtral-8x7b", "hardware": "h100-sxm", "tp": 2,
                                           "efficiency": {"bandwidth": 0.85, "compute": 0.7}},
                              "workloads": [{"name": "d", "context": 512, "batch": batch}]}, analyse=False).evaluation
    cost = _cost(ev)
    step = float(ev.gaps.base.time_end_to_end[0])
    assert cost.scalar(batch, batch, batch * 512, 0, 0) == pytest.approx(step, rel=1e-9)
    line, const = cost.decode_line(batch, batch * 512)
    assert Engine.step_times(line, const, 1, math.inf)[0] == pytest.approx(step, rel=1e-9)
    assert cost.touched(batch) == pytest.approx(1 - 0.75 ** batch, rel=1e-12)
    # all the routed experts read once, fp16, half on each GPU, at the workload's 0.85 of 3.35 TB/s
    assert cost.expert_memory_s == pytest.approx(45_097_156_608 * 2 / 2 / (3.35e12 * 0.85), rel=1e-9)


def test_a_dense_models_iteration_has_no_expert_term():
    ev = _priced([{"name": "d", "phase": "decode", "context": 4096, "batch": 8}])
    cost = _cost(ev)
    assert cost.expert_share == cost.expert_memory_s == cost.expert_compute_s == 0.0 and cost.touched(4096) == 0.0


def test_a_near_empty_moe_system_serves_each_request_at_the_step_times():
    """Mixtral 8x7B at 0.01 requests/s: TPOT is the batch-1 decode step, which reads a quarter of the routed
    experts (the old fit was right here; it was the larger batches it got wrong)."""
    ev = triage.evaluate(KV, {"defaults": {"model": "mixtral-8x7b", "hardware": "h100-sxm", "tp": 2},
                              "workloads": [{"name": "d", "phase": "decode", "context": 576, "batch": 1}]},
                         analyse=False).evaluation
    side = Side(_cost(ev), Scheduler(), tp=2)
    r = side.run(_traffic(rates=(0.01,), requests=100), 0.01)
    assert r.tpot_s.p50 == pytest.approx(float(ev.gaps.base.time_end_to_end[0]), rel=0.01)


def test_mixtral_on_eight_h100s_serves_its_kv_room_at_a_tpot_under_200_ms():
    """Issue 24: Mixtral-8x7B served on 8 H100 SXM (tp 8) past saturation keeps TPOT under 200 ms at the batch its
    KV room allows (the old fit priced 9-33 s). By hand: 8 x 81,559 MiB = 684.17 GB, less 8 x 1 GiB reserve and
    46.7e9 weights x 2 B = 93.4 GB, leaves 582.2 GB = 4.44M tokens at 32 layers x 8 KV heads x 128 x 2 x 2 B =
    131,072 B a token: 3,470 requests of 1,280 tokens, so the engine's 1,024 sequences bind first. A step at that
    batch reads every expert: 93.4 GB / 8 GPUs / (3.35 TB/s x 0.85) = 4.1 ms at least."""
    ev = triage.evaluate(KV, {"defaults": {"model": "mixtral-8x7b", "hardware": "h100-sxm", "tp": 8},
                              "workloads": [{"name": "d", "phase": "decode", "context": 1280, "batch": 1}]},
                         analyse=False).evaluation
    side = Side(_cost(ev), Scheduler(max_seqs=1024, max_batched_tokens=8192), tp=8)
    assert side.cost.kv_tokens == pytest.approx((8 * 81559 * 2**20 - 8 * 2**30 - 46.7e9 * 2) / 131072, rel=0.005)
    r = side.run(_traffic(rates=(400.0,), requests=3000, prompt=Lengths("fixed", 1024),
                          output=Lengths("fixed", 256)), 400.0)
    assert 600 <= r.mean_batch <= 1024
    assert 93.4e9 / 8 / (3.35e12 * 0.85) <= r.tpot_s.p50 <= r.tpot_s.p99 < 0.200


def test_a_warm_up_requests_longest_gap_counts_every_step_it_ran():
    # one request decoding 400 tokens alone: its steps grow with its context, so its longest gap is the last
    # step's, whether or not its gaps are kept in the statistics (the warm-up's goodput reads it)
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    req = Requests(np.array([0.0]), np.array([4096.0]), np.array([400.0]))
    kept = simulate(req, _cost(ev), Scheduler(), measured=np.array([True]))
    warm = simulate(req, _cost(ev), Scheduler(), measured=np.array([False]))
    gaps, _ = kept.token_gaps()
    assert warm.max_gap[0] == kept.max_gap[0] == pytest.approx(gaps.max(), rel=1e-12)
    assert warm.max_gap[0] > gaps.min()


@pytest.mark.parametrize("k", [1, 5, 64, 65, 3000])
def test_a_jumps_step_times_are_each_steps_sum_of_its_groups_larger_line(k):
    # by definition, step s takes const + sum over groups of max(compute at s, memory at s); here the groups'
    # larger line changes from step 4 (compute overtakes memory: 1.0 + 0.2 s > 1.6 ms past s = 3) and step 41
    # (memory overtakes compute: 1.2 + 0.02 s > 2.0 ms past s = 40)
    line = [(1.0e-3, 2.0e-4, 1.6e-3, 0.0), (2.0e-3, 0.0, 1.2e-3, 2.0e-5), (5e-4, 0.0, 2e-4, 0.0)]
    const = 1.5e-3
    by_hand = [const + sum(max(c0 + cs * s, m0 + ms * s) for c0, cs, m0, ms in line) for s in range(k)]
    times = np.asarray(Engine.step_times(line, const, k, math.inf))
    assert times == pytest.approx(by_hand, rel=1e-12)
    # stopped at the first step that ends at or past a horizon: the steps up to it and no more
    horizon = 0.6 * sum(by_hand)
    cut = np.asarray(Engine.step_times(line, const, k, horizon))
    ends = np.cumsum(by_hand)
    assert len(cut) == int(np.searchsorted(ends, horizon)) + 1 and cut == pytest.approx(by_hand[:len(cut)], rel=1e-12)
