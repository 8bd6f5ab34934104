"""Column coding: every quasi-identifier's values as dense codes of its hierarchy.

The coded parts of a plan (after the hierarchies of :mod:`kanon.planner.hierarchies`):

* ``__kanon_v{j}``: hierarchy ``j`` restricted to the values present in the data (plus a
  NULL leaf right under the root when the column holds NULLs), with dense codes: ``a0``
  the leaf in depth-first order, ``a{l}`` the label at level ``l``;
* ``__kanon_r``: every source row with its leaf codes ``__kanon_c{j}``;
* ``__kanon_t``: the distinct code tuples in value order with their counts.

The kernels receive the tuples and the hierarchies as packed lists of these codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon import _types
from kanon._sql import ident, literal
from kanon.hierarchy.base import value_text
from kanon.hierarchy.numbers import default_outside, default_range_text

if TYPE_CHECKING:
    from kanon._catalog import Table
    from kanon.planner.hierarchies import QuasiIdentifier

__all__ = [
    "code_columns",
    "coded_ctes",
    "coded_hierarchy",
    "hierarchy_lists",
    "keyed_by_value",
    "leaf_key",
    "tuple_lists",
]


def keyed_by_value(q: QuasiIdentifier) -> bool:
    """Whether the rows of QI ``q`` find their leaves by value (see :func:`leaf_key`)."""
    return _types.keyed_by_value(q.column.type)


def leaf_key(expr: str, q: QuasiIdentifier) -> str:
    """SQL of the key a value of QI ``q`` finds its leaf by (``vk`` of :func:`coded_hierarchy`).

    The value itself where equal values have equal texts (integers, decimals, text,
    booleans, dates and timestamps without time zone), else its hierarchy text
    (floating point, with -0.0 read as 0.0; time zones, intervals and other types).
    """
    return expr if keyed_by_value(q) else value_text(expr, q.column.type)


def coded_hierarchy(hierarchy: str, q: QuasiIdentifier, src: str) -> str:
    """SQL of a hierarchy restricted to the values of ``src`` present, coded.

    ``hierarchy`` names the CTE of :func:`hierarchy_select`; the result has ``vk`` (the
    value's :func:`leaf_key`), ``k``, the labels ``l1 … lL``, ``a0`` the leaf in
    depth-first order and ``a{l}`` the label at level ``l`` (dense), plus a NULL leaf
    right under the root when the column holds NULLs (``vk`` and ``k`` NULL).
    """
    top = q.height
    c = ident(q.column.name)
    h = ident(hierarchy)
    path = ", ".join([f"l{i}" for i in range(top, 0, -1)] + ["k"])
    levels = ", ".join(
        f"(dense_rank() OVER (ORDER BY l{i}) - 1)::UINTEGER AS a{i}" for i in range(1, top + 1)
    )
    nulls = ", ".join(["NULL"] * (top + 1))  # vk, k and the labels below the root
    labels = ", ".join(f"l{i}" for i in range(1, top + 1))
    key = leaf_key(c, q)
    on = value_text("d.vk", q.column.type) if keyed_by_value(q) else "d.vk"
    # The distinct keys first: only they are cast to text.
    return (
        f"SELECT vk, k, {labels}, "
        f"(dense_rank() OVER (ORDER BY {path}) - 1)::UINTEGER AS a0, {levels} FROM ("
        f"SELECT d.vk, h.* FROM (SELECT DISTINCT {key} AS vk FROM {src} WHERE {c} IS NOT NULL) "
        f"d JOIN {h} h ON {on} = h.k "
        f"UNION ALL SELECT {nulls}, (SELECT max(l{top}) FROM {h}) "
        f"WHERE EXISTS (SELECT 1 FROM {src} WHERE {c} IS NULL))"
    )


def coded_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    ctes: list[str],
    extra: QuasiIdentifier | None = None,
) -> list[str]:
    """Return ``ctes`` (the ``__kanon_h{j}``) with the coded CTEs appended.

    ``__kanon_v{j}``: the hierarchies over the present values, coded (``extra``, the
    sensitive column's hierarchy, as ``__kanon_v{m}``); ``__kanon_r``: every row with
    its leaf codes ``__kanon_c{j}``; ``__kanon_t``: the distinct code tuples ``t`` in
    value order with their counts ``n``.
    """
    m = len(qis)
    ctes = list(ctes)
    src = table.sql
    for j, q in enumerate(qis if extra is None else [*qis, extra]):
        ctes.append(f'"__kanon_v{j}" AS ({coded_hierarchy(f"__kanon_h{j}", q, src)})')
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    code_list = code_columns(m)
    selects = ["s.*"]
    joins = []
    for j, q in enumerate(qis):
        key = value_text(f"s.{ident(q.column.name)}", q.column.type)
        # The table changed since planning (or the SQL is rerun later): a value without
        # a leaf, or outside the range a default interval hierarchy was planned for,
        # stops the query rather than losing its row or getting a wrong label.
        guard = f"WHEN v{j}.a0 IS NULL THEN error({_missing(table, q, key)}) "
        outside = default_outside(f"s.{ident(q.column.name)}", q.default, q.column.type)
        if outside is not None and q.default is not None:
            text = literal(
                f"a value of column {q.column.name!r} is outside the range "
                f"{default_range_text(q.default)} its interval hierarchy was planned for; "
                "plan the query again: "
            )
            guard += f"WHEN {outside} THEN error({text} || {key}) "
        selects.append(f"CASE {guard}ELSE v{j}.a0 END AS {codes[j]}")
        joins.append(
            f'LEFT JOIN "__kanon_v{j}" v{j} '
            f"ON {leaf_key(f's.{ident(q.column.name)}', q)} IS NOT DISTINCT FROM v{j}.vk"
        )
    ctes.append(f'"__kanon_r" AS (SELECT {", ".join(selects)} FROM {src} s {" ".join(joins)})')
    ctes.append(
        f'"__kanon_t" AS (SELECT {code_list}, count(*)::UBIGINT AS n, '
        f"(row_number() OVER (ORDER BY {code_list}) - 1)::UBIGINT AS t "
        f'FROM "__kanon_r" GROUP BY {code_list})'
    )
    return ctes


def _missing(table: Table, q: QuasiIdentifier, key: str) -> str:
    """SQL of the message naming value ``key`` of ``q`` that has no leaf."""
    if q.hierarchy is None:
        head = (
            f"column {q.column.name!r} of table {table.name!r} has a value its default "
            "hierarchy was not planned for (the table changed since planning; plan the "
            "query again): "
        )
        return f"{literal(head)} || {key}"
    head = f"hierarchy {q.hierarchy!r} of column {q.column.name!r} does not cover value '"
    tail = f"' of table {table.name!r}; add it to the hierarchy"
    return f"{literal(head)} || {key} || {literal(tail)}"


def hierarchy_lists(qis: list[QuasiIdentifier]) -> str:
    """SQL of a ``UINTEGER[][][]``: per QI, per level, the label code of every leaf."""
    return ", ".join(
        "(SELECT ["
        + ", ".join(f"list(a{i} ORDER BY a0)" for i in range(q.height + 1))
        + f'] FROM "__kanon_v{j}")'
        for j, q in enumerate(qis)
    )


def code_columns(m: int) -> str:
    """The leaf-code columns ``__kanon_c{j}`` of ``m`` QIs, as an SQL list."""
    return ", ".join(f'"__kanon_c{j}"' for j in range(m))


def tuple_lists(m: int) -> tuple[str, str]:
    """SQL of the packed tuples and of their counts.

    The tuples are one ``UINTEGER[]`` (``m`` codes each, in order ``t``), the counts a
    ``UBIGINT[]``.
    """
    return (
        f'(SELECT flatten(list([{code_columns(m)}] ORDER BY t)) FROM "__kanon_t")',
        '(SELECT list(n ORDER BY t) FROM "__kanon_t")',
    )
