"""Writing and reading ncuroof's tables: CSV through pyarrow's writer, Parquet with the schema.

Every table (kernels, points, ranks, failures, ...) is declared in :mod:`ncuroof.schema`. Here a
table becomes a :class:`pyarrow.Table` with those dtypes, each field carrying its unit and meaning
in its field metadata, and the table carrying ``ncuroof.table``, ``ncuroof.schema_version``,
``ncuroof.version`` and ``ncuroof.inputs`` (JSON list of the input files) in its key-value
metadata. From there it is written as CSV (pyarrow's writer: several times faster than
:meth:`pandas.DataFrame.to_csv` on the float columns that dominate these tables, see
``scripts/bench_tables_io.py``) or Parquet (one file, or a dataset partitioned by input for
fleets). :func:`read_table` reads either back with the declared dtypes.

CSV layout: a header row, strings quoted, a missing value (NaN, None) an empty unquoted field,
an empty string ``""``, floats in the shortest form that reads back to the same double (a whole
float is written without ``.0``), booleans ``true``/``false``. :func:`pandas.read_csv` reads it
with the same values; :func:`read_table` also restores the dtypes and tells None from ``""``.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from .. import fmt, schema
from .._lazy import LazyModule
from .._version import __version__
from ..catalog import limits, over_limit
from ..errors import InputError
from ..schema import Column
from .files import regular_file

pa, pacsv, pads, pq, pc = (
    LazyModule(f"pyarrow{m}") for m in ("", ".csv", ".dataset", ".parquet", ".compute")
)  # imported when a table is written or read

__all__ = [
    "FORMATS",
    "TABLES",
    "MANIFEST",
    "arrow_table",
    "csv_bytes",
    "read_saved_launches",
    "check_launch_values",
    "parquet_bytes",
    "table_files",
    "dataset_writer",
    "read_table",
    "saved_launches",
    "read_manifest",
    "manifest_text",
    "csv_safe",
    "release_memory",
    "use_returning_pool",
]

#: The file in every output folder listing the files ncuroof wrote there (JSON
#: ``{"files": [...]}``): the only ones a later run replaces or removes, and the only ones read
#: back from the folder.
MANIFEST = "ncuroof-manifest.json"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")

#: Output formats of ``ncuroof analyze --format``.
FORMATS = ("csv", "parquet")

#: File stem -> declared columns of each table ncuroof writes (:data:`ncuroof.schema.TABLES`).
TABLES: dict[str, dict[str, Column]] = schema.TABLES

# List columns (schema.LIST_COLUMNS) are stored as their text (schema.to_text) and parsed back.
_ARROW_TYPES = {
    "string": "string",
    "int64": "int64",
    "float64": "float64",
    "bool": "bool_",
    "object": "string",
    "category": "string",
}


def _arrow_type(dtype: str) -> pa.DataType:
    """The Arrow type of a declared dtype (:class:`~ncuroof.schema.Column`)."""
    return getattr(pa, _ARROW_TYPES[dtype])()


_PREFIX = "ncuroof."


def _field(name: str, col: Column | None, inferred: pa.DataType) -> pa.Field:
    if col is None:
        return pa.field(name, pa.string() if pa.types.is_large_string(inferred) else inferred)
    return pa.field(
        name, _arrow_type(col.dtype), metadata={"unit": col.unit, "description": col.description}
    )


def arrow_table(
    df: pd.DataFrame, columns: Mapping[str, Column], table: str, inputs: Sequence[str | Path] = ()
) -> pa.Table:
    """A table as a :class:`pyarrow.Table` with the declared schema and ncuroof's metadata.

    Parameters
    ----------
    df : DataFrame
        The table; it holds every column of ``columns`` (in any order) and may hold more (the
        kernels table's ``tensor_<path>_*`` columns), whose type is inferred.
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


def release_memory() -> None:
    """Give the memory freed so far back to the system: Arrow's pool (its unused pages) and, with
    glibc, ``malloc_trim``. The two allocators do not reuse each other's free pages, so a phase
    that allocates with one (writing the tables: Arrow) would otherwise add to the other's free
    pages (the analysis: numpy and Python) in the peak resident memory."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError, TypeError):  # not glibc (Windows: no CDLL(None))
        pass


#: Milliseconds jemalloc keeps freed pages before it gives them back (its default is 1 s). Writing
#: a table of long names frees its slices faster than that: gene-pop x 100,000 (5.5 kB demangled
#: names, 1.3 GB of CSV) peaked at 805 MB while writing, 594 MB with 50 ms; 0 ms gave 480 MB but
#: doubled the writing time of the ESMM benchmark (0.6 -> 1.05 s); 50 ms costs it nothing
#: measurable.
JEMALLOC_DECAY_MS = 50


def use_returning_pool() -> None:
    """Make Arrow allocate from its jemalloc pool in this process (the decoding workers it starts
    take the same pool: :mod:`ncuroof.parser.ncu_rep.parallel`), when this pyarrow has one and the
    user chose no pool (``ARROW_DEFAULT_MEMORY_POOL``). The environment is left as it is:
    ``ncuroof profile`` runs the user's program with it.

    For the command line (one analysis per process): jemalloc gives freed pages back to the system
    within a second, where the default pool (mimalloc) keeps them, so a phase's Arrow copies do not
    stay in the resident memory of the phases after it (~50 MB less peak on 100,000 launches),
    within :data:`JEMALLOC_DECAY_MS`.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return
    pa.set_memory_pool(pool)
    pa.jemalloc_set_decay_ms(JEMALLOC_DECAY_MS)


def _check_columns(df: pd.DataFrame, columns: Mapping[str, Column], table: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{table} table lacks columns {missing}")


def _arrow_parts(
    df: pd.DataFrame, columns: Mapping[str, Column], table: str, inputs: Sequence[str | Path]
) -> tuple[pa.Table, pa.Schema]:
    """:func:`arrow_table` in two parts: the columns as Arrow converted them (text held as
    ``category`` still dictionary-encoded, :func:`ncuroof.schema.compact_text`) and the declared
    schema with the table's metadata, to cast to whole or a slice at a time."""
    _check_columns(df, columns, table)
    order = list(columns) + [c for c in df.columns if c not in columns]
    # (df[order] copies the float columns: only when the order differs)
    text = schema.to_text(df if list(df.columns) == order else df[order], categories=True)
    # pandas' Arrow-backed strings keep every chunk of the concatenations that built them (one per
    # input, per read batch, ...); writers slow down per chunk, so make each column one array.
    raw = pa.Table.from_pandas(text, preserve_index=False).combine_chunks()
    fields = [_field(name, columns.get(name), raw.schema.field(name).type) for name in order]
    meta = {
        **(_pandas_metadata(text, columns) or raw.schema.metadata or {}),
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


#: The column a dataset is partitioned by: a short key of each input (a hash of its ``source``), so
#: that a long input path never makes a directory name the file system refuses (errno 36).
PART = "input_key"


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
        the key a 16-hex-digit hash of the value (:data:`PART`); the value itself stays a column
        of the files (an input path of any length costs no long directory name).

    Returns
    -------
    callable
        ``write(path)`` creates the dataset directory ``path`` (see
        :func:`pyarrow.dataset.write_dataset`); every file keeps the table's metadata. For
        :func:`ncuroof.render.page.write_outputs`.
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
    """The output files of some tables, for :func:`ncuroof.render.page.write_outputs`.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Table name (a key of :data:`TABLES`) to table.
    formats : sequence of {'csv', 'parquet'}, default ('csv',)
        ``csv`` writes ``<name>.csv``; ``parquet`` writes ``<name>.parquet``.
    inputs : sequence of path
        The input files (Parquet metadata).
    dataset : bool, default False
        Write ``<name>.parquet`` of the tables with a ``source`` column as a directory partitioned
        by input (:func:`dataset_writer`) instead of one file: a fleet's output.
    declared : mapping, optional
        Table name to its declared columns (default :data:`TABLES`; ``analyze`` passes its views',
        :func:`ncuroof.views.declared`).

    Returns
    -------
    dict
        File name to writer: ``write(path)`` streams the table to ``path`` (no copy of the file is
        held in memory), for :func:`ncuroof.render.page.write_outputs`.

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
        _check_columns(df, columns, name)
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
    raw, target = _arrow_parts(df, columns, table, inputs)
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


def _text_columns(table: pa.Table) -> list[int]:
    """The text columns of ``table``: string, large string or dictionary-encoded text."""
    return [
        i
        for i, f in enumerate(table.schema)
        if _is_text(f.type) or (pa.types.is_dictionary(f.type) and _is_text(f.type.value_type))
    ]


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def csv_safe(table: pa.Table) -> pa.Table:
    """The table with every text cell a spreadsheet would run as a formula behind a ``'``, and
    every control character of a text cell made visible (:func:`_printable`).

    The OWASP CSV-injection guidance, as :func:`ncuroof.fmt.csv_cell` (``=HYPERLINK(...)`` ->
    ``'=HYPERLINK(...)``; a cell already beginning with ``'`` gets one more); for the CSV files
    only: Parquet keeps the raw value, and :func:`read_table` strips the ``'`` again. A
    dictionary-encoded column has its dictionary escaped (the cells keep their codes).
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


def _csv_raw(table: pa.Table) -> pa.Table:
    """The inverse of :func:`csv_safe`: one leading ``'`` stripped from the text cells."""
    for i in _text_columns(table):
        col = table.column(i)
        quoted = pc.starts_with(col, "'")
        if pc.any(quoted).as_py():
            table = table.set_column(
                i, table.schema.field(i), pc.if_else(quoted, pc.utf8_slice_codeunits(col, 1), col)
            )
    return table


def _to_pandas(t: pa.Table, columns: Mapping[str, Column] | None) -> pd.DataFrame:
    df = t.to_pandas()
    if columns:
        df = schema.from_text(
            df.astype({n: c.dtype for n, c in columns.items() if n in df.columns})
        )
        if columns is schema.LAUNCHES or columns is schema.POINTS:  # as validate_* holds them
            df = schema.compact_text(df, columns)
    df.attrs["units"] = {
        f.name: f.metadata[b"unit"].decode()
        for f in t.schema
        if f.metadata and b"unit" in f.metadata
    }
    meta = {
        k.decode(): v.decode()
        for k, v in (t.schema.metadata or {}).items()
        if k.startswith(_PREFIX.encode())
    }
    df.attrs["inputs"] = json.loads(meta.get(f"{_PREFIX}inputs", "[]"))
    df.attrs["schema_version"] = int(meta.get(f"{_PREFIX}schema_version", schema.SCHEMA_VERSION))
    return df


def _read_parquet(path: Path) -> pa.Table:
    if path.is_file():
        return pq.read_table(path)
    data = pads.dataset(path, format="parquet", partitioning="hive")
    for part in data.files:  # a FIFO or device among the parts would block or never end
        _saved_file(part)
    first = pq.read_schema(data.files[0]) if data.files else data.schema
    meta = first.metadata or {}
    declared = TABLES.get(meta.get(f"{_PREFIX}table".encode(), path.stem.encode()).decode(), {})
    t = data.to_table()
    # The partition column is in the directory names, not the files: put it back in its place (a
    # dataset partitioned by source), or drop the input key (one partitioned by PART).
    names = [n for n in declared if n in t.column_names] + [
        n for n in first.names if n not in declared and n != PART
    ]
    fields = [
        first.field(n) if n in first.names else _field(n, declared[n], t.schema.field(n).type)
        for n in names
    ]
    t = t.select(names).cast(pa.schema(fields))
    if "source" in names and len(t):
        # Partitions come back in directory order: put them back in input order.
        inputs = json.loads(meta.get(f"{_PREFIX}inputs".encode(), b"[]"))
        rank = pd.Series(range(len(inputs)), index=inputs, dtype="int64").groupby(level=0).min()
        at = rank.reindex(t.column("source").to_pandas()).fillna(len(inputs)).to_numpy()
        t = t.take(pa.array(np.argsort(at, kind="stable")))
    return t.replace_schema_metadata(meta)


def _saved_file(path: str | Path) -> Path:
    """A file of a saved folder through the reading gate: regular, at most
    ``[limits].saved_table_bytes``."""
    path = regular_file(path, "pass an ncuroof output folder or the table files it holds")
    if path.stat().st_size > limits()["saved_table_bytes"]:
        raise InputError(over_limit("saved_table_bytes", "is larger than a saved table"), path)
    return path


def read_table(path: str | Path, table: str | None = None) -> pd.DataFrame:
    """Read a table written by ncuroof: a ``.parquet`` file or dataset directory, or a ``.csv``.

    Parameters
    ----------
    path : path
        ``<name>.parquet`` (file, or a directory partitioned by input) or ``<name>.csv``.
    table : str, optional
        Key of :data:`TABLES` giving the declared dtypes; default from the Parquet metadata or
        the file stem.

    Returns
    -------
    DataFrame
        The table with its declared dtypes (extra columns as stored). ``attrs``: ``units``
        (column -> SI unit, Parquet only), ``inputs`` (input files) and ``schema_version``.

    Raises
    ------
    InputError
        When the file is missing, is not a table ncuroof wrote or has a newer schema version.
    """
    path = Path(path)
    if not (path.is_dir() and path.suffix == ".parquet"):
        _saved_file(path)
    try:
        if path.suffix == ".csv":
            columns = TABLES.get(table or path.stem, {})
            opts = pacsv.ConvertOptions(
                column_types={n: _arrow_type(c.dtype) for n, c in columns.items()},
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            )
            return _checked_pandas(
                _csv_raw(pacsv.read_csv(path, convert_options=opts)), columns, path
            )
        t = _read_parquet(path)
    except (pa.ArrowInvalid, OSError, IndexError) as exc:
        raise InputError(
            f"is not a table ncuroof wrote ({str(exc).splitlines()[0]}); pass an ncuroof output",
            path,
        ) from exc
    meta = t.schema.metadata or {}
    text = meta.get(f"{_PREFIX}schema_version".encode(), b"0")
    if not text.isdigit():
        raise InputError(
            f"has schema_version {text[:20]!r} in its metadata, not a number: it was edited or not"
            " written by ncuroof; rerun ncuroof analyze on the inputs",
            path,
        )
    version = int(text)
    if version > schema.SCHEMA_VERSION:
        raise InputError(
            f"was written with table schema version {version}, newer than this ncuroof's "
            f"{schema.SCHEMA_VERSION}; upgrade ncuroof",
            path,
        )
    name = table or meta.get(f"{_PREFIX}table".encode(), path.stem.encode()).decode(
        "utf-8", "replace"
    )
    return _checked_pandas(t, TABLES.get(name), path)


def _checked_pandas(t: pa.Table, columns: Mapping[str, Column] | None, path: Path) -> pd.DataFrame:
    """:func:`_to_pandas` of a table read back, any column that is not what :data:`TABLES`
    declares (a duplicated name, text where numbers belong, metadata that does not decode) one
    InputError naming the file and the column."""
    names = t.column_names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"has the column {twice[0]!r} twice; {_EDITED}", path)
    try:
        df = _to_pandas(t, columns)
    except (ValueError, TypeError, UnicodeDecodeError, KeyError) as exc:
        bad = next(
            (
                n
                for n, c in (columns or {}).items()
                if n in names and not _casts(t.column(n), c.dtype)
            ),
            None,
        )
        what = f"column {bad!r} does not hold {columns[bad].dtype} values" if bad else "it"
        raise InputError(f"{what} ({str(exc).splitlines()[0][:80]}); {_EDITED}", path) from None
    return df


def read_saved_launches(path: str | Path) -> pd.DataFrame:
    """The launch table of a saved output folder (:func:`saved_launches`), read by
    :func:`read_table` and its values checked by :func:`check_launch_values`: what ``compare``
    and ``load`` read back reaches the model validated as fresh tables are.

    Raises
    ------
    InputError
        One line naming the file (and the column and row) for anything ncuroof would not have
        written.
    """
    path = Path(path)
    df = read_table(path, "launches")
    if "launch_id" not in df.columns and "launches" in df.columns:
        raise InputError(
            "holds one row per kernel (the kernels table of schema version 2), not the launches:"
            " pass the analyze output folder or its launches.parquet",
            path,
        )
    check_launch_values(df, path)
    return df


#: Units of quantities that are never negative (today every number of a launch table has one).
_NON_NEGATIVE_UNITS = ("", "s", "FLOP", "B", "Hz", "FLOP/s", "B/s", "sector", "inst", "inst/s", "1")
#: Rate columns and the ``[limits]`` that bound them; work and bytes columns are bounded the same
#: way over the launch's ``time_s``.
_RATE_LIMITS = {"_flop_per_s": "saved_flop_per_s", "_bytes_per_s": "saved_bytes_per_s"}
_WORK_LIMITS = {"_flop": "saved_flop_per_s", "_bytes": "saved_bytes_per_s"}


def _where(df: pd.DataFrame, mask: np.ndarray, column: str) -> str:
    """``column 'x', row N (launch L)`` of the first row of ``mask`` (data rows counted from 1)."""
    i = int(np.flatnonzero(mask)[0])
    launch = df["launch_id"].iloc[i] if "launch_id" in df.columns else "?"
    return f"column {column!r}, row {i + 1} (launch {launch})"


def check_launch_values(df: pd.DataFrame, path: Path) -> None:
    """The values of a launch table read back, checked as fresh tables are: every number finite
    where present and never negative, rates no higher than the physical bounds of ``[limits]``
    (``saved_flop_per_s``, ``saved_bytes_per_s``; work and bytes over ``time_s`` too), ``bound``
    one of :data:`ncuroof.schema.BOUNDS`, and each launch (``source``, ``range_id``,
    ``launch_id``) once.

    Raises
    ------
    InputError
        One line naming the file, the column and the row, and what to do.
    """
    time = pd.to_numeric(df["time_s"], errors="coerce") if "time_s" in df.columns else None
    for name in df.columns:
        col = schema.LAUNCHES.get(name)
        declared = col is not None and col.dtype in ("float64", "int64")
        if not (declared or name.endswith(("_flop", "_bytes", "_per_s"))):
            continue
        v = pd.to_numeric(df[name], errors="coerce").to_numpy(float)
        signed = col is not None and col.unit not in _NON_NEGATIVE_UNITS
        for bad, what in ((np.isinf(v), "is not finite"), (~signed & (v < 0), "is negative")):
            if bad.any():
                raise InputError(f"{_where(df, bad, name)} {what}; {_EDITED}", path)
        _check_rate(df, name, v, time, path)
    if "bound" in df.columns:
        odd = ~df["bound"].isin(schema.BOUNDS).to_numpy()
        if odd.any():
            words = ", ".join(schema.BOUNDS)
            raise InputError(f"{_where(df, odd, 'bound')} is not one of {words}; {_EDITED}", path)
    key = [c for c in ("source", "range_id", "launch_id") if c in df.columns]
    again = df.duplicated(key).to_numpy() if "launch_id" in key else np.zeros(0, bool)
    if again.any():
        raise InputError(f"{_where(df, again, 'launch_id')} repeats a launch; {_EDITED}", path)


def _check_rate(
    df: pd.DataFrame, name: str, v: np.ndarray, time: pd.Series | None, path: Path
) -> None:
    """A rate column against its ``[limits]`` bound, a work or bytes column over ``time_s``."""
    lim = limits()
    rate_limit = next((lim_ for sfx, lim_ in _RATE_LIMITS.items() if name.endswith(sfx)), None)
    work_limit = next((lim_ for sfx, lim_ in _WORK_LIMITS.items() if name.endswith(sfx)), None)
    if rate_limit is not None:
        rate, limit = v, rate_limit
    elif work_limit is not None and time is not None:
        t = time.to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):  # no duration: no rate to bound
            rate, limit = np.where(t > 0, v / t, np.nan), work_limit
    else:
        return
    over = rate > lim[limit]
    if over.any():
        raise InputError(
            f"{_where(df, over, name)} is beyond any GPU ({fmt.g(np.max(rate[over]))}/s, above"
            f" limits.{limit} = {lim[limit]:g}); {_EDITED}",
            path,
        )


#: The end of every message about a saved table that is not as ncuroof wrote it.
_EDITED = "the table was edited or not written by ncuroof: rerun ncuroof analyze on the inputs"


def _casts(col: pa.ChunkedArray, dtype: str) -> bool:
    """Whether one column converts to its declared dtype."""
    try:
        col.to_pandas().astype(dtype)
    except (ValueError, TypeError):
        return False
    return True


def read_manifest(directory: str | Path) -> list[str] | None:
    """The files ncuroof wrote in an output folder, from its :data:`MANIFEST`.

    Parameters
    ----------
    directory : path
        An output folder.

    Returns
    -------
    list of str or None
        The file names listed (plain names inside the folder only: an entry with a path
        separator, ``..`` or a leading dot is dropped), or None when the folder has no manifest
        (a folder written before manifests, or not by ncuroof).

    Raises
    ------
    InputError
        When the manifest is not the JSON ncuroof writes.
    """
    path = Path(directory) / MANIFEST
    if not path.exists():
        return None
    regular_file(path, "remove it and rerun the analysis")
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(1 << 20))
        names = data["files"]
        if not isinstance(names, list):
            raise TypeError("files is not a list")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise InputError(
            f"is not a manifest ncuroof wrote ({type(exc).__name__}); remove it and rerun the"
            " analysis",
            path,
        ) from exc
    return [n for n in names if isinstance(n, str) and _NAME.fullmatch(n) and n != MANIFEST]


def manifest_text(names: Sequence[str]) -> str:
    """The :data:`MANIFEST` of an output folder holding ``names``, as JSON text."""
    return (
        json.dumps({"written_by": f"ncuroof {__version__}", "files": sorted(names)}, indent=1)
        + "\n"
    )


def saved_launches(path: str | Path) -> Path | None:
    """The launch table of a saved analysis, or None when ``path`` is not one.

    ``path`` is a ``.parquet`` file or dataset, or an output directory of ``ncuroof analyze``: its
    ``launches.parquet``, else its ``launches.csv``; a folder written before schema version 2 has
    no launches table, and its ``kernels.parquet``/``kernels.csv`` (one row per launch then) is
    read instead. A folder with a :data:`MANIFEST` is read only through it: a table a later run
    did not write (a stale ``launches.parquet``) is never read; a folder without one (written
    before manifests) is read as it is.
    """
    p = Path(path)
    if p.suffix == ".parquet" and p.exists():
        return p
    if not p.is_dir():
        return None
    listed = read_manifest(p)

    def present(name: str) -> bool:
        return (listed is None or name in listed) and (p / name).exists()

    names = ("launches.parquet", "launches.csv")
    if not any((p / n).exists() for n in names):  # schema version 1: kernels held launches
        names = ("kernels.parquet", "kernels.csv")
    return next((p / n for n in names if present(n)), None)
