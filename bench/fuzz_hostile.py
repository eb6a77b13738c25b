"""Fuzz the surfaces of the third hostile-input round (issue 46): YAML tags in a card, the Python API's number
types, calibration rows and the matrix flags, each example in its own process under a 2 GiB address-space cap
and a 30 s timeout (bench/fuzz_serving.py's limits and driver).

Run with:  .venv/bin/python bench/fuzz_hostile.py [SECONDS]      (default 120; not part of the test suite)

Every example must exit 0 (done) or 1 (refused with an addressed error) — never 2, 3 or a signal — within 30 s
and 2 GiB. Prints the examples and exit codes per family, the slowest, the largest, and each failure with its
input (kept under the printed folder) and its last error line.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fuzz_serving import HOSTILE_NUMBERS, HOSTILE_TEXT, drive  # noqa: E402

KV2X = ROOT / "claims" / "kv2x.yaml"
TAGS = ["!!int", "!!float", "!!bool", "!!timestamp", "!!str", "!!binary", "!!null", "!!set", "!!omap", "!!pairs",
        "!!seq", "!!map", "!!merge", "!!python/object:os.system", "!!python/name:os.system", "!custom", "!"]
TAG_VALUES = ["0b101", "0o17", "0x1F", "1:30", "1_000", "abc", "bogus", "2024-01-01", "2024-13-45", "yes", "maybe",
              "~", "", "[1, 2]", "{a: 1}", "1e999", "-.inf", ".nan", "@@", "AAAA", "9" * 40]
API_VALUES = ["Decimal('0.5')", "Decimal('NaN')", "Decimal('sNaN')", "Decimal('-Infinity')", "Decimal('1e400')",
              "Fraction(1, 2)", "Fraction(10**400, 3)", "np.float16(0.5)", "np.float32('nan')", "np.float64(0.5)",
              "np.int8(1)", "np.int64(2**62)", "np.uint64(2**64 - 1)", "np.bool_(True)", "True", "0.5 + 0j",
              "10**30", "-1", "0", "float('inf')", "np.array([0.5])", "np.longdouble(0.5)", "'0.5'", "None"]
API_PATHS = [("change", "kv_bytes"), ("implementation", "bandwidth_efficiency"), ("quality", "retained"),
             ("claim", "speedup"), ("cost", "gpus"), ("cost", "weeks")]
CAL_FIELDS = {"model": ["llama-2-7b", "llama-2-70b", "nope", "", "llama-2-7b\nx"],
              "hardware": ["a100-80gb", "h100-sxm", "nope", ""],
              "phase": ["decode", "prefill", "generation", "train", ""],
              "context": ["105", "512", "0", "-1", "1e9", "abc", ""],
              "batch": ["1", "2", "4", "64", "0", "1.5", "1e12", ""],
              "weights": ["fp16", "bf16", "int8", "int4", "fp8", "int3", ""],
              "tp": ["1", "2", "8", "0", "3", ""],
              "tpot": ["10 ms", "25 ms", "1e-9 s", "20 s", "0 s", "-1 ms", "nan", "10", "1e400 s", ""],
              "source": ["a", "", "x" * 500]}
FLAG_VALUES = {"--model": ["llama-2-7b", "llama-3-8b", "nope", "", "llama-2-7b,mistral-7b", "../../etc/passwd"],
               "--hardware": ["a100-80gb", "h100-sxm,l40s", "nope", "", "a100-80gb," * 40],
               "--context": ["4096", "128k", "1,2,4", "0", "-1", "1e9", "nan", "4096," * 1200, "", "1..64", "∞"],
               "--batch": ["1", "1,8,64", "0", "-1", "1.5", "1e12", "abc", "", "1..64", "256," * 30]}


def yaml_tag(rng: random.Random, folder: Path) -> list[str]:
    """A card with one value replaced by a tagged one."""
    lines = KV2X.read_text().splitlines()
    values = [i for i, line in enumerate(lines) if ": " in line and not line.lstrip().startswith("#")]
    i = rng.choice(values)
    key = lines[i].split(": ", 1)[0]
    lines[i] = f"{key}: {rng.choice(TAGS)} {rng.choice(TAG_VALUES + [str(x) for x in HOSTILE_NUMBERS])}"
    path = folder / f"c{rng.randrange(10 ** 9)}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return [rng.choice(["validate", "run"]), str(path)]


def api_value(rng: random.Random, folder: Path) -> list[str]:
    """A script: the card as a dict with one number of a foreign type, evaluated and dumped as JSON."""
    section, key = rng.choice(API_PATHS)
    value = rng.choice(API_VALUES)
    script = folder / f"a{rng.randrange(10 ** 9)}.py"
    script.write_text(
        "import json, sys\nfrom decimal import Decimal\nfrom fractions import Fraction\nimport numpy as np\n"
        "import yaml\nimport triage\n"
        f"card = yaml.safe_load(open({str(KV2X)!r}))\ncard.setdefault({section!r}, {{}})[{key!r}] = {value}\n"
        "try:\n    json.dumps(triage.evaluate(card, analyse=False).to_dict(), allow_nan=False)\n"
        "except triage.UserError as err:\n    print(str(err).splitlines()[0], file=sys.stderr)\n    sys.exit(1)\n")
    return ["-c", f"import runpy; runpy.run_path({str(script)!r})"]


def calibration_rows(rng: random.Random, folder: Path) -> list[str]:
    """A measurements CSV of one to six rows, each field plausible or hostile."""
    header = list(CAL_FIELDS)
    def field(k: str) -> str:                     # the first two values are plausible: mostly those
        v = rng.choice(CAL_FIELDS[k][:2]) if rng.random() < 0.9 else rng.choice(CAL_FIELDS[k])
        return json.dumps(v) if "," in v else v

    rows = [[field(k) for k in header] for _ in range(rng.randint(1, 6))]
    path = folder / f"m{rng.randrange(10 ** 9)}.csv"
    path.write_text(",".join(header) + "\n" + "".join(",".join(r).replace("\n", " ") + "\n" for r in rows))
    return ["calibrate", str(path)] + (["-o", str(folder / f"o{rng.randrange(10 ** 9)}.yaml")]
                                        if rng.random() < 0.3 else [])


def flags(rng: random.Random, _folder: Path) -> list[str]:
    """`run` (or `sweep` to standard output) over a matrix from flags, some values hostile."""
    args = [rng.choice(["run", "run", "sweep"]), str(KV2X)]
    for flag, values in FLAG_VALUES.items():
        if rng.random() < 0.8:
            args += [flag, rng.choice(values + HOSTILE_TEXT[:6])]
    if args[0] == "sweep":
        args += ["-o", "-"]
    return args


FAMILIES = {"yaml tags": yaml_tag, "api values": api_value, "calibration rows": calibration_rows, "flags": flags}


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    folder = Path(tempfile.mkdtemp(prefix="triage-fuzz-hostile-"))
    rng = random.Random(46)

    def make(n: int) -> tuple[str, str, list[str]]:
        family = list(FAMILIES)[n % len(FAMILIES)]
        args = FAMILIES[family](rng, folder)     # a script for the API family, else a triage command
        command = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "triage", *args]
        return family, " ".join(a[:120] for a in args), command

    drive(make, seconds, folder)


if __name__ == "__main__":
    main()
