"""Quasi-identifiers and their hierarchies: resolved from the catalog, checked, selected.

A :class:`QuasiIdentifier` is a column with the hierarchy it is generalized with: a
configured lookup table, or the default of its type (:func:`kanon.hierarchy.default_spec`).
:func:`hierarchy_cte` selects it with its level-0 value as text ``k`` and labels
``l1 … lL``: the first part of every plan.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kanon.exceptions import ConfigError, HierarchyError
from kanon.hierarchy.base import CODE_PREFIX, leaves_from, value_text
from kanon.hierarchy.numbers import (
    coded_levels,
    default_select,
    default_spec,
    default_specs,
    has_codes,
)
from kanon.plan.catalog import Column, Table, UnknownTableError, resolve_columns, resolve_table
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident

if TYPE_CHECKING:
    from collections.abc import Sequence

    import duckdb

    from kanon.plan.catalog import ConfiguredColumn

__all__ = [
    "QuasiIdentifier",
    "check_hierarchies",
    "hierarchy_cte",
    "hierarchy_of",
    "hierarchy_select",
    "priority_ranks",
    "priority_weights",
    "resolve_qis",
]

_SHOWN = 5


@dataclass(frozen=True)
class QuasiIdentifier:
    """A quasi-identifier and the hierarchy it is generalized with."""

    column: Column
    hierarchy: str | None  # configured lookup table, None for the type's default
    select: str  # SQL selecting the hierarchy (columns by position)
    labels: tuple[str, ...]  # the hierarchy's column names, level 0 first
    level0_type: str  # type of the hierarchy's level-0 column
    weight: float
    default: dict[str, Any] | None = None  # the type default's spec (no hierarchy table)
    # A default interval or calendar hierarchy's select also has its nodes' codes (level
    # 0 first, in value order: see default_select); they are dense over the values of
    # codes_over (the relation it was built from), merely ordered over any other.
    codes: bool = False
    codes_over: str | None = None
    # The QI's priority, a whole number >= 1, lower = more important: from the call's
    # ``priorities``, else ``kanon_columns.priority`` (whose 0 means none); None: none.
    priority: int | None = None

    @property
    def height(self) -> int:
        """Levels above the leaves."""
        return len(self.labels) - 1


def hierarchy_of(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    col: Column,
    name: str | None,
    weight: float,
    domain: str | None = None,
    spec: dict[str, Any] | None = None,
) -> QuasiIdentifier:
    """``col``'s hierarchy: the configured table ``name``, else the type's default.

    A default hierarchy covers the values of ``domain`` (SQL of rows holding the column,
    e.g. the table and a population together), by default the table's; ``spec`` is its
    :func:`~kanon.hierarchy.default_spec` over them, when already known.
    """
    if name is None:
        source = table.sql if domain is None else domain
        if spec is None:
            spec = default_spec(con, source, col.name, col.type)
        codes = has_codes(spec)
        leaves = leaves_from(source, col.name, col.type)
        select = default_select(leaves, spec, col.type, codes=codes)
        if codes and domain is None:
            # Known without binding the select (which takes a while): its leaves are
            # the column's own values.
            labels = tuple(f"level_{i}" for i in range(coded_levels(spec) + 1))
            level0 = col.type
        else:
            described = con.execute(f"DESCRIBE {select}").fetchall()
            labels = tuple(str(r[0]) for r in described if not str(r[0]).startswith(CODE_PREFIX))
            level0 = str(described[0][1])
        return QuasiIdentifier(
            col, None, select, labels, level0, weight, spec, codes, source if codes else None
        )
    try:
        h = resolve_table(con, name)
    except UnknownTableError:
        msg = f"hierarchy table {name!r} of column {col.name!r} does not exist"
        raise UnknownTableError(msg) from None
    if len(h.columns) < 2:
        msg = (
            f"hierarchy {name!r} of column {col.name!r} has {len(h.columns)} column; "
            "it needs at least 2 (the values and a root)"
        )
        raise HierarchyError(msg)
    labels = tuple(c.name for c in h.columns)
    select = f"SELECT * FROM {h.sql}"
    return QuasiIdentifier(col, name, select, labels, h.columns[0].type, weight)


def hierarchy_select(q: QuasiIdentifier) -> str:
    """The hierarchy with its level-0 value as text ``k`` and labels ``l1 … lL``.

    A default interval or calendar hierarchy adds its codes ``c0 … cL`` and its level-0
    value ``v``.
    """
    cols = [ident(c) for c in q.labels]
    exprs = [f"{value_text(cols[0], q.level0_type)} AS k"]
    exprs += [f"CAST({c} AS VARCHAR) AS l{i}" for i, c in enumerate(cols[1:], start=1)]
    if q.codes:
        exprs += [f"{ident(f'{CODE_PREFIX}{i}')} AS c{i}" for i in range(len(cols))]
        exprs.append(f"{cols[0]} AS v")
    return f"SELECT {', '.join(exprs)} FROM ({q.select})"


def hierarchy_cte(j: int, q: QuasiIdentifier) -> Cte:
    """The hierarchy of quasi-identifier ``j``: :func:`hierarchy_select` as a CTE."""
    codes = [*(f"c{i}" for i in range(len(q.labels))), "v"] if q.codes else []
    return Cte(
        internal(f"hierarchy{j}"),
        hierarchy_select(q),
        ("k", *(f"l{i}" for i in range(1, len(q.labels))), *codes),
    )


def check_hierarchies(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qis: list[QuasiIdentifier],
    ctes: list[Cte],
    *,
    values: bool = True,
) -> None:
    """One query finding the first problem of any configured hierarchy, named in full.

    With ``values`` the table's values are checked against their hierarchies too (a pass
    over the table); without, only the hierarchy tables, for SQL whose coded rows stop
    at run time on a value without a leaf (:func:`kanon.plan.coding.coded_ctes`).
    """
    probes: list[str] = []
    for j, q in enumerate(qis):
        if q.hierarchy is None:
            continue
        h = ctes[j].ref
        c = ident(q.column.name)
        top = q.height
        if values:
            probes.append(
                # Distinct values first: only they are cast to text.
                f"(SELECT 1 AS kind, {j} AS j, v, NULL AS w FROM "
                f"(SELECT {value_text('x', q.column.type)} AS v FROM "
                f"(SELECT DISTINCT {c} AS x FROM {table.sql} WHERE {c} IS NOT NULL) "
                f"EXCEPT SELECT k FROM {h}) ORDER BY v LIMIT {_SHOWN})"
            )
        probes.append(
            f"(SELECT 2 AS kind, {j} AS j, k AS v, NULL AS w FROM {h} GROUP BY k "
            "HAVING count(*) > 1 "
            f"ORDER BY k LIMIT {_SHOWN})"
        )
        nulls = " OR ".join(["k IS NULL"] + [f"l{i} IS NULL" for i in range(1, top + 1)])
        probes.append(f"(SELECT 3, {j}, k, NULL FROM {h} WHERE {nulls} LIMIT 1)")
        for i in range(top):
            lo = "k" if i == 0 else f"l{i}"
            probes.append(
                f"(SELECT 4, {j}, {lo}, {i} FROM {h} GROUP BY {lo} "
                f"HAVING count(DISTINCT l{i + 1}) > 1 ORDER BY {lo} LIMIT 1)"
            )
        probes.append(
            f"(SELECT 5, {j}, NULL, count(DISTINCT l{top}) FROM {h} "
            f"HAVING count(DISTINCT l{top}) <> 1)"
        )
    if not probes:
        return
    rows = con.execute(
        with_query(ctes, "SELECT * FROM (" + " UNION ALL ".join(probes) + ") ORDER BY kind, j, v")
    ).fetchall()
    if not rows:
        return
    kind, j, _, extra = rows[0]
    q = qis[j]
    where = f"hierarchy {q.hierarchy!r} of column {q.column.name!r}"
    named = [v for kd, jj, v, _ in rows if kd == kind and jj == j]
    shown = ", ".join(repr(v) for v in named)
    if kind == 1:
        msg = (
            f"{where} does not cover value(s) {shown} of table {table.name!r}; add them to "
            "the hierarchy"
        )
    elif kind == 2:
        msg = f"{where} lists level-0 value(s) more than once: {shown}"
    elif kind == 3:
        msg = f"{where} has a NULL label (row of value {named[0]!r})"
    elif kind == 4:
        msg = (
            f"{where} is not nested: label {named[0]!r} at level {extra} has more than one "
            f"parent at level {int(extra) + 1}"
        )
    else:
        msg = f"{where} has {extra} roots at its top level; it needs exactly one"
    raise HierarchyError(msg)


def priority_ranks(priorities: Sequence[int | None]) -> list[int]:
    """The dense rank of every QI's priority: 1 for the lowest (the most important).

    QIs without a priority share the rank after the last (all 1 when none has one).

    Examples:
        >>> priority_ranks([3, 3, 7, None])
        [1, 1, 2, 3]
    """
    distinct = sorted({p for p in priorities if p is not None})
    rank = {p: r for r, p in enumerate(distinct, start=1)}
    return [len(distinct) + 1 if p is None else rank[p] for p in priorities]


def priority_weights(priorities: Sequence[int | None]) -> list[float] | None:
    """The weights of QIs with these priorities, or None when none has a priority.

    PrioPrivacy's weights (the ARX weights of Bampoulidis et al.'s experiments): with
    ``P`` ranks (:func:`priority_ranks`, the rank of QIs without a priority included), a
    QI of rank ``r`` weighs ``(P - r + 1) / P``: 1 for the most important, ``1 / P`` for
    the least. The forest weighs its generalization costs by them (in place of the
    configured weights), Mondrian its choice of the attribute to cut.

    Examples:
        >>> priority_weights([1, 1, 2, None])
        [1.0, 1.0, 0.6666666666666666, 0.3333333333333333]
        >>> priority_weights([None, None]) is None
        True
    """
    if all(p is None for p in priorities):
        return None
    ranks = priority_ranks(priorities)
    count = max(ranks)
    return [(count - r + 1) / count for r in ranks]


def _given_priorities(
    table: Table, columns: list[Column], priorities: Sequence[tuple[str, int]]
) -> dict[str, int]:
    """The call's ``priorities`` by QI column name; every name a QI of the call."""
    qis = {c.name for c in columns}
    shown = ", ".join(c.name for c in columns)
    out: dict[str, int] = {}
    spelled: dict[str, str] = {}
    for name, priority in priorities:
        try:
            col = table.column(name)
        except ConfigError as e:
            msg = (
                f"priorities names column {name!r}, which is not a column of table "
                f"{table.name!r} ({e}); give priorities to its quasi-identifiers ({shown})"
            )
            raise ConfigError(msg) from None
        if col.name not in qis:
            msg = (
                f"priorities names column {col.name!r}, which is not a quasi-identifier of "
                f"this call ({shown}): give priorities to quasi-identifiers only, or add "
                f"{col.name!r} to qi"
            )
            raise ConfigError(msg)
        if col.name in out:
            msg = (
                f"priorities names column {col.name!r} twice ({spelled[col.name]!r} and "
                f"{name!r}; column names compare case-insensitively): give it one priority"
            )
            raise ConfigError(msg)
        out[col.name] = priority
        spelled[col.name] = name
    return out


def resolve_qis(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qi: tuple[str, ...],
    config: Sequence[ConfiguredColumn],
    population: Table | None = None,
    priorities: Sequence[tuple[str, int]] = (),
) -> list[QuasiIdentifier]:
    """The QIs given (else those configured), each with its hierarchy, weight and priority.

    With a ``population``, default hierarchies cover its values too. A QI's priority is
    that of the call's ``priorities`` (checked by ``AnonymizeOptions.of``: whole
    numbers >= 1), else its configured one.

    Raises:
        ConfigError: no QIs, an unknown QI, or ``priorities`` naming a column that is not
            a QI of the call (or one twice).
    """
    names = list(qi) or [c for c, role, *_ in config if role == "qi"]
    if not names:
        msg = (
            f"no quasi-identifiers for table {table.name!r}: pass qi := [...] or configure "
            "them with kanon.configure(...) / INSERT INTO kanon_columns"
        )
        raise ConfigError(msg)
    settings = {c.lower(): (h, w) for c, _, h, w, _ in config}
    configured_priority = {c.lower(): p for c, _, _, _, p in config if p is not None}
    columns = resolve_columns(table, names, "qi")
    given = _given_priorities(table, columns, priorities)
    domains: dict[str, str] = {}
    if population is not None:
        for col in columns:
            (pop_col,) = resolve_columns(population, [col.name], "population")
            domains[col.name] = (
                f"(SELECT {ident(col.name)} FROM {table.sql} UNION ALL "
                f"SELECT {ident(pop_col.name)} FROM {population.sql})"
            )
    # Every default's spec from one pass over the data (the table, and the population).
    defaults = [c for c in columns if settings.get(c.name.lower(), (None, 1.0))[0] is None]
    source = table.sql
    if population is not None and defaults:
        names_sql = ", ".join(ident(c.name) for c in defaults)
        pop_cols = [resolve_columns(population, [c.name], "population")[0] for c in defaults]
        pop_sql = ", ".join(
            f"{ident(p.name)} AS {ident(c.name)}" for p, c in zip(pop_cols, defaults, strict=True)
        )
        source = (
            f"(SELECT {names_sql} FROM {table.sql} UNION ALL "
            f"SELECT {pop_sql} FROM {population.sql})"
        )
    specs = dict(
        zip(
            [c.name for c in defaults],
            default_specs(con, source, [(c.name, c.type) for c in defaults]),
            strict=True,
        )
    )
    out = []
    for col in columns:
        hierarchy, weight = settings.get(col.name.lower(), (None, 1.0))
        q = hierarchy_of(
            con, table, col, hierarchy, weight, domains.get(col.name), specs.get(col.name)
        )
        priority = given.get(col.name, configured_priority.get(col.name.lower()))
        out.append(replace(q, priority=priority))
    return out
