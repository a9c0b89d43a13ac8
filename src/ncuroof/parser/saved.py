"""Reading ncuroof's saved tables and output folders back, and what writing shares with it.

Every table (kernels, points, ranks, failures, ...) is declared in :mod:`ncuroof.schema`;
:mod:`ncuroof.output.tables` writes it as CSV or Parquet (one file, or a dataset partitioned by
input for fleets), the Parquet fields carrying their unit and meaning and the table carrying
``ncuroof.table``, ``ncuroof.schema_version``, ``ncuroof.version`` and ``ncuroof.inputs`` in its
key-value metadata. :func:`read_table` reads either back with the declared dtypes (it also tells
None from ``""`` in a CSV, and strips the ``'`` the writer puts before formula-like text);
:func:`saved_launches` and :func:`read_saved_launches` find and check the launch table of a saved
folder, through its :data:`MANIFEST` (:func:`read_manifest`).

The declarations both directions use live here, below the writers: the Arrow type of each
declared dtype, the metadata key prefix, a declared field, the text columns and the dataset's
partition column :data:`PART`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .. import fmt, schema
from .._lazy import LazyModule
from ..catalog import limits, over_limit
from ..errors import InputError
from ..schema import Column
from .files import regular_file

pa, pacsv, pads, pq, pc = (
    LazyModule(f"pyarrow{m}") for m in ("", ".csv", ".dataset", ".parquet", ".compute")
)  # imported when a table is written or read

__all__ = [
    "TABLES",
    "MANIFEST",
    "PART",
    "read_table",
    "read_saved_launches",
    "check_launch_values",
    "saved_launches",
    "read_manifest",
]

#: The file in every output folder listing the files ncuroof wrote there (JSON
#: ``{"files": [...]}``): the only ones a later run replaces or removes, and the only ones read
#: back from the folder.
MANIFEST = "ncuroof-manifest.json"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")


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


#: The column a dataset is partitioned by: a short key of each input (a hash of its ``source``), so
#: that a long input path never makes a directory name the file system refuses (errno 36).
PART = "input_key"


def _text_columns(table: pa.Table) -> list[int]:
    """The text columns of ``table``: string, large string or dictionary-encoded text."""
    return [
        i
        for i, f in enumerate(table.schema)
        if _is_text(f.type) or (pa.types.is_dictionary(f.type) and _is_text(f.type.value_type))
    ]


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _csv_raw(table: pa.Table) -> pa.Table:
    """The inverse of :func:`ncuroof.output.tables.csv_safe`: one leading ``'`` stripped from the
    text cells."""
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


def _check_version(meta: Mapping[bytes, bytes], path: Path) -> None:
    """InputError for a Parquet table whose ``ncuroof.schema_version`` is not a number or is newer
    than this ncuroof's (:data:`ncuroof.schema.SCHEMA_VERSION`)."""
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
    _check_version(meta, path)
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
