"""Read-only catalog lookups: tables, columns, types and the kanon configuration."""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from kanon.exceptions import ConfigError, InvalidInputError
from kanon.sql import types as _types
from kanon.sql.quote import ident, literal
from kanon.sql.types import DATE_TYPES, FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, TIMESTAMPTZ

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "DATE_TYPES",
    "FLOAT_TYPES",
    "INTERNAL_TABLES",
    "INT_TYPES",
    "MAX_QIS",
    "NUMERIC_TYPES",
    "RESERVED_PREFIX",
    "TIMESTAMPTZ",
    "Column",
    "ConfiguredColumn",
    "Scope",
    "Table",
    "UnknownTableError",
    "caller_scope",
    "canonical_key",
    "check_not_reserved",
    "check_view_name",
    "config_keys",
    "configured",
    "configured_full",
    "has_default_generalizer",
    "resolve_columns",
    "resolve_table",
]

#: Names beginning with this (in any case) belong to kanon's generated SQL and helper
#: tables; a user table, column, hierarchy or release named so is refused, not captured.
RESERVED_PREFIX = "__kanon"
#: kanon's own tables in that namespace (DataFrames registered by the Python API).
INTERNAL_TABLES: set[str] = set()


def check_not_reserved(name: str, what: str) -> None:
    """Refuse ``name`` if it begins with :data:`RESERVED_PREFIX` (case-insensitively)."""
    if name.lower().startswith(RESERVED_PREFIX) and name not in INTERNAL_TABLES:
        msg = (
            f"{what} {name!r} begins with {RESERVED_PREFIX!r}, which kanon reserves for the "
            "names of its generated SQL and helper tables; rename it"
        )
        raise ConfigError(msg)


def _check_columns_not_reserved(table: Table) -> None:
    for col in table.columns:
        if col.name.lower().startswith(RESERVED_PREFIX):
            msg = (
                f"table {table.name!r} has a column {col.name!r}: names beginning with "
                f"{RESERVED_PREFIX!r} are reserved for kanon's generated SQL; rename it, for "
                f"example through a view: CREATE VIEW v AS SELECT * RENAME "
                f"({ident(col.name)} AS {ident(col.name.lstrip('_'))}) FROM "
                f"{'.'.join(ident(p) for p in split_name(table.name))}"
            )
            raise ConfigError(msg)


@dataclass(frozen=True)
class Column:
    """A column of a resolved table."""

    name: str
    type: str

    @property
    def ordered(self) -> bool:
        """Whether values have a natural numeric or temporal order."""
        return _types.is_numeric(self.type)


@dataclass(frozen=True)
class Table:
    """A table or view found in the catalog, with its columns in order."""

    name: str
    sql: str  # the quoted name to use in generated SQL
    columns: tuple[Column, ...]
    #: The object DuckDB binds the name to, as (catalog, schema, name) in the catalog's
    #: spelling: the same however the table was named. None if the catalog does not list it.
    identity: tuple[str, str, str] | None = None

    def column(self, name: str) -> Column:
        """Return the column called ``name`` (exact match first, then case-insensitive)."""
        for col in self.columns:
            if col.name == name:
                return col
        folded = [c for c in self.columns if c.name.lower() == name.lower()]
        if len(folded) == 1:
            return folded[0]
        names = ", ".join(repr(c.name) for c in self.columns)
        msg = f"table {self.name!r} has no column {name!r}; its columns are {names}"
        raise ConfigError(msg)


def split_name(name: str) -> list[str]:
    """The dotted parts of ``name``, double quotes read as SQL quoting.

    ``main."My Table"`` gives ``['main', 'My Table']``; a name with unbalanced quotes
    gives itself whole.
    """
    parts: list[str] = []
    current: list[str] = []
    i, quoted = 0, False
    while i < len(name):
        ch = name[i]
        if quoted:
            if ch == '"' and name[i + 1 : i + 2] == '"':
                current.append('"')
                i += 1
            elif ch == '"':
                quoted = False
            else:
                current.append(ch)
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if quoted or any(p == "" for p in parts):
        return [name]
    return parts


def _candidates(name: str) -> list[list[str]]:
    """The readings of ``name``: itself as one identifier, then its dotted parts."""
    out = [[name]]
    parts = split_name(name)
    if parts != [name]:
        out.append(parts)
    return out


Listing = list[tuple[str, str, str]]


@dataclass(frozen=True)
class Scope:
    """How the calling connection resolves an unqualified name, read on that connection.

    The SQL macros' planners read the catalog through a cursor of their own, whose
    ``USE`` and ``search_path`` are not the caller's: the macros pass the caller's
    ``current_database()``, ``current_schema()`` and ``search_path`` (DuckDB folds them
    while binding, in the caller's context), and names are resolved with those.
    """

    database: str
    schema: str
    search_path: str


#: The caller's scope while a macro's planner runs (None: the connection given is the
#: caller's own, which sees its TEMP objects and its settings).
_SCOPE: ContextVar[Scope | None] = ContextVar("kanon_scope", default=None)


@contextmanager
def caller_scope(scope: Scope | None) -> Iterator[None]:
    """Resolve names as ``scope`` does while the block runs (a macro's planner)."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _listing(con: duckdb.DuckDBPyConnection) -> Listing:
    """Every table and view of the catalog as (catalog, schema, name)."""
    return [
        (str(d), str(s), str(n))
        for d, s, n in con.execute(
            "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
            "UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views() "
            "WHERE NOT internal"
        ).fetchall()
    ]


def _scope(con: duckdb.DuckDBPyConnection, *, own: bool = False) -> Scope:
    """The caller's scope: the macro's, else (or ``own``) read on ``con`` itself."""
    scope = None if own else _SCOPE.get()
    if scope is not None:
        return scope
    ((db, schema, path),) = con.execute(
        "SELECT current_database(), current_schema(), current_setting('search_path')"
    ).fetchall()
    return Scope(str(db), str(schema), str(path or ""))


def _split_path(path: str) -> list[str]:
    """The comma-separated entries of a ``search_path``, double quotes read as quoting."""
    out: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in path:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    out.append("".join(current).strip())
    return [e for e in out if e]


def _search_path(con: duckdb.DuckDBPyConnection, *, own: bool = False) -> list[tuple[str, str]]:
    """(catalog, schema) in the order DuckDB's binder looks up an unqualified name.

    TEMP objects first, then the search path (an entry without a catalog is in the
    current database), then the current database's ``main`` and the system catalog.
    The caller's (:func:`caller_scope`), unless ``own``: that of ``con`` itself.
    """
    scope = _scope(con, own=own)
    db = scope.database
    out = [("temp", "main")]
    entries = _split_path(scope.search_path)
    if not entries:
        out.append((db, scope.schema))
    for entry in entries:
        parts = split_name(entry)
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
        elif len(parts) == 1:
            out.append((db, parts[0]))
    out += [(db, "main"), ("system", "main"), ("system", "pg_catalog")]
    return out


def _identify(
    parts: list[str], listing: Listing, path: list[tuple[str, str]]
) -> tuple[str, str, str] | None:
    """The catalog object that DuckDB binds the name ``parts`` to, or None.

    DuckDB's rules: ``name`` is looked up along the search path; ``a.name`` in schema
    ``a`` of each catalog whose entry in the path names schema ``a`` (else the current
    database), then as ``name`` in catalog ``a`` (its schemas in the path, else
    ``main``); ``c.s.name`` is exact.
    """
    low = [p.lower() for p in parts]
    found = {(d.lower(), s.lower(), n.lower()): (d, s, n) for d, s, n in listing}
    lpath = [(d.lower(), s.lower()) for d, s in path]
    if len(low) == 3:
        return found.get((low[0], low[1], low[2]))
    if len(low) == 2:
        a, name = low
        current = lpath[-3][0]  # the current database (its main, after the search path)
        for d in [d for d, s in lpath if s == a] or [current]:
            if (d, a, name) in found:
                return found[(d, a, name)]
        for s in [s for d, s in lpath if d == a] or ["main"]:
            if (a, s, name) in found:
                return found[(a, s, name)]
        return None
    if len(low) == 1:
        for d, s in lpath:
            if (d, s, low[0]) in found:
                return found[(d, s, low[0])]
    return None


def _qualified(identity: tuple[str, str, str]) -> str:
    """``"catalog"."schema"."name"``: the one relation, however the caller's path is set."""
    return ".".join(ident(p) for p in identity)


def _temp_guard(parts: list[str], identity: tuple[str, str, str]) -> str | None:
    """SQL that stops the query if a TEMP object of the caller would bind ``parts`` first.

    The macros' planner cannot see the caller's TEMP tables and views; the query runs on
    the caller's connection, where ``duckdb_tables()`` lists them. None when the name
    cannot reach a TEMP object before ``identity`` (qualified by another schema or
    catalog).
    """
    low = [p.lower() for p in parts]
    if identity[0].lower() == "temp" or len(low) == 3 or (len(low) == 2 and low[0] != "main"):
        return None
    shown = ".".join(parts)
    msg = (
        f"table {shown!r} names a TEMP table or view of this connection, which kanon's SQL "
        "functions cannot read (they plan through a connection of their own, which would "
        f"read {_qualified(identity)} instead): use the Python API (kanon.anonymize(...), "
        "kanon.check(...)), which reads TEMP tables on your connection, or copy the data "
        "into a regular table"
    )
    return (
        "(SELECT CASE WHEN count(*) > 0 THEN error("
        f"{literal(msg)}) ELSE true END FROM (SELECT table_name AS n FROM duckdb_tables() "
        "WHERE temporary UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary) "
        f"WHERE lower(n) = {literal(low[-1])})"
    )


def resolve_table(con: duckdb.DuckDBPyConnection, name: str) -> Table:
    """Find table or view ``name`` (``schema.name``, ``catalog.schema.name``) as DuckDB does.

    On the caller's own connection, one ``DESCRIBE`` of the quoted name: temporary
    objects shadow persistent ones and the search path applies, exactly as when the
    generated SQL runs. The name is read first as one identifier (a table whose name
    holds a dot), then as dotted parts, double quotes read as SQL quoting
    (``main."Patients"``). Names (of the table or of a column) in kanon's reserved
    namespace are refused.

    For a macro's planner (:func:`caller_scope`), the name is resolved with the caller's
    scope and the generated SQL reads the one relation found, fully qualified; if a TEMP
    object of the caller could shadow it, the query checks that none does and stops
    otherwise (the planner cannot see them).
    """
    if not isinstance(name, str) or name == "":
        msg = f"a table name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    for part in split_name(name):
        check_not_reserved(part, "table name")
    scope = _SCOPE.get()
    listing, path = _listing(con), _search_path(con)
    for parts in _candidates(name):
        identity = _identify(parts, listing, path)
        if scope is not None and identity is not None:
            sql = _qualified(identity)
        elif scope is not None and any(n.lower() == parts[-1].lower() for _, _, n in listing):
            continue  # a relation the caller's path does not reach: not another of the name
        else:
            sql = ".".join(ident(part) for part in parts)  # the caller's own binder, or a file
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()
        except duckdb.CatalogException:
            continue
        if scope is not None and identity is not None:
            guard = _temp_guard(parts, identity)
            if guard is not None:
                sql = f"(SELECT * FROM {sql} WHERE {guard})"
        table = Table(name, sql, tuple(Column(r[0], r[1]) for r in described), identity)
        _check_columns_not_reserved(table)
        return table
    msg = f"unknown table {name!r}: no table or view of that name exists"
    raise UnknownTableError(msg)


#: A name part stored without quotes in ``kanon_columns.table_name``.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def canonical_key(con: duckdb.DuckDBPyConnection, table: Table) -> str:
    """The ``kanon_columns.table_name`` that ``kanon.configure`` writes for ``table``.

    ``schema.name`` for a table of the current database, else ``catalog.schema.name``
    (parts quoted where they are not plain identifiers); the name as given when the
    catalog does not list the table.
    """
    if table.identity is None:
        return table.name
    catalog, schema, name = table.identity
    db = _scope(con, own=True).database  # where ``con`` reads and writes kanon_columns
    parts = [schema, name] if catalog.lower() == db.lower() else [catalog, schema, name]
    return ".".join(p if _PLAIN.fullmatch(p) else ident(p) for p in parts)


def config_keys(con: duckdb.DuckDBPyConnection, table: Table) -> list[str]:
    """The ``kanon_columns.table_name`` values that name ``table``, however spelled.

    A stored name names the table DuckDB would bind it to now, read where ``con`` reads
    ``kanon_columns`` (its own scope, never a macro caller's ``USE``): ``patients``,
    ``main.patients``, ``"Patients"`` and ``memory.main.patients`` all name the same
    table. Without a catalog identity, names equal up to case.
    """
    try:
        rows = con.execute("SELECT DISTINCT table_name FROM kanon_columns").fetchall()
        keys = [str(k) for (k,) in rows]
    except duckdb.CatalogException:  # kanon.install has not run on this database
        return []
    if table.identity is None:
        return [k for k in keys if k.lower() == table.name.lower()]
    listing, path = _listing(con), _search_path(con, own=True)
    want = tuple(p.lower() for p in table.identity)
    out = []
    for key in keys:
        for parts in _candidates(key):
            found = _identify(parts, listing, path)
            if found is not None:
                if tuple(p.lower() for p in found) == want:
                    out.append(key)
                break
    return out


def has_default_generalizer(column: Column) -> bool:
    """Whether a QI of this type can be generalized without a hierarchy table.

    Numbers (interval splits), dates and times (calendar levels), text and booleans
    (suppression) can; nested types (lists, structs, maps), blobs and the like cannot.
    """
    return _types.has_default_generalizer(column.type)


def configured(con: duckdb.DuckDBPyConnection, table: Table) -> list[tuple[str, str, str | None]]:
    """Return ``(column, role, hierarchy)`` rows configured for ``table`` (empty if none).

    The rows of every name of the table count (:func:`config_keys`).
    """
    return [(c, r, h) for c, r, h, _, _ in configured_full(con, table)]


#: A configured column: ``(column, role, hierarchy, weight, priority)``; the priority is
#: None where ``kanon_columns.priority`` is 0 (none given).
ConfiguredColumn = tuple[str, str, str | None, float, int | None]


def configured_full(con: duckdb.DuckDBPyConnection, table: Table) -> list[ConfiguredColumn]:
    """Return ``(column, role, hierarchy, weight, priority)`` rows configured for ``table``.

    In the order they were configured (priorities do not reorder them). A priority of 0
    (the column's default) or NULL is None: no priority.

    Raises:
        ConfigError: a weight that is not positive and finite, or a negative priority
            (written by SQL: ``kanon.configure`` refuses both).
    """
    keys = config_keys(con, table)
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    rows = con.execute(
        "SELECT column_name, role, hierarchy, weight, priority FROM kanon_columns "
        f"WHERE table_name IN ({marks}) ORDER BY rowid",
        keys,
    ).fetchall()
    for c, _, _, w, p in rows:
        if not (w > 0 and math.isfinite(w)):
            msg = (
                f"kanon_columns gives column {c!r} of table {table.name!r} the weight {w}; "
                "weights must be positive finite numbers: fix it with kanon.configure(...) "
                "or UPDATE kanon_columns SET weight = ..."
            )
            raise ConfigError(msg)
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 0):
            msg = (
                f"kanon_columns gives column {c!r} of table {table.name!r} the priority {p}; "
                "priorities are whole numbers >= 1, lower = more important (0: none): fix "
                "it with kanon.configure(..., priorities=...) or UPDATE kanon_columns SET "
                "priority = ..."
            )
            raise ConfigError(msg)
    return [(str(c), str(r), h, float(w), p or None) for c, r, h, w, p in rows]


class UnknownTableError(ConfigError):
    """A table or view the call names does not exist (for the connection that looked)."""


#: The most quasi-identifiers one release or check takes.
MAX_QIS = 64


def resolve_columns(table: Table, names: list[str], what: str) -> list[Column]:
    """Resolve ``names`` to columns of ``table``; reject duplicates (and too many QIs)."""
    if what == "qi" and len(names) > MAX_QIS:
        msg = (
            f"at most {MAX_QIS} quasi-identifiers are supported, got {len(names)} for table "
            f"{table.name!r}: pass as qi := [...] the columns an attacker could know "
            "(k-anonymity over that many columns generalizes nearly every value to '*')"
        )
        raise InvalidInputError(msg)
    cols = [table.column(n) for n in names]
    seen: set[str] = set()
    for col in cols:
        if col.name in seen:
            msg = f"{what} lists column {col.name!r} of table {table.name!r} twice"
            raise ConfigError(msg)
        seen.add(col.name)
    return cols


def check_view_name(con: duckdb.DuckDBPyConnection, name: str, source: Table) -> None:
    """Reject a release name that is empty, qualified, the source, or an existing table."""
    if not isinstance(name, str) or not name or "." in name:
        msg = f"name must be a non-empty unqualified view name, got {name!r}"
        raise InvalidInputError(msg)
    check_not_reserved(name, "release name")
    if name.lower() == source.name.lower():
        msg = f"name {name!r} is the source table; choose another name for the release"
        raise InvalidInputError(msg)
    kinds = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE lower(table_name) = lower(?) "
        "AND table_schema = current_schema() AND table_catalog = current_database()",
        [name],
    ).fetchall()
    if any(kind == "BASE TABLE" for (kind,) in kinds):
        msg = f"a table named {name!r} exists; materialize replaces only views"
        raise ConfigError(msg)
