"""Read-only catalog lookups: tables, columns, types and the kanon configuration."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import duckdb

from kanon import _types
from kanon._sql import ident
from kanon._types import DATE_TYPES, FLOAT_TYPES, INT_TYPES, NUMERIC_TYPES, TIMESTAMPTZ
from kanon.exceptions import ConfigError, InvalidInputError

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
    "Table",
    "UnknownTableError",
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
                f"({ident(col.name)} AS {ident(col.name.lstrip('_'))}) FROM {table.sql}"
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


def _search_path(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(catalog, schema) in the order DuckDB looks up an unqualified name."""
    ((db, schema, path),) = con.execute(
        "SELECT current_database(), current_schema(), current_setting('search_path')"
    ).fetchall()
    out = [("temp", "main"), (str(db), str(schema))]
    for entry in str(path or "").split(","):
        parts = split_name(entry.strip()) if entry.strip() else []
        if len(parts) == 2:
            out.append((parts[0], parts[1]))
        elif len(parts) == 1:
            out.append((str(db), parts[0]))
    return out


def _identify(
    parts: list[str], listing: Listing, path: list[tuple[str, str]]
) -> tuple[str, str, str] | None:
    """The catalog object that DuckDB binds the name ``parts`` to, or None."""
    low = [p.lower() for p in parts]
    found = {(d.lower(), s.lower(), n.lower()): (d, s, n) for d, s, n in listing}
    if len(low) == 3:
        return found.get((low[0], low[1], low[2]))
    if len(low) == 2:
        catalogs = [d.lower() for d, _ in path]
        for d in catalogs:  # schema.name first, then catalog.name in its schema main
            if (d, low[0], low[1]) in found:
                return found[(d, low[0], low[1])]
        return found.get((low[0], "main", low[1]))
    if len(low) == 1:
        for d, s in path:
            if (d.lower(), s.lower(), low[0]) in found:
                return found[(d.lower(), s.lower(), low[0])]
    return None


def resolve_table(con: duckdb.DuckDBPyConnection, name: str) -> Table:
    """Find table or view ``name`` (``schema.name``, ``catalog.schema.name``) as DuckDB does.

    One ``DESCRIBE`` of the quoted name: temporary objects shadow persistent ones and the
    search path applies, exactly as when the generated SQL runs. The name is read first
    as one identifier (a table whose name holds a dot), then as dotted parts, double
    quotes read as SQL quoting (``main."Patients"``). Names (of the table or of a
    column) in kanon's reserved namespace are refused.
    """
    if not isinstance(name, str) or name == "":
        msg = f"a table name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    for part in split_name(name):
        check_not_reserved(part, "table name")
    for parts in _candidates(name):
        sql = ".".join(ident(part) for part in parts)
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()
        except duckdb.CatalogException:
            continue
        identity = _identify(parts, _listing(con), _search_path(con))
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
    ((db,),) = con.execute("SELECT current_database()").fetchall()
    parts = [schema, name] if catalog.lower() == str(db).lower() else [catalog, schema, name]
    return ".".join(p if _PLAIN.fullmatch(p) else ident(p) for p in parts)


def config_keys(con: duckdb.DuckDBPyConnection, table: Table) -> list[str]:
    """The ``kanon_columns.table_name`` values that name ``table``, however spelled.

    A stored name names the table DuckDB would bind it to now: ``patients``,
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
    listing, path = _listing(con), _search_path(con)
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
