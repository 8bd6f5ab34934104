"""Read-only catalog lookups: tables, columns, types and the kanon configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb

from kanon._sql import ident
from kanon.exceptions import ConfigError, InvalidInputError

__all__ = [
    "INTERNAL_TABLES",
    "MAX_QIS",
    "RESERVED_PREFIX",
    "Column",
    "Table",
    "UnknownTableError",
    "check_not_reserved",
    "check_view_name",
    "configured",
    "configured_full",
    "has_default_generalizer",
    "resolve_columns",
    "resolve_table",
]

INT_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
    | {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)
FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})
#: DuckDB's name of TIMESTAMPTZ: instants, whose calendar and text kanon reads in UTC.
TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE"
DATE_TYPES = frozenset(
    {"DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"} | {TIMESTAMPTZ}
)
#: Types whose values have a natural numeric or temporal order.
NUMERIC_TYPES = INT_TYPES | FLOAT_TYPES | DATE_TYPES | {"DECIMAL", "TIME", "INTERVAL"}


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
        return self.type.split("(")[0] in NUMERIC_TYPES


@dataclass(frozen=True)
class Table:
    """A table or view found in the catalog, with its columns in order."""

    name: str
    sql: str  # the quoted name to use in generated SQL
    columns: tuple[Column, ...]

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


def resolve_table(con: duckdb.DuckDBPyConnection, name: str) -> Table:
    """Find table or view ``name`` (or ``schema.name``) as DuckDB itself resolves it.

    One ``DESCRIBE`` of the quoted name: temporary objects shadow persistent ones and the
    search path applies, exactly as when the generated SQL runs. Names (of the table or
    of a column) in kanon's reserved namespace are refused.
    """
    if not isinstance(name, str) or name == "":
        msg = f"a table name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    for part in name.split("."):
        check_not_reserved(part, "table name")
    candidates = [ident(name)]
    if "." in name:
        candidates.append(".".join(ident(part) for part in name.split(".", 1)))
    for sql in candidates:
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()
        except duckdb.CatalogException:
            continue
        table = Table(name, sql, tuple(Column(r[0], r[1]) for r in described))
        _check_columns_not_reserved(table)
        return table
    msg = f"unknown table {name!r}: no table or view of that name exists"
    raise UnknownTableError(msg)


def has_default_generalizer(column: Column) -> bool:
    """Whether a QI of this type can be generalized without a hierarchy table.

    Numbers (interval splits), dates and times (calendar levels), text and booleans
    (suppression) can; nested types (lists, structs, maps), blobs and the like cannot.
    """
    base = column.type.split("(")[0]
    return base in NUMERIC_TYPES or base in ("VARCHAR", "BOOLEAN", "UUID", "ENUM")


def configured(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str | None]]:
    """Return ``(column, role, hierarchy)`` rows configured for ``table`` (empty if none).

    Table names compare case-insensitively, as DuckDB's catalog does.
    """
    try:
        rows = con.execute(
            "SELECT column_name, role, hierarchy FROM kanon_columns "
            "WHERE lower(table_name) = lower(?) ORDER BY priority DESC, rowid",
            [table],
        ).fetchall()
    except duckdb.CatalogException:  # kanon.install has not run on this database
        return []
    return [(c, r, h) for c, r, h in rows]


def configured_full(
    con: duckdb.DuckDBPyConnection, table: str
) -> list[tuple[str, str, str | None, float]]:
    """Return ``(column, role, hierarchy, weight)`` rows configured for ``table``."""
    try:
        rows = con.execute(
            "SELECT column_name, role, hierarchy, weight FROM kanon_columns "
            "WHERE lower(table_name) = lower(?) ORDER BY priority DESC, rowid",
            [table],
        ).fetchall()
    except duckdb.CatalogException:  # kanon.install has not run on this database
        return []
    for c, _, _, w in rows:
        if not (w > 0 and math.isfinite(w)):
            msg = (
                f"kanon_columns gives column {c!r} of table {table!r} the weight {w}; weights "
                "must be positive finite numbers: fix it with kanon.configure(...) or UPDATE "
                "kanon_columns SET weight = ..."
            )
            raise ConfigError(msg)
    return [(str(c), str(r), h, float(w)) for c, r, h, w in rows]


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
