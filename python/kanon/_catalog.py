"""Read-only catalog lookups: tables, columns, types and the kanon configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon._sql import ident
from kanon.exceptions import ConfigError

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "Column",
    "Table",
    "configured",
    "has_default_generalizer",
    "resolve_columns",
    "resolve_table",
]

INT_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
    | {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}
)
FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE"})
DATE_TYPES = frozenset(
    {"DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"}
    | {"TIMESTAMP WITH TIME ZONE"}
)
#: Types whose values have a natural numeric or temporal order.
NUMERIC_TYPES = INT_TYPES | FLOAT_TYPES | DATE_TYPES | {"UHUGEINT", "DECIMAL", "TIME", "INTERVAL"}


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
    database: str
    schema: str
    columns: tuple[Column, ...]

    @property
    def sql(self) -> str:
        """The quoted, fully qualified name."""
        return f"{ident(self.database)}.{ident(self.schema)}.{ident(self.name)}"

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
    """Find table or view ``name`` (optionally ``schema.name``) in the current database."""
    if not isinstance(name, str) or name == "":
        msg = f"a table name must be a non-empty string, got {name!r}"
        raise ConfigError(msg)
    rows = con.execute(
        """
        SELECT database_name, schema_name, table_name FROM duckdb_tables()
        WHERE database_name IN (current_database(), 'temp')
        UNION ALL
        SELECT database_name, schema_name, view_name FROM duckdb_views()
        WHERE database_name IN (current_database(), 'temp') AND NOT internal
        """
    ).fetchall()
    candidates = [r for r in rows if r[2] == name]
    if not candidates and "." in name:
        schema, _, table = name.partition(".")
        candidates = [r for r in rows if r[1] == schema and r[2] == table]
    if not candidates:
        candidates = [r for r in rows if r[2].lower() == name.lower()]
    if not candidates:
        msg = f"unknown table {name!r}: no table or view of that name exists"
        raise ConfigError(msg)
    # Temporary objects shadow persistent ones, as in DuckDB's own name resolution.
    database, schema, table = min(candidates, key=lambda r: (r[0] != "temp", r[1] != "main", r))
    qualified = f"{ident(database)}.{ident(schema)}.{ident(table)}"
    described = con.execute(f"DESCRIBE SELECT * FROM {qualified}").fetchall()
    cols = tuple(Column(r[0], r[1]) for r in described)
    return Table(table, database, schema, cols)


def has_default_generalizer(column: Column) -> bool:
    """Whether a QI of this type can be generalized without a hierarchy table.

    Numbers (interval splits), dates and times (calendar levels), text and booleans
    (suppression) can; nested types (lists, structs, maps), blobs and the like cannot.
    """
    base = column.type.split("(")[0]
    return base in NUMERIC_TYPES or base in ("VARCHAR", "BOOLEAN", "UUID", "ENUM")


def configured(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str | None]]:
    """Return ``(column, role, hierarchy)`` rows configured for ``table`` (empty if none)."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'kanon_columns' "
        "AND database_name = current_database()"
    ).fetchone()
    if not exists or exists[0] == 0:
        return []
    return [
        (c, r, h)
        for c, r, h in con.execute(
            "SELECT column_name, role, hierarchy FROM kanon_columns WHERE table_name = ? "
            "ORDER BY priority DESC, rowid",
            [table],
        ).fetchall()
    ]


def resolve_columns(table: Table, names: list[str], what: str) -> list[Column]:
    """Resolve ``names`` to columns of ``table``; reject duplicates."""
    cols = [table.column(n) for n in names]
    seen: set[str] = set()
    for col in cols:
        if col.name in seen:
            msg = f"{what} lists column {col.name!r} of table {table.name!r} twice"
            raise ConfigError(msg)
        seen.add(col.name)
    return cols
