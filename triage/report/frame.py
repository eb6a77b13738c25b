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
from collections.abc import Callable, Iterable, Iterator
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


def _one_at_a_time(chunks: Iterable[Columns]) -> Iterator[Columns]:
    """The chunks, each handed out of a list the generator empties, so no name here still holds one while
    the next is priced (a for-loop's variable would keep two chunks alive at once)."""
    it = iter(chunks)
    while True:
        box: list[Columns] = []
        for chunk in it:          # one item, then out: the loop's name is rebound before the yield
            box.append(chunk)
            del chunk
            break
        if not box:
            return
        yield box.pop()


def _csv_stdlib(chunks: Iterable[Columns], fh: BinaryIO) -> None:
    """Rows through csv.writer, ``_ROWS`` at a time; NaN (undefined) as an empty field."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text, lineterminator="\n")
    names: list[str] | None = None
    for columns in _one_at_a_time(chunks):
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
        del columns                   # this chunk goes before the next is priced, as in the other writers
    text.detach()


def _parquet(chunks: Iterable[Columns], fh: BinaryIO) -> None:
    """One row group per chunk, through one ParquetWriter (the schema of the first)."""
    import pyarrow.parquet as pq

    out, schema, names = None, None, []
    for columns in _one_at_a_time(chunks):
        table = _table(columns, schema)
        if out is None:
            names, schema = list(columns), table.schema
            # dictionary pages for the text columns only: a float column almost never repeats, and trying
            # costs a third of the write (bench/bench.py)
            text = [f.name for f in schema if f.type == "string"]
            out = pq.ParquetWriter(fh, schema, use_dictionary=text)
        _same_columns(names, columns)
        out.write_table(table)
        del columns, table
    if out is not None:
        out.close()


def _arrow_csv(chunks: Iterable[Columns], fh: BinaryIO) -> None:
    """pyarrow's CSV writer, one batch per chunk under one header; booleans as true/false."""
    import pyarrow.csv as pcsv

    out, schema, names = None, None, []
    for columns in _one_at_a_time(chunks):
        table = _table({k: np.where(v, "true", "false") if v.dtype.kind == "b" else v for k, v in columns.items()},
                       schema)
        if out is None:
            names, schema = list(columns), table.schema
            out = pcsv.CSVWriter(fh, schema, write_options=pcsv.WriteOptions(quoting_style="needed"))
        _same_columns(names, columns)
        out.write_table(table)
        del columns, table
    if out is not None:
        out.close()


def writer(chunks: Iterable[Columns], fmt: str) -> Callable[[BinaryIO], None]:
    """A function that streams the column chunks into a binary file as ``fmt`` ('csv' or 'parquet')."""
    pa = _pyarrow()
    if fmt == "parquet":
        if pa is None:
            raise UserError([Problem("--output", path="", message=(
                "Parquet needs pyarrow: pip install 'llm-triage[frame]' (or write .csv)"))])
        return lambda fh: _parquet(chunks, fh)
    if pa is None:
        return lambda fh: _csv_stdlib(chunks, fh)
    return lambda fh: _arrow_csv(chunks, fh)
