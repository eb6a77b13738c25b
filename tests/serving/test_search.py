"""The rate search (serving/search.py) and what a run spends on it (issue 44): the lattice answer bisection
would find where the SLO holds below a capacity and fails above it, in fewer probes, a neighbour's answer found
again in two; the searches charged apart from the listed rates; a long traffic searched on a shorter stream."""

import dataclasses
import math
import types

import pytest
from test_serving import _cost, _priced, _traffic

import triage
from triage.inputs.traffic import Scheduler
from triage.report.memo import render_markdown
from triage.serving.budget import Budget
from triage.serving.deployment import Side, serve
from triage.serving.metrics import Percentiles
from triage.serving.search import CLAIM, NEAR_ANSWER, PER_OCTAVE, max_rate, rate_at

from conftest import CLAIMS


class Capacity:
    """A side whose SLO holds up to ``capacity`` requests/s: its P99 time between tokens is the bound times the
    rate over the capacity (the margin a real run's grows by near capacity is steeper; this one is a line)."""

    def __init__(self, capacity: float):
        self.capacity = capacity
        self.probes: list[float] = []

    def run(self, traffic, rate):
        self.probes.append(rate)
        tbt = Percentiles(*[0.1 * rate / self.capacity] * 4)
        return types.SimpleNamespace(slo_met=rate <= self.capacity, rate_rps=rate, throughput_rps=rate,
                                     ttft_s=tbt, tbt_s=tbt, tpot_s=tbt)


def _lattice_below(capacity: float) -> float:
    """The largest rate 2^(j/128) at or below ``capacity``, by hand (j = floor(128 log2 capacity))."""
    return 2.0 ** (math.floor(PER_OCTAVE * math.log2(capacity)) / PER_OCTAVE)


# the probes the search before issue 44 took from a hint of 8 requests/s (doubling up or quartering down, then 8
# bisection steps), counted by hand-running it on these capacities: 15, 11, 10, 10, 16
BISECTION = {0.003: 15, 1.0274: 11, 3.0: 10, 11.7: 10, 700.0: 16}


@pytest.mark.parametrize("capacity", sorted(BISECTION))
def test_the_search_lands_on_the_lattice_rate_below_the_capacity_in_no_more_probes_than_bisection(capacity):
    t = _traffic(slo_tbt_s=0.1)
    side = Capacity(capacity)
    assert max_rate(side, t, 8.0) == pytest.approx(_lattice_below(capacity), rel=1e-12)
    assert len(side.probes) <= BISECTION[capacity]
    assert len(set(side.probes)) == len(side.probes)                  # no rate run twice


def test_a_neighbours_answer_is_found_again_in_two_probes():
    t = _traffic(slo_tbt_s=0.1)
    answer = max_rate(Capacity(1.1574), t, 8.0)
    again = Capacity(1.1574)
    assert max_rate(again, t, answer, NEAR_ANSWER) == answer
    # the answer and the next rate, where the first search ended
    assert again.probes == [answer, rate_at(round(math.log2(answer) * PER_OCTAVE) + 1)]
    close = Capacity(1.25)                    # a claim 8 % above the baseline's answer
    assert max_rate(close, t, answer, CLAIM) == pytest.approx(_lattice_below(1.25), rel=1e-12)
    assert len(close.probes) <= 7


def test_no_slo_no_search_and_the_range_ends():
    assert max_rate(Capacity(1.0), _traffic(), 8.0) is None
    t = _traffic(slo_tbt_s=0.1)
    assert max_rate(Capacity(1e-9), t, 1.0) == 0.0
    assert max_rate(Capacity(1e9), t, 1.0) == rate_at(math.floor(math.log2(1e6) * PER_OCTAVE))


def test_the_searches_are_charged_apart_from_the_listed_rates():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    t = _traffic(rates=(2.1,), requests=300, slo_tbt_s=0.05)       # not a lattice rate: run apart
    budget = Budget(math.inf, search_limit=math.inf)
    side = Side(_cost(ev), Scheduler(), budget=budget)
    serve(side, side, t)
    assert budget.spent > 0 and budget.searched > 0
    listed = budget.spent
    # a search limit below what the search takes: refused, naming its own limit; what it spent is its own (the
    # listed rate the baseline's search starts from was charged as a listed run, no more)
    tight = Budget(math.inf, search_limit=budget.searched / 2)
    side = Side(_cost(ev), Scheduler(max_seqs=255), budget=tight)      # another fingerprint: nothing memoized
    with pytest.raises(ValueError, match="serving_search_work"):
        serve(side, side, t)
    assert 0 < tight.spent <= listed and tight.searched > tight.search_limit


def test_a_traffic_longer_than_the_search_is_searched_on_its_own_shorter_stream():
    ev = _priced([{"name": "d", "phase": "decode", "context": 1024, "batch": 1}])
    t = _traffic(rates=(1.0,), requests=5_500, slo_tbt_s=0.05, prompt=dataclasses.replace(_traffic().prompt, a=64.0),
                 output=dataclasses.replace(_traffic().output, a=8.0))
    side = Side(_cost(ev), Scheduler())
    r = serve(side, side, t)
    rows = {x.rate_rps: x.requests + x.warmup_requests for x in r.baseline.rates}
    assert rows[1.0] == 5_500                                          # the listed rate: every request
    assert rows[r.baseline.max_rate_at_slo_rps] == 5_000              # the search's own rate: its stream


def test_a_listed_rate_is_probed_as_it_is_and_brackets_the_lattice():
    # the traffic lists 5 requests/s (no lattice rate): the search's first probe is that run, which the memo's
    # table shows anyway; failing there, the lattice rate above 5 fails too, and the answer is the same
    t = _traffic(slo_tbt_s=0.1)
    side = Capacity(1.2)
    assert max_rate(side, t, 5.0, listed=True) == pytest.approx(_lattice_below(1.2), rel=1e-12)
    assert side.probes[0] == 5.0 and all(p == rate_at(round(math.log2(p) * PER_OCTAVE)) for p in side.probes[1:])
    capped = Capacity(7.0)                    # within the SLO at 5: the lattice rate below 5 is too
    assert max_rate(capped, t, 5.0, listed=True) == pytest.approx(_lattice_below(7.0), rel=1e-12)


class Flicker(Capacity):
    """Within the SLO up to 1 request/s and again between 1.03 and 1.05 (a P99 over few requests can do that):
    no single boundary."""

    def run(self, traffic, rate):
        out = super().run(traffic, rate)
        out.slo_met = rate <= 1.0 or 1.03 <= rate <= 1.05
        return out


def test_a_side_that_prices_as_the_baseline_lands_on_the_baselines_answer_whatever_the_slo_does():
    # the claim's search starts from the baseline's answer: where the claim prices as the baseline (the same
    # runs), it must find the same rate, gain 1.000x, not another boundary of a flickering SLO (three hindsight
    # runs of a change that moves nothing read NO-GO until the claim's search probed the answer's next rate first)
    t = _traffic(slo_tbt_s=0.1)
    answer = max_rate(Flicker(1.0), t, 8.0)
    again = Flicker(1.0)
    assert max_rate(again, t, answer, CLAIM) == answer and len(again.probes) == 2


def test_the_memo_says_which_rows_are_the_searchs_shorter_stream():
    # 5,500 requests a rate (over SERVING_SEARCH_REQUESTS): the listed rate runs them all, the rows at the
    # searched rates are the search's own 5,000, and the memo's traffic line says so
    w = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
         "workloads": [{"name": "long", "traffic": {"rates": [2], "prompt_tokens": 64, "output_tokens": 8,
                                                     "requests": 5_500, "slo": {"tbt": "50 ms"}}}]}
    memo = render_markdown(triage.evaluate(CLAIMS / "kv2x.yaml", w))
    assert "5,500 requests a rate" in memo
    assert "rates of the search for the largest rate at the SLO, its own stream of 5,000 requests" in memo


def test_a_search_past_its_limit_is_an_addressed_refusal():
    from triage.analysis import pipeline

    w = {"defaults": {"model": "llama-2-7b", "hardware": "a100-80gb"},
         "workloads": [{"name": "svc", "traffic": {"rates": [2], "prompt_tokens": 64, "output_tokens": 8,
                                                    "requests": 100, "slo": {"tbt": "50 ms"}}}]}
    with pytest.raises(triage.UserError) as err:
        pipeline.evaluate(CLAIMS / "kv2x.yaml", w, work=Budget(math.inf, search_limit=10_000))
    text = str(err.value)
    assert "workload 'svc'" in text and "limit serving_search_work" in text and "no SLO (nothing to search)" in text
