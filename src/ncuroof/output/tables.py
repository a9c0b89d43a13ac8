"""Writing ncuroof's tables: CSV through pyarrow's writer, Parquet with the schema.

Every table (kernels, points, ranks, failures, ...) is declared in :mod:`ncuroof.schema`. Here a
table becomes a :class:`pyarrow.Table` with those dtypes, each field carrying its unit and meaning
in its field metadata, and the table carrying ``ncuroof.table``, ``ncuroof.schema_version``,
``ncuroof.version`` and ``ncuroof.inputs`` (JSON list of the input files) in its key-value
metadata. From there it is written as CSV (pyarrow's writer: several times faster than
:meth:`pandas.DataFrame.to_csv` on the float columns that dominate these tables, see
``scripts/bench_tables.py``) or Parquet (one file, or a dataset partitioned by input for
fleets). :func:`ncuroof.parser.saved.read_table` reads either back with the declared dtypes.

CSV layout: a header row, strings quoted, a missing value (NaN, None) an empty unquoted field,
an empty string ``""``, floats in the shortest form that reads back to the same double (a whole
float is written without ``.0``), booleans ``true``/``false``. :func:`pandas.read_csv` reads it
with the same values; :func:`ncuroof.parser.saved.read_table` also restores the dtypes and tells
None from ``""``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from .. import fmt, schema
from .._lazy import LazyModule
from .._version import __version__
from ..parser.saved import _PREFIX, PART, TABLES, _field, _text_columns
from ..schema import Column

pa, pacsv, pads, pq, pc = (
    LazyModule(f"pyarrow{m}") for m in ("", ".csv", ".dataset", ".parquet", ".compute")
)  # imported when a table is written

__all__ = [
    "FORMATS",
    "CSV_ROWS",
    "CSV_THREADS",
    "arrow_table",
    "csv_bytes",
    "parquet_bytes",
    "table_files",
    "dataset_writer",
    "csv_safe",
]

#: Output formats of ``ncuroof analyze --format``.
FORMATS = ("csv", "parquet")


def arrow_table(
    df: pd.DataFrame, columns: Mapping[str, Column], table: str, inputs: Sequence[str | Path] = ()
) -> pa.Table:
    """A table as a :class:`pyarrow.Table` with the declared schema and ncuroof's metadata.

    Parameters
    ----------
    df : DataFrame
        The table; it holds every column of ``columns`` (in any order) and may hold more (the
        launch table's ``tensor_<path>_*`` columns), whose type is inferred.
    columns : mapping of str to Column
        The declaration (:data:`ncuroof.schema.LAUNCHES`, ...): gives each field its Arrow type
        (string, int64, float64, bool) and ``unit``/``description`` field metadata.
    table : str
        The table's name (``kernels``, ``points``, ...), stored as ``ncuroof.table``.
    inputs : sequence of path
        The input files, stored as the JSON list ``ncuroof.inputs``.

    Returns
    -------
    pyarrow.Table
        Declared columns first in declaration order, then the others in ``df``'s order; NaN in
        float columns and None/NA in string columns become nulls. Key-value metadata:
        ``ncuroof.table``, ``ncuroof.schema_version`` (:data:`ncuroof.schema.SCHEMA_VERSION`),
        ``ncuroof.version``, ``ncuroof.inputs`` and pandas' own.

    Raises
    ------
    ValueError
        If a declared column is missing or does not convert to its type (a defect in ncuroof).
    """
    raw, target = _arrow_parts(df, columns, table, inputs)
    return raw.cast(target).replace_schema_metadata(target.metadata)


def _arrow_parts(
    df: pd.DataFrame,
    columns: Mapping[str, Column],
    table: str,
    inputs: Sequence[str | Path],
    pandas_meta: bool = True,
) -> tuple[pa.Table, pa.Schema]:
    """:func:`arrow_table` in two parts: the columns as Arrow converted them (text held as
    ``category`` still dictionary-encoded, :func:`ncuroof.schema.compact_text`) and the declared
    schema with the table's metadata, to cast to whole or a slice at a time. Without
    ``pandas_meta`` (a CSV file, which keeps no metadata) pandas' is left out (:func:
    `_pandas_metadata` converts a row of every text column: 0.1 s for a launch table)."""
    schema.check_columns(df, columns, table)
    order = list(columns) + [c for c in df.columns if c not in columns]
    # (df[order] copies the float columns: only when the order differs)
    text = schema.to_text(df if list(df.columns) == order else df[order], categories=True)
    # pandas' Arrow-backed strings keep every chunk of the concatenations that built them (one per
    # input, per read batch, ...); writers slow down per chunk, so make each column one array.
    raw = pa.Table.from_pandas(text, preserve_index=False).combine_chunks()
    fields = [_field(name, columns.get(name), raw.schema.field(name).type) for name in order]
    meta = {
        **((_pandas_metadata(text, columns) if pandas_meta else None) or raw.schema.metadata or {}),
        f"{_PREFIX}table": table,
        f"{_PREFIX}schema_version": str(schema.SCHEMA_VERSION),
        f"{_PREFIX}version": __version__,
        f"{_PREFIX}inputs": json.dumps([fmt.path_text(p) for p in inputs]),
    }
    return raw, pa.schema(fields, metadata=meta)


def _pandas_metadata(text: pd.DataFrame, columns: Mapping[str, Column]) -> dict | None:
    """pandas' metadata of ``text`` as if its ``category`` text columns had their declared dtype
    (``string``; else their categories' dtype), so that a file does not depend on how the table
    was held in memory; None when no column is a category."""
    cats = {
        n: columns[n].dtype if n in columns and columns[n].dtype == "string" else d.categories.dtype
        for n, d in text.dtypes.items()
        if isinstance(d, pd.CategoricalDtype)
    }
    if not cats:
        return None
    # the metadata of a column does not depend on its values beyond its dtype: one row tells
    first = text.iloc[:1].astype(cats)
    return pa.Table.from_pandas(first, preserve_index=False).schema.metadata


def csv_bytes(table: pa.Table) -> bytes:
    """The table as CSV (layout in the module docstring), through :func:`pyarrow.csv.write_csv`."""
    sink = pa.BufferOutputStream()
    pacsv.write_csv(table, sink)
    return sink.getvalue().to_pybytes()


def parquet_bytes(table: pa.Table) -> bytes:
    """The table as one Parquet file (zstd), schema and key-value metadata included."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def _input_keys(sources: pa.ChunkedArray) -> pa.Array:
    keys = {
        v: hashlib.sha1(str(v).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        for v in sources.unique().to_pylist()
    }
    return pa.array([keys[v] for v in sources.to_pylist()], type=pa.string())


def dataset_writer(table: pa.Table, partition: str = "source") -> Callable[[Path], None]:
    """A writer of ``table`` as a Parquet dataset directory partitioned by input.

    Parameters
    ----------
    table : pyarrow.Table
        From :func:`arrow_table`.
    partition : str, default 'source'
        The column telling the inputs apart: one hive directory ``input_key=<key>`` per value,
        the key a 16-hex-digit hash of the value (:data:`~ncuroof.parser.saved.PART`); the value
        itself stays a column of the files (an input path of any length costs no long directory
        name).

    Returns
    -------
    callable
        ``write(path)`` creates the dataset directory ``path`` (see
        :func:`pyarrow.dataset.write_dataset`); every file keeps the table's metadata. For
        :func:`ncuroof.output.folder.write_outputs`.
    """
    keyed = table.append_column(PART, _input_keys(table.column(partition))).replace_schema_metadata(
        table.schema.metadata
    )

    def write(path: Path) -> None:
        pads.write_dataset(
            keyed,
            path,
            format="parquet",
            partitioning=[PART],
            partitioning_flavor="hive",
            basename_template="part-{i}.parquet",
            existing_data_behavior="error",
            file_options=pads.ParquetFileFormat().make_write_options(compression="zstd"),
        )

    return write


def table_files(
    tables: Mapping[str, pd.DataFrame],
    formats: Sequence[str] = ("csv",),
    inputs: Sequence[str | Path] = (),
    dataset: bool = False,
    declared: Mapping[str, Mapping[str, Column]] | None = None,
) -> dict[str, bytes | Callable[[Path], None]]:
    """The output files of some tables, for :func:`ncuroof.output.folder.write_outputs`.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Table name (a key of :data:`~ncuroof.parser.saved.TABLES`) to table.
    formats : sequence of {'csv', 'parquet'}, default ('csv',)
        ``csv`` writes ``<name>.csv``; ``parquet`` writes ``<name>.parquet``.
    inputs : sequence of path
        The input files (Parquet metadata).
    dataset : bool, default False
        Write ``<name>.parquet`` of the tables with a ``source`` column as a directory partitioned
        by input (:func:`dataset_writer`) instead of one file: a fleet's output.
    declared : mapping, optional
        Table name to its declared columns (default :data:`~ncuroof.parser.saved.TABLES`;
        ``analyze`` passes its views', :func:`ncuroof.views.declared`).

    Returns
    -------
    dict
        File name to writer: ``write(path)`` streams the table to ``path`` (no copy of the file is
        held in memory), for :func:`ncuroof.output.folder.write_outputs`.

    Raises
    ------
    ValueError
        For an unknown format or table name.
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"formats must be among {', '.join(FORMATS)}, not {list(formats)!r}")
    out: dict[str, bytes | Callable[[Path], None]] = {}
    for name, df in tables.items():
        columns = (declared or TABLES)[name]
        schema.check_columns(df, columns, name)
        # Each writer converts its table when it is called: one Arrow copy at a time, released
        # when its file is written.
        args = (df, columns, name, inputs)
        if "csv" in formats:
            out[f"{name}.csv"] = functools.partial(_write_csv, *args)
        if "parquet" in formats:
            part = dataset and "source" in columns and len(df) > 0
            out[f"{name}.parquet"] = functools.partial(
                _write_dataset if part else _write_parquet, *args
            )
    return out


#: Rows cast to their declared types (text decoded) and formatted as CSV at a time.
CSV_ROWS = 2048
#: Slices formatted at once, in threads (pyarrow formats without the GIL): the cores this machine
#: has, at most 2 (each holds a slice's CSV text, ~4 MB for a launch table).
CSV_THREADS = max(1, min(2, os.cpu_count() or 1))


def _write_csv(
    df: pd.DataFrame,
    columns: Mapping[str, Column],
    table: str,
    inputs: Sequence[str | Path],
    path: Path,
) -> None:
    """Write ``df`` as CSV (:func:`csv_safe`) to ``path``, :data:`CSV_ROWS` rows at a time: text
    held as ``category`` is decoded a slice at a time, never the whole column; slices are
    formatted in :data:`CSV_THREADS` threads and written in order (the bytes of one
    :func:`pyarrow.csv.write_csv` of the whole table)."""
    raw, target = _arrow_parts(df, columns, table, inputs, pandas_meta=False)
    raw = csv_safe(raw)

    def text(start: int) -> pa.Buffer:
        sink = pa.BufferOutputStream()
        options = pacsv.WriteOptions(include_header=start == 0)
        pacsv.write_csv(raw.slice(start, CSV_ROWS).cast(target), sink, write_options=options)
        return sink.getvalue()

    if not len(raw):
        with pacsv.CSVWriter(path, target):  # the header alone
            return
    with open(path, "wb") as out, ThreadPoolExecutor(CSV_THREADS) as pool:
        pending: deque[Future[pa.Buffer]] = deque()
        for start in range(0, len(raw), CSV_ROWS):
            pending.append(pool.submit(text, start))
            if len(pending) > CSV_THREADS:
                out.write(pending.popleft().result())
        while pending:
            out.write(pending.popleft().result())


def _write_parquet(
    df: pd.DataFrame,
    columns: Mapping[str, Column],
    table: str,
    inputs: Sequence[str | Path],
    path: Path,
) -> None:
    pq.write_table(arrow_table(df, columns, table, inputs), path, compression="zstd")


def _write_dataset(
    df: pd.DataFrame,
    columns: Mapping[str, Column],
    table: str,
    inputs: Sequence[str | Path],
    path: Path,
) -> None:
    dataset_writer(arrow_table(df, columns, table, inputs))(path)


def csv_safe(table: pa.Table) -> pa.Table:
    """The table with every text cell a spreadsheet would run as a formula behind a ``'``, and
    every control character of a text cell made visible (:func:`_printable`).

    The OWASP CSV-injection guidance, as :func:`ncuroof.fmt.csv_cell` (``=HYPERLINK(...)`` ->
    ``'=HYPERLINK(...)``; a cell already beginning with ``'`` gets one more); for the CSV files
    only: Parquet keeps the raw value, and :func:`~ncuroof.parser.saved.read_table` strips the
    ``'`` again. A dictionary-encoded column has its dictionary escaped (the cells keep their
    codes).
    """
    for i in _text_columns(table):
        col = table.column(i)
        if pa.types.is_dictionary(col.type):
            chunks = [
                pa.DictionaryArray.from_arrays(c.indices, _escaped(c.dictionary))
                for c in col.chunks
            ]
            table = table.set_column(i, table.schema.field(i), pa.chunked_array(chunks, col.type))
        else:
            table = table.set_column(i, table.schema.field(i), _escaped(col))
    return table


def _printable(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The text cells with their control characters made visible as the terminal shows them
    (:func:`ncuroof.fmt.printable`: ``ESC`` -> ``\\x1b``; tab and newline kept, the CSV quotes
    them): a written file is as safe to ``cat`` as the terminal output. Done on the distinct
    values that hold one, then taken back into place."""
    values = pc.unique(col)
    bad = values.filter(pc.match_substring_regex(values, fmt.CONTROL_RE2))
    if not len(bad):
        return col
    clean = pa.array([fmt.printable(v) for v in bad.to_pylist()], col.type)
    where = pc.index_in(col, value_set=bad)
    return pc.if_else(pc.is_valid(where), pc.take(clean, where), col)


def _escaped(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`csv_safe` of one text column (``col`` itself when no cell needs a change)."""
    # The rules run on the column's distinct values (text columns repeat: a kernel name per
    # launch), then the cells holding a formula-like value are found by hashing.
    col = _printable(col)
    values = pc.unique(col)
    signed = pc.and_(
        pc.match_substring_regex(values, fmt.CSV_SIGNED),
        pc.invert(pc.match_substring_regex(values, fmt.CSV_SIGNED_NUMBER)),
    )
    formulas = values.filter(pc.or_(pc.match_substring_regex(values, fmt.CSV_FORMULA), signed))
    if not len(formulas):
        return col
    mask = pc.is_in(col, value_set=formulas)
    quote, none = pa.scalar("'", col.type), pa.scalar("", col.type)
    return pc.if_else(mask, pc.binary_join_element_wise(quote, col, none), col)
