"""Every limit and analysis default of triage, in one place.

The workload defaults (precisions, efficiencies, SLO, gate, reserve…) are data:
``inputs/catalog/workloads.yaml``. What is here is what code needs before or
beside any input: how much it reads, how much it renders, the grids the
analyses sweep. The README's limits table is generated from ``LIMITS``; every
output that truncates says so, with the limit it hit.
"""

from __future__ import annotations

from dataclasses import field, fields

from .records import record


def _limit(value: int, why: str) -> int:
    return field(default=value, metadata={"why": why})


@record
class Limits:
    """What triage reads and renders at most; each figure with why."""

    file_bytes: int = _limit(1 << 20, "bytes of one input file (a card is a few kB, a config.json a few)")
    yaml_nodes: int = _limit(100_000, "YAML nodes after alias expansion (an alias bomb is measured, not expanded)")
    nesting: int = _limit(50, "levels of YAML or JSON nesting")
    measured_files: int = _limit(1_000, "files in a --measured folder (more is an error, not a silent cut)")
    run_files: int = _limit(2_000, "files one run may read (cards, stacks, workload files, configs, measurements)")
    run_bytes: int = _limit(64 << 20, "bytes one run may read, all files together")
    cells: int = _limit(2_000_000, "cells of one run, compare or evaluate (held whole; `triage sweep` streams more)")
    sweep_cells: int = _limit(200_000_000, (
        "cells of one `triage sweep`, priced and written sweep_chunk_cells at a time, so its memory is one "
        "chunk's; its time is linear, about 1.8 s a million cells to Parquet on a 2-core machine (bench/bench.py)"))
    sweep_chunk_cells: int = _limit(1 << 17, "cells a sweep prices and writes at once (0.29 GB peak for the whole "
                                             "command at this size, 0.49 GB at twice it: bench/bench.py)")
    flag_values: int = _limit(1_000, "values of one command-line axis (--context 1,2,…; a longer list belongs in a "
                                     "workload file's grid)")
    stacked_cards: int = _limit(16, "cards one stack may load, nested stacks included")
    calibration_rows: int = _limit(10_000, "rows of one calibration file")
    serving_requests: int = _limit(1_000_000, "requests of one serving simulation (a trace's rows, or rate × duration)")
    serving_work: int = _limit(200_000_000, (
        "token-steps one run may simulate (serving/budget.py: an output token 1, an iteration 100 plus 2 for each "
        "sequence it visits, a simulation 5,000 for its fixed cost) at the rates a traffic lists, both sides of "
        "every model and chip with traffic; "
        "charged as it is spent, so a run stops within about 30 s on a 2-core machine"))
    serving_search_work: int = _limit(200_000_000, (
        "token-steps one run's rate searches may simulate (the largest rate at the SLO, each side and each "
        "sensitivity variant, each probe at most SERVING_SEARCH_REQUESTS, 5,000, of the traffic's requests), "
        "charged apart from serving_work so a search never spends what the listed rates need"))
    problems_shown: int = _limit(20, "problems printed for one command (then 'and N more')")
    name_chars: int = _limit(120, "characters of a file name or a value quoted in an error (then '…')")
    memo_cells: int = _limit(200, "cells listed in a memo (the JSON and a sweep hold all of them)")
    figure_points: int = _limit(40, "cells plotted on the roofline")
    slo_cells: int = _limit(64, "cells of the throughput-at-SLO table")
    plan_cells: int = _limit(64, "cells the verification plan writes an A/B command for")

    def table(self) -> list[tuple[str, int, str]]:
        """(name, value, why) for every limit, in declaration order."""
        return [(f.name, getattr(self, f.name), f.metadata["why"]) for f in fields(self)]


LIMITS = Limits()

# Sensitivity variants priced at once (analysis/where_it_pays.py): numpy releases the GIL in its loops, so two
# threads halve the analysis of a million cells on a 2-core machine (bench/bench.py, line 1); each variant in
# flight holds one claim side of the matrix, so memory grows by one side per worker, not with the cores.
ANALYSIS_WORKERS = 2

# Cells `triage run -f json` builds and writes at once (report/memo.py write_json): a cell's objects are ~32 kB
# of heap, so a window is ~32 MB whatever the matrix (issue 46: all 250,000 cells built at once took 7.9 GB).
JSON_WINDOW_CELLS = 1024

# What one swept cell takes on disk, for the free-space check before `triage sweep` writes a file: a
# 20,000-cell sweep of claims/kv2x.yaml (two chips, 100 contexts, 100 batches) wrote 18,603,545 B of CSV and
# 4,093,056 B of Parquet (measured 2026-12-07): 930 and 205 B a cell.
SWEEP_BYTES_PER_CELL = {"csv": 930, "parquet": 205}

# The progress bar on standard error (cli/progress.py; only on a terminal): a stage's bar appears once the stage
# has run PROGRESS_DELAY_S (a shorter one leaves no trace), is redrawn at most every PROGRESS_REFRESH_S, and a
# run's serving budget reports its token-steps PROGRESS_REPORTS times over its limit (every 200,000 token-steps
# of serving_work, ~30 ms of simulation), so the charge of every iteration stays one comparison.
PROGRESS_DELAY_S = 1.0
PROGRESS_REFRESH_S = 0.1
PROGRESS_REPORTS = 1_000

# A workload at or above this context needs long-context quality evidence (needle-in-a-haystack).
LONG_CONTEXT_TOKENS = 32768

# The paper check: a reported gain more than this factor above the bound is flagged.
PAPER_TOLERANCE = 1.05
# The paper check's prediction in the paper's own setting under this share of the paper's measurement: a miss the
# memo must explain (issue 43's speedup-fidelity bar: no card beyond 50 % without a named cause), so it names the
# causes a measured gain above the memo's own pricing usually has.
PAPER_PREDICTED_BELOW = 0.5
PAPER_HARDWARE = "a100-80gb"                         # when the card names no hardware
PAPER_BATCHES = (1, 8, 64, 256)                      # searched when the card names no batch
PAPER_CONTEXTS = (1024, 4096, 32768, 131072, 1048576)  # searched when the card names no context

# Where a claim pays: the crossover grid (256 … 1M tokens in steps of 2 and 3·2^n) and batches.
CROSSOVER_CONTEXTS = tuple(sorted({2 ** n for n in range(8, 21)} | {3 * 2 ** (n - 1) for n in range(8, 20)}))
CROSSOVER_BATCHES = (1, 4, 16, 64)
SLO_BATCHES = tuple(2 ** n for n in range(12))      # 1 … 2048: throughput at the SLO

# The serving simulation: the request rates it considers (requests/s; the schema's bounds on `rate`), the
# fewest measured requests (after the warm-up) for a rate to be called served: with one, "completions keep up
# with arrivals" holds at any rate; nine is what the schema's fewest requests (10) keep under the default 10 %
# warm-up.
SERVING_RATE_MIN, SERVING_RATE_MAX = 1e-6, 1e6
SERVING_MIN_MEASURED = 9
# The rate search simulates at most this many requests a probe (a stream drawn the same way as the traffic's,
# shorter); the traffic's own rates run all of its requests. Assumption: at 5,000 requests (4,500 measured after
# the default warm-up) a P99 rests on 45 requests beyond it (TTFT) or on the gaps of 4,500 requests (TBT), and a
# search of 5,000 requests takes about a second on a 2-core machine where one of 100,000 took a minute
# (issue 44); a traffic of at most this many requests is searched on all of them, as before.
SERVING_SEARCH_REQUESTS = 5_000
# The memo's serving table and figure show, beside the traffic's rates, each side's largest rate at the SLO and
# one this factor above the larger (issue 47: kv2x's verdict rests on 1.03 → 1.16 requests/s while its table
# showed only 4 and 8, where both sides miss): a quarter above, past the search's 0.4 % bracket and its
# run-to-run steps, a presentation choice that no gain reads.
SERVING_AROUND_BEST = 1.25

# A workload more than this fraction slower with the claim is a regression; a SIMULATED workload (one with
# traffic) within it of 1.0x counts as no change. Assumption, from a measurement: the serving simulation's
# largest rate at the SLO reads a P99 over a few hundred requests, which moves in steps with which iterations
# carry a prefill. An attention kernel that makes no iteration slower (claims/flashattention-2.yaml with its
# compute efficiency at 1.01, 1.05, 1.2, 1.46 and 2.0 of the baseline's) leaves serve-conv's rate at the SLO at
# 1.000x or moves it to 0.989x, never between: the search lands on 2.828 or 2.798 requests/s as the P99 time
# between tokens crosses 100 ms (99.7 vs 100.8 ms at 2.83 requests/s); 2 % covers that step with margin.
REGRESSION_TOLERANCE = 0.02

# Quality gates by kind (model/quality.py). Accuracy-like figures (accuracy, pass@k, retrieval) gate the WORST
# task's retained fraction at the workload's quality_gate; perplexity gates its relative increase. Between the
# gate and the band a lossy format is CONDITIONAL (opt-in, as engines ship lossy formats); beyond the band NO-GO.
#   quality_gate 0.99 (the workload default): MLPerf Inference's closed-division LLM target, "99% of FP32 and
#     99.9% of FP32" for Llama2-70b (mlcommons/inference_policies inference_rules.adoc @ ac93e89, line 267).
#   ACCURACY_BAND 0.93: an assumption, anchored on what a vendor ships as an opt-in lossy format: its production
#     INT4 weight-only checkpoint RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (served by vLLM) "achieves
#     93.0% recovery for the Arena-Hard evaluation, 98.9% for OpenLLM v1 [...], 96.1% for OpenLLM v2, 99.7% for
#     HumanEval pass@1, and 97.4% for HumanEval+ pass@1" (its model card, README.md). One checkpoint, and its
#     worst reported evaluation, some of them suite averages, where the gate reads a card's worst single task:
#     a lower bound on what ships would need more checkpoints (issue 21's closing note). It replaces 0.97, an
#     assumption with no source. MLPerf's loosest LLM-pipeline target, "97% of FP32" for E2E-RAG
#     (inference_rules.adoc @ ac93e89 line 277), lies inside the band.
#   PERPLEXITY_GATE +1 %: llama.cpp's perplexity tables put the 8- and 6-bit formats under it and the 4-bit
#     k-quant over it (Llama 2 70B scorechart: "Q6_K | 52.70 | 3.4367 | 0.16%", "Q4_K_M | 38.54 | 3.4725 | 1.20%";
#     ggerganov/llama.cpp examples/perplexity/README.md @ 0a21ad6): +1 % is "as good as an 8-bit incumbent".
#   PERPLEXITY_BAND +5 %: the same tables' outer edge of usable 4-bit (Q4_K_M on Llama-3-70B, "Mean PPL ratio"
#     1.050877; Q3_K_M +4.72 %, Q3_K_S +7.89 %, Q2_K +8.82 % on Llama 2 70B). Both are readings of the tables,
#     not thresholds llama.cpp states.
ACCURACY_BAND = 0.93        # worst task retained at or above this (and below the gate): CONDITIONAL
PERPLEXITY_GATE = 0.01      # a perplexity increase up to +1 %: GO-able
PERPLEXITY_BAND = 0.05      # up to +5 %: CONDITIONAL; beyond: NO-GO
# A quality figure measured on a model this many times larger than the workload's understates the loss there
# (quantization error shrinks as models grow): a named condition.
FAR_MODEL_FACTOR = 4.0
# A dense-and-sparse format's outlier when the card gives no width: an fp16 value and a 32-bit index (CSR/CSC
# column index, KVQuant §3.5's layout; the index width is an assumption where a paper does not state it).
OUTLIER_BITS = 48

# Serving runs (one side at one rate) remembered for the run (io/run.py), so that a sensitivity variant
# re-simulates only the side it changes; each entry is a few kB of statistics.
SERVING_MEMO_RUNS = 512

# Where the baseline holds not one sequence on its GPUs and the claim does, the baseline is priced on this many
# times the GPUs (the fewest that fit, within one 8-GPU node): the claim's gain is then GPUs saved.
CAPACITY_TP = (2, 4, 8)

# What a card's optional fields mean when it leaves them out (schemas/claim.schema.json describes each):
# a kernel reads the new format (`implementation.kernel`, the card's claim as stated); it reaches the baseline
# kernel's efficiency (1.0: no loss until measured); the reported number is a decode step's time per token
# (`claim.metric`) of the whole step (`claim.scope`); long-context retrieval is untested until the card says so.
CARD_KERNEL = True
CARD_EFFICIENCY = 1.0
CARD_METRIC = "tpot"
CARD_SCOPE = "end-to-end"
CARD_LONG_CONTEXT_TESTED = False

# Assumptions where a card leaves a format's field out (state it to override; each key's schema fragment in
# inputs/mechanisms.yaml describes the field): a group's scale is 16 bits wide and it has no zero point
# (symmetric); an online rotation (hadamard) runs one transform a layer; a draft model runs one pass per step.
SCALE_BITS = 16
ZERO_BITS = 0
ROTATIONS_PER_LAYER = 1
DRAFT_PASSES = 1

# A traffic block's defaults (docs/serving.md): Poisson arrivals, 512-token prompts and 128-token outputs,
# 2,000 requests a rate of which the first 10 % warm the queue up, one seed, and SLO bounds read at the P99.
TRAFFIC_ARRIVALS = "poisson"
TRAFFIC_PROMPT_TOKENS = 512
TRAFFIC_OUTPUT_TOKENS = 128
TRAFFIC_REQUESTS = 2000
TRAFFIC_WARMUP = 0.1
TRAFFIC_SEED = 0
TRAFFIC_PERCENTILE = "p99"

# `triage calibrate` fits an efficiency only where its term binds for at least this share of some row's
# predicted time, at the fitted values or at the default (analysis/calibrate.py, held_efficiencies): the row's
# elasticity to it, its column of the least-squares design. Below it a 20 % change of the efficiency (0.50 to
# 0.60) moves no row's time by 2 %, under the spread a fit leaves (11.3 % on gpt-fast-a100.csv): the rows cannot
# choose its value, and the default stays.
CALIBRATION_SHARE = 0.1
