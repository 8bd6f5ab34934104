"""Hierarchy tables: the shared parts of the builders, value text, and validation."""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.sql.quote import ident, literal
from kanon.sql.types import FLOAT_TYPES, TIMESTAMPTZ

if TYPE_CHECKING:
    from collections.abc import Sequence

ROOT = "*"
"""The label of the single top-level node made by the builders."""

# How many offending values an error message lists.
_SHOWN = 5


@dataclass(frozen=True)
class Hierarchy:
    """A hierarchy table and its height.

    Attributes:
        name: The table holding the hierarchy.
        levels: Number of levels above the leaves (number of columns - 1).
    """

    name: str
    levels: int

    def to_csv(
        self, con: duckdb.DuckDBPyConnection, path: str | os.PathLike[str], *, delimiter: str = ";"
    ) -> Path:
        """Write the hierarchy in ARX's format, which :func:`from_csv` and ``--hierarchy`` read.

        One row per leaf, ``value;level 1;...;*``, no header, sorted by value; a field
        holding the delimiter, a quote or a line break is quoted. The file is replaced if
        it exists.

        Raises:
            InvalidInputError: ``delimiter`` is not one character, or the file cannot be
                written.
        """
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
            msg = f"delimiter must be one character other than a quote, got {delimiter!r}"
            raise InvalidInputError(msg)
        cols = _columns(con, self.name, "hierarchy")
        fields = [value_text(ident(cols[0][0]), cols[0][1])]
        fields += [f"CAST({ident(c)} AS VARCHAR)" for c, _ in cols[1:]]
        out = Path(os.fspath(path))
        try:
            con.execute(
                f"COPY (SELECT {', '.join(fields)} FROM {ident(self.name)} ORDER BY 1) "
                f"TO {literal(str(out))} (FORMAT csv, HEADER false, "
                f"DELIMITER {literal(delimiter)}, QUOTE '\"', ESCAPE '\"')"
            ).fetchall()
        except duckdb.IOException as exc:
            msg = f"cannot write hierarchy {self.name!r} to {str(out)!r}: {exc}"
            raise InvalidInputError(msg) from exc
        return out


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


def _suppress_sql(leaves: str) -> str:
    return f"SELECT {_level_cols(['v', literal(ROOT)])} FROM ({leaves}) ORDER BY 1"


#: The helper columns of a default hierarchy's codes (see ``numbers.default_select``).
CODE_PREFIX = "__kanon_node_"

#: The levels above the leaves of a calendar hierarchy: month, year, decade, root.
DATE_LEVELS = 4


def _dates_sql(leaves: str, typ: str, *, codes: bool = False) -> str:
    """Month, year and decade above every value of ``leaves``, then the root.

    With ``codes``, columns ``CODE_PREFIX || n`` give the leaf's position in value order
    and its node's dense code at level ``n``. Every level only grows with the value, so
    a node's code is its rank among the level's few keys present (no sort of labels).
    """
    # An instant's calendar is read in UTC, whatever the session's TimeZone.
    w = utc("v") if typ == TIMESTAMPTZ else "v"
    exprs = [
        "v",
        "printf('%04d-%02d', y, m - y * 12)",
        "printf('%04d', y)",
        "printf('%04ds', d)",
        literal(ROOT),
    ]
    keyed = (
        f"SELECT v, year({w}) AS y, year({w}) * 12 + month({w}) AS m, "
        f"year({w}) - ((year({w}) % 10) + 10) % 10 AS d FROM ({leaves})"
    )
    if not codes:
        return f"SELECT {_level_cols(exprs)} FROM ({keyed}) ORDER BY 1"
    ranks = ", ".join(
        f"r{key} AS (SELECT {key}, (dense_rank() OVER (ORDER BY {key}) - 1)::UINTEGER AS c "
        f"FROM (SELECT DISTINCT {key} FROM p))"
        for key in ("m", "y", "d")
    )
    code_exprs = ["c0", "rm.c", "ry.c", "rd.c", "0::UINTEGER"]
    code_cols = ", ".join(f"{e} AS {ident(f'{CODE_PREFIX}{n}')}" for n, e in enumerate(code_exprs))
    return (
        f"WITH p AS (SELECT *, (row_number() OVER (ORDER BY v) - 1)::UINTEGER AS c0 "
        f"FROM ({keyed})), {ranks} "
        f"SELECT {_level_cols(exprs)}, {code_cols} "
        f"FROM p JOIN rm USING (m) JOIN ry USING (y) JOIN rd USING (d)"
    )


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
