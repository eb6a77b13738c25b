"""A workload's `traffic:` (the request stream a serving simulation replays) and `scheduler:` (the engine's
policy), typed; request traces read from CSV or JSONL files (bounded, addressed errors, never echoed).

Traces: the Azure LLM inference trace format (`TIMESTAMP,ContextTokens,GeneratedTokens`; Patel et al.,
"Splitwise", ISCA 2024, CC-BY 4.0) or a plain `arrival_s,prompt_tokens,output_tokens` CSV or JSONL.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import (
    LIMITS,
    SERVING_MIN_MEASURED,
    SERVING_RATE_MAX,
    SERVING_RATE_MIN,
    TRAFFIC_ARRIVALS,
    TRAFFIC_OUTPUT_TOKENS,
    TRAFFIC_PERCENTILE,
    TRAFFIC_PROMPT_TOKENS,
    TRAFFIC_REQUESTS,
    TRAFFIC_SEED,
    TRAFFIC_WARMUP,
)
from ..errors import Problem, UserError
from ..io.files import read_text
from ..io.yamlio import Document
from ..records import DERIVED, record
from . import units

AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
PLAIN = ("arrival_s", "prompt_tokens", "output_tokens")


POLICIES = ("static", "continuous", "chunked", "disaggregated")
# how requests arrive: server (open loop at each rate; the largest rate at the SLO), interactive (the same,
# named for its tighter bounds), offline (every request at once: MLPerf's Offline, trtllm-bench's infinite rate),
# closed_loop (N clients, each sending its next request when the last completes: benchmark_serving.py
# --max-concurrency, genai-perf --concurrency)
SCENARIOS = ("server", "interactive", "offline", "closed_loop")
CLOSED = ("offline", "closed_loop")          # the scenarios whose requests arrive as earlier ones complete


@record
class Scheduler:
    """An engine's scheduling policy and limits (the serving simulation's, serving/policies/)."""

    policy: str = "continuous"
    max_seqs: int = 256                  # sequences running at once
    max_batched_tokens: int = 8192       # prompt tokens one prefill iteration takes (continuous, static)
    token_budget: int = 512              # tokens one chunked iteration takes, decodes first
    preemption: str = "recompute"        # or swap
    kv: str = "paged"                    # paged (blocks as the sequence grows) or reserve (at admission)
    reserve: str = "oracle"              # reserve: oracle (its true length), pow2 (output rounded up), max
    max_length: int = 2048               # reserve max: the tokens each sequence is given
    host_link_bytes_per_s: float = 25e9  # swap: KV to host and back (assumption: PCIe Gen4 x16, ~25 GB/s achieved)
    prefill_gpus: int = 1                # disaggregated: instances of each pool
    decode_gpus: int = 1
    link_bytes_per_s: float = 25e9       # disaggregated: KV from a prefill to a decode instance (assumption)
    link_latency_s: float = 0.0
    prefix_caching: bool = False         # reuse a shared prefix's KV (the traffic's shared_prefix)
    block_size: int = 16                 # paged KV: tokens a block holds (vLLM's default)
    replicas: int = 1                    # instances behind a load balancer, each of tp x pp GPUs (requests
                                         # spread evenly: each sees 1/replicas of the rate or the clients)
    pp: int = 1                          # pipeline stages of one instance (each tp GPUs): pp micro-batches in
                                         # flight, the weights spread over tp x pp GPUs
    scheduler_steps: int = 1             # continuous: decode steps one scheduler call runs (vLLM's multi-step
                                         # num_scheduler_steps): admissions wait for the call's end


@record
class Trace:
    """A request trace: arrival offsets (s, from its first request, ascending) and lengths (tokens)."""

    file: str
    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray

    @property
    def rate(self) -> float:
        """Its mean arrival rate, requests per second."""
        span = float(self.arrival[-1] - self.arrival[0])
        return (len(self.arrival) - 1) / span if span > 0 else math.inf


@record
class Lengths:
    """Prompt or output lengths: a number, a log-normal (median, sigma), a uniform range, or the trace's."""

    kind: str                    # fixed | lognormal | uniform | trace
    a: float = 0.0               # the number, the median, or the low end
    b: float = 0.0               # sigma, or the high end
    cap: float = math.inf        # lognormal: the longest a draw may be (a dataset's cap; longer draws are cut to it)

    def mean(self, column: np.ndarray | None) -> float:
        """The mean length in tokens (a log-normal's is median·exp(sigma²/2), its cap aside); ``column`` is the
        trace's."""
        if self.kind == "trace":
            return float(np.mean(column)) if column is not None and len(column) else 0.0
        if self.kind == "lognormal":
            return self.a * math.exp(self.b ** 2 / 2)
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a


@record
class Traffic:
    """The request stream of a serving simulation and the SLOs its goodput counts."""

    rates: tuple[float, ...]     # requests per second
    arrivals: str                # poisson | gamma | trace
    cv: float                    # gamma's coefficient of variation
    trace: Trace | None
    prompt: Lengths
    output: Lengths
    requests: int
    seed: int
    warmup: float                # share of the requests (the first by arrival) left out of the statistics
    slo_ttft_s: float | None
    slo_tbt_s: float | None
    slo_tpot_s: float | None
    prefix_share: float = 0.0    # requests whose prompt starts with the shared prefix
    prefix_tokens: int = 0       # its length
    ttft_at: str = "p99"         # the percentile each bound applies to
    tbt_at: str = "p99"
    tpot_at: str = "p99"
    own_slo: bool = False        # traffic: slo: was given (its bounds, none for {}), replacing the workload's
    scenario: str = "server"     # SCENARIOS
    clients: int = 0             # closed_loop: requests in flight (offline: every request); 0 for open loop

    @property
    def closed(self) -> bool:
        """Whether requests arrive as earlier ones complete (offline, closed_loop), not at a rate."""
        return self.scenario in CLOSED

    def step_context(self) -> int:
        """The context, in tokens, of the step-level cell a traffic workload shows when it states none: the
        mean prompt plus half the mean output, a decode step's mean context over a request."""
        trace = self.trace
        prompt = self.prompt.mean(trace.prompt if trace else None)
        output = self.output.mean(trace.output if trace else None)
        return max(1, round(prompt + output / 2))


def _lengths(doc: Document, path: tuple[Any, ...], value: Any, problems: list[Problem]) -> Lengths:
    if value == "trace":
        return Lengths("trace")
    if isinstance(value, (int, float)):
        return Lengths("fixed", float(value))
    if "lognormal" in value:
        spec = value["lognormal"]
        if spec.get("max", math.inf) < spec["median"]:
            problems.append(doc.problem(path + ("lognormal", "max"), (
                f"a cap below the median ({spec['max']:g} < {spec['median']:g}) cuts more than half the draws")))
        return Lengths("lognormal", float(spec["median"]), float(spec["sigma"]), float(spec.get("max", math.inf)))
    low, high = value["uniform"]
    if low > high:
        problems.append(doc.problem(path + ("uniform",), f"a range runs low to high: {low} > {high}"))
    return Lengths("uniform", float(low), float(high))


def parse(doc: Document, path: tuple[Any, ...], base: Path, problems: list[Problem]) -> Traffic:
    """The schema-valid `traffic:` block at ``path``; a trace file is read here (relative to ``base``)."""
    raw = doc.data
    for part in path:
        raw = raw[part]
    arrivals = raw.get("arrivals", TRAFFIC_ARRIVALS)
    trace = None
    kind, cv = "poisson", 1.0
    if isinstance(arrivals, dict) and "gamma" in arrivals:
        kind, cv = "gamma", float(arrivals["gamma"])
    elif isinstance(arrivals, dict):
        kind = "trace"
        name = arrivals["trace"]
        trace = read_trace(Path(name) if Path(name).is_absolute() else base / name, problems)
    lengths = {k: _lengths(doc, path + (k,), raw.get(k, default), problems)
               for k, default in (("prompt_tokens", TRAFFIC_PROMPT_TOKENS), ("output_tokens", TRAFFIC_OUTPUT_TOKENS))}
    if kind != "trace" and any(v.kind == "trace" for v in lengths.values()):
        problems.append(doc.problem(path, "prompt or output lengths from 'trace' need arrivals: {trace: FILE}"))
    scenario = raw.get("scenario", "server")
    closed = scenario in CLOSED
    rates = tuple(sorted({float(r) for r in (raw["rates"] if "rates" in raw else [raw["rate"]] if "rate" in raw
                                              else [])}))
    if closed:
        for key in ("rate", "rates", "arrivals", "duration"):
            if key in raw:
                when = "the run starts" if scenario == "offline" else "a client is free"
                problems.append(doc.problem(path + (key,), (
                    f"{'an offline' if scenario == 'offline' else 'a closed_loop'} run sends each request as {when}: "
                    f"no {key} (give requests"
                    f"{', clients' if scenario == 'closed_loop' else ''})")))
        rates = ()
    if (scenario == "closed_loop") != ("clients" in raw):
        problems.append(doc.problem(path + ("clients",) if "clients" in raw else path, (
            "clients (requests in flight) belong to scenario: closed_loop" if "clients" in raw
            else "a closed_loop scenario needs clients: the requests its benchmark keeps in flight")))
    if not rates and trace is None and not closed:
        problems.append(doc.problem(path, "traffic needs rate or rates (requests/s), or a trace to replay at its own"))
    if not rates and trace is not None:
        rates = (trace.rate,)
        if not SERVING_RATE_MIN <= trace.rate <= SERVING_RATE_MAX:
            problems.append(doc.problem(path + ("arrivals", "trace"), (
                f"the trace's own rate ({'above' if trace.rate > SERVING_RATE_MAX else 'below'} "
                f"{SERVING_RATE_MAX if trace.rate > SERVING_RATE_MAX else SERVING_RATE_MIN:g} requests/s) is outside "
                f"the {SERVING_RATE_MIN:g} to {SERVING_RATE_MAX:g} requests/s a simulation takes: give rates")))
    if "duration" in raw and not closed:
        duration = _quantity(doc, path + ("duration",), raw["duration"], "time", problems)
        wanted = max(rates, default=1.0) * duration if math.isfinite(duration) else 10.0
        if wanted > LIMITS.serving_requests:
            problems.append(doc.problem(path + ("duration",), (
                f"{wanted:,.0f} requests at the largest rate; a simulation takes at most "
                f"{LIMITS.serving_requests:,} (limit serving_requests)")))
        requests = int(min(max(wanted, 10.0), LIMITS.serving_requests))
    else:
        requests = int(raw.get("requests", TRAFFIC_REQUESTS))
    if requests > LIMITS.serving_requests:
        problems.append(doc.problem(path + ("requests",), (
            f"{requests:,} requests; a simulation takes at most {LIMITS.serving_requests:,} (limit serving_requests)")))
    warmup = float(raw.get("warmup", TRAFFIC_WARMUP))
    measured = requests - int(math.floor(warmup * requests))
    if measured < SERVING_MIN_MEASURED:
        problems.append(doc.problem(path + ("warmup",), (
            f"warm-up {warmup:g} of {requests:,} requests leaves {measured} measured; a rate needs at least "
            f"{SERVING_MIN_MEASURED} to be called served: more requests or less warm-up")))
    slo = raw.get("slo", {})
    times = {k: _quantity(doc, path + ("slo", k), slo[k], "time", problems) if k in slo else None
             for k in ("ttft", "tbt", "tpot")}
    shared = raw.get("shared_prefix", {"share": 0.0, "tokens": 0})
    return Traffic(rates, kind, cv, trace, lengths["prompt_tokens"], lengths["output_tokens"], max(requests, 1),
                   int(raw.get("seed", TRAFFIC_SEED)), warmup, times["ttft"], times["tbt"],
                   times["tpot"], float(shared["share"]), int(shared["tokens"]), slo.get("ttft_at", TRAFFIC_PERCENTILE),
                   slo.get("tbt_at", TRAFFIC_PERCENTILE), slo.get("tpot_at", TRAFFIC_PERCENTILE), "slo" in raw,
                   scenario, int(raw.get("clients", requests if scenario == "offline" else 0)))


def _quantity(doc: Document, path: tuple[Any, ...], value: Any, kind: str, problems: list[Problem]) -> float:
    try:
        return units.parse(value, kind)
    except units.UnitError as exc:
        problems.append(doc.problem(path, str(exc)))
        return math.nan


def parse_scheduler(doc: Document, path: tuple[Any, ...], problems: list[Problem]) -> dict[str, Any]:
    """The schema-valid `scheduler:` block at ``path``, its links in bytes/s and latency in seconds (a workload
    file's layers merge these before they become SchedulerKeys)."""
    raw = doc.data
    for part in path:
        raw = raw[part]
    wrong = scheduler_problem(keys(raw))
    if wrong:
        problems.append(doc.problem(path + (wrong[0],), wrong[1]))
    return parse_links(doc, path, problems)


def parse_links(doc: Document, path: tuple[Any, ...], problems: list[Problem]) -> dict[str, Any]:
    """The scheduler block at ``path`` (a workload's, or a card's change.scheduler) with its link quantities in
    base units, each bad one an addressed problem (so `validate` refuses what `run` would)."""
    raw = doc.data
    for part in path:
        raw = raw[part]
    return _links(raw, lambda key, value, kind: _quantity(doc, path + (key,), value, kind, problems))


@record
class SchedulerKeys:
    """The keys a `scheduler:` block sets (a workload's, or a card's `change.scheduler`, which is laid over it),
    its links in bytes/s and latency in seconds; None: not set, the policy's default (Scheduler) holds."""

    policy: str | None = None
    max_seqs: int | None = None
    max_batched_tokens: int | None = None
    token_budget: int | None = None
    preemption: str | None = None
    kv: str | None = None
    reserve: str | None = None
    max_length: int | None = None
    prefill_gpus: int | None = None
    decode_gpus: int | None = None
    link: float | None = None
    host_link: float | None = None
    link_latency: float | None = None
    prefix_caching: bool | None = None
    block_size: int | None = None
    replicas: int | None = None
    pp: int | None = None
    chunked_prefill: bool | None = None
    scheduler_steps: int | None = None
    # the link quantities as the card wrote them ('300 GB/s'), echoed
    written: tuple[tuple[str, str], ...] = dataclasses.field(default=(), compare=False, metadata=DERIVED)



SCHEDULER_KEYS = tuple(f.name for f in dataclasses.fields(SchedulerKeys) if f.name != "written")


def given(keys: SchedulerKeys) -> dict[str, Any]:
    """The keys a block sets, as the card or workload file wrote them (links in base units)."""
    return {k: v for k in SCHEDULER_KEYS if (v := getattr(keys, k)) is not None}


def keys(raw: dict[str, Any] | None) -> SchedulerKeys:
    """A schema-valid scheduler block (its links already in base units, or not yet: only their presence is
    read before they are) -> SchedulerKeys."""
    return SchedulerKeys(**(raw or {}))


def scheduler_problem(keys: SchedulerKeys) -> tuple[str, str] | None:
    """What makes a scheduler block one no engine runs, as (the key at fault, why), or None. A chunked iteration
    carries every running decode and prompt chunks up to the budget, so a budget below the sequences it runs
    starves the prompts (one token an iteration at best); vLLM refuses it: "max_num_batched_tokens (...) must be
    greater than or equal to max_num_seqs (...)" (vllm/config/scheduler.py, SchedulerConfig._verify_args, commit
    f0de1a6)."""
    policy = keys.policy or "continuous"
    if keys.chunked_prefill is not None and policy != "continuous":
        return "chunked_prefill", (f"chunked_prefill belongs to the continuous policy (the {policy} policy chunks "
                                   f"{'its prompts already' if policy == 'chunked' else 'nothing'}): leave it out")
    if (keys.scheduler_steps or 1) > 1 and (policy != "continuous" or keys.chunked_prefill):
        return "scheduler_steps", ("scheduler_steps (multi-step scheduling) is modelled on the continuous policy "
                                   + ("without chunked prefill (vLLM runs the two together on another path)"
                                      if policy == "continuous" else f"only, not the {policy} one") + ": leave it out")
    s = scheduler(keys)
    if s.policy == "chunked" and s.token_budget < s.max_seqs:
        return "token_budget", (f"a chunked token_budget ({s.token_budget:,}) below max_seqs ({s.max_seqs:,}) leaves "
                                f"the prompts no room while the decodes run; engines refuse it (vLLM: "
                                f"max_num_batched_tokens >= max_num_seqs)")
    return None


# a scheduler's quantities: the links' bandwidths and latency
LINKS = (("link", "bandwidth"), ("host_link", "bandwidth"), ("link_latency", "time"))


def _links(raw: dict[str, Any], parse: Any) -> dict[str, Any]:
    """A scheduler block with its link quantities in base units (a latency of 0 needs no unit)."""
    out = dict(raw)
    for key, kind in LINKS:
        if key in out and not (kind == "time" and out[key] == 0):
            out[key] = parse(key, out[key], kind)
    return out


# the scheduler's counts (sequences, tokens, steps, GPUs, engines)
_WHOLE = tuple(f.name for f in dataclasses.fields(Scheduler) if f.type in ("int", int))


def scheduler(keys: SchedulerKeys | None) -> Scheduler:
    """A scheduler block's keys (a card's `change.scheduler` laid over a workload's) -> Scheduler. The
    continuous policy with `chunked_prefill: true` is the chunked iteration with `max_batched_tokens` as its budget,
    as vLLM's enable_chunked_prefill runs it: "By default, vLLM scheduler prioritizes prefills ... Once chunked
    prefill is enabled, the policy is changed to prioritize decode requests" (vLLM's performance docs, quoted in
    vllm-project/vllm#7874), max_num_batched_tokens the "Maximum number of tokens to be processed in a single
    iteration" (vllm/config/scheduler.py, SchedulerConfig, v0.10.2)."""
    raw = given(keys) if keys is not None else {}
    if raw.pop("chunked_prefill", False) and raw.get("policy", "continuous") == "continuous":
        raw["policy"] = "chunked"
        raw.setdefault("token_budget", raw.get("max_batched_tokens", Scheduler.max_batched_tokens))
    for key in ("link", "host_link"):
        if key in raw:
            raw[f"{key}_bytes_per_s"] = raw.pop(key)
    if "link_latency" in raw:
        raw["link_latency_s"] = raw.pop("link_latency")
    for key in _WHOLE:               # the schema takes 8.0 as an integer; the engine counts with whole numbers
        if key in raw:
            raw[key] = int(raw[key])
    return Scheduler(**raw)


def read_trace(path: Path, problems: list[Problem]) -> Trace | None:
    """A request trace (Azure's CSV, a plain CSV or JSONL): rows bounded, values checked, sorted by arrival."""
    file = str(path)
    try:
        text = read_text(path)
    except UserError as exc:
        problems += exc.problems
        return None
    rows: list[tuple[float, float, float]] = []
    if path.suffix == ".jsonl":
        lines = text.splitlines()
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                rows.append((float(r["arrival_s"]), float(r["prompt_tokens"]), float(r["output_tokens"])))
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
                # OverflowError: an integer no float holds; RecursionError: a line nested past the parser's stack
                problems.append(Problem(file, n, 1, "$", f"expected {{{', '.join(PLAIN)}}} numbers"))
                return None
    else:
        import csv  # a trace file's reader, not loaded for traffic stated in the workload

        reader = csv.reader(io.StringIO(text))
        head = next(reader, [])
        head = [h.strip().lstrip("\ufeff") for h in head]
        azure = tuple(head[:3]) == AZURE
        if not azure and tuple(head[:3]) != PLAIN:
            problems.append(Problem(file, 1, 1, "$", f"expected the columns {', '.join(AZURE)} (Azure's trace) or "
                                                      f"{', '.join(PLAIN)}"))
            return None
        start: datetime | None = None
        for n, r in enumerate(reader, start=2):
            if not r:
                continue
            try:
                if azure:
                    stamp = datetime.fromisoformat(r[0].strip()[:26]).replace(tzinfo=None)
                    start = start or stamp
                    arrival = (stamp - start).total_seconds()
                else:
                    arrival = float(r[0])
                rows.append((arrival, float(r[1]), float(r[2])))
            except (ValueError, IndexError):
                problems.append(Problem(file, n, 1, "$", "expected a time and two token counts"))
                return None
            if len(rows) > LIMITS.serving_requests:
                problems.append(Problem(file, n, 1, "$", (
                    f"more than {LIMITS.serving_requests:,} requests (limit serving_requests)")))
                return None
    a = np.array(rows, dtype=float).reshape(-1, 3)
    if len(a) < 2 or not np.isfinite(a).all() or (a < 0).any() or (a[:, 1:] > 1e7).any():
        problems.append(Problem(file, path="", message="a trace needs two or more requests with finite, non-negative "
                                                        "times and token counts below 10 million"))
        return None
    tokens = a[:, 1:]
    if (tokens < 1).any() or (tokens != np.round(tokens)).any():     # never rounded or raised in silence
        problems.append(Problem(file, path="", message="a trace's token counts are whole numbers of at least 1"))
        return None
    a = a[np.argsort(a[:, 0], kind="stable")]
    if a[-1, 0] <= a[0, 0]:
        problems.append(Problem(file, path="", message="every request of the trace arrives at the same time: no "
                                                        "rate to scale"))
        return None
    return Trace(file, a[:, 0] - a[0, 0], a[:, 1].copy(), a[:, 2].copy())
