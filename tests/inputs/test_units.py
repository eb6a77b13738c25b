"""Units: decimal and binary prefixes are exact and never confused."""

import math
import re

import pytest

from triage.inputs import units


@pytest.mark.parametrize("text,kind,expected", [
    ("80 GiB", "bytes", 80 * 2**30),
    ("80 GB", "bytes", 80e9),
    ("2 TB/s", "bandwidth", 2e12),
    ("2039 GB/s", "bandwidth", 2.039e12),        # decimal: never 2039 * 2**30
    ("989 TFLOP/s", "compute", 989e12),
    ("624 TOP/s", "compute", 624e12),
    ("50 ms", "time", 0.05),
    ("0.5ms", "time", 0.0005),
    ("3e2 us", "time", 3e-4),
    ("2.9e13 FLOP", "flops", 2.9e13),
    ("512 MiB", "bytes", 512 * 2**20),
])
def test_parse_exact(text, kind, expected):
    assert units.parse(text, kind) == pytest.approx(expected, rel=1e-15)


def test_zero_and_documented_base_unit_formats_read_bare_numbers():
    assert units.parse(0, "time", allow_zero=True) == 0.0            # zero reads the same in any unit
    assert units.parse(0.05, "time", bare_base=True) == 0.05      # a format that documents seconds


@pytest.mark.parametrize("value,kind,hint", [
    (50, "time", "50 → '50 ms'?"), ("50", "time", "50 → '50 ms'?"), (0.05, "time", "0.05 → '0.05 s' or '50 ms'?"),
    # the newcomer's L40S entry: 'memory: 48' was 48 B and every cell DOES-NOT-FIT
    (48, "bytes", "a size needs its unit: 48 → '48 GB' or '48 GiB'?"),
    (864, "bandwidth", "a bandwidth needs its unit: 864 → '864 GB/s'?"),
    (3.35, "bandwidth", "3.35 → '3.35 TB/s'?"), (2039000000000, "bandwidth", "'2.039e+12 B/s'?"),
    (362, "compute", "a throughput needs its unit: 362 → '362 TFLOP/s'?"),
    (2.9e13, "flops", "'2.9e+13 FLOP'?"),
])
def test_a_quantity_is_never_read_from_a_bare_number(value, kind, hint):
    with pytest.raises(units.UnitError, match=re.escape(hint)):
        units.parse(value, kind)


def test_binary_gib_differs_from_decimal_gb_by_7_percent():
    assert units.parse("1 GiB", "bytes") / units.parse("1 GB", "bytes") == pytest.approx(1.073741824)


@pytest.mark.parametrize("text,kind,message", [
    ("80 GiBs", "bytes", "unknown size unit 'GiBs' in '80 GiBs'"),
    ("2 TB", "bandwidth", "'2 TB' is a size; expected a bandwidth like '2039 GB/s' or '3.35 TB/s'"),
    ("0 GiB", "bytes", "expected a size > 0, got '0 GiB'"),
    ("-2 ms", "time", "expected a time > 0, got '-2 ms'"),
    ("1e30 GiB", "bytes", "expected a size of at most 1 EB, got '1e30 GiB'"),
    ("fast", "bandwidth", "expected a bandwidth like '2039 GB/s' or '3.35 TB/s', got 'fast'"),
    ("50 parsecs", "time", "unknown time unit 'parsecs' in '50 parsecs'"),
])
def test_unknown_units_rejected_clearly(text, kind, message):
    with pytest.raises(units.UnitError) as err:
        units.parse(text, kind)
    assert str(err.value).startswith(message)


def test_zero_only_where_meaningful():
    assert units.parse("0 ms", "time", allow_zero=True) == 0.0
    with pytest.raises(units.UnitError):
        units.parse("0 ms", "time")


def test_rejects_booleans_and_non_finite():
    with pytest.raises(units.UnitError):
        units.parse(True, "bytes")
    with pytest.raises(units.UnitError):
        units.parse(math.inf, "bytes")


def test_every_printed_quantity_has_its_unit():
    assert units.fmt_bytes(15.3628e9) == "15.36 GB"
    assert units.fmt_gib(2**31) == "2.00 GiB"
    assert units.fmt_bandwidth(2.039e12) == "2.039 TB/s"
    assert units.fmt_compute(989.4e12) == "989.4 TFLOP/s"
    assert units.fmt_compute(624e12, ops=True) == "624 TOP/s"
    assert units.fmt_compute(2250e12) == "2.25 PFLOP/s"
    assert units.fmt_bandwidth(864e9) == "864 GB/s"
    assert units.fmt_time(0.007534) == "7.53 ms"
    assert units.fmt_time(2.5e-5) == "25.00 µs"
    assert units.fmt_time(0) == "0 s"
    assert units.fmt_ratio(1.0712) == "1.071×"
    assert units.fmt_percent(0.07) == "7.0 %"
    assert units.fmt_ratio(None) == "—"
