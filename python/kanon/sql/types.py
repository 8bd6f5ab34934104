"""DuckDB type classification: which types kanon orders, measures, keys by value or items.

Every decision kanon takes by a column's type reads it here, from the type's name as
DuckDB's ``DESCRIBE`` gives it (``DECIMAL(18,3)``, ``TIMESTAMP WITH TIME ZONE``, ...).
"""

from __future__ import annotations

__all__ = [
    "DATE_TYPES",
    "FLOAT_TYPES",
    "INT_TYPES",
    "ITEM_TYPES",
    "NUMERIC_TYPES",
    "TIMESTAMPTZ",
    "base_type",
    "has_default_generalizer",
    "has_position",
    "is_numeric",
    "keyed_by_value",
    "position",
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
#: Item types of (h,k,p)-coherence's transactions.
ITEM_TYPES = INT_TYPES | {"VARCHAR"}
#: Types whose values are equal exactly when their texts are: the rows of these
#: columns find their leaves by value, without casting every row to text.
_TYPED_KEYS = INT_TYPES | {"UHUGEINT", "VARCHAR", "BOOLEAN", "DATE", "TIME", "TIMESTAMP"}


def base_type(typ: str) -> str:
    """The type's name without its parameters (``DECIMAL(18,3)`` → ``DECIMAL``)."""
    return typ.split("(")[0]


def is_numeric(typ: str) -> bool:
    """Whether values of ``typ`` have a natural numeric or temporal order."""
    return base_type(typ) in NUMERIC_TYPES


def has_default_generalizer(typ: str) -> bool:
    """Whether a QI of type ``typ`` can be generalized without a hierarchy table.

    Numbers (interval splits), dates and times (calendar levels), text and booleans
    (suppression) can; nested types (lists, structs, maps), blobs and the like cannot.
    """
    base = base_type(typ)
    return base in NUMERIC_TYPES or base in ("VARCHAR", "BOOLEAN", "UUID", "ENUM")


def has_position(typ: str) -> bool:
    """Whether values of type ``typ`` lie on an axis (numbers and dates)."""
    base = base_type(typ)
    return base in INT_TYPES or base in FLOAT_TYPES or base == "DECIMAL" or base in DATE_TYPES


def position(expr: str, typ: str) -> str:
    """A number placing a value on its column's axis, NULL for unordered types."""
    if not has_position(typ):
        return "CAST(NULL AS DOUBLE)"
    if base_type(typ) in DATE_TYPES:
        return f"CAST(epoch({expr}) AS DOUBLE)"
    return f"CAST({expr} AS DOUBLE)"


def keyed_by_value(typ: str) -> bool:
    """Whether equal values of ``typ`` have equal texts (leaves are found by value)."""
    return typ in _TYPED_KEYS or typ.startswith(("DECIMAL", "TIMESTAMP_"))
