"""A file that is no triage file (a symlink to a shadow file, say) is refused without echoing a byte of it.

A shadow file parses as a YAML mapping (each line ending in ':' is a key), so it reaches the schema's unknown-key
errors; reached through a card's stack:, a workload's engine:, -w or --catalog, every error says what triage
expected, at the key's FILE:LINE:COL and its parent's JSON path, and never a user name, salt or hash. The same
holds for values: text a file wrote under a typed, enum or pattern field, a key in a path, a YAML tag or alias.
"""

import pytest
from click.testing import CliRunner

from triage.cli import main

from conftest import CLAIMS

# distinctive tokens, so a leak cannot hide behind a word triage prints anyway (the temporary folder holds 'root')
USERS = [f"zq_secret_user{i:02d}" for i in range(24)]
SHADOW = "".join(
    f"{user}:$6$S4lt{i:02d}XYZ$H4sh{i:02d}ABCdefGHIjklMNOpqrSTUvwx0123456789abcdefghijklmnopqrstuvwxyzABCD"
    f"EFGH:19000:0:99999:7:::\n" for i, user in enumerate(USERS[:20]))
SHADOW += f"{USERS[20]}:*:19000:0:99999:7:::\n{USERS[21]}:!:19000:0:99999:7:::\n"
SHADOW += f"{USERS[22]}:!!:19000::::::\n{USERS[23]}:$y$j9T$S4ltYES$H4shYESCRYPTabc:19100:0:99999:7:::\n"
SECRETS = ["zq_secret", "S4lt", "H4sh", "$6$", "$y$", ":::"]
CARD = (CLAIMS / "kv2x.yaml").read_text()


def invoke(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def assert_refused_without_contents(res) -> list[str]:
    """Exit 1, no traceback, at most 20 problem lines, and not one token of the shadow file."""
    text = res.stdout + res.stderr
    assert res.exit_code == 1, text
    assert "Traceback" not in text and "internal error" not in text
    for token in SECRETS:
        assert token not in text, (token, text)
    problems = [line for line in res.stderr.splitlines() if line.startswith("error: ")
                and not line.startswith("error: and ")]
    assert 1 <= len(problems) <= 20, res.stderr
    return problems


@pytest.fixture
def shadow(tmp_path):
    """A symlink named like a YAML file, pointing at a shadow-format file."""
    target = tmp_path / "shadow"
    target.write_text(SHADOW)
    link = tmp_path / "profile.yaml"
    link.symlink_to(target)
    (tmp_path / "card.yaml").write_text(CARD)
    return link


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_stacked_symlink_to_a_shadow_file_echoes_none_of_it(tmp_path, shadow, command):
    stacked = tmp_path / "s.yaml"
    stacked.write_text(f"id: s\ntitle: s\ndirection: cache\nstack: [{shadow.name}, card.yaml]\n")
    problems = assert_refused_without_contents(invoke(command, stacked))
    target = shadow.resolve()
    # each unknown key is blamed on its mapping at the key's line, with triage's keys as the hint
    assert f"error: {target}:1:1 $: unknown key (expected one of: id, title, direction, paper, claim, change, …)" \
        in problems
    assert f"error: {target}:1:1 $: missing required key 'id'" in problems
    assert sum(p.startswith(f"error: {target}:") for p in problems) == 20       # the rest counted, not printed


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("where", ["workload", "defaults"])
def test_a_shadow_file_named_as_an_engine_profile_echoes_none_of_it(tmp_path, shadow, command, where):
    w = tmp_path / "w.yaml"
    if where == "workload":
        w.write_text(f"workloads:\n  - {{name: w, context: 4096, engine: {shadow.name}}}\n")
    else:
        w.write_text(f"defaults: {{engine: {shadow.name}}}\nworkloads:\n  - {{name: w, context: 4096}}\n")
    args = ("validate", "-w", w) if command == "validate" else ("run", "-w", w, tmp_path / "card.yaml")
    problems = assert_refused_without_contents(invoke(*args))
    assert f"error: {shadow}:1:1 $: unknown key (expected one of: hardware, models, defaults, workloads, grid, " \
           f"engines)" in problems


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_shadow_file_as_the_workload_file_echoes_none_of_it(tmp_path, shadow, command):
    args = ("validate", "-w", shadow) if command == "validate" else ("run", "-w", shadow, tmp_path / "card.yaml")
    problems = assert_refused_without_contents(invoke(*args))
    assert f"error: {shadow}:20:1 $: unknown key (expected one of: hardware, models, defaults, workloads, grid, " \
           f"engines)" in problems


@pytest.mark.parametrize("how", ["option", "variable"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_shadow_file_as_the_catalog_echoes_none_of_it(tmp_path, shadow, command, how):
    card = tmp_path / "card.yaml"
    args = (command, "--catalog", shadow, card) if how == "option" else (command, card)
    env = {"TRIAGE_CATALOG": str(shadow)} if how == "variable" else None
    problems = assert_refused_without_contents(invoke(*args, env=env))
    assert any(p.startswith(f"error: {shadow}:3:1 $: unknown key (expected one of: hardware") for p in problems)


FOREIGN = """\
hardware:
  "zq_secret_user:$6$S4ltAAA$H4shAAA:19000:0:99999:7::":
    memory: zq_secret_password
  gpu:
    memory: "80 zq_secret"
    bandwidth: 2 TB/s
    compute: {bf16: zq_secret_token}
defaults:
  phase: zq_secret_phase
  model: {zq_secret_key: 1}
workloads:
  - {name: "zq_secret name!", context: zq_secret_ctx, contxt: 1}
"""


def test_text_a_foreign_mapping_holds_is_never_quoted(tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text(FOREIGN)
    problems = assert_refused_without_contents(invoke("validate", "-w", w))
    assert f"error: {w}:9:10 $.defaults.phase: expected one of decode, prefill; got other text" in problems
    assert f"error: {w}:12:40 $.workloads[0].context: expected an integer, got text" in problems
    assert f"error: {w}:12:55 $.workloads[0]: unknown key (expected one of: name, description, model, " \
           f"hardware, phase, context, …; the closest is 'context')" in problems
    assert f"error: {w}:3:5 $.hardware[?]: missing required key 'bandwidth'" in problems     # no name: [?]


def test_a_quantity_is_quoted_only_as_a_number_and_a_unit(tmp_path):
    w = tmp_path / "w.yaml"
    w.write_text("hardware:\n  gpu: {memory: 80 GiBs, bandwidth: zq_secret_bandwidth, compute: {bf16: 1e15}}\n"
                 "workloads:\n  - {name: w, context: 1, hardware: gpu}\n")
    problems = assert_refused_without_contents(invoke("validate", "-w", w))
    assert f"error: {w}:2:17 $.hardware.gpu.memory: unknown size unit 'GiBs' in '80 GiBs' (known: B, KB, MB, GB, " \
           f"TB, PB, KiB, MiB, GiB, TiB)" in problems
    assert f"error: {w}:2:37 $.hardware.gpu.bandwidth: expected a bandwidth like '2039 GB/s' or '3.35 TB/s', got " \
           f"other text" in problems


@pytest.mark.parametrize("text,message", [
    ("claim: *zq_secret_alias\n", "2:8 $: YAML: found undefined alias (text left out)"),
    ("claim: !zq_secret_tag x\n", "2:8 $: YAML: tag not allowed (safe YAML only)"),
    ("zq_secret_key: 1\nzq_secret_key: 2\n", "3:1 $: YAML: duplicate key (first at line 2)"),
    ("claim: {zq_secret_key: 1}\n", "2:9 $.claim: unknown key (expected one of: text, speedup, metric, baseline"),
])
def test_yaml_and_schema_errors_quote_no_text(tmp_path, text, message):
    c = tmp_path / "c.yaml"
    c.write_text("id: c\n" + text)
    problems = assert_refused_without_contents(invoke("validate", c))
    assert any(p.startswith(f"error: {c}:{message}") for p in problems), problems
