"""A workload's request stream: arrival times, prompt and output lengths, the shared prefix; generated from its
`traffic:` (Poisson, gamma or a trace's gaps scaled to a rate; fixed, lognormal, uniform or the trace's lengths),
the same lengths at every rate (one seed)."""

from __future__ import annotations

import numpy as np

from ..inputs.traffic import Lengths, Traffic
from ..records import record


@record
class Requests:
    """Arrival times (s, ascending), prompt and output lengths (tokens) of a request stream, and how much of
    each prompt is a prefix other requests share (tokens; None: none)."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    shared: np.ndarray | None = None
    clients: int = 0             # closed loop: the first ``clients`` arrive at 0, each later one when one completes

    def __len__(self) -> int:
        return len(self.arrival)

    def take(self, idx: np.ndarray) -> Requests:
        return Requests(self.arrival[idx], self.prompt[idx], self.output[idx],
                        None if self.shared is None else self.shared[idx], self.clients)


def _lengths(spec: Lengths, trace: np.ndarray | None, n: int, rng: np.random.Generator) -> np.ndarray:
    if spec.kind == "fixed":
        out = np.full(n, spec.a)
    elif spec.kind == "lognormal":
        out = np.minimum(spec.a * np.exp(spec.b * rng.standard_normal(n)), spec.cap)
    elif spec.kind == "uniform":
        out = rng.uniform(spec.a, spec.b, n)
    else:
        assert trace is not None
        out = np.resize(trace, n).astype(float)
    return np.maximum(np.round(out), 1.0)                    # whole tokens


FIT = 0.95                    # a request is cut to this share of the KV room (the watermark and a block spare)


def requests(traffic: Traffic, rate: float, max_tokens: float) -> Requests:
    """The request stream at ``rate`` (requests/s): the same lengths at every rate (one seed), arrivals
    Poisson, gamma, or the trace's gaps scaled to the rate (a closed scenario: the first ``clients`` at 0, the
    rest when the engine frees a client, infinite here); a request longer than ``max_tokens`` (the KV the
    engine holds) is cut to fit, its output kept."""
    rng = np.random.default_rng(traffic.seed)
    n = traffic.requests
    t = traffic.trace
    prompt = _lengths(traffic.prompt, None if t is None else t.prompt, n, rng)
    output = _lengths(traffic.output, None if t is None else t.output, n, rng)
    clients = 0
    if traffic.closed:
        clients = max(1, min(traffic.clients, n))
        arrival = np.where(np.arange(n) < clients, 0.0, np.inf)
    elif traffic.arrivals == "trace":
        assert t is not None
        gaps = np.resize(np.diff(t.arrival), n)           # the trace's gaps, repeated past its end
        gaps[0] = 0.0
        mean = float(gaps[1:].mean()) if n > 1 else 1.0
        arrival = np.cumsum(gaps) / (mean * rate) if mean > 0 else np.arange(n) / rate
    elif traffic.arrivals == "gamma":
        shape = 1.0 / traffic.cv ** 2
        arrival = np.cumsum(rng.gamma(shape, 1.0 / (rate * shape), n))
    else:
        arrival = np.cumsum(rng.exponential(1.0 / rate, n))
    if not clients and (not np.all(np.isfinite(arrival)) or np.any(np.diff(arrival) < 0)):
        raise ValueError(f"the arrival times at {rate:g} requests/s are not finite, ordered times (the gaps "
                         f"overflow when scaled to the rate)")
    room = max(np.floor(FIT * max_tokens) - 16.0, 2.0)
    output = np.clip(output, 1.0, room - 1.0)
    prompt = np.clip(prompt, 1.0, np.maximum(room - output, 1.0))
    # the shared prefix: every request whose index falls in the share (spread evenly), at most its prompt less one
    hit = np.floor((np.arange(n) + 1) * traffic.prefix_share) > np.floor(np.arange(n) * traffic.prefix_share)
    shared = np.where(hit, np.minimum(float(traffic.prefix_tokens), prompt - 1.0), 0.0)
    return Requests(arrival - arrival[0], prompt, output, shared, clients)
