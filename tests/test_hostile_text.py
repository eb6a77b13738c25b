"""Hostile text and hostile places for `triage new`: the figures' layout and the card scaffold's writer.

A megabyte title or a 200 kB workload name is cut to LIMITS.name_chars before the figures lay it out, and the
wrapping is linear in the text (it was cubic: an 8,000-character title took 85 s). `triage new` writes through
the guard and the atomic writer of `run -o`: no card under /dev/shm, no empty card left by a full disk to block
the rerun, never an existing card replaced.
"""

import contextlib
import errno
import io
import os
import uuid
import xml.etree.ElementTree as ET

import pytest

from triage.defaults import LIMITS
from triage.report.figures import Canvas

from conftest import CLAIMS, HANG_S, deadline, run

KV2X = (CLAIMS / "kv2x.yaml").read_text()


def assert_refused_in_one_line(res, name):
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"error: {name}"), res.stderr


def assert_figure_text_is_cut(folder):
    """Every SVG beside the memo parses, and none holds a text longer than the limit (and a '…')."""
    svgs = sorted(folder.glob("*.svg"))
    assert svgs
    for svg in svgs:
        root = ET.parse(svg).getroot()
        texts = [t for el in root.iter() for t in (el.text, el.tail) if t]
        assert max(map(len, texts)) <= LIMITS.name_chars + 2, svg.name


# ---- text layout -------------------------------------------------------------------------------------

def test_a_million_character_title_is_cut_before_the_figures_lay_it_out(tmp_path):
    card = tmp_path / "card.yaml"
    card.write_text(KV2X.replace("title: 2x KV-cache compression", "title: " + "a" * 1_000_000, 1))
    assert card.stat().st_size < LIMITS.file_bytes             # read, not refused for its size
    (tmp_path / "out").mkdir()
    res = run("run", card, "-o", tmp_path / "out" / "memo.md")
    if res.exit_code == 1:                                     # a limit on titles: refused, in one line
        assert_refused_in_one_line(res, card)
    else:
        assert_figure_text_is_cut(tmp_path / "out")


def test_a_200k_character_workload_name_is_cut_before_the_figures_lay_it_out(tmp_path):
    workloads = tmp_path / "w.yaml"
    workloads.write_text("workloads:\n  - {name: " + "w" * 200_000 + ", phase: decode, context: 4096, batch: 1}\n")
    (tmp_path / "out").mkdir()
    res = run("run", CLAIMS / "kv2x.yaml", "-w", workloads, "-o", tmp_path / "out" / "memo.md")
    if res.exit_code == 1:                                     # a limit on names: refused, in one line
        assert_refused_in_one_line(res, workloads)
    else:
        assert_figure_text_is_cut(tmp_path / "out")


@pytest.mark.parametrize("text", ["a" * 1_000_000, "ab " * 333_333, "a-" * 500_000, "漢" * 1_000_000],
                         ids=["one-word", "short-words", "hyphens", "wide"])
def test_wrapping_a_megabyte_is_linear(text):
    canvas = Canvas("t", "x", "y")
    with deadline(HANG_S):                  # a quadratic wrap of a megabyte would not end: caught as a hang
        lines = canvas._wrap(text, 13.0, 704.0, most=2)
    assert len(lines) == 2 and lines[1].endswith(" …") and canvas.measure(lines[0], 13.0) <= 704.0


# ---- triage new: the guard and the atomic writer of run -o ---------------------------------------------

@pytest.fixture
def shm():
    """A name under /dev/shm that nothing uses, removed afterwards whatever the test left there."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    base = f"/dev/shm/triage-test-{uuid.uuid4().hex}"
    yield base
    for path in (f"{base}.yaml", f"{base}/card.yaml"):
        with contextlib.suppress(OSError):
            os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(base)


@pytest.mark.parametrize("nested", [False, True], ids=["file", "in-a-new-folder"])
def test_new_refuses_dev_shm_and_creates_nothing(shm, nested):
    target = f"{shm}/card.yaml" if nested else f"{shm}.yaml"
    res = run("new", "-d", "cache", "--id", "x", "-o", target)
    assert_refused_in_one_line(res, target)
    assert res.stderr == f"error: {target}: is a system path; triage writes only regular files\n"
    assert not os.path.lexists(target) and not os.path.lexists(shm)


class FullDiskFile:
    """A file opened for writing on a full disk: it is created, and every write fails with ENOSPC."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self):
        self.fh.close()


def test_new_on_a_full_disk_leaves_nothing_and_the_rerun_succeeds(tmp_path, monkeypatch):
    real_open = io.open                  # under Path.open and os.fdopen alike

    def full_disk_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        return FullDiskFile(fh) if set(mode) & set("wxa+") else fh

    monkeypatch.setattr(io, "open", full_disk_open)
    target = tmp_path / "x.yaml"
    res = run("new", "-d", "cache", "--id", "x", "-o", target)
    assert_refused_in_one_line(res, target)
    assert res.stderr == f"error: {target}: cannot write: {os.strerror(errno.ENOSPC)}\n"
    assert list(tmp_path.iterdir()) == []                      # no card, no temporary file beside it
    monkeypatch.undo()                                         # the disk is freed
    assert run("new", "-d", "cache", "--id", "x", "-o", target).exit_code == 0
    assert "\nid: x\n" in target.read_text()


@pytest.mark.parametrize("whose", ["triage new", "the user"])
def test_new_never_overwrites_an_existing_card(tmp_path, whose):
    target = tmp_path / "x.yaml"
    if whose == "triage new":                                  # recorded as written by triage: still refused
        assert run("new", "-d", "cache", "--id", "x", "-o", target).exit_code == 0
    else:
        target.write_text("my notes\n")
    before = target.read_text()
    res = run("new", "-d", "weights", "--id", "x", "-o", target)
    assert res.stderr == f"error: {target}: exists: triage new never overwrites a card\n" and res.exit_code == 1
    assert target.read_text() == before
