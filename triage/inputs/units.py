"""Quantities at the edges: parse "80 GiB" / "2039 GB/s" into base-unit floats, print them back.

Inside the engine every quantity is a float in SI base units (B, FLOP, s, B/s,
FLOP/s). Decimal prefixes are powers of 10 (GB = 1e9 B, TB/s = 1e12 B/s),
binary prefixes powers of 2 (GiB = 2**30 B): a datasheet's "2039 GB/s" is
2.039e12 B/s, never 2039 * 2**30.
"""

from __future__ import annotations

import math
import re

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40

_DECIMAL = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

# kind -> {unit text: factor to base unit}
UNITS: dict[str, dict[str, float]] = {
    "bytes": {
        **{f"{p}B": f for p, f in _DECIMAL.items() if p != "k"},
        **{f"{p}B": f for p, f in _BINARY.items()},
    },
    "bandwidth": {
        **{f"{p}B/s": f for p, f in _DECIMAL.items() if p != "k"},
        **{f"{p}B/s": f for p, f in _BINARY.items()},
    },
    "compute": {
        **{f"{p}FLOP/s": f for p, f in _DECIMAL.items() if p != "k"},
        **{f"{p}FLOPS": f for p, f in _DECIMAL.items() if p not in ("", "k")},
        **{f"{p}OP/s": f for p, f in _DECIMAL.items() if p != "k"},
        **{f"{p}OPS": f for p, f in _DECIMAL.items() if p not in ("", "k")},
    },
    "flops": {f"{p}FLOP": f for p, f in _DECIMAL.items() if p != "k"},
    "time": {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0, "h": 3600.0},
}

NOUNS = {"bytes": "size", "bandwidth": "bandwidth", "compute": "throughput", "flops": "FLOP count", "time": "time"}

EXAMPLES = {
    "bytes": "'80 GiB' or '141 GB'",
    "bandwidth": "'2039 GB/s' or '3.35 TB/s'",
    "compute": "'989 TFLOP/s'",
    "flops": "'2.9e13 FLOP' or '29 TFLOP'",
    "time": "'50 ms'",
}

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]*)\s*$")


class UnitError(ValueError):
    """A quantity that cannot be read as the kind a field expects."""


# Beyond these a value is a typo, not hardware: 1 EB of memory, 10 PB/s, 10 EFLOP/s, a day per step.
LIMITS = {"bytes": (1e18, "1 EB"), "bandwidth": (1e16, "10 PB/s"), "compute": (1e19, "10 EFLOP/s"),
          "flops": (1e30, "1e30 FLOP"), "time": (86400.0, "1 day")}


# Below these a positive value is a typo too: a chip slower than 1 GB/s or 1 GFLOP/s, less than a byte, a
# nanosecond. 1e-300 B/s would print 'TPOT inf s'.
MINIMA = {"bytes": (1.0, "1 B"), "bandwidth": (1e9, "1 GB/s"), "compute": (1e9, "1 GFLOP/s"),
          "flops": (1.0, "1 FLOP"), "time": (1e-9, "1 ns")}


def _bare(number: float, kind: str) -> str:
    """The error for a quantity written without its unit, with the likely reading (a datasheet's own unit)."""
    if kind == "time":
        guess = f"'{number:g} ms'" if number >= 1 else f"'{number:g} s' or '{number * 1e3:g} ms'"
    elif kind == "bytes":
        guess = f"'{number:g} GB' or '{number:g} GiB'" if number < 1e5 else f"'{number:g} B'"
    elif kind == "bandwidth":
        guess = f"'{number:g} TB/s'" if number < 50 else f"'{number:g} GB/s'" if number < 1e6 else f"'{number:g} B/s'"
    elif kind == "compute":
        guess = f"'{number:g} TFLOP/s'" if number < 1e6 else f"'{number:g} FLOP/s'"
    else:
        guess = f"'{number:g} FLOP'"
    return f"a {NOUNS[kind]} needs its unit: {number:g} → {guess}?"


def parse(value: object, kind: str, allow_zero: bool = False, bare_base: bool = False) -> float:
    """Return ``value`` ("<number> <unit>") as a float in base units.

    A quantity is never read from a bare number (is memory 48 bytes or GB? is 50 seconds or milliseconds?)
    unless it is 0 or the caller's format documents base units (``bare_base``: a CSV column in seconds).
    Refuses negatives, zero (unless ``allow_zero``), non-finite, implausibly small and absurdly large values.
    """
    noun = NOUNS[kind]
    if isinstance(value, bool):
        raise UnitError(f"expected a {noun} like {EXAMPLES[kind]}, got a boolean")
    if isinstance(value, (int, float)):
        number = float(value)
        if number != 0 and not bare_base and math.isfinite(number):
            raise UnitError(_bare(number, kind))
    elif isinstance(value, str):
        match = _QUANTITY.match(value)
        if not match:
            raise UnitError(f"expected a {noun} like {EXAMPLES[kind]}, got {value!r}")
        text, unit = match.groups()
        if not unit and float(text) != 0 and not bare_base:
            raise UnitError(_bare(float(text), kind))
        factors = UNITS[kind]
        if not unit and bare_base:        # a format that documents base units, as text (CSV)
            factors = {"": 1.0}
        if unit not in factors:
            other = next((k for k, table in UNITS.items() if unit and unit in table), None)
            if other:
                raise UnitError(f"{value!r} is a {NOUNS[other]}; expected a {noun} like {EXAMPLES[kind]}")
            known = ", ".join(u for u in factors if u) or "none"
            raise UnitError(f"unknown {noun} unit {unit!r} in {value!r} (known: {known})")
        number = float(text) * factors[unit]
    else:
        raise UnitError(f"expected a {noun} like {EXAMPLES[kind]}, got {type(value).__name__}")
    if not math.isfinite(number):
        raise UnitError(f"expected a finite {noun}, got {value!r}")
    if number < 0 or (number == 0 and not allow_zero):
        raise UnitError(f"expected a {noun} {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    low, text_low = MINIMA[kind]
    if 0 < number < low:
        raise UnitError(f"expected a {noun} of at least {text_low}, got {value!r}")
    limit, text_limit = LIMITS[kind]
    if number > limit:
        raise UnitError(f"expected a {noun} of at most {text_limit}, got {value!r}")
    return number


def _scaled(value: float, unit: str, steps: list[tuple[float, str]], digits: int, spec: str = "f") -> str:
    if not math.isfinite(value):
        return "—"
    for factor, prefix in steps:
        if abs(value) >= factor:
            return f"{value / factor:.{digits}{spec}} {prefix}{unit}"
    factor, prefix = steps[-1]
    return f"{value / factor:.{digits}{spec}} {prefix}{unit}"


_DEC_STEPS = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def fmt_bytes(n: float, digits: int = 2) -> str:
    """Decimal bytes: 15361536000 -> '15.36 GB'."""
    steps = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
    return _scaled(n, "B", steps, digits)


def fmt_gib(n: float, digits: int = 2) -> str:
    """Binary bytes, for capacities: 2**31 -> '2.00 GiB'."""
    steps = [(2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, "")]
    return _scaled(n, "B", steps, digits)


def fmt_bandwidth(bps: float) -> str:
    """Four significant digits: '2.039 TB/s', '864 GB/s'."""
    return _scaled(bps, "B/s", _DEC_STEPS, 4, "g")


def fmt_compute(fps: float, ops: bool = False) -> str:
    """Four significant digits: '989.4 TFLOP/s', '2.25 PFLOP/s' ('624 TOP/s' for integer ops)."""
    return _scaled(fps, "OP/s" if ops else "FLOP/s", _DEC_STEPS, 4, "g")


def fmt_flops(f: float) -> str:
    """'2.867e+13 FLOP'."""
    return f"{f:.3e} FLOP"


def fmt_time(s: float, digits: int = 2) -> str:
    """Seconds as 's', 'ms' or 'µs' with the unit ('—' when undefined)."""
    if not math.isfinite(s):
        return "—"
    if s == 0:
        return "0 s"
    if abs(s) >= 1.0:
        return f"{s:.{digits}f} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.{digits}f} ms"
    return f"{s * 1e6:.{digits}f} µs"


def fmt_ratio(x: float | None, digits: int = 3) -> str:
    """A speedup: '1.071×'; None or a non-finite value as an em dash."""
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}×"


def fmt_percent(x: float | None, digits: int = 1) -> str:
    """A fraction as '7.0 %'; None or a non-finite value as an em dash."""
    if x is None or not math.isfinite(x):
        return "—"
    text = f"{x * 100:.{digits}f} %"
    return text[1:] if text.startswith("-") and float(text[:-2]) == 0 else text     # never '-0.0 %'


def fmt_pair(before: float, after: float) -> str:
    """``before → after`` at the decimals of the more precise of the two, as a table prints them (a YAML 5.60
    is read as 5.6: "5.47 → 5.60", not "5.47 → 5.6")."""
    digits = max(len(f"{x:g}".partition(".")[2]) for x in (before, after))
    if "e" in f"{before:g}{after:g}":
        return f"{before:g} → {after:g}"
    return f"{before:.{digits}f} → {after:.{digits}f}"


def column_time(value: object, column: str) -> float:
    """A time from a table's column: a quantity ('12 ms'), or a bare number where the column's name carries the
    unit (``*_s``: seconds); a bare number elsewhere is refused, the hint naming both ways."""
    try:
        return parse(value, "time", bare_base=column.endswith("_s"))
    except UnitError as exc:
        hint = f" (or give it in the {column}_s column, in seconds)" if not column.endswith("_s") else ""
        raise UnitError(f"{exc}{hint}") from None
