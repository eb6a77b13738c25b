"""The rows `triage calibrate` fits, as read: whatever `triage run --measured` reads (inputs/measurements.py: a
CSV, a JSON object or list, a `vllm bench serve --save-result` result, a folder of them), each row stating a
step's configuration (model, hardware, context, batch, …) and its measured time; refused, addressed, where a
row lacks what a step-time fit needs.

A vLLM result becomes the steps it timed. It names its model by the server's name (model_id), which stands for
the catalog model whose entry cites that Hugging Face repository's config.json (Model.hf_repo) unless the
run's ``--metadata model=`` names one, and never its chip or tensor parallelism, so ``hardware`` comes from the
run's ``--metadata`` (with ``weights``, ``kv``, ``tp`` … as a calibration CSV states them) or is refused. Its batch
is ``--metadata batch=N``, else its ``max_concurrency`` (a client at concurrency N keeps N requests in
flight: the engine's decode batch once the first N have started). Its prompt is ``--metadata context=N``,
else total_input_tokens / completed, and its output total_output_tokens / completed (or ``--metadata
output_tokens=N``). It gives a decode row, its median TPOT at the mean context of the generated tokens
(prompt + output / 2, as a generation row is priced), and at batch 1 a prefill row, its median TTFT at the
prompt; at a higher concurrency a TTFT includes the wait behind other requests' steps, a scheduling figure
and not a prefill (bench/fidelity.py leaves such rows out of the corpus for the same reason).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..defaults import LIMITS
from ..errors import NEAR, Problem, UserError, escape
from ..records import record
from . import measurements, units
from .change import Change, parse
from .measurements import Record

REQUIRED = ("model", "hardware", "context")
# a measured time: a column whose name gives the unit (seconds), or a quantity with its unit
TIMES = ("tpot_s", "ttft_s", "e2e_s", "tpot", "ttft")
# what a vLLM result's --metadata may state of the configuration, under the calibration columns' names
VLLM_COLUMNS = ("model", "hardware", "weights", "group_size", "scale_bits", "zero_bits", "keep_16bit", "kv",
                "compute", "attention", "tp", "pipeline", "engine", "source")
_CATALOG = {"model": "models", "hardware": "hardware"}


def _text(rec: Record, key: str, value: Any) -> str:
    """A JSON value as a CSV cell gives it: text ('true'/'false' for a boolean); a list or an object is refused."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    kind = "list" if isinstance(value, list) else "mapping"
    raise UserError([Problem(rec.file, rec.line, 1, f"$.{key}", f"expected a number or a name, got a {kind}")])


def _number(rec: Record, key: str, value: Any, hint: str) -> float:
    """A vLLM result's count (finite, >= 0), or UserError naming the field and ending with ``hint``."""
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise UserError([Problem(rec.file, rec.line, 1, f"$.{key}", (
            f"expected a finite number >= 0, got {escape(str(value), 20)!r}; {hint}"))])
    return number


def _per_request(rec: Record, total: str, metadata: str) -> float:
    """A vLLM result's tokens a request: ``metadata`` where the run states it, else ``total`` / completed."""
    f = rec.fields
    hint = f"--metadata {metadata}=N to `vllm bench serve` states the tokens a request"
    if f.get(metadata) not in (None, ""):
        return _number(rec, metadata, f[metadata], hint)
    if f.get(total) is None or f.get("completed") is None:
        raise UserError([Problem(rec.file, rec.line, 1, f"$.{total}", (
            f"a vLLM result without {total} and completed states no tokens a request: add --metadata "
            f"{metadata}=N to `vllm bench serve`"))])
    completed = _number(rec, "completed", f["completed"], hint)
    if completed < 1:
        raise UserError([Problem(rec.file, rec.line, 1, "$.completed", f"no request completed; {hint}")])
    return _number(rec, total, f[total], hint) / completed


def _is_one(text: str) -> bool:
    try:
        return float(text) == 1.0
    except ValueError:
        return False            # price() refuses it, addressed


def _vllm_rows(rec: Record) -> list[Record]:
    """A `vllm bench serve` result as the steps it timed (the module docstring): a decode row, and at batch 1 a
    prefill row."""
    f = rec.fields
    row = {k: _text(rec, k, f[k]) for k in VLLM_COLUMNS if f.get(k) not in (None, "")}
    if "model" not in row and isinstance(f.get("model_id"), str) and f["model_id"]:
        row["model"] = f["model_id"]            # the server's name: the catalog entry citing that repository
    missing = [k for k in ("model", "hardware") if k not in row]
    if missing:
        server = f" (its model_id {escape(str(f['model_id']), 60)!r} is the server's name)" if (
            "model" in missing and isinstance(f.get("model_id"), str)) else ""
        keys = ", ".join(f'"{k}": "NAME"' for k in missing)
        raise UserError([Problem(rec.file, rec.line, 1, f"$.{missing[0]}", (
            f"a vLLM result names no catalog {' or '.join(missing)}{server}: rerun `vllm bench serve` with "
            f"--metadata {' '.join(f'{k}=NAME' for k in missing)}, or add {keys} to the file "
            f"({', '.join(f'`triage catalog {_CATALOG[k]}`' for k in missing)} lists the names)"))])
    batch = f.get("batch") if f.get("batch") not in (None, "") else f.get("max_concurrency")
    if batch is None:
        raise UserError([Problem(rec.file, rec.line, 1, "$.max_concurrency", (
            "a vLLM result without max_concurrency sent every request at once and states no batch: rerun "
            "`vllm bench serve` with --max-concurrency N, or add --metadata batch=N"))])
    row["batch"] = _text(rec, "batch", batch)
    row.setdefault("engine", _text(rec, "backend", f.get("backend") or ""))
    row.setdefault("source", Path(rec.file).name)
    prompt = _per_request(rec, "total_input_tokens", "context")
    output = _per_request(rec, "total_output_tokens", "output_tokens")
    rows = [Record(rec.file, rec.line, {**row, "phase": "decode", "context": str(round(prompt + output / 2)),
                                        "tpot": measurements.vllm_time(f, "tpot")})]
    ttft = measurements.vllm_time(f, "ttft")
    if ttft is not None and _is_one(row["batch"]):
        rows.append(Record(rec.file, rec.line, {**row, "phase": "prefill", "context": str(round(prompt)),
                                                "ttft": ttft}))
    return rows


def read(path: Path | str) -> tuple[list[Record], list[str]]:
    """The calibration rows of a file or folder (at most LIMITS.calibration_rows), each with the fields a row
    needs (REQUIRED and a time); values as text, as a CSV gives them. Beside them, the files left out: vLLM
    results of another build than the baseline (``--metadata variant=claim``, as the verification plan runs
    them), which time the method, not the stack a profile describes."""
    rows: list[Record] = []
    left_out: list[str] = []
    for rec in measurements.read(path):
        if rec.vllm and str(rec.fields.get("variant") or "baseline") != "baseline":
            left_out.append(rec.file)
            continue
        rows += _vllm_rows(rec) if rec.vllm else [
            Record(rec.file, rec.line, {k: _text(rec, k, v) for k, v in rec.fields.items() if v is not None})]
    if not rows:
        raise UserError([Problem(str(path), path="", message="no measurement rows" + (
            f" of the baseline ({len(left_out):,} vLLM results of another variant left out)" if left_out else ""))])
    if len(rows) > LIMITS.calibration_rows:
        raise UserError([Problem(str(path), path="", message=(
            f"{len(rows):,} rows; a calibration takes at most {LIMITS.calibration_rows:,} (limit calibration_rows)"))])
    for r in rows:
        missing = [k for k in REQUIRED if not r.fields.get(k)]
        if missing or not (r.fields.get("tokens_per_s") or any(r.fields.get(k) for k in TIMES)):
            raise UserError([Problem(r.file, r.line, 1, f"$.{missing[0] if missing else 'tokens_per_s'}",
                                     "row needs " + (repr(missing[0]) if missing else
                                                     "'tokens_per_s or a time (tpot_s, ttft_s, e2e_s in seconds; "
                                                     "tpot, ttft with a unit)'"))])
    return rows, left_out


WEIGHTS = ("bf16", "fp16", "fp8", "int8", "int4")
KV = WEIGHTS                                           # the same storage formats
COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "int8")      # the GEMMs' dtype (W8A8 FP8 or INT8 runs at its peak)
PHASES = ("decode", "prefill", "generation")
# what each phase's time is: a decode step's TPOT, a prefill's TTFT, a whole request's end-to-end time
PHASE_TIMES = {"decode": ("tokens_per_s", "tpot_s", "tpot"), "prefill": ("tokens_per_s", "ttft_s", "ttft"),
               "generation": ("tokens_per_s", "e2e_s")}


@record
class StepRow:
    """One calibration row, typed: the configuration of the step (or request) it timed, and the measured seconds
    (of one step, or of the whole request for a generation row)."""

    file: str
    line: int
    model: str
    hardware: str
    phase: str
    context: int
    batch: int
    tp: int
    pipeline: int                 # layer split: stages in sequence (llama.cpp, ExLlamaV2)
    weights: str
    kv: str
    compute: str
    attention: str
    output_tokens: int
    change: Change                # its weight format as a change to 16-bit weights (int8/int4: weight_quant)
    measured_s: float
    engine: str | None = None
    source: str | None = None


def _field(raw: Mapping[str, Any], key: str, file: str, line: int, default: Any = None, kind: type = int,
           minimum: float = 0.0, strict: bool = True) -> Any:
    """A numeric column of a row (> minimum, or >= it when not ``strict``; whole for ints), or UserError
    naming it; values are never echoed at length."""
    value = raw.get(key)
    if value in (None, ""):
        return default
    shown = escape(str(value), 20)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a number, got {shown!r}")]) from None
    low = number <= minimum if strict else number < minimum
    if not math.isfinite(number) or low or number > 1e18:
        bound = f"{'>' if strict else '>='} {minimum:g}"
        raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a finite number {bound}, got {shown!r}")])
    if kind is int:
        if number != int(number):
            raise UserError([Problem(file, line, 1, f"$.{key}", f"expected a whole number, got {shown!r}")])
        return int(number)
    return number


def _choice(raw: Mapping[str, Any], key: str, file: str, line: int, default: str, allowed: tuple[str, ...],
            words: str) -> str:
    value = raw.get(key) or default
    if value not in allowed:
        raise UserError([Problem(file, line, 1, f"$.{key}", f"expected {words}, got {value!r}")])
    return str(value)


def step_row(rec: Record, catalog: Any, repos: Mapping[str, str] | None = None) -> StepRow:
    """A row as read -> StepRow, or UserError addressed to the column at fault. A server's name (a vLLM result's
    model_id) stands for the catalog entry citing that repository (``repos``: repository -> catalog key)."""
    raw, file, line = rec.fields, rec.file, rec.line
    batch = _field(raw, "batch", file, line, 1)
    context = _field(raw, "context", file, line)
    tp = _field(raw, "tp", file, line, 1)
    pipeline = _field(raw, "pipeline", file, line, 1)
    weights = _choice(raw, "weights", file, line, "bf16", WEIGHTS, ", ".join(WEIGHTS))
    kv = _choice(raw, "kv", file, line, "bf16", KV, ", ".join(KV))
    compute = _choice(raw, "compute", file, line, "bf16", COMPUTE_DTYPES, ", ".join(COMPUTE_DTYPES))
    attention = _choice(raw, "attention", file, line, "fused", ("eager", "fused", "split"), "eager, fused or split")
    phase = _choice(raw, "phase", file, line, "decode", PHASES, "decode, prefill or generation")
    names = {"model": raw["model"], "hardware": raw["hardware"]}
    if repos and names["model"] not in catalog.models and names["model"] in repos:
        names["model"] = repos[names["model"]]
    for key in ("model", "hardware"):
        table = catalog.models if key == "model" else catalog.hardware
        if names[key] not in table:
            raise UserError([Problem(file, line, 1, f"$.{key}", (
                f"unknown {key} {escape(names[key], 40)!r}{NEAR}; define it in a catalog file and pass --catalog "
                f"(or $TRIAGE_CATALOG)"), near=(names[key], table))])
    change = parse({"weight_bytes": 1.0})
    if weights in ("int8", "int4"):
        change = parse({"weight_quant": {"bits": 8 if weights == "int8" else 4,
                                         "group_size": _field(raw, "group_size", file, line, 1_000_000),
                                         "scale_bits": _field(raw, "scale_bits", file, line, 16, strict=False),
                                         "zero_bits": _field(raw, "zero_bits", file, line, 0, strict=False),
                                         "keep_16bit": str(raw.get("keep_16bit", "true")).lower() == "true"}})
    output = _field(raw, "output_tokens", file, line, 0, strict=False)
    if phase == "generation" and not output:
        raise UserError([Problem(file, line, 1, "$.output_tokens", "a generation row needs output_tokens")])
    return StepRow(file, line, names["model"], names["hardware"], phase, context, batch, tp, pipeline, weights, kv,
                   compute, attention, output, change, _measured(raw, file, line, batch, context, output, phase),
                   str(raw["engine"]) if raw.get("engine") not in (None, "") else None,
                   str(raw["source"]) if raw.get("source") not in (None, "") else None)


def _measured(raw: Mapping[str, Any], file: str, line: int, batch: int, context: int, output: int,
              phase: str) -> float:
    """The row's measured seconds: of one step (decode, prefill) or of the whole request (generation)."""
    given = [k for k in ("tokens_per_s", *TIMES) if raw.get(k)]
    if len(given) > 1:
        raise UserError([Problem(file, line, 1, f"$.{given[1]}",
                                 f"give one measurement a row, not {' and '.join(given)}")])
    allowed = PHASE_TIMES[phase]
    if given[0] not in allowed:
        raise UserError([Problem(file, line, 1, f"$.{given[0]}", (
            f"a {phase} row is measured by {' or '.join(allowed)}, not {given[0]}"))])
    if raw.get("tokens_per_s"):
        rate = _field(raw, "tokens_per_s", file, line, kind=float)
        tokens = {"decode": batch, "prefill": batch * context, "generation": batch * output}[phase]
        measured, key = float(tokens) / rate, "tokens_per_s"
    else:
        key = next(k for k in TIMES if raw.get(k))
        try:
            measured = units.column_time(raw[key], key)
        except units.UnitError as exc:
            raise UserError([Problem(file, line, 1, f"$.{key}", str(exc))]) from None
    if not (math.isfinite(measured) and 1e-9 <= measured <= 3600.0):
        raise UserError([Problem(file, line, 1, f"$.{key}", "the row's time is not between 1 ns and an hour")])
    return measured
