"""data/serving/: every row in the corpus's format, with a known scenario and metric, and its number in its
quote (the number as the source prints it, or in milliseconds where the row says it converted)."""

import csv
import re
from pathlib import Path

import pytest

from triage.inputs.traffic import SCENARIOS

DATA = Path(__file__).resolve().parent.parent / "data" / "serving"
COLUMNS = ["source_url", "source_version", "where", "quote", "engine", "engine_version", "model", "hf_model",
           "hardware", "gpus", "tp", "pp", "replicas", "max_seqs", "max_batched_tokens", "scheduler_steps", "weights",
           "kv", "compute", "scenario", "clients", "requests", "prompt_tokens", "output_tokens", "lengths",
           "slo_ttft_s", "slo_tpot_s", "slo_at", "metric", "value", "notes"]
FILES = sorted(DATA.glob("*.csv"))


def _numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_serving_row_is_pinned_and_quotes_its_number(path):
    rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    assert rows and list(rows[0]) == COLUMNS
    for n, r in enumerate(rows, start=2):
        assert r["source_url"] and r["source_version"] and r["quote"], (path.name, n)
        assert r["scenario"] in SCENARIOS, (path.name, n)
        assert r["metric"] in ("tokens_per_s", "requests_per_s", "ttft_s", "tpot_s"), (path.name, n)
        value = float(r["value"])
        said = _numbers(r["quote"] + " " + r["where"])
        # seconds converted from milliseconds, requests/s from requests a minute, where the notes say so
        scale = 60.0 if r["metric"] == "requests_per_s" and "divided by 60" in r["notes"] else 1e3
        assert any(abs(x - value) <= 1e-6 * max(abs(value), 1) or abs(x - value * scale) <= 1e-3 * abs(value * scale)
                   for x in said), (path.name, n, r["value"])
