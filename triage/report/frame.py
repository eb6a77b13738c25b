"""A sweep as data: every cell one row, columns named as the JSON cells' fields, flattened with dots.

The rows arrive as a stream of column chunks (a sweep prices a chunk at a time) and each chunk is written as
it comes: a Parquet row group, or CSV rows under one header. CSV is written by pyarrow's C++ writer when the
``frame`` extra is installed (strings quoted, floats in their shortest form), else by the standard library's
csv module (the same columns and values, formatted the Python way; slower); Parquet needs pyarrow. Memory is
one chunk's, whatever the number of rows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

import numpy as np

from ..errors import Problem, UserError

FORMATS = ("csv", "parquet")
_ROWS = 65_536              # rows the standard library's writer formats at once

Columns = dict[str, np.ndarray]


def _pyarrow() -> Any:
    try:
        import pyarrow  # optional: pip install 'llm-triage[frame]'
    except ImportError:
        return None
    return pyarrow


def _table(columns: Columns, schema: Any = None) -> Any:
    """A chunk as an Arrow table (NaN → null, an empty field), cast to the first chunk's schema so that every
    row group agrees (a column of nulls in one chunk is still a float column)."""
    pa = _pyarrow()
    table = pa.table({k: pa.array(v, from_pandas=True) for k, v in columns.items()})
    return table if schema is None else table.cast(schema)


def _same_columns(first: list[str], chunk: Columns) -> None:
    if list(chunk) != first:
        raise RuntimeError("internal inconsistency: a sweep chunk has other columns than the first")


def _csv_stdlib(chunks: Iterable[Columns], fh: BinaryIO) -> None:
    """Rows through csv.writer, ``_ROWS`` at a time; NaN (undefined) as an empty field."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    names: list[str] | None = None
    for columns in chunks:
        if names is None:
            names = list(columns)
            writer.writerow(names)
        _same_columns(names, columns)
        n = len(next(iter(columns.values())))
        for start in range(0, n, _ROWS):
            rows = []
            for name in names:
                a = columns[name][start:start + _ROWS]
                if a.dtype.kind == "f" and not np.isfinite(a).all():
                    a = np.where(np.isfinite(a), a.astype(object), "")
                elif a.dtype.kind == "b":
                    a = np.where(a, "true", "false")
                rows.append(a.tolist())
            writer.writerows(zip(*rows, strict=True))
            del rows, a
        del columns                   # unbound before the next chunk is priced: memory is one chunk's
    text.detach()


def _arrow(chunks: Iterable[Columns], fh: BinaryIO, open_writer: Callable[[BinaryIO, Any], Any],
           bools_as_text: bool) -> None:
    """Each chunk as one Arrow table through one writer opened on the first chunk's schema (a Parquet row
    group, or CSV rows under one header); every later chunk is cast to that schema."""
    out, schema, names = None, None, []
    for columns in chunks:
        table = _table({k: np.where(v, "true", "false") if bools_as_text and v.dtype.kind == "b" else v
                        for k, v in columns.items()}, schema)
        if out is None:
            names, schema = list(columns), table.schema
            out = open_writer(fh, schema)
        _same_columns(names, columns)
        out.write_table(table)
        del columns, table            # unbound before the next chunk is priced: memory is one chunk's
    if out is not None:
        out.close()


def _parquet_writer(fh: BinaryIO, schema: Any) -> Any:
    import pyarrow.parquet as pq

    # dictionary pages for the text columns only: a float column almost never repeats, and trying costs a
    # third of the write (bench/bench.py)
    return pq.ParquetWriter(fh, schema, use_dictionary=[f.name for f in schema if f.type == "string"])


def _csv_writer(fh: BinaryIO, schema: Any) -> Any:
    import pyarrow.csv as pcsv

    return pcsv.CSVWriter(fh, schema, write_options=pcsv.WriteOptions(quoting_style="needed"))


def writer(chunks: Iterable[Columns], fmt: str) -> Callable[[BinaryIO], None]:
    """A function that streams the column chunks into a binary file as ``fmt`` ('csv' or 'parquet')."""
    pa = _pyarrow()
    if fmt == "parquet":
        if pa is None:
            raise UserError([Problem("--output", path="", message=(
                "Parquet needs pyarrow: pip install 'llm-triage[frame]' (or write .csv)"))])
        return lambda fh: _arrow(chunks, fh, _parquet_writer, bools_as_text=False)
    if pa is None:
        return lambda fh: _csv_stdlib(chunks, fh)
    return lambda fh: _arrow(chunks, fh, _csv_writer, bools_as_text=True)
