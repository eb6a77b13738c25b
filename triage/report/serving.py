"""The serving simulation in the memo: a table per workload with traffic, the words that explain its gain
(batch, memory, queueing), and the latency–rate figure's series."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from ..analysis.evaluation import Evaluation
from ..inputs import units
from ..serving.deployment import Served, SideResult

# what a simulated gain is a ratio of (Served.basis), per GPU
BASIS = {"max_rate_at_slo": "the largest rate at the SLO", "goodput": "goodput",
         "output_tokens_per_s": "output tokens/s"}
# the scenario a traffic block runs, as the memo names it (inputs/traffic.py SCENARIOS)
SCENARIO = {"server": "server (requests at a rate, Poisson unless the traffic says)",
            "interactive": "interactive (a server run at tight latency bounds)",
            "offline": "offline (every request sent at once; the run lasts until the last completes)",
            "closed_loop": "closed loop ({clients:,} clients, each sending its next request when its last completes)"}


def _t(v: float | None) -> str:
    return units.fmt_time(v) if v is not None and v == v else "—"


def as_json(result: Served) -> dict[str, Any]:
    """A serving simulation as the JSON contract names it (NaN as null)."""
    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        if isinstance(v, float) and not np.isfinite(v):
            return None
        return v
    return {"baseline": clean(asdict(result.baseline)), "claim": clean(asdict(result.claim)),
            "gain": clean({"end_to_end": result.gain, "basis": result.basis})}


def _policy(side: SideResult) -> str:
    """A side's scheduling policy as the memo names it, with its multi-step calls where it runs them."""
    n = side.scheduler_config.scheduler_steps
    return side.scheduler + (f" ({n} decode steps a scheduler call)" if n > 1 else "")


def _why(b: SideResult, c: SideResult, r: Served) -> str:
    """The gain in terms of batch, memory and queueing: at the claim's largest rate at the SLO where the gain is
    that rate's (the rate where the two sides part), else at the highest rate both sides were run at."""
    at = [x.rate_rps for x in c.rates]
    k = at.index(c.max_rate_at_slo_rps) if r.basis == "max_rate_at_slo" and c.max_rate_at_slo_rps in at else -1
    rb, rc = b.rates[k], c.rates[k]
    closed = r.basis == "output_tokens_per_s"
    where = "in the run" if closed else f"at {rb.rate_rps:.3g} requests/s"
    parts = [f"{where} the baseline runs {rb.mean_batch:.1f} sequences a step on average and the claim "
             f"{rc.mean_batch:.1f}"]
    def shown(k: str, v: Any) -> str:
        if k.endswith("bytes_per_s"):
            return units.fmt_bandwidth(v)
        return units.fmt_time(v) if k.endswith("_s") else str(v)
    base_config, claim_config = asdict(b.scheduler_config), asdict(c.scheduler_config)
    changed = [f"{k.replace('_bytes_per_s', '').replace('_s', '').replace('_', ' ')} "
               f"{shown(k, base_config[k])} → {shown(k, v)}"
               for k, v in claim_config.items() if base_config.get(k) != v]
    if changed:
        parts.append("the scheduler changes " + ", ".join(changed))
    if abs(c.kv_tokens - b.kv_tokens) > 0.01 * b.kv_tokens:
        parts.append(f"the KV cache holds {b.kv_tokens:,.0f} → {c.kv_tokens:,.0f} tokens")
    if rb.preemptions or rc.preemptions:
        parts.append(f"preemptions {rb.preemptions:,} → {rc.preemptions:,}")
    parts.append(f"median TTFT (queueing and prefill) {_t(rb.ttft_s.p50)} → {_t(rc.ttft_s.p50)}, "
                 f"P99 time between tokens {_t(rb.tbt_s.p99)} → {_t(rc.tbt_s.p99)} (a decode waits "
                 f"for every prefill the scheduler puts before it)")
    if closed:
        parts.append(f"the system completes {rb.output_tokens_per_s:,.0f} → {rc.output_tokens_per_s:,.0f} output "
                     f"tokens/s on {b.gpus} and {c.gpus} GPUs: per GPU, {r.gain:.2f}×, the end-to-end gain the "
                     f"verdict reads")
    elif r.basis == "max_rate_at_slo":
        assert b.max_rate_at_slo_rps is not None and c.max_rate_at_slo_rps is not None
        per = (f" ({b.gpus} and {c.gpus} GPUs: per GPU, {r.gain:.2f}×)"
               if b.gpus != c.gpus or b.gpus > 1 else f": {r.gain:.2f}×")
        parts.append(f"the SLO holds up to {b.max_rate_at_slo_rps:.3g} → {c.max_rate_at_slo_rps:.3g} "
                     f"requests/s{per}, the end-to-end gain the verdict reads")
    else:
        why = "no SLO is given" if b.max_rate_at_slo_rps is None else "no rate meets the SLO on the baseline"
        parts.append(f"{why}: the gain is the goodput's at {rb.rate_rps:g} requests/s, per GPU, {r.gain:.2f}×")
    return "; ".join(parts)


def views(ev: Evaluation) -> list[dict[str, Any]]:
    """One entry per simulated workload × model × chip: its traffic, rows per rate, the gain in words."""
    m = ev.matrix
    out = []
    for (bi, mi, hi), r in ev.serving.items():
        block = m.blocks[bi]
        t = block.traffic
        assert t is not None
        b, c = r.baseline, r.claim
        first = b.rates[0]
        slo = [f"{name} ≤ {_t(v)} ({at})" for name, v, at in (("TTFT", t.slo_ttft_s, t.ttft_at),
                                                               ("TBT", t.slo_tbt_s, t.tbt_at),
                                                               ("TPOT", t.slo_tpot_s, t.tpot_at)) if v]
        rows = [{"rate": x.rate_rps, "side": side, "ttft_p50": _t(x.ttft_s.p50),
                 "ttft_p99": _t(x.ttft_s.p99), "tbt_p50": _t(x.tbt_s.p50), "tbt_p99": _t(x.tbt_s.p99),
                 "tpot_p50": _t(x.tpot_s.p50),
                 "throughput": x.throughput_rps, "tokens": x.output_tokens_per_s, "goodput": x.goodput_rps,
                 "batch": x.mean_batch,
                 "within": x.goodput_rps / x.throughput_rps if x.throughput_rps > 0 else None,
                 "slo_met": x.slo_met if slo else None,
                 "largest": " and ".join(n for n, best in (("baseline", b.max_rate_at_slo_rps),
                                                            ("claim", c.max_rate_at_slo_rps)) if best == x.rate_rps)}
                for x_b, x_c in zip(b.rates, c.rates, strict=True)
                for side, x in (("baseline", x_b), ("claim", x_c))]
        arrivals = {"poisson": "Poisson arrivals", "gamma": f"gamma arrivals (CV {t.cv:g})",
                    "trace": "the trace's arrival gaps scaled to each rate"}[t.arrivals]
        s, engines = b.scheduler_config, b.engines
        system = (f"; {s.replicas} replica(s) x {s.pp} pipeline stage(s): {engines} engines, each simulated "
                  f"with 1/{engines} of the {'requests' if t.closed else 'rate'} (the requests, warm-up, mean batch, "
                  f"KV room and simulated time shown are one engine's)" if engines > 1 else "")
        # a listed rate's row (every request); rows of fewer are the rate search's shorter stream
        listed = next((x for x in b.rates if x.rate_rps in t.rates), first)
        n = listed.requests + listed.warmup_requests
        short = [x for x in b.rates if x.requests + x.warmup_requests < n]
        load = f"{n:,} requests" if t.closed else f"{n:,} requests a rate, {arrivals}"
        if short:
            load += (f" (at {', '.join(f'{x.rate_rps:.3g}' for x in short)} requests/s, rates of the search for the "
                     f"largest rate at the SLO, its own stream of {short[0].requests + short[0].warmup_requests:,} "
                     f"requests drawn the same way)")
        out.append({
            "workload": block.name, "model": m.models[mi].label, "hardware": m.hardware[hi].key,
            "scenario": SCENARIO[t.scenario].format(clients=min(t.clients, t.requests)), "closed": t.closed,
            "traffic": (f"{load}; the first {listed.warmup_requests:,} (warm-up) left out of the statistics; "
                        f"{'the run' if t.closed else 'the lowest rate'} simulates {_t(first.simulated_s)}"
                        f"{system}"),
            "scheduler": f"{_policy(b)} → {_policy(c)}",
            "slo": "; ".join(slo) or ("none" if t.closed else "none (no largest rate is searched)"),
            "max_rate": (b.max_rate_at_slo_rps, c.max_rate_at_slo_rps),
            "gain": r.gain, "rows": rows, "why": _why(b, c, r),
        })
    return out


def figure_series(ev: Evaluation) -> tuple[list[dict[str, Any]], dict[str, tuple[float, str]], str]:
    """The first simulated workload's P99 TTFT and TBT per rate, baseline and claim, its SLO, a title."""
    if not ev.serving:
        return [], {}, ""
    (bi, mi, hi), r = next(iter(ev.serving.items()))
    t = ev.matrix.blocks[bi].traffic
    assert t is not None
    # each latency at the percentile its SLO holds at (P99 without one)
    series = [{"name": name, "rate_rps": [x.rate_rps for x in side.rates],
               "ttft": [x.ttft_s.at(t.ttft_at) for x in side.rates],
               "tbt": [x.tbt_s.at(t.tbt_at) for x in side.rates],
               "labels": {"ttft": f"TTFT {t.ttft_at.upper()}", "tbt": f"TBT {t.tbt_at.upper()}"},
               "largest": side.max_rate_at_slo_rps}
              for name, side in (("baseline", r.baseline), ("claim", r.claim))]
    title = (f"Latency against load: {ev.matrix.blocks[bi].name}, {ev.matrix.models[mi].label} on "
             f"{ev.matrix.hardware[hi].key} (serving simulation)")
    bounds = {k: (v, at) for k, v, at in (("ttft", t.slo_ttft_s, t.ttft_at), ("tbt", t.slo_tbt_s, t.tbt_at))
              if v is not None}
    return series, bounds, title
