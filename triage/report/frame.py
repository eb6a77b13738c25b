"""A sweep as data: every cell one row, columns named as the JSON cells' fields, flattened with dots.

CSV is written by pyarrow's C++ writer when the ``frame`` extra is installed
(strings quoted, floats in its shortest form), else by the standard library's
csv module (the same columns and values, formatted the Python way; slower);
Parquet needs pyarrow. Both stream into the output file: no per-cell Python objects beyond
one row at a time.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..errors import Problem, UserError

FORMATS = ("csv", "parquet")
_CHUNK = 65_536


def _pyarrow() -> Any:
    try:
        import pyarrow  # optional: pip install 'llm-triage[frame]'
    except ImportError:
        return None
    return pyarrow


def _table(columns: dict[str, np.ndarray]) -> Any:
    pa = _pyarrow()
    return pa.table({k: pa.array(v, from_pandas=True) for k, v in columns.items()})   # NaN → null (empty)


def _csv_stdlib(columns: dict[str, np.ndarray], fh: BinaryIO) -> None:
    """Rows through csv.writer, a chunk of rows at a time; NaN (undefined) as an empty field."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    names = list(columns)
    writer.writerow(names)
    n = len(next(iter(columns.values())))
    for start in range(0, n, _CHUNK):
        chunk = []
        for name in names:
            a = columns[name][start:start + _CHUNK]
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                a = np.where(np.isfinite(a), a.astype(object), "")
            elif a.dtype.kind == "b":
                a = np.where(a, "true", "false")
            chunk.append(a.tolist())
        writer.writerows(zip(*chunk, strict=True))
    text.detach()


def writer(columns: dict[str, np.ndarray], fmt: str) -> Callable[[BinaryIO], None]:
    """A function that streams the columns into a binary file as ``fmt`` ('csv' or 'parquet')."""
    pa = _pyarrow()
    if fmt == "parquet":
        if pa is None:
            raise UserError([Problem("--output", path="", message=(
                "Parquet needs pyarrow: pip install 'llm-triage[frame]' (or write .csv)"))])

        def parquet(fh: BinaryIO) -> None:
            import pyarrow.parquet as pq

            pq.write_table(_table(columns), fh)
        return parquet
    if pa is None:
        return lambda fh: _csv_stdlib(columns, fh)

    def arrow_csv(fh: BinaryIO) -> None:
        import pyarrow.csv as pcsv

        table = _table({k: np.where(v, "true", "false") if v.dtype.kind == "b" else v for k, v in columns.items()})
        pcsv.write_csv(table, fh, pcsv.WriteOptions(quoting_style="needed"))
    return arrow_csv
