"""``kanon.configure``: write roles, hierarchies, weights, priorities to ``kanon_columns``."""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

from kanon import hierarchy
from kanon._options import column_names
from kanon.engine.install import install, require_writable
from kanon.exceptions import ConfigError
from kanon.plan.catalog import (
    UnknownTableError,
    canonical_key,
    config_keys,
    has_default_generalizer,
    resolve_columns,
    resolve_table,
)

if TYPE_CHECKING:
    import duckdb

__all__ = ["configure"]


def _mapping(value: object, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        msg = f"{what} must map column names to numbers, got {value!r}"
        raise ConfigError(msg)
    return value


def _number(value: object, what: str, column: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"the {what} of column {column!r} must be a number, got {value!r}"
        raise ConfigError(msg)
    return float(value)


def _whole(value: object, what: str, column: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"the {what} of column {column!r} must be a whole number, got {value!r}"
        raise ConfigError(msg)
    if not -(2**31) <= value < 2**31:
        msg = f"the {what} of column {column!r} must fit in 32 bits, got {value!r}"
        raise ConfigError(msg)
    return value


def _check_hierarchy_name(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Refuse a hierarchy that every later call would refuse by its name.

    Later calls find a configured hierarchy with :func:`resolve_table`, which refuses a
    name, or a column name, in kanon's reserved namespace (``check_not_reserved``);
    running the same lookup here gives the same message before anything is stored. A
    hierarchy that does not exist is left to :func:`hierarchy.validate` to report.
    """
    if name == "":
        return  # hierarchy.validate refuses it
    with contextlib.suppress(UnknownTableError):
        resolve_table(con, name)


def configure(
    con: duckdb.DuckDBPyConnection,
    table: str,
    qi: dict[str, str | None] | list[str] | None = None,
    identifiers: list[str] | None = None,
    sensitive: list[str] | None = None,
    insensitive: list[str] | None = None,
    weights: dict[str, float] | None = None,
    priorities: dict[str, int] | None = None,
) -> None:
    """Record the roles of ``table``'s columns in ``kanon_columns`` (replacing old ones).

    The rows are stored under the table's canonical name (``schema.name``, or
    ``catalog.schema.name`` outside the current database); every name of the table
    finds them (``patients``, ``main.patients``, ``"Patients"``).

    Installs kanon on ``con`` first if needed. All arguments are checked before
    anything is written: on error nothing changes.

    Args:
        con: the connection holding ``table``.
        table: table or view name.
        qi: quasi-identifiers, as a list or as ``{column: hierarchy table or None}``.
        identifiers: direct identifiers (never released).
        sensitive: sensitive columns (released, protected by l-diversity / t-closeness).
        insensitive: other columns released as they are.
        weights: per-QI weight (> 0) of its generalization cost.
        priorities: per-QI priority: a whole number >= 1, lower = more important (ties
            allowed); a QI left out has none (stored as 0). ``method := 'priority'``
            generalizes by them, the forest and Mondrian weigh their QIs by them
            (``w = (P - rank + 1) / P`` over the ``P`` distinct priorities); a call's
            ``priorities`` replace a column's configured one. They do not reorder the
            QIs.

    Raises:
        HierarchyError: a hierarchy misses a value of its column, is not nested or has
            more than one root.
        ConfigError: unknown table, column or hierarchy, a hierarchy table whose name
            or a column name is in kanon's reserved ``__kanon`` namespace (which later
            calls refuse), a QI whose type has no default generalizer and no hierarchy, a
            column given two roles, a weight or priority for a column that is not a QI, a
            non-positive weight, a priority that is not a whole number >= 1.

    Examples:
        >>> import duckdb, kanon
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE t (age INT, zip VARCHAR, dx VARCHAR)")
        >>> kanon.configure(con, "t", qi=["age", "zip"], sensitive=["dx"])
        >>> con.execute("SELECT count(*) FROM kanon_columns WHERE role = 'qi'").fetchone()
        (2,)
    """
    resolved = resolve_table(con, table)
    if isinstance(qi, dict):
        if not all(isinstance(c, str) and (h is None or isinstance(h, str)) for c, h in qi.items()):
            msg = f"qi must map column names to hierarchy table names (or None), got {qi!r}"
            raise ConfigError(msg)
        qi_map = dict(qi)
    else:
        qi_map = dict.fromkeys(column_names("qi", qi))
    roles: dict[str, str] = {}
    for role, names in (
        ("qi", list(qi_map)),
        ("identifier", column_names("identifiers", identifiers)),
        ("sensitive", column_names("sensitive", sensitive)),
        ("insensitive", column_names("insensitive", insensitive)),
    ):
        for col in resolve_columns(resolved, list(names), role):
            if col.name in roles:
                msg = f"column {col.name!r} is given two roles: {roles[col.name]} and {role}"
                raise ConfigError(msg)
            roles[col.name] = role
    canonical = {n: resolved.column(n).name for n in qi_map}
    hierarchies = {canonical[n]: h for n, h in qi_map.items()}
    for column, h in hierarchies.items():
        if h is None:
            if not has_default_generalizer(resolved.column(column)):
                msg = (
                    f"quasi-identifier {column!r} of table {resolved.name!r} has type "
                    f"{resolved.column(column).type}, which has no default generalizer; "
                    "attach a hierarchy table: qi={column: 'hierarchy_table'}"
                )
                raise ConfigError(msg)
        else:
            _check_hierarchy_name(con, h)
            hierarchy.validate(con, h, table=resolved.name, column=column)
    weights_ = _mapping(weights, "weights")
    priorities_ = _mapping(priorities, "priorities")
    extras: dict[str, dict[str, Any]] = {"weights": weights_, "priorities": priorities_}
    for what, mapping in extras.items():
        for name in mapping:
            if roles.get(resolved.column(name).name) != "qi":
                msg = f"{what} names column {name!r}, which is not a quasi-identifier"
                raise ConfigError(msg)
    weight_of = {resolved.column(n).name: _number(w, "weight", n) for n, w in weights_.items()}
    if any(not (w > 0 and math.isfinite(w)) for w in weight_of.values()):
        msg = f"weights must be positive finite numbers, got {weight_of}"
        raise ConfigError(msg)
    priority_of = {
        resolved.column(n).name: _whole(p, "priority", n) for n, p in priorities_.items()
    }
    for column, p in priority_of.items():
        if p < 1:
            msg = (
                f"the priority of column {column!r} must be >= 1 (1 = most important), got "
                f"{p}; leave the column out of priorities to give it none"
            )
            raise ConfigError(msg)
    install(con)
    # Stored under the table's canonical name; the rows under any other name of the
    # same table (``patients``, ``main.patients``, ...) are replaced too.
    key = canonical_key(con, resolved)
    old_keys = sorted({*config_keys(con, resolved), key})
    rows = [
        (
            key,
            col,
            role,
            hierarchies.get(col),
            weight_of.get(col, 1.0),
            priority_of.get(col, 0),
        )
        for col, role in roles.items()
    ]
    require_writable(
        con,
        f"the configuration of table {table!r}",
        "pass the roles to each call (qi=, identifiers=, ...) or open it writable",
    )
    con.execute("BEGIN TRANSACTION")
    try:
        marks = ", ".join("?" for _ in old_keys)
        con.execute(f"DELETE FROM kanon_columns WHERE table_name IN ({marks})", old_keys)
        if rows:
            con.executemany("INSERT INTO kanon_columns VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
