"""Column roles of one call: arguments over the configuration, and undeclared columns.

Every column of a table has at most one role: quasi-identifier, identifier (never
released: ``'*'``), sensitive or insensitive (released unchanged). The arguments of a call
(``qi``, ``identifiers``, ``sensitive``, ``insensitive``) override the configuration
(``kanon_columns``) for that call, except that a column configured as an identifier
stays one. Column names compare case-insensitively, as in DuckDB.

A column with no role is *undeclared*, and so is a configured QI that a call's ``qi``
leaves out (it would be released unchanged). A release checks that such columns do not carry
the quasi-identifiers (``kanon.plan.undeclared``); ``kanon_check`` reports those whose values
single out rows (:data:`IDENTIFYING_RULE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.exceptions import ConfigError
from kanon.plan.catalog import resolve_columns
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kanon.plan.catalog import Table

__all__ = [
    "IDENTIFYING_RULE",
    "Roles",
    "resolve_roles",
    "singletons_sql",
]

#: A column singles out rows when more than 1 % of the rows, and at least 2, hold a
#: (non-NULL) value that no other row holds: names, e-mail addresses, SSNs and row ids
#: do; categories, codes and most measurements of small domains do not.
IDENTIFYING_RULE = "more than 1 % of the rows (and at least 2) hold a value no other row holds"
_SHARE = 0.01
_AT_LEAST = 2

_ROLES = ("qi", "identifier", "sensitive", "insensitive")
_WHAT = {"qi": "qi", "identifier": "identifiers", "sensitive": "sensitive"}
_WHAT["insensitive"] = "insensitive"


@dataclass(frozen=True)
class Roles:
    """The roles of a table's columns for one call (column names as in the table)."""

    qi: tuple[str, ...]  # as given, else as configured (unresolved: errors name them)
    identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    insensitive: tuple[str, ...]
    undeclared: tuple[str, ...]


def _configured_roles(table: Table, config: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{lower(column): role}`` of the configuration; a column with two roles is refused."""
    roles: dict[str, tuple[str, str]] = {}
    for column, role in config:
        key = column.lower()
        if key in roles and roles[key][1] != role:
            first, other = roles[key]
            msg = (
                f"kanon_columns gives column {column!r} of table {table.name!r} two roles: "
                f"{other} (row {first!r}) and {role} (row {column!r}); column names compare "
                "case-insensitively, as in DuckDB: delete one of the rows or run "
                "kanon.configure again"
            )
            raise ConfigError(msg)
        roles.setdefault(key, (column, role))
    return {k: r for k, (_, r) in roles.items()}


def resolve_roles(
    table: Table,
    config: Iterable[tuple[str, str]],
    *,
    qi: Iterable[str] = (),
    identifiers: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    insensitive: Iterable[str] = (),
) -> Roles:
    """The roles of ``table``'s columns: the arguments, else the configuration.

    Args:
        table: the resolved table.
        config: ``(column, role)`` rows of ``kanon_columns`` for the table.
        qi: the call's quasi-identifiers (empty: the configured ones).
        identifiers: the call's identifiers.
        sensitive: the call's sensitive columns.
        insensitive: the call's insensitive columns.

    Returns:
        The :class:`Roles`.

    Raises:
        ConfigError: an unknown column, a column given two roles by the arguments or by
            the configuration, or a configured identifier given another role.
    """
    configured = _configured_roles(table, config)
    given: dict[str, str] = {}  # column name -> role, from the arguments
    for role, names in (
        ("qi", qi),
        ("identifier", identifiers),
        ("sensitive", sensitive),
        ("insensitive", insensitive),
    ):
        for col in resolve_columns(table, list(names), _WHAT[role]):
            if col.name in given and given[col.name] != role:
                msg = (
                    f"column {col.name!r} is given two roles in this call: "
                    f"{_WHAT[given[col.name]]} and {_WHAT[role]}"
                )
                raise ConfigError(msg)
            if configured.get(col.name.lower()) == "identifier" and role != "identifier":
                msg = (
                    f"column {col.name!r} of table {table.name!r} is configured as an "
                    f"identifier, which is never released; remove it from {_WHAT[role]} "
                    "(or change its role with kanon.configure)"
                )
                raise ConfigError(msg)
            given[col.name] = role
    # Without qi, the configured QIs that the arguments give no other role.
    other = {name.lower() for name in given}
    qi_names = tuple(qi) or tuple(
        c for c, r in _first_rows(config) if r == "qi" and c.lower() not in other
    )
    qi_set = {table.column(n).name for n in qi_names} if qi_names else set()
    out: dict[str, list[str]] = {role: [] for role in _ROLES}
    undeclared: list[str] = []
    for col in table.columns:
        if col.name in qi_set:
            continue
        has = given.get(col.name) or configured.get(col.name.lower())
        if has is None or has == "qi":  # a configured QI left out of this call's qi
            undeclared.append(col.name)
        elif has != "qi":
            out[has].append(col.name)
    return Roles(
        qi=qi_names,
        identifiers=tuple(out["identifier"]),
        sensitive=tuple(out["sensitive"]),
        insensitive=tuple(out["insensitive"]),
        undeclared=tuple(undeclared),
    )


def _first_rows(config: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The configuration's rows, one per column (the first, case-insensitively)."""
    seen: set[str] = set()
    out = []
    for column, role in config:
        if column.lower() not in seen:
            seen.add(column.lower())
            out.append((column, role))
    return out


def singletons_sql(table: Table, columns: Iterable[str]) -> str:
    """SQL of rows ``(__kanon_col, __kanon_singles, __kanon_n)``, one per column.

    Per column, the rows holding a value no other row holds; the table's row count
    beside. One aggregate query: a ``GROUP BY`` per column. Its own names all start with
    ``__kanon_`` and it groups by the column itself, so no user column is captured.
    """
    probes = [
        f"SELECT {literal(c)} AS __kanon_col, count(*) AS __kanon_singles FROM "
        f"(SELECT 1 FROM {table.sql} WHERE {ident(c)} IS NOT NULL GROUP BY {ident(c)} "
        "HAVING count(*) = 1)"
        for c in columns
    ]
    if not probes:
        return (
            "SELECT NULL::VARCHAR AS __kanon_col, 0 AS __kanon_singles, 0 AS __kanon_n WHERE false"
        )
    return (
        f"SELECT __kanon_col, __kanon_singles, __kanon_n FROM ({' UNION ALL '.join(probes)}), "
        f"(SELECT count(*) AS __kanon_n FROM {table.sql})"
    )


def identifying_sql(table: Table, columns: Iterable[str]) -> str:
    """SQL of one ``VARCHAR[]``: the ``columns`` that single out rows, in table order."""
    cols = list(columns)
    if not cols:
        return "[]::VARCHAR[]"
    order = ", ".join(literal(c) for c in cols)
    return (
        "(SELECT coalesce(list(__kanon_col ORDER BY "
        f"list_position([{order}]::VARCHAR[], __kanon_col)), []::VARCHAR[]) "
        f"FROM ({singletons_sql(table, cols)}) "
        f"WHERE __kanon_singles > {_SHARE} * __kanon_n AND __kanon_singles >= {_AT_LEAST})"
    )
