"""Generalization hierarchies: DuckDB lookup tables in ARX's wide format.

A hierarchy is an ordinary table with one row per original value. Column 0 holds the
value itself (level 0), column ``i`` its label at level ``i``, and the last column one
label shared by every row (the root, usually ``'*'``). Columns are read by position,
so ``read_csv('adult_hierarchy_age.csv', delim=';', header=false)`` is a hierarchy
as it stands. Tables made by the builders below name their columns ``level_0`` …
``level_L``; ``level_0`` keeps the type of the source column, labels above it are
``VARCHAR``.

Every builder builds its rows into a fresh temporary table, validates them there with
:func:`validate`, only then replaces (``CREATE OR REPLACE``) the table it is given and
returns a :class:`Hierarchy`: a failure leaves an existing table of that name as it was,
and a view of that name (or the source table) is refused. All heavy work happens in SQL;
Python only computes a handful of constants (the number of levels, split depths).

The generalizers of the Go library described in the seed thesis (§3.4) are
reproduced as follows:

* :func:`suppress` is the ``Suppressor`` (§3.4.3): one level, every value ``'*'``.
* :func:`auto` is ``hierarchy.AutoBuild`` (§3.4.4): the sorted distinct values are
  chopped into ``fanout`` chunks of ``ceil(size / fanout)`` items (one item per chunk
  when a node has no more than ``fanout`` items), recursively, until only singletons
  remain; a node that became a singleton early repeats down to the bottom.
* ``intervals`` without ``width`` is the ``RangeGeneralizer`` over ``IntRange`` /
  ``FloatRange`` (§3.4.5): repeated splits of ``[min, max]`` at the median.
* :func:`prefix_words` is the ``PrefixGeneralizer`` (§3.4.6): level ``i`` keeps the
  first ``W - i`` words.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import uuid
from dataclasses import dataclass
from decimal import Context, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from kanon._sql import ident, literal
from kanon._types import DATE_TYPES, FLOAT_TYPES, INT_TYPES, TIMESTAMPTZ
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "ROOT",
    "Hierarchy",
    "auto",
    "dates",
    "from_csv",
    "intervals",
    "levels",
    "mask",
    "prefix_words",
    "suppress",
    "validate",
]

ROOT = "*"
"""The label of the single top-level node made by the builders."""

# The Go library's FloatRange compares bounds with this absolute tolerance; a float
# range no wider than it is not split any further.
_FLOAT_DELTA = 1e-5
# Binary splits deeper than this are refused (a range that needs more levels than a
# BIGINT has bits is better served by fixed-width intervals).
_MAX_SPLIT_LEVELS = 64
# Decimal arithmetic without rounding for DECIMAL(38) values (the default context keeps
# 28 digits).
_EXACT = Context(prec=100)
# How many offending values an error message lists.
_SHOWN = 5
# Go's strings.Fields: Unicode white space (RE2 syntax; \s alone is ASCII only).
_WORD_SEPARATORS = r"[\t\n\v\f\r \x{85}\p{Z}]+"


@dataclass(frozen=True)
class Hierarchy:
    """A hierarchy table and its height.

    Attributes:
        name: The table holding the hierarchy.
        levels: Number of levels above the leaves (number of columns - 1).
    """

    name: str
    levels: int


# --------------------------------------------------------------------------- helpers


def _agg(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, ...]:
    """Run an aggregate query (which always yields exactly one row) and return the row."""
    # fetchall, not fetchone: DuckDB 2.0 refuses further relation work on a connection
    # whose execute() result was not read to its end.
    rows = con.execute(sql).fetchall()
    if not rows:  # pragma: no cover - an aggregate without GROUP BY returns one row
        msg = f"internal error: no row from {sql}"
        raise RuntimeError(msg)
    return rows[0]


def _check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or value == "":
        msg = f"{what} must be a non-empty string, got {value!r}"
        raise InvalidInputError(msg)
    return value


def _kinds(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """Return the types (``BASE TABLE``, ``VIEW``) of the relations ``name`` may mean.

    Only the temp catalog and the current schema are searched (unqualified names).
    """
    rows = con.execute(
        """
        SELECT table_type FROM information_schema.tables
        WHERE lower(table_name) = lower(?)
          AND ((table_catalog = current_database() AND table_schema = current_schema())
               OR table_catalog = 'temp')
        """,
        [name],
    ).fetchall()
    return [str(r[0]) for r in rows]


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether an unqualified table or view ``name`` resolves (temp or current schema)."""
    return bool(_kinds(con, name))


def _columns(con: duckdb.DuckDBPyConnection, name: str, what: str) -> list[tuple[str, str]]:
    """Return ``[(column, type), ...]`` of a table or view, or raise ConfigError."""
    if not _exists(con, name):
        msg = f"{what} {name!r} does not exist"
        raise ConfigError(msg)
    rows = con.execute(f"DESCRIBE SELECT * FROM {ident(name)}").fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _source_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> tuple[str, str]:
    """Return the column's name as stored and its type, or raise ConfigError."""
    _check_name(table, "table")
    _check_name(column, "column")
    cols = _columns(con, table, "table")
    for col, typ in cols:
        if col.lower() == column.lower():
            return col, typ
    names = ", ".join(repr(c) for c, _ in cols)
    msg = f"table {table!r} has no column {column!r} (its columns: {names})"
    raise ConfigError(msg)


def value_text(expr: str, typ: str) -> str:
    """SQL turning ``expr`` of type ``typ`` into comparable text.

    Floating-point values get ``+ 0`` first so that ``-0.0`` reads as ``0.0``: DuckDB
    groups and joins the two as one value, so a hierarchy can hold only one of them.
    """
    if typ in FLOAT_TYPES:
        return f"CAST(({expr}) + CAST(0 AS {typ}) AS VARCHAR)"
    if typ == TIMESTAMPTZ:
        # The text of an instant in UTC, as a UTC session prints it: labels and leaf keys
        # must not depend on the session's TimeZone (see utc()).
        return (
            f"CASE WHEN isfinite({expr}) THEN CAST({utc(expr)} AS VARCHAR) || '+00' "
            f"ELSE CAST(({expr}) AS VARCHAR) END"
        )
    return f"CAST(({expr}) AS VARCHAR)"


def utc(expr: str) -> str:
    """SQL of a ``TIMESTAMPTZ`` as the ``TIMESTAMP`` it reads in UTC (session-independent)."""
    return f"timezone('UTC', {expr})"


def _leaf(col_sql: str, typ: str) -> str:
    """SQL for a leaf value: the column itself (negative zero folded into zero)."""
    if typ in FLOAT_TYPES:
        return f"({col_sql} + CAST(0 AS {typ}))"
    return col_sql


def _leaves_sql(table: str, col: str, typ: str) -> str:
    """SQL selecting the distinct non-NULL values of ``table.col`` as column ``v``."""
    return leaves_from(ident(table), col, typ)


def leaves_from(source_sql: str, col: str, typ: str) -> str:
    """SQL selecting the distinct non-NULL values ``v`` of ``col`` in a quoted relation."""
    c = ident(col)
    return f"SELECT {_leaf(c, typ)} AS v FROM {source_sql} WHERE {c} IS NOT NULL GROUP BY 1"


def _prepare(
    con: duckdb.DuckDBPyConnection, name: str, table: str, column: str
) -> tuple[str, str, int]:
    """Common checks of every builder; returns (column, type, number of distinct values)."""
    _check_name(name, "hierarchy name")
    col, typ = _source_column(con, table, column)
    if name.lower() == table.lower():
        msg = f"hierarchy name {name!r} is the source table; choose another name"
        raise InvalidInputError(msg)
    n = int(_agg(con, f"SELECT count(*) FROM ({_leaves_sql(table, col, typ)})")[0])
    if n == 0:
        msg = f"column {col!r} of table {table!r} has no non-NULL values to build a hierarchy on"
        raise InvalidInputError(msg)
    return col, typ, n


def _fresh_name(con: duckdb.DuckDBPyConnection) -> str:
    """A table name no catalog of ``con`` uses yet (for a hierarchy under construction)."""
    while True:
        candidate = f"__kanon_hbuild_{uuid.uuid4().hex}"
        taken = con.execute(
            "SELECT count(*) FROM (SELECT table_name AS n FROM duckdb_tables() "
            "UNION ALL SELECT view_name FROM duckdb_views()) WHERE lower(n) = lower(?)",
            [candidate],
        ).fetchall()[0][0]
        if not taken:
            return candidate


def _refuse_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    if "VIEW" in _kinds(con, name):
        msg = f"{name!r} is a view; a hierarchy can only replace a table of that name"
        raise ConfigError(msg)


def _create(
    con: duckdb.DuckDBPyConnection,
    name: str,
    select_sql: str,
    *,
    table: str | None = None,
    column: str | None = None,
) -> Hierarchy:
    """Build, validate and only then install hierarchy ``name``; return it.

    The rows go to a fresh TEMP table first and are validated there (for
    ``table.column`` when given), so a failure of either step leaves an existing table
    ``name`` as it was; a valid hierarchy then replaces it in one statement. Only the
    temporary table is dropped on the way out.
    """
    _refuse_view(con, name)
    tmp = _fresh_name(con)
    try:
        con.execute(f"CREATE TEMP TABLE {ident(tmp)} AS {select_sql}")
        built = _validate(con, tmp, table=table, column=column, display=name)
        _refuse_view(con, name)
        # A TEMP table of that name shadows any other: it is the one to replace.
        shadowing = con.execute(
            "SELECT count(*) FROM duckdb_tables() "
            "WHERE database_name = 'temp' AND lower(table_name) = lower(?)",
            [name],
        ).fetchall()[0][0]
        kind = "TEMP TABLE" if shadowing else "TABLE"
        con.execute(
            f"CREATE OR REPLACE {kind} {ident(name)} AS SELECT * FROM temp.main.{ident(tmp)}"
        )
    finally:
        # A failed statement inside the caller's transaction aborts it (and so the
        # temporary table with it); the DROP then fails harmlessly.
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.main.{ident(tmp)}")
    return Hierarchy(name=name, levels=built.levels)


def _level_cols(exprs: Sequence[str]) -> str:
    return ", ".join(f"{e} AS {ident(f'level_{i}')}" for i, e in enumerate(exprs))


def _num(value: float) -> str:
    """A numeric literal in parentheses (safe after a minus sign)."""
    return f"({literal(value)})"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


# --------------------------------------------------------------------------- loading


def from_csv(
    con: duckdb.DuckDBPyConnection,
    path: str | os.PathLike[str],
    name: str,
    *,
    delimiter: str = ";",
) -> Hierarchy:
    """Load an ARX hierarchy file unchanged as table ``name``.

    The file has no header; every row is ``value;level 1;...;top``. Fields may be
    quoted (``"[72;76]"``), lines may end in CRLF or LF and the last line may lack its
    newline. Every field is loaded as ``VARCHAR`` text (an empty field stays ``''``);
    the columns are named ``level_0`` … ``level_L``.

    Args:
        con: The DuckDB connection.
        path: The hierarchy file.
        name: The table to create (replaced if it exists).
        delimiter: The field separator (one character).

    Returns:
        The loaded hierarchy.

    Raises:
        HierarchyError: The file is missing, empty, has rows of different lengths, or
            is not a valid hierarchy (see :func:`validate`).
        InvalidInputError: ``name`` or ``delimiter`` is malformed.
    """
    _check_name(name, "hierarchy name")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        msg = f"delimiter must be one character, got {delimiter!r}"
        raise InvalidInputError(msg)
    p = os.fspath(path)
    if not Path(p).is_file():
        msg = f"hierarchy file {p!r} does not exist"
        raise HierarchyError(msg)
    # Only the first record is parsed here, to learn the number of columns; DuckDB
    # reads the file and rejects any row with another number of fields.
    try:
        with Path(p).open(encoding="utf-8-sig", newline="") as fh:
            first = next(csv.reader(fh, delimiter=delimiter, quotechar='"'), None)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        msg = f"hierarchy file {p!r} could not be read as UTF-8 text ({exc})"
        raise HierarchyError(msg) from exc
    if not first:
        msg = f"hierarchy file {p!r} is empty"
        raise HierarchyError(msg)
    n = len(first)
    columns = "{" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(n)) + "}"
    reader = (
        f"read_csv({literal(p)}, delim={literal(delimiter)}, header=false, quote='\"', "
        f"escape='\"', comment='', auto_detect=false, columns={columns}, "
        "strict_mode=true, null_padding=false, ignore_errors=false)"
    )
    select = "SELECT " + _level_cols([f"coalesce(c{i}, '')" for i in range(n)]) + f" FROM {reader}"
    try:
        return _create(con, name, select)
    except duckdb.Error as exc:
        lines = [line.strip() for line in str(exc).splitlines()]
        fields = [
            ln for ln in lines if ln.startswith(("CSV Error", "Original Line", "Expected Number"))
        ]
        if any(ln.startswith("Expected Number") for ln in fields):
            msg = (
                f"hierarchy file {p!r} is not a valid ARX hierarchy: every row must have the "
                f"{n} fields of the first row ({'; '.join(fields)})"
            )
        else:
            detail = "; ".join(ln for ln in lines[:3] if ln) or str(exc).strip()
            msg = f"hierarchy file {p!r} could not be parsed ({detail})"
        raise HierarchyError(msg) from exc


# --------------------------------------------------------------------------- builders


def suppress(con: duckdb.DuckDBPyConnection, name: str, *, table: str, column: str) -> Hierarchy:
    """Build the one-level hierarchy that maps every value to ``'*'`` (the Suppressor).

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: The source column; its distinct non-NULL values are the leaves.

    Returns:
        The hierarchy (``levels == 1``).

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: The column has no non-NULL value.
    """
    col, typ, _ = _prepare(con, name, table, column)
    return _create(
        con, name, _suppress_sql(_leaves_sql(table, col, typ)), table=table, column=column
    )


def _suppress_sql(leaves: str) -> str:
    return f"SELECT {_level_cols(['v', literal(ROOT)])} FROM ({leaves}) ORDER BY 1"


def mask(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str,
    column: str,
    char: str = "*",
    levels: int | None = None,
) -> Hierarchy:
    """Build a right-to-left character-masking hierarchy (``53711 → 5371* → … → *``).

    Let ``L`` be the length (in characters) of the longest value's text. Every value's
    text is first padded on the right with ``char`` to length ``L``; level ``i`` then
    replaces the last ``i`` characters by ``char`` (``i = 1 … L - 1``) and the top level
    is the single character ``char``. Padding makes values of different lengths meet
    as soon as their common prefix is all that is left: ``537`` and ``53711`` are both
    ``537**`` at level 2. Because every label has length ``L`` and level ``i`` masks
    exactly ``i`` characters, the label at level ``i + 1`` is a function of the label
    at level ``i``: the levels are always nested partitions.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: The source column (any type; its text is masked).
        char: The masking character (exactly one character).
        levels: At most this many characters are masked before the top level
            (``None``: up to ``L - 1``; ``0``: the top level only).

    Returns:
        The hierarchy (``levels == min(levels, L - 1) + 1``).

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: ``char`` or ``levels`` is malformed, or the column is empty.
    """
    if not isinstance(char, str) or len(char) != 1:
        msg = f"char must be exactly one character, got {char!r}"
        raise InvalidInputError(msg)
    if levels is not None and (not _is_int(levels) or levels < 0):
        msg = f"levels must be a non-negative integer or None, got {levels!r}"
        raise InvalidInputError(msg)
    col, typ, _ = _prepare(con, name, table, column)
    leaves = _leaves_sql(table, col, typ)
    width = int(_agg(con, f"SELECT max(length({value_text('v', typ)})) FROM ({leaves})")[0])
    masked = max(width - 1, 0) if levels is None else min(levels, max(width - 1, 0))
    padded = f"rpad({value_text('v', typ)}, {width}, {literal(char)})"
    exprs = ["v"]
    exprs += [f"left({padded}, {width - i}) || {literal(char * i)}" for i in range(1, masked + 1)]
    exprs.append(literal(char))
    return _create(
        con,
        name,
        f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1",
        table=table,
        column=column,
    )


def prefix_words(
    con: duckdb.DuckDBPyConnection, name: str, *, table: str, column: str
) -> Hierarchy:
    """Build the Go library's word-prefix hierarchy (PrefixGeneralizer, thesis §3.4.6).

    A value is read as words separated by Unicode white space (Go's
    ``strings.Fields``). With ``W`` the largest word count in the column, level ``i``
    (``1 ≤ i < W``) keeps the first ``W - i`` words joined by single spaces, so a value
    with fewer words keeps all of them until the cut reaches it; level ``W`` is ``'*'``.
    A value without any word (empty or blank) is ``'*'`` from level 1 on, as in Go.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: The source column (its text is split into words).

    Returns:
        The hierarchy (``levels == max(W, 1)``).

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: The column has no non-NULL value.
    """
    col, typ, _ = _prepare(con, name, table, column)
    leaves = _leaves_sql(table, col, typ)
    words = (
        f"list_filter(regexp_split_to_array({value_text('v', typ)}, {literal(_WORD_SEPARATORS)}), "
        "lambda w: w <> '')"
    )
    wsql = f"SELECT v, {words} AS ws FROM ({leaves})"
    top = max(int(_agg(con, f"SELECT max(len(ws)) FROM ({wsql})")[0]), 1)
    exprs = ["v"]
    exprs += [
        f"CASE WHEN len(ws) = 0 THEN {literal(ROOT)} ELSE array_to_string(ws[1:{top - i}], ' ') END"
        for i in range(1, top)
    ]
    exprs.append(literal(ROOT))
    return _create(
        con,
        name,
        f"SELECT {_level_cols(exprs)} FROM ({wsql}) ORDER BY 1",
        table=table,
        column=column,
    )


def dates(con: duckdb.DuckDBPyConnection, name: str, *, table: str, column: str) -> Hierarchy:
    """Build a calendar hierarchy: value → month → year → decade → ``'*'``.

    Labels: month ``'YYYY-MM'``, year ``'YYYY'``, decade ``'1990s'`` (the year rounded
    down to a multiple of ten, four digits). Level 0 is the date (or timestamp) itself.
    A ``TIMESTAMPTZ`` is read in UTC, so the labels do not depend on the session's
    ``TimeZone``.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: A ``DATE`` or ``TIMESTAMP`` column.

    Returns:
        The hierarchy (``levels == 4``).

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: The column is not a date/timestamp column, holds
            ``infinity``, or has no non-NULL value.
    """
    col, typ = _source_column(con, table, column)
    if typ not in DATE_TYPES:
        msg = f"dates() needs a DATE or TIMESTAMP column; {col!r} of table {table!r} is {typ}"
        raise InvalidInputError(msg)
    col, typ, _ = _prepare(con, name, table, column)
    leaves = _leaves_sql(table, col, typ)
    if _agg(con, f"SELECT count(*) FROM ({leaves}) WHERE NOT isfinite(v)")[0]:
        msg = f"column {col!r} of table {table!r} holds infinite dates, which have no calendar"
        raise InvalidInputError(msg)
    return _create(con, name, _dates_sql(leaves, typ), table=table, column=column)


def _dates_sql(leaves: str, typ: str) -> str:
    # An instant's calendar is read in UTC, whatever the session's TimeZone.
    w = utc("v") if typ == TIMESTAMPTZ else "v"
    decade = f"(year({w}) - ((year({w}) % 10) + 10) % 10)"
    exprs = [
        "v",
        f"printf('%04d-%02d', year({w}), month({w}))",
        f"printf('%04d', year({w}))",
        f"printf('%04ds', {decade})",
        literal(ROOT),
    ]
    return f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1"


def auto(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str,
    column: str,
    fanout: int = 2,
) -> Hierarchy:
    """Build a balanced tree over the sorted distinct values (Go's ``AutoBuild``).

    As in the thesis (§3.4.4): the root holds every value; each node of ``s`` sorted
    values is chopped into consecutive chunks of ``ceil(s / fanout)`` values (one value
    per chunk when ``s ≤ fanout``), so a node has at most ``fanout`` children and the
    last chunk may be smaller when ``s`` is not a multiple of ``fanout``. Chopping
    continues until only singletons remain; a value that is alone early stays alone
    on the levels below. With ``n`` values that takes ``D`` levels, the smallest ``D``
    with ``fanout ** D ≥ n`` (Go estimates ``D`` as
    ``round(log(n (fanout - 1) + 1) / log(fanout))``, which is one short for e.g.
    ``n = 10, fanout = 2`` and leaves pairs unsplit; the thesis's "until only
    singleton partitions remain" is what is built here). Unlike Go, fewer values than
    ``fanout`` is not an error.

    Labels: a chunk is named by its first and last value in sort order,
    ``'[first..last]'``, a single value by ``'[value]'`` (the bracket forms of the Go
    library's partitions; listing every member as Go's ``Set`` does would not scale).
    The root is ``'*'``.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: The source column (any orderable type).
        fanout: The number of children per node (at least 2).

    Returns:
        The hierarchy (``levels == D``, at least 1).

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: ``fanout`` is not an integer ≥ 2, or the column is empty.
    """
    if not _is_int(fanout) or fanout < 2:
        msg = f"fanout must be an integer of at least 2, got {fanout!r}"
        raise InvalidInputError(msg)
    col, typ, n = _prepare(con, name, table, column)
    depth = 1
    while fanout**depth < n:
        depth += 1
    leaves = _leaves_sql(table, col, typ)
    first, last = "CAST(f.v AS VARCHAR)", "CAST(l.v AS VARCHAR)"
    select = _chunk_tree_sql(leaves, depth, fanout, str(n), first, last)
    return _create(con, name, select, table=table, column=column)


def intervals(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str,
    column: str,
    width: float | None = None,
    fanout: int = 2,
    min: float | None = None,
    max: float | None = None,
) -> Hierarchy:
    """Build a hierarchy of nested intervals over a numeric column.

    **Fixed width** (``width`` given): level 1 is the interval ``[lo, lo + width)``
    containing the value, with boundaries aligned at ``min``; level ``i + 1`` merges
    ``fanout`` consecutive intervals of level ``i`` (aligned at ``min`` as well), up to
    the first level whose single interval covers ``[min, max]``; then a final ``'*'``.
    Labels read ``'[20, 30)'`` (integers when the column, ``width`` and ``min`` are
    integers, DuckDB's ``DOUBLE`` text otherwise).

    **Binary splits** (no ``width``): the Go library's ``RangeGeneralizer`` (thesis
    §3.4.5, Figure 3.5). The root is ``[min, max]``; a range is split at its median
    into two children and the splits go on until a range cannot be split. For
    integers, ``[a..b]`` splits into ``[a .. a+c-1]`` and ``[a+c .. b]`` with
    ``c = (b - a + 1) // 2`` (ranges of one value stop) and there are
    ``L = ceil(log2(max - min + 1))`` levels; for floats, ``(a..b)`` splits at
    ``m = a + (b - a) / 2`` into ``(a..m)`` and ``(m..b)`` (the midpoint belongs to the
    left half), a range no wider than ``1e-5`` stops (so does one with no double
    between its bounds, where Go would loop forever), and ``L`` is the number of
    splits of the upper half until that happens. Level ``L`` is the root, level
    ``L - 1`` the two halves, and so on: level ``n`` of a value is its ancestor
    ``L - n`` splits below the root, or its smallest range if that is reached sooner.
    Labels are the Go library's: ``'[a..b]'`` / ``'[a]'`` for integers,
    ``'(a..b)'`` / ``'(a)'`` with six decimals (``%f``) for floats. There is no ``'*'``
    level: the root range is the single top label, as in Go.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: An integer, floating-point or decimal column.
        width: The width of the level-1 intervals (> 0), or ``None`` for binary splits.
        fanout: How many intervals of one level make one of the next (≥ 2; fixed
            width only).
        min: Lower end of the domain (default: the column's minimum; must not exceed
            it).
        max: Upper end of the domain (default: the column's maximum; must not be
            below it).

    Returns:
        The hierarchy.

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: A parameter is malformed or does not cover the data, the
            column is not numeric, holds NaN or infinity, or has no non-NULL value, or
            the requested hierarchy would need more than 64 levels.
    """
    lo_arg, hi_arg = min, max
    for label, value in (("min", lo_arg), ("max", hi_arg), ("width", width)):
        if value is not None and (not _is_number(value) or not math.isfinite(value)):
            msg = f"{label} must be a finite number or None, got {value!r}"
            raise InvalidInputError(msg)
    if width is not None and width <= 0:
        msg = f"width must be positive, got {width!r}"
        raise InvalidInputError(msg)
    if not _is_int(fanout) or fanout < 2:
        msg = f"fanout must be an integer of at least 2, got {fanout!r}"
        raise InvalidInputError(msg)
    if width is None and fanout != 2:
        msg = "fanout applies to fixed-width intervals only; pass width= or leave fanout at 2"
        raise InvalidInputError(msg)
    col, typ = _source_column(con, table, column)
    is_int = typ in INT_TYPES
    if not (is_int or typ in FLOAT_TYPES or typ.startswith("DECIMAL")):
        msg = f"intervals() needs a numeric column; {col!r} of table {table!r} is {typ}"
        raise InvalidInputError(msg)
    col, typ, _ = _prepare(con, name, table, column)
    leaves = _leaves_sql(table, col, typ)
    if is_int:
        row = _agg(con, f"SELECT min(v), max(v) FROM ({leaves})")
    else:
        row = _agg(
            con,
            f"SELECT min(CAST(v AS DOUBLE)), max(CAST(v AS DOUBLE)), "
            f"count(*) FILTER (WHERE NOT isfinite(CAST(v AS DOUBLE))) FROM ({leaves})",
        )
        if row[2]:
            msg = f"column {col!r} of table {table!r} holds NaN or infinite values"
            raise InvalidInputError(msg)
    data_lo, data_hi = row[0], row[1]
    lo = data_lo if lo_arg is None else lo_arg
    hi = data_hi if hi_arg is None else hi_arg
    if lo > data_lo:
        msg = f"min={lo_arg!r} is above the smallest value {data_lo!r} of column {col!r}"
        raise InvalidInputError(msg)
    if hi < data_hi:
        msg = f"max={hi_arg!r} is below the largest value {data_hi!r} of column {col!r}"
        raise InvalidInputError(msg)
    if width is None:
        if is_int and _is_int(lo) and _is_int(hi):
            select = _binary_int_sql(leaves, int(lo), int(hi))
        else:
            select = _binary_float_sql(leaves, float(lo), float(hi))
    elif is_int and _is_int(width) and _is_int(lo):
        select = _fixed_int_sql(leaves, int(lo), int(hi), int(width), fanout)
    else:
        select = _fixed_float_sql(leaves, float(lo), float(hi), float(width), fanout)
    return _create(con, name, select, table=table, column=column)


def _too_deep(levels_needed: int) -> InvalidInputError:
    return InvalidInputError(
        f"this interval hierarchy would need {levels_needed} levels (more than "
        f"{_MAX_SPLIT_LEVELS}); use a larger width, a larger fanout or a smaller range"
    )


def _fixed_levels(buckets: int, fanout: int) -> int:
    """Interval levels until one interval covers buckets ``0 … buckets``."""
    count = 1
    while buckets // fanout ** (count - 1) > 0:
        count += 1
    return count


def _int_type(*bounds: int) -> str:
    """The narrowest of BIGINT, HUGEINT, UHUGEINT whose range holds the bounds with room.

    The room (``2**64`` short of the type's limits) is what the splits of a range of at
    most ``2**64`` integers add to its bounds.
    """
    if all(abs(b) < 2**61 for b in bounds):
        return "BIGINT"
    if all(abs(b) < 2**127 - 2**65 for b in bounds) or any(b < 0 for b in bounds):
        return "HUGEINT"
    return "UHUGEINT"


def _int_lit(value: int, cast: str) -> str:
    """An exact integer literal of type ``cast`` (a bare literal above HUGEINT is a DOUBLE)."""
    return f"CAST('{int(value)}' AS {cast})"


def _fixed_int_sql(leaves: str, lo: int, hi: int, width: int, fanout: int) -> str:
    count = _fixed_levels((hi - lo) // width, fanout)
    if count + 1 > _MAX_SPLIT_LEVELS:
        raise _too_deep(count + 1)
    top_step = width * fanout ** (count - 1)
    # The largest intermediate value: differences from lo (signed) or the last end.
    reach = 2 * top_step + (abs(lo) + abs(hi) if lo < 0 else hi)
    if reach >= (2**127 if lo < 0 else 2**128):
        msg = (
            f"intervals of width {width} over [{lo}, {hi}] end beyond the largest integer "
            "type; use a smaller width or fanout"
        )
        raise InvalidInputError(msg)
    cast = _int_type(lo, hi, reach)
    exprs = ["v"]
    for j in range(1, count + 1):
        step = width * fanout ** (j - 1)
        low, size = _int_lit(lo, cast), _int_lit(step, cast)
        start = f"({low} + (CAST(v AS {cast}) - {low}) // {size} * {size})"
        exprs.append(
            f"'[' || CAST({start} AS VARCHAR) || ', ' || CAST({start} + {size} AS VARCHAR) || ')'"
        )
    exprs.append(literal(ROOT))
    return f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1"


def _fixed_float_sql(leaves: str, lo: float, hi: float, width: float, fanout: int) -> str:
    buckets = math.floor((hi - lo) / width)
    if buckets > 2**53:
        msg = (
            f"width={width!r} cuts [{lo!r}, {hi!r}] into more than 2**53 intervals; "
            "use a larger width"
        )
        raise InvalidInputError(msg)
    count = _fixed_levels(buckets, fanout)
    if count + 1 > _MAX_SPLIT_LEVELS:
        raise _too_deep(count + 1)
    bucket = f"CAST(floor((CAST(v AS DOUBLE) - {_num(lo)}) / {_num(width)}) AS BIGINT)"
    exprs = ["v"]
    for j in range(1, count + 1):
        size = fanout ** (j - 1)
        step = _num(width * size)
        idx = f"({bucket} // {size})"
        exprs.append(
            f"'[' || CAST({_num(lo)} + {idx} * {step} AS VARCHAR) || ', ' "
            f"|| CAST({_num(lo)} + ({idx} + 1) * {step} AS VARCHAR) || ')'"
        )
    exprs.append(literal(ROOT))
    return f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1"


def _float_splits(lo: float, hi: float) -> int:
    """Go's ``FloatRange.MaxSplit``: splits of the upper half until it is ≤ 1e-5 wide."""
    count = 0
    while abs(hi - lo) > _FLOAT_DELTA:
        mid = lo + (hi - lo) / 2
        if mid == lo:  # no double between the bounds (Go would loop forever here)
            break
        lo = mid
        count += 1
        if count > _MAX_SPLIT_LEVELS:
            raise _too_deep(count)
    return count


def _binary_sql(leaves: str, recursion: str, splits: int, label: str) -> str:
    """Pivot the split paths into one row per value.

    Level ``n`` is the node ``splits - n`` below the root, or the value's smallest
    range where that is reached sooner (Go pads the path with it).
    """
    exprs = ["v"]
    exprs += [
        f"labels[greatest(0, least({splits - n}, len(labels) - 1)) + 1]"
        for n in range(1, max(splits, 1) + 1)
    ]
    return f"""
        WITH RECURSIVE
        t(v, depth, a, b) AS ({recursion}),
        paths AS (
            SELECT v, list({label} ORDER BY depth) AS labels FROM t GROUP BY v
        )
        SELECT {_level_cols(exprs)} FROM paths ORDER BY 1
    """


def _binary_int_sql(leaves: str, lo: int, hi: int, scale: int = 0) -> str:
    """Go's integer binary splits of ``[lo, hi]``, in exact integer arithmetic.

    With ``scale`` > 0 the leaves are decimals of that scale and ``lo``, ``hi`` their
    unscaled integers (value * 10**scale): the splits run over the decimal's own grid
    and the labels print the bounds as the decimal's text.
    """
    splits = (hi - lo).bit_length()  # ceil(log2(hi - lo + 1)), Go's IntRange.MaxSplit
    if splits > _MAX_SPLIT_LEVELS:
        raise _too_deep(splits)
    cast = _int_type(lo, hi, hi - lo + 1)
    if scale:
        # The decimal's text without its point is its unscaled integer, exactly.
        x = f"CAST(replace(CAST(v AS VARCHAR), '.', '') AS {cast})"
        unit = _int_lit(10**scale, "HUGEINT")

        def text(e: str) -> str:
            return (
                f"(CASE WHEN {e} < 0 THEN '-' ELSE '' END || CAST(abs({e}) // {unit} AS VARCHAR) "
                f"|| '.' || lpad(CAST(abs({e}) % {unit} AS VARCHAR), {scale}, '0'))"
            )

        a_text, b_text = text("a"), text("b")
    else:
        x = f"CAST(v AS {cast})"
        a_text, b_text = "a", "b"
    cut = "a + (b - a + 1) // 2"
    label = (
        f"CASE WHEN a = b THEN '[' || {a_text} || ']' "
        f"ELSE '[' || {a_text} || '..' || {b_text} || ']' END"
    )
    recursion = f"""
        SELECT v, 0, {_int_lit(lo, cast)}, {_int_lit(hi, cast)}
        FROM ({leaves})
        UNION ALL
        SELECT v, depth + 1,
               CASE WHEN {x} < {cut} THEN a ELSE {cut} END,
               CASE WHEN {x} < {cut} THEN {cut} - 1 ELSE b END
        FROM t WHERE a < b AND depth < {splits}
    """
    return _binary_sql(leaves, recursion, splits, label)


def _binary_float_sql(leaves: str, lo: float, hi: float, *, exact: bool = False) -> str:
    """Go's float binary splits of ``[lo, hi]``.

    Labels print their bounds with six decimals (``%f``, as Go), or with ``exact`` as
    the shortest text that reads back as the same double, so that a label's range
    holds its values whatever their digits.
    """
    if not math.isfinite(hi - lo):
        msg = f"the range [{lo!r}, {hi!r}] is too wide for binary splits; pass width="
        raise InvalidInputError(msg)
    splits = _float_splits(lo, hi)
    x = "CAST(v AS DOUBLE)"
    mid = "(a + (b - a) / 2)"
    delta = literal(_FLOAT_DELTA)
    a, b = (
        ("CAST(a AS VARCHAR)", "CAST(b AS VARCHAR)")
        if exact
        else ("printf('%f', a)", "printf('%f', b)")
    )
    label = (
        # Go names a range no wider than the tolerance by its lower bound; exact labels
        # do so only for a single value.
        f"CASE WHEN {'a = b' if exact else f'abs(b - a) <= {delta}'} THEN '(' || {a} || ')' "
        f"ELSE '(' || {a} || '..' || {b} || ')' END"
    )
    recursion = f"""
        SELECT v, 0, CAST({_num(lo)} AS DOUBLE), CAST({_num(hi)} AS DOUBLE)
        FROM ({leaves})
        UNION ALL
        SELECT v, depth + 1,
               CASE WHEN {x} <= {mid} THEN a ELSE {mid} END,
               CASE WHEN {x} <= {mid} THEN {mid} ELSE b END
        FROM t WHERE abs(b - a) > {delta} AND depth < {splits}
    """
    return _binary_sql(leaves, recursion, splits, label)


def _splits_fit(lo: float, hi: float) -> bool:
    """Whether Go's float splits of ``[lo, hi]`` take at most ``_MAX_SPLIT_LEVELS`` levels."""
    if not math.isfinite(hi - lo):
        return False
    try:
        _float_splits(lo, hi)
    except InvalidInputError:
        return False
    return True


def _ranks_spec(con: duckdb.DuckDBPyConnection, leaves: str) -> dict[str, Any]:
    """The distinct-value splits' spec: enough levels to split the values to singletons."""
    n = int(_agg(con, f"SELECT count(*) FROM ({leaves})")[0])
    depth = 1
    while 2**depth < n:
        depth += 1
    return {"kind": "ranks", "levels": depth}


def _decimal_text(unscaled: int, scale: int) -> str:
    """The exact text of the decimal ``unscaled * 10**-scale`` (no exponent)."""
    return format(Decimal(int(unscaled)).scaleb(-scale, _EXACT), "f")


def _decimal_scale(typ: str) -> int:
    """The scale of a ``DECIMAL(p,s)`` type name."""
    inner = typ[typ.index("(") + 1 : typ.index(")")]
    return int(inner.split(",")[1])


def default_spec(
    con: duckdb.DuckDBPyConnection, source_sql: str, column: str, typ: str
) -> dict[str, Any]:
    """Choose a column's type-based default hierarchy and its parameters.

    Integers get binary interval splits of ``[min, max]`` (``{"kind": "int", "lo", "hi"}``,
    as :func:`intervals` without ``width``), in exact integer arithmetic; decimals the
    same splits over their own grid of ``10**-scale`` steps (``"decimal"``: unscaled
    ``lo``, ``hi`` and the ``scale``; labels ``'[1.50..2.25]'``); floats Go's splits over
    doubles (``"float"``). Where those splits would need more than 64 levels (HUGEINT or
    DECIMAL(38) spans, doubles spanning ±1e308) or a float column holds NaN or ±inf,
    the sorted distinct values are halved level by level instead (``"ranks"``: labels
    ``'[lo..hi]'`` of the values present, in DuckDB's order ``-inf < numbers < inf <
    NaN``, under a root ``'*'``). Dates and timestamps get the calendar levels of
    :func:`dates` (``"dates"``; time zones read in UTC), every other type (and a column
    without values) suppression (``"suppress"``). The result is JSON-serializable;
    :func:`default_select` builds the hierarchy from it for any set of leaves.

    Raises:
        InvalidInputError: A date column holds infinity.
    """
    base = typ.split("(")[0]
    leaves = leaves_from(source_sql, column, typ)
    if base in INT_TYPES:
        lo, hi = _agg(con, f"SELECT min(v), max(v) FROM ({leaves})")
        if lo is None:
            return {"kind": "suppress"}
        if (int(hi) - int(lo)).bit_length() > _MAX_SPLIT_LEVELS:
            return _ranks_spec(con, leaves)
        return {"kind": "int", "lo": int(lo), "hi": int(hi)}
    if base == "DECIMAL":
        lo, hi = _agg(con, f"SELECT min(v), max(v) FROM ({leaves})")
        if lo is None:
            return {"kind": "suppress"}
        scale = _decimal_scale(typ)
        ulo, uhi = int(Decimal(lo).scaleb(scale, _EXACT)), int(Decimal(hi).scaleb(scale, _EXACT))
        if (uhi - ulo).bit_length() > _MAX_SPLIT_LEVELS:
            return _ranks_spec(con, leaves)
        return {"kind": "decimal", "lo": ulo, "hi": uhi, "scale": scale}
    if base in FLOAT_TYPES:
        lo, hi, bad = _agg(
            con,
            "SELECT min(CAST(v AS DOUBLE)), max(CAST(v AS DOUBLE)), "
            f"count(*) FILTER (WHERE NOT isfinite(CAST(v AS DOUBLE))) FROM ({leaves})",
        )
        if lo is None and not bad:
            return {"kind": "suppress"}
        if bad or not _splits_fit(float(lo), float(hi)):
            return _ranks_spec(con, leaves)
        return {"kind": "float", "lo": float(lo), "hi": float(hi)}
    if base in DATE_TYPES:
        if _agg(con, f"SELECT count(*) FROM ({leaves}) WHERE NOT isfinite(v)")[0]:
            msg = f"column {column!r} holds infinite dates, which have no calendar"
            raise InvalidInputError(msg)
        return {"kind": "dates"}
    return {"kind": "suppress"}


def default_select(leaves: str, spec: dict[str, Any], typ: str) -> str:
    """The SELECT (columns ``level_0`` … ``level_L``) of a default hierarchy over ``leaves``.

    ``leaves`` is SQL selecting distinct non-NULL values of type ``typ`` as column ``v``;
    ``spec`` comes from :func:`default_spec`. Interval hierarchies need every leaf within
    ``[lo, hi]`` (see :func:`default_outside`).

    Raises:
        InvalidInputError: A range is too wide to split.
    """
    kind = spec["kind"]
    if kind == "int":
        return _binary_int_sql(leaves, int(spec["lo"]), int(spec["hi"]))
    if kind == "decimal":
        return _binary_int_sql(leaves, int(spec["lo"]), int(spec["hi"]), int(spec["scale"]))
    if kind == "float":
        return _binary_float_sql(leaves, float(spec["lo"]), float(spec["hi"]), exact=True)
    if kind == "ranks":
        return _ranks_sql(leaves, int(spec["levels"]), typ)
    if kind == "dates":
        return _dates_sql(leaves, typ)
    return _suppress_sql(leaves)


def default_outside(expr: str, spec: dict[str, Any] | None, typ: str) -> str | None:
    """SQL that is true when value ``expr`` lies outside the range a default was planned for.

    ``None`` when the default has no range (its hierarchy is built from whatever values
    there are). Integers and decimals compare exactly, in the column's own type.
    """
    if spec is None:
        return None
    kind = spec["kind"]
    if kind == "int":
        lo, hi = _int_lit(spec["lo"], typ), _int_lit(spec["hi"], typ)
    elif kind == "decimal":
        scale = int(spec["scale"])
        lo = f"CAST('{_decimal_text(spec['lo'], scale)}' AS {typ})"
        hi = f"CAST('{_decimal_text(spec['hi'], scale)}' AS {typ})"
    elif kind == "float":
        x = f"CAST({expr} AS DOUBLE)"
        lo_f, hi_f = float(spec["lo"]), float(spec["hi"])
        return f"({x} < {lo_f!r} OR {x} > {hi_f!r} OR NOT isfinite({x}))"
    else:
        return None
    return f"({expr} < {lo} OR {expr} > {hi})"


def default_range_text(spec: dict[str, Any]) -> str:
    """The planned range of an interval default, for messages (exact)."""
    if spec["kind"] == "decimal":
        scale = int(spec["scale"])
        return f"[{_decimal_text(spec['lo'], scale)}, {_decimal_text(spec['hi'], scale)}]"
    return f"[{spec['lo']!r}, {spec['hi']!r}]"


def _ranks_sql(leaves: str, depth: int, typ: str) -> str:
    """Binary splits of the sorted distinct values: each level halves a node's values.

    The root ``'*'`` holds every value; a node of ``s`` values splits into its first
    ``ceil(s / 2)`` and the rest, ``depth - 1`` times (the bottom nodes hold more than
    one value when there are more than ``2**depth`` values now than when planned). A
    node is labelled ``'[first..last]'`` by its least and greatest value, ``'[v]'``
    when it holds one. The values are ordered as DuckDB orders them (for doubles:
    ``-inf < numbers < inf < NaN``), so every label's range holds its values.
    """
    first, last = value_text("f.v", typ), value_text("l.v", typ)
    return _chunk_tree_sql(leaves, depth, 2, "(SELECT count(*) FROM p)", first, last)


def _chunk_tree_sql(leaves: str, depth: int, fanout: int, n: str, first: str, last: str) -> str:
    """A balanced tree over the sorted values of ``leaves``: root ``'*'``, then chunks.

    A node of ``s`` values splits into chunks of ``ceil(s / fanout)``, ``depth - 1``
    times; a node is labelled ``'[first..last]'`` by the texts ``first`` / ``last`` of
    its least and greatest value (``f.v``, ``l.v``), ``'[first]'`` when it holds one.
    ``n`` is the number of values (SQL).
    """
    # labels[k] is the value's node k levels below the root (k = 1 … depth - 1).
    exprs = ["p.v"]
    exprs += [f"labels[{depth - i}]" for i in range(1, depth)]
    exprs.append(literal(ROOT))
    return f"""
        WITH RECURSIVE
        p AS (SELECT v, row_number() OVER (ORDER BY v) - 1 AS pos FROM ({leaves})),
        t(pos, depth, start, size) AS (
            SELECT pos, 0, 0, {n} FROM p
            UNION ALL
            SELECT pos, depth + 1,
                   start + (pos - start) // chunk * chunk,
                   least(chunk, start + size - (start + (pos - start) // chunk * chunk))
            FROM (SELECT *, CASE WHEN size <= {fanout} THEN 1
                                 ELSE (size + {fanout - 1}) // {fanout} END AS chunk
                  FROM t)
            WHERE depth < {depth - 1}
        ),
        nodes AS (SELECT DISTINCT depth, start, size FROM t WHERE depth > 0),
        lab AS (
            SELECT nodes.depth, nodes.start,
                   CASE WHEN nodes.size = 1 THEN '[' || {first} || ']'
                        ELSE '[' || {first} || '..' || {last} || ']' END AS label
            FROM nodes JOIN p f ON f.pos = nodes.start
                       JOIN p l ON l.pos = nodes.start + nodes.size - 1
        ),
        paths AS (
            SELECT t.pos, list(lab.label ORDER BY t.depth) AS labels
            FROM t JOIN lab ON lab.depth = t.depth AND lab.start = t.start
            GROUP BY t.pos
        )
        SELECT {_level_cols(exprs)}
        FROM p LEFT JOIN paths ON paths.pos = p.pos
        ORDER BY 1
    """


# --------------------------------------------------------------------------- checks


def levels(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """Return the number of levels above the leaves of hierarchy table ``name``.

    Args:
        con: The DuckDB connection.
        name: Any hierarchy table or view (columns read by position).

    Returns:
        The number of columns minus one.

    Raises:
        ConfigError: The table does not exist.
    """
    _check_name(name, "hierarchy name")
    return len(_columns(con, name, "hierarchy table")) - 1


def validate(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str | None = None,
    column: str | None = None,
) -> Hierarchy:
    """Check that table ``name`` is a usable hierarchy (for ``table.column``).

    Checks, all in SQL: at least two columns; no NULL label; every level-0 value listed
    once; every level a coarsening of the one below (each label at level ``i`` has one
    label at level ``i + 1``); exactly one root; and, when ``table`` and ``column`` are
    given, every distinct non-NULL value of the column present at level 0 (compared as
    text, ``CAST(... AS VARCHAR)``).

    Args:
        con: The DuckDB connection.
        name: The hierarchy table or view (columns read by position).
        table: The source table whose values must be covered (with ``column``).
        column: The source column.

    Returns:
        The hierarchy.

    Raises:
        ConfigError: The hierarchy, table or column does not exist.
        HierarchyError: The hierarchy is malformed or does not cover the column; the
            message names the hierarchy, the offending value or label and its level.
        InvalidInputError: Only one of ``table`` and ``column`` was given.
    """
    _check_name(name, "hierarchy name")
    if (table is None) != (column is None):
        msg = "validate() needs both table and column, or neither"
        raise InvalidInputError(msg)
    return _validate(con, name, table=table, column=column, display=name)


def _validate(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str | None,
    column: str | None,
    display: str,
) -> Hierarchy:
    """:func:`validate` of table ``name``, whose messages and result call it ``display``."""
    cols = _columns(con, name, "hierarchy table")
    src: tuple[str, str, str] | None = None
    if table is not None and column is not None:
        col, typ = _source_column(con, table, column)
        src = (table, col, typ)
    h = ident(name)
    if len(cols) < 2:
        msg = (
            f"hierarchy {display!r} has {len(cols)} column; it needs at least 2 "
            "(the values and a root)"
        )
        raise HierarchyError(msg)
    top = len(cols) - 1
    c = [ident(col) for col, _ in cols]
    texts = [value_text(ci, typ) for ci, (_, typ) in zip(c, cols, strict=True)]

    if _agg(con, f"SELECT count(*) FROM {h}")[0] == 0:
        msg = f"hierarchy {display!r} has no rows"
        raise HierarchyError(msg)

    nulls = " OR ".join(f"{ci} IS NULL" for ci in c)
    flags = ", ".join(f"{ci} IS NULL" for ci in c)
    found = con.execute(f"SELECT {texts[0]}, {flags} FROM {h} WHERE {nulls} LIMIT 1").fetchall()
    if found:
        row = found[0]
        level = list(row[1:]).index(True)
        msg = f"hierarchy {display!r} has a NULL label at level {level} (value {row[0]!r})"
        raise HierarchyError(msg)

    dups = con.execute(
        f"SELECT {texts[0]} AS v, count(*) FROM {h} GROUP BY {c[0]} "
        f"HAVING count(*) > 1 ORDER BY v LIMIT {_SHOWN}"
    ).fetchall()
    if dups:
        shown = ", ".join(f"{v!r} ({n} rows)" for v, n in dups)
        msg = f"hierarchy {display!r} lists level-0 value(s) more than once: {shown}"
        raise HierarchyError(msg)

    # Fast pass: which levels have a label with two parents (no text built here).
    checks = " UNION ALL ".join(
        f"SELECT {i} AS lvl FROM (SELECT 1 FROM {h} GROUP BY {c[i]} "
        f"HAVING min({c[i + 1]}) <> max({c[i + 1]}) LIMIT 1)"
        for i in range(top)
    )
    first_bad = _agg(con, f"SELECT min(lvl) FROM ({checks})")[0]
    if first_bad is not None:
        lvl = int(first_bad)
        typ_hi = cols[lvl + 1][1]
        label, a, b = _agg(
            con,
            f"SELECT {texts[lvl]} AS label, {value_text(f'min({c[lvl + 1]})', typ_hi)}, "
            f"{value_text(f'max({c[lvl + 1]})', typ_hi)} FROM {h} GROUP BY {c[lvl]} "
            f"HAVING min({c[lvl + 1]}) <> max({c[lvl + 1]}) ORDER BY label LIMIT 1",
        )
        msg = (
            f"hierarchy {display!r} is not nested: label {label!r} at level {lvl} has more "
            f"than one parent at level {lvl + 1} ({a!r}, {b!r}); each level must be a "
            "coarsening of the level below"
        )
        raise HierarchyError(msg)

    typ_top = cols[top][1]
    row = _agg(
        con,
        f"SELECT count(DISTINCT {c[top]}), {value_text(f'min({c[top]})', typ_top)}, "
        f"{value_text(f'max({c[top]})', typ_top)} FROM {h}",
    )
    if row[0] != 1:
        msg = (
            f"hierarchy {display!r} has {row[0]} roots at its top level {top} "
            f"(e.g. {row[1]!r}, {row[2]!r}); it needs exactly one"
        )
        raise HierarchyError(msg)

    if src is not None:
        tbl, col, typ = src
        sc = ident(col)
        missing = con.execute(
            f"""
            SELECT v, count(*) OVER () FROM (
                SELECT {value_text(sc, typ)} AS v FROM {ident(tbl)} WHERE {sc} IS NOT NULL
                EXCEPT
                SELECT {texts[0]} FROM {h}
            ) ORDER BY v LIMIT {_SHOWN}
            """
        ).fetchall()
        if missing:
            total = missing[0][1]
            shown = ", ".join(repr(v) for v, _ in missing)
            more = ", ..." if total > len(missing) else ""
            msg = (
                f"hierarchy {display!r} does not cover {total} value(s) of column {col!r} "
                f"of table {tbl!r}: {shown}{more}"
            )
            raise HierarchyError(msg)
    return Hierarchy(name=display, levels=top)
