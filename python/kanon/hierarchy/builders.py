"""Builders of hierarchy tables: from CSV, suppression, masks, words, dates, auto."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import duckdb

from kanon.exceptions import HierarchyError, InvalidInputError
from kanon.hierarchy.base import (
    ROOT,
    Hierarchy,
    _agg,
    _check_name,
    _chunk_tree_sql,
    _create,
    _dates_sql,
    _is_int,
    _leaves_sql,
    _level_cols,
    _prepare,
    _source_column,
    _suppress_sql,
    value_text,
)
from kanon.sql.quote import literal
from kanon.sql.types import DATE_TYPES

# Go's strings.Fields: Unicode white space (RE2 syntax; \s alone is ASCII only).
_WORD_SEPARATORS = r"[\t\n\v\f\r \x{85}\p{Z}]+"
# How many rows, or lines of a row, an error message lists.
_SHOWN = 5


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
    the columns are named ``level_0`` … ``level_L``. Rows that repeat an earlier row
    exactly are merged into it (the table keeps the file's order); a value listed on two
    rows with different labels is refused, naming the lines of those rows.

    Args:
        con: The DuckDB connection.
        path: The hierarchy file.
        name: The table to create (replaced if it exists).
        delimiter: The field separator (one character).

    Returns:
        The loaded hierarchy.

    Raises:
        HierarchyError: The file is missing, empty, has rows of different lengths,
            lists a value on rows with different labels (the message gives their
            1-based line numbers), or is not a valid hierarchy (see :func:`validate`).
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
    # ``n``: the record's number (blank lines are not records); exact duplicate rows are
    # merged into their first, in the order of the file.
    texts = [f"coalesce(c{i}, '')" for i in range(n)]
    numbered = (
        "SELECT "
        + ", ".join(f"{t} AS c{i}" for i, t in enumerate(texts))
        + f", ordinality AS n FROM {reader} WITH ORDINALITY"
    )
    select = (
        f"SELECT {_level_cols(texts)} FROM {reader} WITH ORDINALITY "
        "GROUP BY ALL ORDER BY min(ordinality)"
    )
    try:
        conflict = _conflicting_rows(con, numbered, n)
        if not conflict:
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
    shown_records = {r for _, records in conflict[:_SHOWN] for r in records[:_SHOWN]}
    starts = _line_numbers(p, delimiter, shown_records)
    shown = "; ".join(
        f"{delimiter.join(row)!r} on line{'s' if len(records) > 1 else ''} "
        + _and([str(starts.get(r, r)) for r in records[:_SHOWN]], more=len(records) > _SHOWN)
        for row, records in conflict[:_SHOWN]
    ) + ("; ..." if len(conflict) > _SHOWN else "")
    msg = (
        f"hierarchy file {p!r} lists value {conflict[0][0][0]!r} more than once with "
        f"different labels: {shown}; keep one row per value (exact duplicate rows are "
        "merged)"
    )
    raise HierarchyError(msg)


def _conflicting_rows(
    con: duckdb.DuckDBPyConnection, numbered: str, n: int
) -> list[tuple[list[str], list[int]]]:
    """The rows of the first value listed with two labellings, with their record numbers.

    ``numbered`` selects the file's ``n`` fields ``c0`` … and the record number ``n``.
    Empty when every value has one row (exact duplicates aside); at most ``_SHOWN + 1``
    rows, in the order of the file.
    """
    if n < 2:
        return []  # one field: rows of one value are equal
    fields = ", ".join(f"c{i}" for i in range(n))
    differ = " OR ".join(f"min(c{i}) <> max(c{i})" for i in range(1, n))
    return [
        (list(row), list(records))
        for row, records in con.execute(
            f"""
            WITH r AS ({numbered}),
            bad AS (
                SELECT c0 FROM r GROUP BY c0 HAVING {differ} ORDER BY min(n) LIMIT 1
            )
            SELECT [{fields}] AS row, list(n ORDER BY n) AS records
            FROM r SEMI JOIN bad USING (c0) GROUP BY ALL ORDER BY min(n)
            LIMIT {_SHOWN + 1}
            """
        ).fetchall()
    ]


def _line_numbers(path: str, delimiter: str, records: set[int]) -> dict[int, int]:
    """The 1-based line of the file on which each record of ``records`` begins.

    Records are numbered as DuckDB reads them: blank lines are none, and a quoted field
    may span lines. Only an error message calls this, so reading the file line by line
    in Python costs nothing on the way of a valid hierarchy.
    """
    out: dict[int, int] = {}
    with Path(path).open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter, quotechar='"')
        start, record = 1, 0
        for row in reader:
            if row:
                record += 1
                if record in records:
                    out[record] = start
                    if len(out) == len(records):
                        break
            start = reader.line_num + 1
    return out


def _and(items: list[str], *, more: bool = False) -> str:
    """``1``, ``1 and 2``, ``1, 2 and 3`` (``1, 2, ...`` when ``more`` were left out)."""
    if more:
        return ", ".join([*items, "..."])
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


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
