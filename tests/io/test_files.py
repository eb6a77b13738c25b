"""Outputs are written together or not at all, never over a foreign file; inputs are read bounded."""

import pytest

from triage.errors import UserError
from triage.io.files import write_atomic_all
from triage.io.jsonio import load_json


def test_a_failing_output_leaves_no_output_and_no_temporary_file(tmp_path):
    def broken(fh):
        fh.write(b"half")
        raise OSError("disk full")

    with pytest.raises(UserError, match="memo.md: cannot write: disk full"):
        write_atomic_all([(tmp_path / "memo.roofline.svg", "<svg/>"), (tmp_path / "memo.md", broken)])
    assert list(tmp_path.iterdir()) == []


def test_a_foreign_file_among_the_outputs_stops_all_of_them(tmp_path):
    (tmp_path / "memo.md").write_text("my notes\n")
    with pytest.raises(UserError, match="exists and was not written by triage"):
        write_atomic_all([(tmp_path / "memo.roofline.svg", "<svg/>"), (tmp_path / "memo.md", "<!-- triage x")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memo.md"]
    assert (tmp_path / "memo.md").read_text() == "my notes\n"


def test_json_nesting_is_bounded():
    fifty = load_json("[" * 50 + "]" * 50, "ok.json")
    for _ in range(49):
        fifty = fifty[0]
    assert fifty == []
    with pytest.raises(UserError, match="nesting deeper than 50 levels"):
        load_json("[" * 51 + "]" * 51, "deep.json")


def test_the_python_api_reads_afresh_for_every_evaluation(tmp_path):
    # a notebook that evaluates thousands of cards must not run into one run's file limit
    import triage
    from triage.defaults import LIMITS
    from triage.io import run

    for i in range(3):
        (tmp_path / f"w{i}.yaml").write_text("workloads: [{name: w, context: 4096}]\n")
    run.current().reads.files.update(f"/fake/{n}" for n in range(LIMITS.run_files))  # a long session's reads
    for i in range(3):
        triage.evaluate({"id": "t", "title": "t", "direction": "cache", "change": {"kv_bytes": 0.5}},
                        tmp_path / f"w{i}.yaml", analyse=False)
    assert len(run.current().reads.files) == 1


def test_an_output_into_missing_folders_makes_them_and_a_failed_write_removes_them(tmp_path):
    """`-o out/memos/kv2x.md` into folders that do not exist yet was an error; now they are made, and a write
    that fails leaves neither the file nor the folders it made."""
    target = tmp_path / "out" / "memos" / "kv2x.md"
    write_atomic_all([(target, "memo\n")])
    assert target.read_text() == "memo\n"

    def broken(stream):
        raise OSError(28, "No space left on device")

    with pytest.raises(UserError, match="cannot write: No space left on device"):
        write_atomic_all([(tmp_path / "new" / "deeper" / "x.md", broken)])
    assert not (tmp_path / "new").exists()
