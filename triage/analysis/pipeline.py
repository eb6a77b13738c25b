"""The pipeline, explicit: load → build → price → judge → analyse, once, into a frozen Evaluation."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..defaults import LIMITS
from ..errors import Problem, UserError
from ..inputs import cards, catalog, workloads
from ..inputs.claim import Claim, Setting
from ..inputs.stack import stack
from ..io.run import new_evaluation
from ..model import evidence, incumbent, matrix, mechanisms, verdicts
from ..progress import SILENT, Progress
from . import cannot_act, decision, papercheck, serving, where_it_pays
from .evaluation import Evaluation
from .notices import Notice

Card = str | Path | Mapping[str, Any] | Claim     # a card file, a card as a dict (before it is typed), a Claim
Source = workloads.Source | workloads.Opened | matrix.Matrix


def load_claim(card: Card | list[Card], cat: catalog.Catalog) -> Claim:
    """One card, or several stacked into one claim."""
    if isinstance(card, list):
        return stack([load_claim(c, cat) for c in card])
    return card if isinstance(card, Claim) else cards.load(card, cat)


def load_matrix(source: Source | workloads.Workloads, cat: catalog.Catalog, model: str | None = None,
                baseline: Setting | None = None) -> tuple[matrix.Matrix, catalog.Catalog]:
    """The workload matrix (a built Matrix passes through, resolved workloads are built) and the catalog its
    names resolved in."""
    if isinstance(source, matrix.Matrix):
        return source, cat.merged({h.key: h for h in source.hardware}, {m.key: m for m in source.models})
    if isinstance(source, workloads.Workloads):
        return matrix.build(source), source.catalog
    resolved = workloads.load(source, cat, model=model, baseline=baseline)
    return matrix.build(resolved), resolved.catalog


PAPER_BASELINE_KEYS = ("attention", "memory_waste", "precision", "batch_utilization", "tp")


def paper_baseline(claim: Claim) -> Setting | None:
    """The baseline the card's paper improved on: its setting's attention kind, KV waste, precision, batch
    utilization and tensor parallelism (what `--baseline paper` lays over every workload); None where it states
    none of them."""
    setting = claim.claim.setting or Setting()
    keys = {k: v for k in PAPER_BASELINE_KEYS if (v := getattr(setting, k)) is not None}
    return Setting(**keys) if keys else None


def _overrides(claim: Claim, baseline: str) -> Setting | None:
    """What `--baseline paper` lays over every workload (None for the current stack); an error where the card
    states no baseline of its paper."""
    overrides = paper_baseline(claim) if baseline == "paper" else None
    if baseline == "paper" and overrides is None:
        raise UserError([Problem(claim.file, path="$.claim.setting", message=(
            "--baseline paper needs the card's setting to state the paper's baseline: one of "
            + ", ".join(PAPER_BASELINE_KEYS)))])
    return overrides


def sweep(card: Card | list[Card], source: workloads.Source = None, model: str | None = None,
          baseline: str = "current", catalog_file: str | Path | None = None) -> tuple[int, Iterator[Evaluation]]:
    """A sweep as a stream: every input read and checked now (errors before any output), then the cells
    priced ``LIMITS.sweep_chunk_cells`` at a time, each chunk an Evaluation without analysis, so memory is the
    chunk's whatever the grid (up to ``LIMITS.sweep_cells``). Returns the number of cells and the chunks."""
    new_evaluation()
    opened = workloads.definitions(source, catalog.resolve(catalog_file))
    cat = opened.catalog
    claim = load_claim(card, cat)
    cat = cat.merged({}, claim.models)
    grid = workloads.load(opened, cat, model=model, baseline=_overrides(claim, baseline), sweep=True)
    n, step = matrix.size(grid), LIMITS.sweep_chunk_cells
    work = serving.run_budget()                # one serving budget for the whole sweep, not one a chunk

    def chunks() -> Iterator[Evaluation]:
        for start in range(0, n, step):        # each chunk a matrix of its own cells, shares over the whole
            yield evaluate(claim, matrix.build(grid, start, min(start + step, n)), analyse=False,
                           resolved=grid.catalog, work=work)
    return n, chunks()


def _profile_tp(m: matrix.Matrix, claim_tp: np.ndarray) -> list[Notice]:
    """A workload priced with an engine profile's chip entry at a tensor-parallel degree its rows did not run at
    (the workload's own, or the claim's system's: ``claim_tp`` per cell, as priced): the entry still prices it
    (its per-sequence and per-request costs are the host's), and the memo says so. Not where every cell of it
    lies outside the entry's range (those take the default: profile-range)."""
    out = []
    first = np.full(len(m.blocks), -1)
    first[m.block_idx[::-1]] = np.arange(len(m.block_idx))[::-1]     # each block's first cell, in one pass
    for b, s in enumerate(m.blocks):
        if s.engine is None or first[b] < 0:
            continue
        engine = s.engine
        system = float(claim_tp[first[b]])
        degrees = [(float(s.tp), 0.0)] + ([(system, 1.0)] if system != s.tp else [])
        for h, hw in enumerate(m.hardware):
            r = engine.ranges.get(hw.key)
            if r is None or all(r.covers_tp(tp) for tp, _ in degrees):
                continue
            cells = (m.block_idx == b) & (m.hardware_idx == h)
            outside = m.outside_fit.get((b, h))
            if not cells.any() or (outside is not None and bool(outside[cells].all())):
                continue
            out += [Notice("profile-tp", (s.name,), engine.key, hw.key, numbers=(*r.tp, tp, claimed))
                    for tp, claimed in degrees if not r.covers_tp(tp)]
    return out


def _first_distinct(rows: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` distinct rows, in order, from the shortest prefix that holds them: a million cells
    beyond a window are a few thousand rows to sort, not a million formatted strings."""
    n = 4096
    while True:
        head = rows[:n]
        _, first = np.unique(head, axis=0, return_index=True)
        if first.size >= k or n >= len(rows):
            return head[np.sort(first)[:k]]
        n *= 8


def held(cells: int, copies: int, stacked: bool) -> None:
    """Refuse a command that would hold ``copies`` evaluations of ``cells`` cells at once beyond LIMITS.cells (a
    compare holds each card's, a stack each stacked card's beside its own): the limit bounds what is held."""
    if copies > 1 and cells * copies > LIMITS.cells:
        raise UserError([Problem("triage", path="", message=(
            f"{copies:,} {'evaluations (the stack, and each of its cards alone)' if stacked else 'cards compared'} "
            f"of {cells:,} cells = {cells * copies:,} held at once; one command holds at most {LIMITS.cells:,} "
            f"(limit cells): fewer cards or a smaller matrix (`triage sweep` streams one card)"))])


def _check_physical(g: evidence.Gaps) -> None:
    """Inputs are bounded, so every time, byte and FLOP count is finite and >= 0; anything else is a bug in
    triage (exit 3), never a 'nan' or 'inf' printed in a memo."""
    for side in (g.base, g.claim):
        for name, a in (("time", side.time_theoretical), ("time", side.time_implementation),
                        ("time", side.time_end_to_end), ("bytes", side.cost.total_bytes),
                        ("FLOPs", side.cost.total_flops), ("memory", side.memory_bytes)):
            if not (np.isfinite(a).all() and (a >= 0).all()):
                raise RuntimeError(f"internal inconsistency: a non-finite or negative {name} was computed")


def evaluate(card: Card | list[Card], source: Source = None, model: str | None = None,
             analyse: bool = True, baseline: str = "current", catalog_file: str | Path | None = None, *,
             resolved: catalog.Catalog | None = None, work: serving.Budget | None = None,
             progress: Progress = SILENT) -> Evaluation:
    """Evaluate a claim card (or a list of cards, stacked) over a workload matrix (default: the shipped one).

    ``card`` and ``source`` are paths or already-parsed dicts; ``model`` (a catalog name or a config.json
    path) replaces every workload's model; ``analyse=False`` skips crossover, SLO and sensitivity (a sweep
    needs none); ``baseline="paper"`` prices against the stack the card's paper improved on (its setting's
    baseline keys over every workload) and reports the gain on today's stack beside it; ``catalog_file`` is a
    user catalog (default: the file $TRIAGE_CATALOG names, if set). Bad input raises
    triage.UserError listing every problem. A sweep's chunks pass the catalog it resolved (``resolved``: the
    workload file's own models included) and the run's serving budget (``work``), shared by every chunk.
    ``progress`` is told each stage as it begins (loading, pricing, simulating, analysing) and the serving
    simulations' token-steps as they are spent.
    """
    new_evaluation()
    progress.stage("loading")
    # names resolve in one catalog: shipped, the user's (--catalog, $TRIAGE_CATALOG), the workload file's own
    cat = resolved if resolved is not None else catalog.resolve(catalog_file)
    opened: workloads.Opened | matrix.Matrix = source if isinstance(source, matrix.Matrix) else \
        workloads.definitions(source, cat)                          # load: the workload file, validated once
    if isinstance(opened, workloads.Opened):
        cat = opened.catalog
    claim = load_claim(card, cat)                                   # the card
    cat = cat.merged({}, claim.models)
    overrides = _overrides(claim, baseline)
    m, resolved = load_matrix(opened, cat, model, overrides)        # build
    # the same file on today's stack (--baseline paper prices the paper's beside it: read now, its matrix built
    # when it is priced, after the evaluation's own), and the paper's setting
    now = (opened if isinstance(opened, matrix.Matrix) else workloads.load(opened, cat, model=model)) \
        if overrides else None
    paper = papercheck.load(claim, cat)
    models = resolved.models
    held(len(m), 1 + len(claim.stacked), stacked=True)
    mechanisms.check_applies(claim.change, claim.file, m.models)
    progress.stage("pricing", len(m))
    g = evidence.compute(m, claim, models)                            # price
    _check_physical(g)
    work = work or serving.run_budget(progress)                     # simulated token-steps, run-wide
    served, g = serving.price(m, claim, g, work=work, progress=progress)   # a workload's traffic: the queue
    shipped = incumbent.price(m, claim, g, models)                  # what engines already ship in its place
    inc_s = shipped.request_s if shipped is not None else None
    v = verdicts.decide(m, claim, g, incumbent_request_s=inc_s)     # judge
    d = decision.decide(m, claim, g, v, shipped.name if shipped else None, inc_s)
    parts = tuple((c, evidence.compute(m, c, models)) for c in claim.stacked)
    current = None
    if now is not None:                                             # the same claim on today's stack, beside it
        m_now, cat_now = load_matrix(now, cat, model)
        g_now = evidence.compute(m_now, claim, cat_now.models)
        current = decision.decide(m_now, claim, g_now, verdicts.decide(m_now, claim, g_now)).weighted_end_to_end
    ranges = {}
    if any(k.endswith("_se") for b in m.blocks for h in m.hardware for k in b.engine_values(h.key)):
        sides = (evidence.compute(m, claim, models, shift=-1.0), evidence.compute(m, claim, models, shift=1.0))
        for layer in ("implementation", "end_to_end"):
            a, b = (getattr(x, f"speedup_{layer}") for x in sides)
            ranges[layer] = (np.fmin(a, b), np.fmax(a, b))
    check = papercheck.check(claim, paper)
    found = cannot_act.warnings(claim.change, m.hardware, [(b.name, b.phase) for b in m.blocks],
                           [b.domain for b in m.blocks])
    found += cannot_act.no_effect(claim.change, m.blocks, m.block_idx, m.context,
                             (g.speedup_theoretical, g.speedup_implementation, g.speedup_end_to_end,
                              g.claim.cost.total_bytes / g.base.cost.total_bytes,
                              g.claim.cost.total_flops / np.maximum(g.base.cost.total_flops, 1.0)))
    found += [w for w in check.warnings if w not in found]
    window = np.flatnonzero(verdicts.beyond_window(m))
    if window.size:
        # a grid's phases are blocks of one name: distinct by the name the notice prints, not the block
        block_names, name_idx = np.unique([b.name for b in m.blocks], return_inverse=True)
        keys = np.stack([name_idx[m.block_idx[window]], m.model_idx[window], m.context[window]]).T
        found.append(Notice("beyond-window", cells=tuple(
            (str(block_names[int(b)]), m.models[int(mi)].label, int(c), int(m.models[int(mi)].window))
            for b, mi, c in _first_distinct(keys, 6))))
    for (b, h), mask in m.outside_fit.items():
        block, chip = m.blocks[b], m.hardware[h].key
        engine = block.engine
        if engine is not None:                  # outside_fit names only blocks with a profile
            r = engine.ranges[chip]
            found.append(Notice("profile-range", (block.name,), engine.key, chip, r.phases,
                                (*r.batch, *r.context, float(mask.sum())), r.weights))
    found += _profile_tp(m, np.broadcast_to(g.claim.inputs.tp, m.batch.shape))
    found += cannot_act.unsimulated(claim.change, [m.blocks[b].name for b, _, _ in served or ()])
    if analyse:
        progress.stage("analysing")
    analysis = where_it_pays.analyse(claim, m, models, served, work, g, shipped, (v, d)) if analyse else None
    return Evaluation(claim, m, g, v, d, check, models, parts, analysis, baseline=overrides,
                      current_fleet_gain=current, warnings=tuple(found), ranges=ranges, serving=served,
                      incumbent=shipped)
