"""Progress on standard error (issue 47 item 7): -v names each stage; a bar only on a terminal, counted in
redraws (never timed); piped or redirected, every command prints byte for byte what it did without it."""

import dataclasses
import os
import re

import pytest
from click.testing import CliRunner

from triage.cli import main
from triage.cli import progress as bar_mod

from conftest import CLAIMS, ROOT

CALIBRATION = ROOT / "examples" / "measurements" / "gpt-fast-a100.csv"   # 11 rows, all on a100-80gb
# 2 phases x 2 contexts x 5 batches = 20 cells; priced 7 at a time: chunks of 7, 7 and 6 (ceil(20 / 7) = 3)
GRID = ("grid: {model: [llama-2-7b], hardware: [a100-80gb], phase: [decode, prefill], context: [512, 2048], "
        "batch: [1, 2, 4, 8, 16]}\n")


@pytest.fixture
def grid(tmp_path, monkeypatch):
    from triage.analysis import pipeline

    monkeypatch.setattr(pipeline, "LIMITS", dataclasses.replace(pipeline.LIMITS, sweep_chunk_cells=7))
    path = tmp_path / "grid.yaml"
    path.write_text(GRID)
    return path


@pytest.fixture
def immediate(monkeypatch):
    """No delay before the bar and none between redraws: every report is one redraw, so the test counts them."""
    monkeypatch.setattr(bar_mod, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(bar_mod, "PROGRESS_REFRESH_S", 0.0)
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def terminal(monkeypatch, immediate):
    """CliRunner's standard error, taken for a terminal (the fake isatty)."""
    monkeypatch.setattr(bar_mod, "_terminal", lambda stream: True)


def _draws(stderr: str) -> list[str]:
    """The bar's redraws: each begins with a carriage return and the bar itself."""
    return [part for part in stderr.split("\r") if part.startswith("[")]


def _count(draw: str) -> str:
    """What a redraw counts: '[####----]  35%  7 of 20 cells, 0 s, about 1 s left  (pricing …)' -> '7 of 20 cells'."""
    return re.search(r"\d[\d,]* of (?:at most )?[\d,]+ [a-z-]+", draw).group()


def _sweep(grid, out, *flags):
    return CliRunner().invoke(main, [*flags, "sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-o", str(out)])


def test_a_sweep_on_a_terminal_draws_the_bar_once_a_chunk(grid, tmp_path, terminal):
    res = _sweep(grid, tmp_path / "cells.csv")
    assert res.exit_code == 0, res.output
    draws = _draws(res.stderr)
    assert [_count(d) for d in draws] == ["7 of 20 cells", "14 of 20 cells", "20 of 20 cells"]
    assert draws[-1].startswith("[########################] 100%")
    # erased before the last line, which prints as it always has
    assert res.stderr.endswith("\r" + " " * len(draws[-1].rstrip()) + f"\rwrote {tmp_path / 'cells.csv'} "
                               "(20 cells, csv)\n")
    assert res.stdout == ""


def test_piped_output_has_no_progress_and_is_unchanged(grid, tmp_path, immediate):
    """Not a terminal (CliRunner's streams are not): even with no delay, stderr is the one line a sweep has always
    printed, and the file is the one a terminal run writes."""
    piped = _sweep(grid, tmp_path / "piped.csv")
    assert piped.exit_code == 0, piped.output
    assert piped.stderr == f"wrote {tmp_path / 'piped.csv'} (20 cells, csv)\n"
    assert piped.stdout == ""
    stream = CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-o", "-"])
    assert stream.stderr == "" and "\r" not in stream.stdout
    assert stream.stdout.encode() == (tmp_path / "piped.csv").read_bytes()


def test_the_bar_never_reaches_standard_output(grid, tmp_path, terminal):
    res = _sweep(grid, tmp_path / "tty.csv")
    assert _draws(res.stderr) and res.stdout == ""
    assert CliRunner().invoke(main, ["sweep", str(CLAIMS / "kv2x.yaml"), "-w", str(grid), "-o", "-"]
                              ).stdout.encode() == (tmp_path / "tty.csv").read_bytes()


def test_a_short_stage_leaves_no_trace(grid, tmp_path, terminal, monkeypatch):
    """A stage shorter than the delay draws nothing, even on a terminal."""
    monkeypatch.setattr(bar_mod, "PROGRESS_DELAY_S", 1e9)
    res = _sweep(grid, tmp_path / "cells.csv")
    assert res.stderr == f"wrote {tmp_path / 'cells.csv'} (20 cells, csv)\n"


def test_quiet_draws_no_bar(grid, tmp_path, terminal):
    res = _sweep(grid, tmp_path / "cells.csv", "--quiet")
    assert res.exit_code == 0 and res.stderr == ""


def test_verbose_names_each_stage(grid, tmp_path):
    res = _sweep(grid, tmp_path / "cells.csv", "-v")
    assert res.stderr == ("loading the inputs\n"
                          "pricing and writing 20 cells, a chunk at a time\n"
                          f"wrote {tmp_path / 'cells.csv'} (20 cells, csv)\n")


def test_calibrate_counts_rows_then_chips(terminal):
    """11 rows priced one by one, then one chip fitted: 12 redraws; the report on stdout is the piped one."""
    res = CliRunner().invoke(main, ["calibrate", str(CALIBRATION)])
    assert res.exit_code == 0, res.output
    assert [_count(d) for d in _draws(res.stderr)] == [f"{k} of 11 rows" for k in range(1, 12)] + ["1 of 1 chips"]
    assert res.stdout == CliRunner().invoke(main, ["calibrate", str(CALIBRATION)]).stdout


def test_calibrate_verbose_stages(tmp_path):
    out = tmp_path / "calibrated.yaml"
    res = CliRunner().invoke(main, ["-v", "calibrate", str(CALIBRATION), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stderr == ("loading the inputs\npricing 11 measured rows\nfitting 1 chip\nrendering\nwriting\n"
                          f"wrote {out}\n")


def test_serving_simulations_report_their_token_steps(immediate, tmp_path, monkeypatch):
    """The bar the command line gives the pipeline: the stages of a run with traffic, and the serving budget's
    token-steps, the listed rates' and the rate searches' together, reported every limits / PROGRESS_REPORTS of
    them: (200,000,000 + 200,000,000) / 100,000 = 4,000 here."""
    import io

    from triage.analysis import pipeline
    from triage.serving import budget

    monkeypatch.setattr(budget, "PROGRESS_REPORTS", 100_000)
    monkeypatch.setattr(bar_mod, "DEFAULT_COLUMNS", 200)     # a StringIO has no width: room for the whole line
    workloads = tmp_path / "svc.yaml"
    workloads.write_text("defaults: {model: llama-2-7b, hardware: a100-80gb}\n"
                         "workloads:\n- {name: svc, context: 1024, batch: 1, slo: {ttft: 2 s, tpot: 100 ms},\n"
                         "   traffic: {rates: [1, 4], prompt_tokens: 512, output_tokens: 64, requests: 100}}\n")
    stream = io.StringIO()
    bar = bar_mod.Bar(stream, verbose=True, draw=True)
    pipeline.evaluate(CLAIMS / "kv2x.yaml", workloads, progress=bar)
    bar.erase()
    text = stream.getvalue()
    stages = [line.rsplit("\r", 1)[-1] for line in text.split("\n")[:-1]]
    assert stages == ["loading the inputs", "pricing 1 cell",
                      "simulating 1 serving workload (per model and chip, baseline and claim)",
                      "analysing: crossover, throughput at the SLO, sensitivity"]
    draws = _draws(text)
    assert all("of at most 400,000,000 token-steps (limits serving_work and serving_search_work)" in d
               for d in draws), draws[:3]
    spent = [float(_count(d).split(" of ")[0].replace(",", "")) for d in draws]
    assert len(spent) >= 2 and all(b - a >= 4_000 for a, b in zip(spent, spent[1:], strict=False))


def test_a_terminal_is_told_from_a_pipe():
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    read, write = os.pipe()
    with os.fdopen(follower, "w") as tty, os.fdopen(write, "w") as pipe:
        assert bar_mod._terminal(tty) and not bar_mod._terminal(pipe)
    os.close(leader)
    os.close(read)
