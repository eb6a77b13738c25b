"""Hostile input is normal input: every class of the hardening review as a test.

Each case is refused with exit 1 and one addressed line per problem (never exit 3, a traceback, nan, inf or
a negative size), overwrites nothing, leaves no partial output, and is decided within a time bound.
"""

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import triage
from triage.errors import UserError

from conftest import CLAIMS, ROOT, run

KV2X = (CLAIMS / "kv2x.yaml").read_text()
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


def card(tmp_path, text=KV2X, name="card.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---- data loss and system damage ---------------------------------------------------------------------

def test_dev_null_is_never_replaced_even_with_force(tmp_path):
    # first on a private copy (root): a regression must not get to destroy the real /dev/null
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        assert run("run", card(tmp_path), "-o", dev, "--force").exit_code == 1
        assert stat.S_ISCHR(os.lstat(dev).st_mode), "a device copy was replaced: not trying /dev/null"
    res = run("run", card(tmp_path), "-o", "/dev/null", "--force")
    assert res.exit_code == 1 and "system path" in res.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@ROOT_ONLY
def test_a_device_node_is_never_replaced_even_with_force(tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    res = run("run", card(tmp_path), "-o", dev, "--force")
    assert res.exit_code == 1 and "is a device" in res.stderr
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_symlink_to_a_process_stream_is_refused(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("/proc/self/fd/1")
    res = run("run", card(tmp_path), "-o", link, "--force")
    assert res.exit_code == 1 and os.path.islink(link)


@pytest.mark.parametrize("which", ["stacked", "model", "measured"])
def test_force_never_replaces_any_input(tmp_path, which):
    inner = card(tmp_path, name="inner.yaml")
    outer = card(tmp_path, "id: outer\ntitle: outer\ndirection: cache\nstack: [inner.yaml, other.yaml]\n", "outer.yaml")
    card(tmp_path, (CLAIMS / "int8-weights.yaml").read_text(), "other.yaml")
    config = tmp_path / "config.json"
    config.write_text((ROOT / "tests" / "configs" / "llama-3-8b.json").read_text())
    measured = tmp_path / "m.json"
    measured.write_text(json.dumps({"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb",
                                    "tpot": "8 ms"}))
    target, args = {"stacked": (inner, [outer]), "model": (config, [inner, "--model", config]),
                    "measured": (measured, [inner, "--measured", measured])}[which]
    before = target.read_bytes()
    res = run("run", *args, "-o", target, "--format", "json", "--force")
    assert res.exit_code == 1 and "onto an input file" in res.stderr
    assert target.read_bytes() == before


@pytest.mark.parametrize("head", ['{\n  "version": 1}\n', "<!-- triage decision memo -->\n",
                                  "# triage workload file\nworkloads: []\n"])
def test_a_foreign_file_that_looks_like_ours_is_not_overwritten(tmp_path, head):
    target = tmp_path / "out.md"
    target.write_text(head)
    res = run("run", card(tmp_path), "-o", target)
    assert res.exit_code == 1 and "not written by triage" in res.stderr
    assert target.read_text() == head


def test_a_refused_memo_leaves_no_figures(tmp_path):
    (tmp_path / "memo.md").write_text("my notes\n")
    assert run("run", card(tmp_path), "-o", tmp_path / "memo.md").exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.yaml", "memo.md"]


# ---- code from caches --------------------------------------------------------------------------------

def _fresh_run(tmp_path, cache):
    """`triage run` in a new process (the template environment is made once per process)."""
    proc = subprocess.run([sys.executable, "-m", "triage", "run", str(card(tmp_path))], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert "Traceback" not in proc.stderr
    return proc.returncode


def test_no_cache_folder_at_all_still_runs(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    assert _fresh_run(tmp_path, blocker) == 0


def test_a_full_disk_under_the_cache_does_not_stop_a_run_to_stdout(tmp_path):
    import resource

    def small_files():                      # every file write past 4 kB fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run([sys.executable, "-m", "triage", "run", str(card(tmp_path))], capture_output=True,
                          text=True, timeout=60, preexec_fn=small_files,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0 and proc.stdout.startswith("<!-- triage decision memo"), proc.stderr


# ---- unbounded reads, hangs and memory ---------------------------------------------------------------

def _fifo(tmp_path, name="pipe"):
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("where", ["card", "workloads", "measured", "calibrate", "stack", "model-config", "catalog",
                                   "draft-config"])
@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_devices_and_pipes_are_refused_at_once_as_any_input(tmp_path, where, kind):
    source = Path("/dev/zero") if kind == "dev-zero" else _fifo(tmp_path)
    link = tmp_path / ("link.json" if where in ("model-config", "draft-config") else "link.yaml")
    link.symlink_to(source)
    c = card(tmp_path)
    args = {"card": ["validate", link], "workloads": ["run", c, "-w", link], "measured": ["run", c, "--measured", link],
            "calibrate": ["calibrate", link],
            "stack": ["validate", card(tmp_path, f"id: s\ntitle: s\ndirection: cache\nstack: [{link}, {c}]\n",
                                       "s.yaml")],
            "model-config": ["run", c, "--model", link],
            "catalog": ["run", c, "--catalog", link],
            "draft-config": ["validate", card(tmp_path, "id: s\ntitle: s\ndirection: decoding\nchange: {speculative: "
                                                        f"{{tokens: 4, acceptance: 0.7, draft_model: {link}}}}}\n",
                                              "d.yaml")]}[where]
    res = run(*args)
    assert res.exit_code == 1
    assert ("is a device" if kind == "dev-zero" else "is a pipe") in res.stderr


def test_the_catalog_variable_is_held_to_the_same_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_CATALOG", str(_fifo(tmp_path)))
    res = run("run", card(tmp_path))
    assert res.exit_code == 1 and "is a pipe" in res.stderr


def test_a_fifo_as_the_output_is_refused_without_blocking(tmp_path):
    res = run("run", card(tmp_path), "-o", _fifo(tmp_path, "out.md"), "--force")
    assert res.exit_code == 1 and "is a pipe" in res.stderr


def test_a_ten_billion_cell_grid_is_refused_before_allocation(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\ngrid:\n"
                    f"  context: {list(range(1, 1001))}\n  batch: {list(range(1, 1001))}\n"
                    f"  phase: [decode, prefill]\n  model: [llama-2-7b, llama-2-13b, llama-3-8b, mistral-7b, "
                    f"qwen2.5-7b]\n  hardware: [a100-80gb, h100-sxm, a100-40gb, h200, l40s, rtx-4090, mi300x, b200, "
                    f"h100-pcie, a10]\n".replace("a10]", "a100-80gb]"))
    res = run("run", card(tmp_path), "-w", grid)
    assert res.exit_code == 1 and "limit cells" in res.stderr


def test_a_stack_that_doubles_at_every_level_is_refused_at_once(tmp_path):
    for level in range(40):
        nxt = f"c{level + 1}.yaml"
        card(tmp_path, f"id: c{level}\ntitle: c\ndirection: cache\nstack: [{nxt}, ./{nxt}]\n", f"c{level}.yaml")
    card(tmp_path, "id: c40\ntitle: c\ndirection: cache\nchange: {kv_bytes: 0.5}\n", "c40.yaml")
    res = run("validate", tmp_path / "c0.yaml")
    assert res.exit_code == 1 and ("stacked twice" in res.stderr or "limit stacked_cards" in res.stderr)


def test_a_deep_stack_hits_the_card_limit(tmp_path):
    for level in range(30):
        card(tmp_path, f"id: c{level}\ntitle: c\ndirection: cache\nstack: [c{level + 1}.yaml, leaf{level}.yaml]\n",
             f"c{level}.yaml")
        card(tmp_path, f"id: leaf{level}\ntitle: l\ndirection: cache\nchange: {{kv_bytes: 0.9}}\n", f"leaf{level}.yaml")
    card(tmp_path, "id: c30\ntitle: c\ndirection: cache\nchange: {kv_bytes: 0.5}\n", "c30.yaml")
    res = run("validate", tmp_path / "c0.yaml")
    assert res.exit_code == 1 and "limit stacked_cards" in res.stderr


def test_a_calibration_file_with_too_many_rows_is_refused(tmp_path):
    rows = "model,hardware,context,batch,tpot\n" + "llama-2-7b,a100-80gb,1024,1,8 ms\n" * 10_001
    f = tmp_path / "m.csv"
    f.write_text(rows)
    res = run("calibrate", f)
    assert res.exit_code == 1 and "limit calibration_rows" in res.stderr


def test_a_one_mib_flow_list_is_refused_while_parsing(tmp_path):
    f = card(tmp_path, "id: x\nlist: [" + ",".join(["1"] * 340_000) + "]\n", "big.yaml")
    assert f.stat().st_size < 1 << 20
    res = run("validate", f)
    assert res.exit_code == 1 and "YAML nodes" in res.stderr
    # refused while parsing: the error stands where the 100,000th node does (column ~200,000 of ~680,000),
    # not at the end of a file parsed whole
    column = int(res.stderr.split(":")[2].split()[0])
    assert column < 250_000, res.stderr


# ---- wrong answers and wrong exit codes ----------------------------------------------------------------

@pytest.mark.parametrize("text,message", [
    ("id: x\ntitle: t\ndirection: cache\nchange: {kv_heads: " + "9" * 400 + "}\n", "integer too large"),
    (KV2X.replace("title: 2x KV-cache compression", 'title: "\\ud800"'), "lone surrogate"),
])
def test_huge_integers_and_lone_surrogates_are_user_errors(tmp_path, text, message):
    res = run("validate", card(tmp_path, text))
    assert res.exit_code == 1 and message in res.stderr


@pytest.mark.parametrize("change", [{"num_attention_heads": "32"}, {"num_attention_heads": None},
                                    {"num_attention_heads": [32]}, {"hidden_size": 1e400},
                                    {"num_attention_heads": 0}, {"num_key_value_heads": 0},
                                    {"first_k_dense_replace": 99, "num_local_experts": 8, "num_experts_per_tok": 2},
                                    {"vocab_size": "big"}])
@pytest.mark.parametrize("command", ["run", "import"])
def test_bad_config_json_is_a_user_error(tmp_path, change, command):
    cfg = json.loads((ROOT / "tests" / "configs" / "llama-3-8b.json").read_text())
    cfg.update(change)
    text = json.dumps(cfg).replace("Infinity", "1e400")
    path = tmp_path / "config.json"
    path.write_text(text)
    args = ["run", card(tmp_path), "--model", path] if command == "run" else ["catalog", "import", path, "--name", "x"]
    assert run(*args).exit_code == 1


@pytest.mark.parametrize("row", ["llama-2-7b,a100-80gb,1e400,1,8 ms", "llama-2-7b,a100-80gb,abc,1,8 ms",
                                 "llama-2-7b,a100-80gb,1024,4.5,8 ms", "llama-2-7b,a100-80gb,1024,1,1e400 ms"])
def test_bad_calibration_rows_are_user_errors(tmp_path, row):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context,batch,tpot\n" + row + "\n")
    assert run("calibrate", f).exit_code == 1


def test_negative_zero_bits_are_refused(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context,batch,tpot,weights,group_size,zero_bits\n"
                 "llama-2-7b,a100-80gb,1024,1,8 ms,int4,128,-1000\n")
    res = run("calibrate", f)
    assert res.exit_code == 1 and "zero_bits" in res.stderr


def test_a_vllm_result_with_a_huge_integer_is_a_user_error(tmp_path):
    f = tmp_path / "r.json"
    f.write_text('{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb", "median_tpot_ms": 8, '
                 '"output_throughput": 1' + "0" * 400 + "}")
    assert run("run", card(tmp_path), "--measured", f).exit_code == 1


def test_a_batch_written_as_4_point_0_is_four(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context,batch,tpot\nllama-2-7b,a100-80gb,1024,4.0,9 ms\n")
    out = tmp_path / "calibrated.yaml"
    assert run("calibrate", f, "-o", out).exit_code == 0
    assert "batch: 4\n" in out.read_text()


def test_fp8_on_one_chip_and_fp16_on_another_draws_its_figures(tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("workloads:\n  - {name: fp8, hardware: h100-sxm, context: 4096, precision: {compute: fp8}}\n"
                 "  - {name: fp16, hardware: a100-80gb, context: 4096}\n")
    assert run("run", card(tmp_path), "-w", w, "-o", tmp_path / "memo.md").exit_code == 0


@pytest.mark.parametrize("output", ["/proc/x.json", ""])
def test_impossible_outputs_are_user_errors(tmp_path, output):
    assert run("run", card(tmp_path), "-o", output).exit_code in (1, 2)


def test_an_over_long_card_id_is_a_user_error(tmp_path):
    res = run("new", "--direction", "cache", "--id", "a" * 300, "-o", tmp_path / ("a" * 300 + ".yaml"))
    assert res.exit_code == 1


@pytest.mark.slow
def test_output_to_a_full_device_and_a_narrow_encoding_are_not_bugs(tmp_path):
    c = card(tmp_path)
    exe = [sys.executable, "-m", "triage", "run", str(c)]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(exe, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    proc = subprocess.run(exe, capture_output=True, timeout=60, env={**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr


@pytest.mark.parametrize("text", [
    "hardware: {tiny: {memory: 80 GiB, bandwidth: 1e-300 GB/s, compute: {fp16: 1000 TFLOP/s}}}\n"
    "defaults: {hardware: tiny}\nworkloads: [{name: w, context: 4096}]\n",
    "defaults: {efficiency: {bandwidth: 5.0e-324}}\nworkloads: [{name: w, context: 4096}]\n",
])
def test_tiny_positive_quantities_are_refused(tmp_path, text):
    w = tmp_path / "w.yaml"
    w.write_text(text)
    assert run("run", card(tmp_path), "-w", w).exit_code == 1


def test_yaml_integers_are_yaml_1_2(tmp_path):
    r = triage.evaluate(card(tmp_path), {"workloads": [{"name": "w", "context": 4096, "batch": 10}]})
    w = tmp_path / "w.yaml"
    w.write_text("workloads: [{name: w, context: 4096, batch: 010}]\n")
    assert len(triage.evaluate(card(tmp_path), w)) == len(r)
    assert triage.evaluate(card(tmp_path), w).to_dict()["cells"][0]["batch"] == 10
    w.write_text("workloads: [{name: w, context: 4096, batch: 1:30}]\n")
    assert run("run", card(tmp_path), "-w", w).exit_code == 1


def test_nan_in_an_api_dict_is_a_user_error():
    with pytest.raises(UserError, match="finite"):
        triage.evaluate({"id": "t", "title": "t", "direction": "cache", "change": {"kv_bytes": float("nan")}})


def test_a_measured_folder_over_the_limit_is_an_error_not_a_silent_cut(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    for i in range(1001):
        (folder / f"{i:04d}.json").write_text('{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb"}')
    res = run("run", card(tmp_path), "--measured", folder)
    assert res.exit_code == 1 and "measured_files" in res.stderr


def test_dash_as_the_output_is_standard_output(tmp_path):
    res = run("run", card(tmp_path), "-o", "-", "--format", "json")
    assert res.exit_code == 0 and res.stdout.startswith("{") and not Path("-").exists()


def test_brief_with_a_json_output_is_refused(tmp_path):
    assert run("run", card(tmp_path), "--brief", "-o", tmp_path / "x.json").exit_code == 2


# ---- errors that are one screen, addressed, and leak nothing ------------------------------------------

def test_thirty_thousand_problems_print_twenty_lines(tmp_path):
    keys = "\n".join(f"k{i}: 1" for i in range(30_000))
    res = run("validate", card(tmp_path, KV2X + keys))
    lines = res.stderr.splitlines()
    assert res.exit_code == 1 and len(lines) == 21 and lines[-1].startswith("error: and 29,980 more problems")


def test_a_long_name_is_cut_and_control_characters_are_escaped(tmp_path):
    name = "m" * 5000 + "\\e[31m"
    w = tmp_path / "w.yaml"
    w.write_text(f'workloads:\n  - {{name: w, model: "{name}", context: 1}}\n')
    res = run("validate", "-w", w)
    assert res.exit_code == 1 and "unknown model" in res.stderr
    assert len(res.stderr) < 1000 and "\x1b" not in res.stderr


def test_file_contents_never_appear_in_errors(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:hunter2-is-the-password:/root:/bin/bash\n")
    res = run("validate", card(tmp_path, f"id: s\ntitle: s\ndirection: cache\nstack: [{secret}, {card(tmp_path)}]\n",
                               "s.yaml"))
    assert res.exit_code == 1 and "hunter2" not in res.stderr and "secret.txt" in res.stderr


def test_a_missing_stacked_card_names_the_line_that_points_to_it(tmp_path):
    s = card(tmp_path, "id: s\ntitle: s\ndirection: cache\nstack:\n  - missing.yaml\n  - card.yaml\n", "s.yaml")
    card(tmp_path)
    res = run("validate", s)
    assert res.exit_code == 1 and f"{s}:5:5 $.stack[0]:" in res.stderr and "no such file" in res.stderr


def test_card_text_is_escaped_in_the_memo(tmp_path):
    text = KV2X.replace("title: 2x KV-cache compression", 'title: "<script>x</script> | *bold*\\nnext\\e"')
    res = run("run", card(tmp_path, text))
    assert res.exit_code == 0
    assert "<script>" not in res.stdout and "\x1b" not in res.stdout
    assert "\\| \\*bold\\*" in res.stdout


# ---- a fuzz target for every reader: exit 0 or 1, never 3, in bounded time --------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

READERS = {
    "card": lambda p, c: ["validate", p],
    "workloads": lambda p, c: ["validate", "-w", p],
    "config.json": lambda p, c: ["catalog", "import", p, "--name", "fuzz"],
    "calibration.csv": lambda p, c: ["calibrate", p],
    "measured.json": lambda p, c: ["run", c, "--measured", p, "--format", "json"],
    "measured.csv": lambda p, c: ["run", c, "--measured", p, "--format", "json"],
}
SEEDS = {
    "card": KV2X.encode(),
    "workloads": b"workloads:\n  - {name: w, context: 4096, batch: 8, share: 1}\n",
    "config.json": (ROOT / "tests" / "configs" / "mixtral-8x7b.json").read_bytes(),
    "calibration.csv": b"model,hardware,context,batch,tpot\nllama-2-7b,a100-80gb,1024,1,8 ms\n",
    "measured.json": b'{"workload": "chat-4k", "variant": "claim", "hardware": "a100-80gb", "tpot": "8 ms"}',
    "measured.csv": b"workload,variant,hardware,tpot\nchat-4k,claim,a100-80gb,8 ms\n",
}


def _mutate(seed: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    data = bytearray(seed)
    for at, chunk in edits:
        at = at % (len(data) + 1)
        data[at:at + len(chunk)] = chunk
    return bytes(data)


edits = st.lists(st.tuples(st.integers(0, 4000), st.binary(min_size=1, max_size=8)), max_size=6)
tokens = st.sampled_from([b"1e400", b"-1", b"0", b"nan", b".inf", b"\x00", b"\xff", b"{", b"[", b"&a", b"*a",
                          b"!!python/object:os.system", b"\"\\ud800\"", b"9" * 40, b"\t", b"\r\n", b"---\n"])
token_edits = st.lists(st.tuples(st.integers(0, 4000), tokens), max_size=4)


@pytest.mark.slow
@pytest.mark.parametrize("reader", sorted(READERS))
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(edits, token_edits))
def test_any_mutation_of_any_input_is_read_or_refused_cleanly(tmp_path, reader, data):
    path = tmp_path / reader.replace(".", "_fuzz.") if "." in reader else tmp_path / f"{reader}.yaml"
    path.write_bytes(_mutate(SEEDS[reader], data))
    c = card(tmp_path, name="base.yaml")
    res = run(*READERS[reader](path, c))
    assert res.exit_code in (0, 1), (reader, res.output)
    assert "nan" not in res.output.lower().split() and "inf" not in res.output.lower().split()


def test_a_setting_the_chip_cannot_run_is_blamed_on_the_card(tmp_path):
    text = KV2X.replace("phase: decode, batch: 1, context: 131072}",
                        "phase: decode, batch: 1, context: 131072, precision: {compute: fp8}}")
    c = card(tmp_path, text)
    res = run("validate", c)
    assert res.exit_code == 1 and f"{c}:" in res.stderr and "$.claim.setting.precision.compute" in res.stderr
    assert "<workloads>" not in res.stderr


def test_the_same_card_stacked_twice_is_refused(tmp_path):
    c = card(tmp_path)
    s = card(tmp_path, f"id: s\ntitle: s\ndirection: cache\nstack: [{c.name}, ./{c.name}]\n", "s.yaml")
    res = run("validate", s)
    assert res.exit_code == 1 and "stacked twice" in res.stderr


@pytest.mark.parametrize("case", ["dev-zero-stack", "grid", "calibrate-600-rows"])
def test_hostile_inputs_under_a_memory_cap(tmp_path, case):
    """In a process limited to 3 GiB of address space: refused (or, for calibration, done) without running out."""
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    c = card(tmp_path)
    if case == "dev-zero-stack":
        s = card(tmp_path, f"id: s\ntitle: s\ndirection: cache\nstack: [/dev/zero, {c}]\n", "s.yaml")
        args = ["validate", str(s)]
        expected = 1
    elif case == "grid":
        grid = tmp_path / "grid.yaml"
        grid.write_text("defaults: {model: llama-2-7b, hardware: h100-sxm}\ngrid:\n"
                        f"  context: {list(range(1, 3001))}\n  batch: {list(range(1, 3001))}\n")
        args, expected = ["run", str(c), "-w", str(grid)], 1
    else:
        f = tmp_path / "m.csv"
        f.write_text("model,hardware,context,batch,tpot\n" + "".join(
            f"llama-2-7b,a100-80gb,{1024 + i},1,8 ms\n" for i in range(600)))
        args, expected = ["calibrate", str(f), "--format", "json"], 0
    proc = subprocess.run([sys.executable, "-m", "triage", *args], capture_output=True, text=True, timeout=300,
                          preexec_fn=cap, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == expected, proc.stderr[-500:]
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr


def test_an_slo_without_its_unit_is_refused_with_a_hint(tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("defaults: {slo: {tpot: 50}}\nworkloads: [{name: w, context: 4096}]\n")
    res = run("validate", "-w", w)
    assert res.exit_code == 1
    assert f"{w}:1:24 $.defaults.slo.tpot: a time needs its unit: 50 → '50 ms'?" in res.stderr


@pytest.mark.parametrize("change,message", [
    ("{speculative: {tokens_per_step: 64, verify_tokens: 1, draft_cost: 0.01}}", "cannot accept more tokens"),
    ("{sparsity: {pattern: '5:4'}}", "N must be below M"),
    ("{kv_heads: 64}", "does not reduce the KV heads"),
])
def test_impossible_mechanism_values_are_refused(tmp_path, change, message):
    c = card(tmp_path, f"id: x\ntitle: x\ndirection: cache\nchange: {change}\n")
    res = run("run", c)
    assert res.exit_code == 1 and message in res.stderr


def test_stacked_cards_need_distinct_ids(tmp_path):
    card(tmp_path, KV2X, "a.yaml")
    card(tmp_path, KV2X.replace("kv_bytes: 0.5", "kv_bytes: 0.9"), "b.yaml")
    res = run("run", tmp_path / "a.yaml", tmp_path / "b.yaml", "--stack")
    assert res.exit_code == 1 and "two stacked cards have the id 'kv2x'" in res.stderr


def test_a_vanishing_measured_throughput_is_a_user_error_in_any_format(tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("model,hardware,context,batch,tokens_per_s\nllama-2-7b,a100-80gb,1024,1,5e-324\n")
    for fmt in ("md", "json"):
        assert run("calibrate", f, "-f", fmt).exit_code == 1


def test_yaml_dates_are_text_and_binary_is_refused(tmp_path):
    c = card(tmp_path, KV2X.replace("year: 2026", "year: 2001-12-14"))
    assert "$.paper.year: expected an integer, got text" in run("validate", c).stderr
    c = card(tmp_path, KV2X.replace("title: 2x KV-cache compression", "title: !!binary aGVsbG8="))
    res = run("validate", c)
    assert res.exit_code == 1 and "binary data" in res.stderr and "hello" not in res.stderr


# ---- serving: work in the currency of cost, derived quantities checked, traces read safely ----------------

def _traffic(tmp_path, traffic, scheduler=None, model="llama-2-7b", name="w.yaml", models=None):
    import yaml

    wl = {"name": "s", "context": 1024, "batch": 1, "traffic": traffic,
          **({"scheduler": scheduler} if scheduler else {})}
    doc = {**({"models": models} if models else {}), "defaults": {"model": model, "hardware": "a100-80gb"},
           "workloads": [wl]}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


TINY = {"tiny": {"name": "Tiny", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
                 "num_key_value_heads": 1, "head_dim": 64, "intermediate_size": 512, "vocab_size": 1000,
                 "tie_word_embeddings": True, "source": "a hostile-input test model (assumption)"}}


@pytest.mark.slow
def test_long_outputs_keep_token_gaps_in_fixed_memory(tmp_path):
    # issue 27 case 1: 10 requests of 2,000,000 output tokens, one sequence at a time, a model with no trained
    # window and a KV cache that holds them: every decode step appended a Python float (~1 GB, MemoryError, exit 3
    # under a 1.2 GB address-space cap); the gaps now go to a fixed-size sketch (about 100 MB resident)
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))

    w = _traffic(tmp_path, {"rates": [1], "requests": 10, "warmup": 0, "prompt_tokens": 10,
                            "output_tokens": 2_000_000, "slo": {}},       # no bounds: no rate search, one rate
                 {"policy": "continuous", "max_seqs": 1}, "tiny", models=TINY)
    proc = subprocess.run([sys.executable, "-m", "triage", "run", str(CLAIMS / "kv2x.yaml"), "-w", str(w), "-f",
                           "json"], capture_output=True, text=True, timeout=120, preexec_fn=cap,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-500:]
    cell = next(c for c in json.loads(proc.stdout)["cells"] if c["workload"] == "s")
    assert cell["serving"]["baseline"]["rates"][0]["tbt_s"]["p99"] > 0


def test_the_gap_sketch_is_exact_then_within_its_bin_width():
    from triage.serving.outcome import GapSketch

    values = np.random.default_rng(0).lognormal(-4.0, 1.0, 3_000_000)
    sketch = GapSketch()
    for chunk in np.array_split(values, 30):
        sketch.add(chunk, 2.0)
    v, w = sketch.values()
    assert v.size < 400_000 and w.sum() == pytest.approx(2.0 * values.size)     # folded: bins, not values
    order = np.argsort(v)
    p99 = v[order][np.searchsorted(np.cumsum(w[order]), 0.99 * w.sum())]
    assert p99 == pytest.approx(np.quantile(values, 0.99), rel=2e-4)
    small = GapSketch()
    small.add([0.5, 0.25], [1.0, 3.0])
    assert small.values()[0].tolist() == [0.5, 0.25] and small.values()[1].tolist() == [1.0, 3.0]


def test_a_chunked_prefill_of_a_token_at_a_time_is_refused_by_its_cost_before_it_starts(tmp_path):
    # issue 27 case 2: token_budget 1, 30k-token prompts (Mistral 7B holds 32k): one Python iteration per prompt
    # token; 1,000 of them are at least 3e9 token-steps a side (30,000,000 prefill iterations x 100), refused at once
    w = _traffic(tmp_path, {"rates": [1], "requests": 1000, "prompt_tokens": 30000, "output_tokens": 10},
                 {"policy": "chunked", "token_budget": 1, "max_seqs": 1}, "mistral-7b")
    res = run("run", CLAIMS / "kv2x.yaml", "-w", w)
    assert res.exit_code == 1 and "token-steps" in res.stderr and "serving_work" in res.stderr


def test_a_chunked_budget_below_the_running_sequences_is_refused_as_engines_refuse_it(tmp_path):
    # issue 27 case 2: more decodes than the budget starve the prompts (5,000 requests took 67 s); vLLM refuses
    # max_num_batched_tokens < max_num_seqs
    w = _traffic(tmp_path, {"rates": [50], "requests": 5000, "prompt_tokens": 512, "output_tokens": 256},
                 {"policy": "chunked", "token_budget": 8, "max_seqs": 256})
    res = run("validate", "-w", w)
    assert res.exit_code == 1 and f"{w}:" in res.stderr and "$.workloads[0].scheduler.token_budget" in res.stderr
    card = tmp_path / "c.yaml"
    card.write_text((CLAIMS / "sarathi-serve.yaml").read_text().replace("token_budget: 512", "token_budget: 64"))
    res = run("run", card)
    assert res.exit_code == 1 and "$.change.scheduler" in res.stderr and "max_seqs" in res.stderr


def test_a_million_requests_at_one_rate_are_refused_by_their_cost(tmp_path):
    # issue 27 case 3: 1,000,000 requests at one rate took 88 s and 1.8 GB; at least 10 + 3 x 100 = 310
    # token-steps a request a side, 620,000,000 in all: over the 200,000,000 limit, refused at once
    w = _traffic(tmp_path, {"rates": [5], "requests": 1_000_000, "prompt_tokens": 100, "output_tokens": 10})
    res = run("run", CLAIMS / "kv2x.yaml", "-w", w)
    assert res.exit_code == 1 and "token-steps" in res.stderr and f"{w}" in res.stderr


@pytest.mark.parametrize("arrivals,trace,where", [
    ({"gamma": 1e-160}, None, "$.workloads[0].traffic.arrivals.gamma"),              # case 4: NaN gaps, a hang
    ({"gamma": 5e-324}, None, "$.workloads[0].traffic.arrivals.gamma"),              # case 5: ZeroDivisionError
    ("trace", [(-1e308, 10, 5), (1e308, 10, 5)], "finite, non-negative times"),       # case 4: an infinite span
    ("trace", [(0, 10, 5), (1, "9" * 400, 5)], "expected {arrival_s"),                # case 5: OverflowError
    ("trace", "deep", "expected {arrival_s"),                                         # case 5: RecursionError
    ("trace", [(i * 5e-324, 10, 5) for i in range(20)], "above 1e+06 requests/s"),    # case 6: inf requests/s
    ("trace", [(i * 1e300, 10, 5) for i in range(20)], "below 1e-06 requests/s"),     # case 6: 1e-300 requests/s
])
def test_traffic_whose_derived_numbers_break_is_an_addressed_error(tmp_path, arrivals, trace, where):
    traffic = {"requests": 20, "prompt_tokens": 100, "output_tokens": 10}
    if arrivals == "trace":
        f = tmp_path / "t.jsonl"
        if trace == "deep":
            f.write_text('{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 5}\n' + "[" * 100_000 + "]" * 100_000)
        else:
            f.write_text("".join(f'{{"arrival_s": {a!r}, "prompt_tokens": {p}, "output_tokens": {o}}}\n'
                                 for a, p, o in trace))
        traffic["arrivals"] = {"trace": str(f)}
        if "requests/s" not in where:
            traffic["rates"] = [1]
    else:
        traffic.update(arrivals=arrivals, rates=[1])
    res = run("run", CLAIMS / "kv2x.yaml", "-w", _traffic(tmp_path, traffic), "-f", "json")
    assert res.exit_code == 1 and where in res.stderr, res.stderr
    assert "nan" not in res.stderr.split() and "inf" not in res.stderr.split()


def test_a_rate_needs_measured_requests_to_be_called_served(tmp_path):
    # issue 27 case 7: 10 requests and warm-up 0.9 left one measured request, and 524,288 requests/s "met the SLO"
    w = _traffic(tmp_path, {"rates": [1], "requests": 10, "warmup": 0.9, "prompt_tokens": 100,
                            "output_tokens": 10, "slo": {"tpot": "50 ms"}}, model="mistral-7b")
    res = run("validate", "-w", w)
    assert res.exit_code == 1 and "$.workloads[0].traffic.warmup" in res.stderr and "leaves 1 measured" in res.stderr


def test_validate_refuses_the_scheduler_links_run_refuses_with_their_line(tmp_path):
    # issue 27 case 11: `validate` said "1 file valid" for a link run refuses, and run's error had no line
    import shutil

    text = (CLAIMS / "distserve.yaml").read_text()
    shutil.copytree(CLAIMS / "configs", tmp_path / "configs")      # the card's setting names configs/opt-13b.json
    for bad, key in (("link: 1e-300 B/s", "link"), ("link: 300 GB/s, link_latency: 5", "link_latency")):
        c = card(tmp_path, text.replace("link: 300 GB/s", bad))
        for command in ("validate", "run"):
            res = run(command, c)
            assert res.exit_code == 1 and f"{c}:40:" in res.stderr and f"$.change.scheduler.{key}" in res.stderr, \
                res.stderr


def test_no_room_for_the_kv_cache_is_addressed_to_the_workload_file(tmp_path):
    # issue 27 case 11: the error named the workload, not its file and line
    import yaml

    w = tmp_path / "w.yaml"
    w.write_text(yaml.safe_dump({"defaults": {"model": "llama-2-70b", "hardware": "a100-80gb"}, "workloads": [
        {"name": "big", "context": 1024, "batch": 1, "traffic": {"rates": [1], "requests": 20}}]}))
    res = run("run", CLAIMS / "sarathi-serve.yaml", "-w", w)
    assert res.exit_code == 1 and f"{w}:" in res.stderr and "$.workloads[0].traffic" in res.stderr, res.stderr


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_any_traffic_scheduler_trace_or_profile_is_priced_or_refused_cleanly(tmp_path, seed):
    """The serving fuzz target (bench/fuzz_serving.py runs it for minutes, each example in its own capped process):
    a random, partly hostile traffic block, scheduler, trace file and engine profile; exit 0 or 1 within 30 s."""
    import random

    from bench import fuzz_serving

    rng = random.Random(seed)
    w = fuzz_serving.example(rng, tmp_path)
    res = run("run", rng.choice(fuzz_serving.CARDS), "-w", w, "-f", "json")
    assert res.exit_code in (0, 1), res.output
    assert "nan" not in res.stderr.lower().split() and "inf" not in res.stderr.lower().split()


# ---- one guard, one reader and writer, round trips, no silent reinterpretation --------------------------

@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"]])
def test_help_and_version_to_a_full_disk_are_one_line_not_a_traceback(args):
    # issue 27: --help and --version ran outside the guard: a full disk printed click's traceback
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "triage", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: No space left on device"]


@pytest.mark.parametrize("kwargs,name", [
    ({"card": 123}, "card"), ({"card": None}, "card"), ({"card": ["claims/kv2x.yaml", 5]}, "card"),
    ({"card": []}, "card"), ({"workloads": 5}, "workloads"), ({"workloads": [1, 2]}, "workloads"),
    ({"model": 5}, "model"), ({"model": ["llama-2-7b"]}, "model"), ({"baseline": 3}, "baseline"),
    ({"analyse": "yes"}, "analyse"), ({"catalog": 5}, "catalog")])
def test_the_api_refuses_a_wrong_type_as_a_user_error_naming_the_argument(kwargs, name):
    # issue 27: an int card was a TypeError from open(), a list model an AttributeError, baseline=3 read as
    # "current" in silence
    args = {"card": str(CLAIMS / "kv2x.yaml"), **kwargs}
    with pytest.raises(UserError) as err:
        triage.evaluate(args.pop("card"), **args)
    assert str(err.value).startswith(f"triage.evaluate: {name}: expected")


IO_CALLS = re.compile(r"\bopen\(|\.(read_text|write_text|read_bytes|write_bytes)\(|os\.(replace|rename|fdopen)\("
                      r"|tempfile\.|shutil\.")


def test_every_reader_and_writer_goes_through_the_io_layer():
    # one reader (io/files.py: bounded, recorded, refusing devices), one writer (atomic, guarded), the private
    # cache's (io/private.py) and the packaged resources (io/resources.py): nothing outside triage/io opens a file
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "triage").rglob("*.py"))
             if "io" not in path.relative_to(ROOT / "triage").parts[:1]
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if IO_CALLS.search(line.split("#")[0])]
    assert not found, found


def test_calibrate_never_writes_a_profile_triage_cannot_read_back(tmp_path, monkeypatch):
    # issue 27: at its 10,000-row limit `calibrate -o` wrote 2,181,010 bytes (and at 4,800 rows 148,000 YAML
    # nodes), which every later read refused; the file is read back before it is written
    from triage.cli import calibrate as calibrate_cli

    huge = "workloads:\n" + "  - {name: w}\n" * 40_000         # over the YAML-node limit, as 4,800 rows were
    monkeypatch.setattr(calibrate_cli, "workload_file", lambda report, engine: huge)
    out = tmp_path / "cal.yaml"
    res = run("calibrate", ROOT / "examples" / "measurements" / "gpt-fast-a100.csv", "-o", out)
    assert res.exit_code == 1 and "could not read back" in res.stderr and not out.exists()


def test_trace_token_counts_are_never_rounded_or_raised_in_silence(tmp_path):
    # issue 27: 10.5 tokens became 10 and 0 became 1, unsaid
    for row in ("10.5,5", "0,5", "10,0"):
        f = tmp_path / "t.csv"
        f.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1," + row + "\n")
        w = _traffic(tmp_path, {"rates": [1], "requests": 20, "arrivals": {"trace": str(f)},
                                "prompt_tokens": "trace", "output_tokens": "trace"})
        res = run("validate", "-w", w)
        assert res.exit_code == 1 and "whole numbers of at least 1" in res.stderr, row
    w = _traffic(tmp_path, {"rates": [1], "requests": 20, "output_tokens": 10.5})
    res = run("validate", "-w", w)
    assert res.exit_code == 1 and "$.workloads[0].traffic.output_tokens" in res.stderr
