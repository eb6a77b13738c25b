"""Where a claim pays: crossover over context × batch, throughput at the SLO, sensitivity to its unknowns.

All three re-evaluate the claim on small matrices derived from the matrix's
cells (numpy, one call per table), never one cell at a time. Numbers only: the
report words them.
"""

from __future__ import annotations

import math
from dataclasses import field, replace

import numpy as np

from .. import defaults
from ..defaults import ANALYSIS_WORKERS, LIMITS, LONG_CONTEXT_TOKENS
from ..inputs.claim import Claim
from ..inputs.specs import Model
from ..model import evidence, verdicts
from ..model.incumbent import IncumbentPrice
from ..model.matrix import Matrix
from ..records import record
from ..serving.budget import Budget
from . import decision, serving

# the analyses' grids (defaults.py) as arrays
CROSSOVER_CONTEXTS = np.array(defaults.CROSSOVER_CONTEXTS)
CROSSOVER_BATCHES = np.array(defaults.CROSSOVER_BATCHES)
SLO_BATCHES = np.array(defaults.SLO_BATCHES)


@record
class Crossover:
    """One model × hardware pair (decode): the bound over context × batch and where each layer pays."""

    model: str
    hardware: str
    min_gain: float
    contexts: np.ndarray
    batches: np.ndarray
    theoretical: np.ndarray         # batches × contexts
    pays_theoretical: np.ndarray    # bound ≥ min_gain where both sides fit (never a bound where nothing runs)
    pays_expected: np.ndarray       # implementation ≥ min_gain and the claim fits
    fits: np.ndarray                # both the baseline and the claim fit in memory


@record
class SloSide:
    """The largest batch (of SLO_BATCHES) that fits and meets the SLO; batch 0 when none does."""

    batch: int
    tokens_per_s: float
    time_s: float | None


@record
class SloThroughput:
    """Throughput at the SLO of one cell, baseline and claim."""

    cell: int
    baseline: SloSide
    claim: SloSide
    slo_s: float | None

    @property
    def gain(self) -> float | None:
        return self.claim.tokens_per_s / self.baseline.tokens_per_s if self.baseline.tokens_per_s > 0 else None


# the card's uncertain inputs the sensitivity moves (report/where_it_pays.py words each)
INPUTS = ("bandwidth_efficiency", "kernel", "acceptance", "quality_retained")


@record
class Sensitivity:
    """The decision, and each cell's verdict, with one uncertain input of the card (a code of INPUTS) moved to
    ``value`` (an efficiency, whether a kernel reads the format, an acceptance rate, a retained fraction)."""

    input: str
    value: float | bool
    weighted_speedup: float | None
    decision: str
    codes: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0, dtype=int))


@record
class Frontier:
    """Latency against throughput of one decode cell's settings over batch: the matrix's own batches for that
    cell when it sweeps them, else SLO_BATCHES."""

    cell: int
    batches: np.ndarray
    base_time_s: np.ndarray          # seconds per useful token, end-to-end layer (idle batch slots included)
    claim_time_s: np.ndarray
    base_tpot_s: np.ndarray          # a step's time: the TPOT a sequence sees (what the SLO judges)
    claim_tpot_s: np.ndarray
    base_fits: np.ndarray
    claim_fits: np.ndarray
    gpus: float                      # per replica (tensor parallel)
    slo_s: float | None


@record
class Analysis:
    """Everything the pipeline analyses after judging, computed once."""

    crossover: tuple[Crossover, ...]
    slo_throughput: tuple[SloThroughput, ...]
    slo_cells_total: int
    sensitivity: tuple[Sensitivity, ...]
    frontier: Frontier | None


def _replicate(m: Matrix, cells: np.ndarray, context: np.ndarray, batch: np.ndarray) -> Matrix:
    """Each of ``cells``' settings on the same new (context, batch) pairs, cell after cell: one matrix, so one
    pricing pass serves them all."""
    n = cells.size * context.size
    sub = m.take(np.repeat(cells, context.size))
    context, batch = np.tile(context, cells.size), np.tile(batch, cells.size)
    return replace(sub, context=context.astype(float), batch=batch.astype(float),
                   long_context=context >= LONG_CONTEXT_TOKENS, share=np.full(n, 1.0 / n))


def crossover(claim: Claim, m: Matrix, models: dict[str, Model]) -> tuple[Crossover, ...]:
    """Per model × hardware of the matrix (decode): where the bound and the expected gain reach min_gain."""
    out = []
    decode = np.flatnonzero(m.decode)
    pairs = m.model_idx[decode] * len(m.hardware) + m.hardware_idx[decode]
    _, first = np.unique(pairs, return_index=True)          # the first decode cell of each model × hardware
    # the axes cover the shipped grid and the matrix's own range (powers of 2 and 4 beyond it)
    top_ctx, top_batch = float(m.context[decode].max(initial=1)), float(m.batch[decode].max(initial=1))
    low_ctx = float(m.context[decode].min(initial=256))
    contexts = np.union1d(CROSSOVER_CONTEXTS, 2.0 ** np.arange(21, math.ceil(math.log2(max(top_ctx, 2))) + 1))
    contexts = np.union1d(contexts, 2.0 ** np.arange(max(math.floor(math.log2(max(low_ctx, 1))), 0), 8))
    batches = np.union1d(CROSSOVER_BATCHES, 4.0 ** np.arange(4, math.ceil(math.log(max(top_batch, 2), 4)) + 1))
    ctx, bat = np.meshgrid(contexts, batches)
    cells = decode[np.sort(first)]
    if cells.size == 0:
        return ()
    g = evidence.compute(_replicate(m, cells, ctx.ravel(), bat.ravel()), claim, models)   # every pair, one pass
    for j, i in enumerate(cells):
        rows = slice(j * ctx.size, (j + 1) * ctx.size)
        min_gain = float(m.blocks[m.block_idx[i]].min_gain)
        theoretical, implementation = g.speedup_theoretical[rows], g.speedup_implementation[rows]
        both = g.base.fits[rows] & g.claim.fits[rows]
        out.append(Crossover(
            model=m.models[m.model_idx[i]].label, hardware=m.hardware[m.hardware_idx[i]].key, min_gain=min_gain,
            contexts=contexts.astype(int), batches=batches.astype(int),
            theoretical=theoretical.reshape(ctx.shape),
            pays_theoretical=((theoretical >= min_gain) & both).reshape(ctx.shape),
            pays_expected=((implementation >= min_gain) & g.claim.fits[rows]).reshape(ctx.shape),
            fits=both.reshape(ctx.shape)))
    return tuple(out)


def _best(v: evidence.Variant, rows: slice, slo: np.ndarray, per_step: np.ndarray) -> SloSide:
    """The largest batch that fits and whose step meets the SLO, and its tokens/s per GPU."""
    t = np.broadcast_to(v.time_end_to_end, v.fits.shape)[rows]
    step = t * np.broadcast_to(v.inputs.utilization, v.fits.shape)[rows]      # TPOT: a step's time
    gpus = np.broadcast_to(v.inputs.tp, v.fits.shape)[rows]
    ok = v.fits[rows] & ~(step > slo)                     # a NaN SLO meets everything
    if not ok.any():
        return SloSide(0, 0.0, None)
    j = int(np.flatnonzero(ok)[-1])
    return SloSide(int(SLO_BATCHES[j]), float(per_step[j] / t[j] / gpus[j]), float(step[j]))


def slo_throughput(claim: Claim, m: Matrix, models: dict[str, Model]) -> tuple[SloThroughput, ...]:
    """Per cell (the first LIMITS.slo_cells): the largest batch that fits and meets the SLO, and its tokens/s."""
    n, k = min(len(m), LIMITS.slo_cells), SLO_BATCHES.size
    cells = np.repeat(np.arange(n), k)
    grid = replace(m.take(cells), batch=np.tile(SLO_BATCHES, n).astype(float), share=np.full(n * k, 1.0 / (n * k)))
    g = evidence.compute(grid, claim, models)
    out = []
    for i in range(n):
        rows = slice(i * k, (i + 1) * k)
        per_step = SLO_BATCHES * (1.0 if m.decode[i] else m.context[i])
        slo = g.slo[rows]
        out.append(SloThroughput(i, _best(g.base, rows, slo, per_step), _best(g.claim, rows, slo, per_step),
                                 None if np.isnan(slo[0]) else float(slo[0])))
    return tuple(out)


def _variants(claim: Claim) -> list[tuple[str, float | bool, Claim]]:
    """The card's uncertain inputs, each moved over its plausible range."""
    out: list[tuple[str, float | bool, Claim]] = []
    for eff in (0.5, 0.75, 1.0):
        out.append(("bandwidth_efficiency", eff, replace(claim, bandwidth_efficiency=eff)))
    change = claim.change
    if change.changes_format:
        for kernel in (False, True):
            out.append(("kernel", kernel, replace(claim, kernel=kernel)))
    spec = change.speculative
    if spec is not None and spec.acceptance is not None:
        for delta in (-0.2, -0.1, 0.0, 0.1):
            alpha = min(max(spec.acceptance + delta, 0.0), 1.0)
            # the change's facts do not depend on its acceptance (inputs/change.py): the field alone is replaced
            varied = replace(change, speculative=replace(spec, acceptance=alpha))
            out.append(("acceptance", alpha, replace(claim, change=varied)))
    for retained in (0.98, 0.99, 1.0):
        out.append(("quality_retained", retained, replace(claim, quality_retained=retained)))
    return out


def sensitivity(claim: Claim, m: Matrix, models: dict[str, Model], served: serving.Results | None = None,
                work: Budget | None = None, priced: evidence.Gaps | None = None,
                shipped: IncumbentPrice | None = None,
                own: tuple[verdicts.Verdicts, decision.Decision] | None = None) -> tuple[Sensitivity, ...]:
    """The fleet gain (end-to-end) and decision as the card's uncertain inputs move; a workload with traffic
    takes its serving simulation's gain (``served``, the evaluation's own, where the variant moves nothing the
    simulation reads: no kernel of the card's runs in it, or only the quality moves; simulated again otherwise).

    ``priced``: the evaluation's own gaps (after its simulation). A variant that prices as the card does (only
    its quality moves, or it restates the card's own value) is judged on them, and every other variant prices
    only its claim side: the baseline does not move with the card; one that is the card itself takes the
    evaluation's own judgement (``own``: its verdicts and decision, by the same rules). Variants are
    independent: without traffic,
    ANALYSIS_WORKERS of them are priced at once (numpy's loops release the GIL), each one's arrays dropped once it
    is judged."""
    def row(name: str, value: float | bool, variant: Claim) -> Sensitivity:
        if own is not None and priced is not None and variant == claim:
            return Sensitivity(name, value, own[1].weighted_end_to_end, own[1].verdict, own[0].code)
        if priced is not None and replace(variant, quality_retained=claim.quality_retained) == claim:
            g = priced
        else:
            g = evidence.compute(m, variant, models, baseline=priced.base if priced is not None else None,
                               retime=_retimable(claim, variant, priced))
            if served:
                same = name == "quality_retained" or not claim.change.groups
                g = serving.price(m, variant, g, served if same else None, work, shown=False, near=served)[1]
        # judged by the evaluation's own rules: the same shipped alternative (what engines ship does not move with
        # the card), so a variant at the card's own values gives the card's own verdicts
        inc_s = shipped.request_s if shipped is not None else None
        v = verdicts.decide(m, variant, g, incumbent_request_s=inc_s)
        d = decision.decide(m, variant, g, v, shipped.name if shipped is not None else None, inc_s)
        return Sensitivity(name, value, d.weighted_end_to_end, d.verdict, v.code)

    variants = _variants(claim)
    # a matrix with traffic prices its variants one at a time: the simulations are Python (the GIL, no gain from
    # threads), and which runs the memo still holds, so what the run's token-step budget is charged, must not
    # depend on which thread got there first
    if served:
        return tuple(row(*args) for args in variants)
    from concurrent.futures import ThreadPoolExecutor  # (and logging) loaded only where threads are used

    with ThreadPoolExecutor(max_workers=min(ANALYSIS_WORKERS, len(variants))) as pool:
        return tuple(pool.map(lambda args: row(*args), variants))


def _retimable(claim: Claim, variant: Claim, priced: evidence.Gaps | None) -> evidence.Variant | None:
    """The card's own claim side, where a variant moves only its kernels' efficiencies: the same change and a
    kernel that reads it (the bytes it reads hold), nothing switched per cell and no draft model."""
    same = variant.change is claim.change and variant.kernel == claim.kernel and claim.kernel
    plain = not claim.change.switchable and claim.change.speculative is None
    return priced.claim if priced is not None and same and plain else None


THRESHOLD_MARGIN = 0.05      # a gain within ±5 % of min_gain is a coin toss, whatever the inputs


def marginal(m: Matrix, g: evidence.Gaps, v: verdicts.Verdicts, rows: tuple[Sensitivity, ...],
             idx: slice = slice(None)) -> np.ndarray:
    """Per cell of ``idx`` (all by default): True where the verdict flips inside the card's sensitivity ranges
    (kernel efficiency, a missing kernel, the acceptance rate), or the deciding gain is within ±5 % of the
    threshold — a gain decides only where no rule the gain cannot move (quality, missing evidence, the stack, an
    unproven integration) already has."""
    code = v.code[idx]
    flips = np.zeros(code.shape, dtype=bool)
    for row in rows:
        if row.input != "quality_retained":          # the quality gate is its own rule, shown on its own
            flips |= row.codes[idx] != code
    e2e, theory = g.speedup_end_to_end[idx], g.speedup_theoretical[idx]
    gain = np.where(np.isfinite(e2e), e2e, theory)
    with np.errstate(invalid="ignore"):
        near = np.abs(gain / np.broadcast_to(m.column("min_gain"), m.batch.shape)[idx] - 1.0) < THRESHOLD_MARGIN
    fixed = v.fixed()
    return flips | (near & ~(fixed[idx] if fixed.shape else fixed))


def frontier(claim: Claim, m: Matrix, models: dict[str, Model]) -> Frontier | None:
    """The first decode cell's latency–throughput curve, baseline and claim (None without decode cells)."""
    decode = np.flatnonzero(m.decode)
    if decode.size == 0:
        return None
    i = int(decode[0])
    same = decode[(m.block_idx[decode] == m.block_idx[i]) & (m.model_idx[decode] == m.model_idx[i])
                  & (m.hardware_idx[decode] == m.hardware_idx[i]) & (m.context[decode] == m.context[i])]
    batches = np.unique(m.batch[same]) if np.unique(m.batch[same]).size >= 4 else SLO_BATCHES.astype(float)
    grid = replace(m.take(np.full(batches.size, i)), batch=batches.astype(float),
                   share=np.full(batches.size, 1.0 / batches.size))
    g = evidence.compute(grid, claim, models)
    slo = float(g.slo[0])
    step = [np.broadcast_to(v.time_end_to_end * v.inputs.utilization, grid.batch.shape) for v in (g.base, g.claim)]
    return Frontier(i, batches, g.base.time_end_to_end, g.claim.time_end_to_end, step[0], step[1], g.base.fits,
                    g.claim.fits, float(np.broadcast_to(g.base.inputs.tp, grid.batch.shape)[0]),
                    slo if np.isfinite(slo) else None)


def analyse(claim: Claim, m: Matrix, models: dict[str, Model], served: serving.Results | None = None,
            work: Budget | None = None, priced: evidence.Gaps | None = None,
            shipped: IncumbentPrice | None = None,
            own: tuple[verdicts.Verdicts, decision.Decision] | None = None) -> Analysis:
    """Crossover, throughput at the SLO, sensitivity and the latency–throughput frontier, once (``priced``: the
    evaluation's own gaps, and ``own`` its verdicts and decision, which the sensitivity reuses)."""
    return Analysis(crossover(claim, m, models), slo_throughput(claim, m, models), len(m),
                    sensitivity(claim, m, models, served, work, priced, shipped, own), frontier(claim, m, models))
