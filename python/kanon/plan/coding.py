"""Column coding: every quasi-identifier's values as dense codes of its hierarchy.

:func:`coded_ctes` returns the coded parts of a plan (after the hierarchies of
:mod:`kanon.plan.hierarchies`) as a :class:`Coded`:

* ``values[j]``: hierarchy ``j`` restricted to the values present in the data (plus a
  NULL leaf right under the root when the column holds NULLs), with dense codes: ``a0``
  the leaf in depth-first order, ``a{l}`` the label at level ``l``;
* ``rows``: every source row with its leaf codes (:func:`code_column`);
* ``tuples``: the distinct code tuples ``t`` in value order with their counts ``n``.

The kernels receive the tuples and the hierarchies as packed lists of these codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.hierarchy.base import value_text
from kanon.hierarchy.numbers import default_outside, default_range_text
from kanon.sql import types as _types
from kanon.sql.cte import Cte, internal
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from kanon.plan.catalog import Table
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = [
    "HIERARCHIES",
    "Coded",
    "code_column",
    "code_columns",
    "coded_ctes",
    "coded_hierarchy",
    "hierarchy_lists",
    "keyed_by_value",
    "leaf_key",
    "row_count",
    "unchanged",
]

#: The SQL type of :func:`hierarchy_lists`: per QI, per level, the ancestor of each leaf.
HIERARCHIES = "UINTEGER[][][]"


def code_column(j: int) -> str:
    """The helper column holding a row's leaf code of QI ``j``, quoted."""
    return ident(internal(f"code{j}"))


def code_columns(m: int) -> str:
    """The leaf-code columns of ``m`` QIs (:func:`code_column`), as an SQL list."""
    return ", ".join(code_column(j) for j in range(m))


@dataclass(frozen=True)
class Coded:
    """The coded parts of a plan, in the order they are defined."""

    hierarchies: list[Cte]  # per QI (and the sensitive column), hierarchy_cte
    values: list[Cte]  # per QI (and the sensitive column), its coded hierarchy
    rows: Cte  # every source row with its leaf codes
    tuples: Cte  # the distinct code tuples with their number t and rows n

    @property
    def ctes(self) -> list[Cte]:
        """Every part, ready for :func:`kanon.sql.cte.with_query`."""
        return [*self.hierarchies, *self.values, self.rows, self.tuples]

    def tuple_lists(self, m: int) -> tuple[str, str]:
        """SQL of the packed tuples and of their counts.

        The tuples are one ``UINTEGER[]`` (``m`` codes each, in order ``t``), the counts
        a ``UBIGINT[]``.
        """
        return (
            f"(SELECT flatten(list([{code_columns(m)}] ORDER BY t)) FROM {self.tuples.ref})",
            f"(SELECT list(n ORDER BY t) FROM {self.tuples.ref})",
        )


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


def coded_hierarchy(hierarchy: Cte, q: QuasiIdentifier, src: str) -> str:
    """SQL of a hierarchy restricted to the values of ``src`` present, coded.

    ``hierarchy`` is the CTE of :func:`kanon.plan.hierarchies.hierarchy_cte`; the
    result has ``vk`` (the value's :func:`leaf_key`), ``k``, the labels ``l1 … lL``,
    ``a0`` the leaf in depth-first order and ``a{l}`` the label at level ``l`` (dense),
    plus a NULL leaf
    right under the root when the column holds NULLs (``vk`` and ``k`` NULL).

    A default interval or calendar hierarchy brings its codes (``c0 … cL``, in value
    order): taken as they are where they are dense over ``src``'s values, else ranked.
    """
    top = q.height
    c = ident(q.column.name)
    h = hierarchy.ref
    labels = ", ".join(f"l{i}" for i in range(1, top + 1))
    key = leaf_key(c, q)
    on = value_text("d.vk", q.column.type) if keyed_by_value(q) else "d.vk"
    nulls_exist = f"EXISTS (SELECT 1 FROM {src} WHERE {c} IS NULL)"
    # The distinct keys first: only they are cast to text.
    present = (
        f"(SELECT DISTINCT {key} AS vk FROM {src} WHERE {c} IS NOT NULL) d JOIN {h} h ON {on} = h.k"
    )
    if q.codes and q.codes_over == src:
        # Built from the values of src within its range (the rows of any other value
        # stop): every leaf is present, no join needed. The NULL leaf comes last at
        # every level but the root's.
        vk = "h.v" if keyed_by_value(q) else "h.k"
        codes = ", ".join(f"h.c{i} AS a{i}" for i in range(top + 1))
        widths = ", ".join(
            ["count(*)::UINTEGER"]
            + [f"coalesce(max(c{i}) + 1, 0)::UINTEGER" for i in range(1, top)]
            + ["0::UINTEGER", f"max(l{top})"]
        )
        null_codes = ", ".join(f"w{i}" for i in range(top + 1))
        names = ", ".join(f"w{i}" for i in range(top + 1))
        return (
            f"SELECT {vk} AS vk, h.k, {labels}, {codes} FROM {h} h "
            f"UNION ALL SELECT {', '.join(['NULL'] * (top + 1))}, root, {null_codes} "
            f"FROM (SELECT {widths} FROM {h}) w({names}, root) WHERE {nulls_exist}"
        )
    nulls = ", ".join(["NULL"] * (top + 1))  # vk, k and the labels below the root
    if q.codes:
        # Ordered codes: ranked over the values present (NULLs, the NULL leaf, last).
        path = "c0"
        order = [f"c{i}" for i in range(top + 1)]
        extra = ", " + ", ".join(f"h.c{i}" for i in range(top + 1))
        null_extra = ", " + ", ".join(["NULL"] * top + ["0"])
    else:
        path = ", ".join([f"l{i}" for i in range(top, 0, -1)] + ["k"])
        order = ["", *(f"l{i}" for i in range(1, top + 1))]
        extra = null_extra = ""
    levels = ", ".join(
        f"(dense_rank() OVER (ORDER BY {order[i]}) - 1)::UINTEGER AS a{i}"
        for i in range(1, top + 1)
    )
    cols = f"d.vk, h.k, {labels}{extra}" if q.codes else "d.vk, h.*"
    return (
        f"SELECT vk, k, {labels}, "
        f"(dense_rank() OVER (ORDER BY {path}) - 1)::UINTEGER AS a0, {levels} FROM ("
        f"SELECT {cols} FROM {present} "
        f"UNION ALL SELECT {nulls}, (SELECT max(l{top}) FROM {h}){null_extra} "
        f"WHERE {nulls_exist})"
    )


def coded_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    hierarchies: list[Cte],
    extra: QuasiIdentifier | None = None,
    weight: str | None = None,
) -> Coded:
    """The coded parts of ``qis`` over their ``hierarchies`` (see :class:`Coded`).

    ``extra`` (the sensitive column's hierarchy, last in ``hierarchies``) is coded too,
    as the last of ``values``. With ``weight`` (a column of the table) a row counts as
    that many rows in the tuples' ``n``.
    """
    m = len(qis)
    src = table.sql
    values = [
        Cte(internal(f"coded{j}"), coded_hierarchy(hierarchies[j], q, src))
        for j, q in enumerate(qis if extra is None else [*qis, extra])
    ]
    code_list = code_columns(m)
    selects = ["s.*"]
    joins = []
    for j, q in enumerate(qis):
        key = value_text(f"s.{ident(q.column.name)}", q.column.type)
        # The table changed since planning (or the SQL is rerun later): a value without
        # a leaf, or outside the range a default interval hierarchy was planned for,
        # stops the query rather than losing its row or getting a wrong label.
        # A value outside its default's range has no leaf: that check comes first.
        guard = ""
        outside = default_outside(f"s.{ident(q.column.name)}", q.default, q.column.type)
        if outside is not None and q.default is not None:
            text = literal(
                f"a value of column {q.column.name!r} is outside the range "
                f"{default_range_text(q.default)} its interval hierarchy was planned for "
                f"({CHANGED}): "
            )
            guard += f"WHEN {outside} THEN error({text} || {key}) "
        guard += f"WHEN v{j}.a0 IS NULL THEN error({_missing(table, q, key)}) "
        selects.append(f"CASE {guard}ELSE v{j}.a0 END AS {code_column(j)}")
        joins.append(
            f"LEFT JOIN {values[j].ref} v{j} "
            f"ON {leaf_key(f's.{ident(q.column.name)}', q)} IS NOT DISTINCT FROM v{j}.vk"
        )
    rows = Cte(
        internal("coded_rows"), f"SELECT {', '.join(selects)} FROM {src} s {' '.join(joins)}"
    )
    tuples = Cte(
        internal("tuples"),
        f"SELECT {code_list}, {row_count(weight)}::UBIGINT AS n, "
        f"(row_number() OVER (ORDER BY {code_list}) - 1)::UBIGINT AS t "
        f"FROM {rows.ref} GROUP BY {code_list}",
    )
    return Coded(list(hierarchies), values, rows, tuples)


#: Why the data can differ from the plan, and what to do.
CHANGED = (
    "the table differs from the data the query was planned from: kanon's SQL functions "
    "plan from committed data, through a connection of their own. In a transaction that "
    "wrote to the table, call them after COMMIT (this error aborted the transaction: "
    "ROLLBACK, redo the writes and COMMIT), or use the Python API (kanon.anonymize(...)), "
    "which plans in your transaction; otherwise the table changed meanwhile: run the "
    "query again"
)


def unchanged(sql: str, table: Table, rows: int) -> str:
    """``sql``, stopped with :data:`CHANGED` if ``table`` holds other than ``rows`` rows.

    For the SQL macros, whose planner counts committed rows: the query reads the
    caller's snapshot, which a transaction's uncommitted writes make differ.
    """
    msg = literal(f"table {table.name!r} holds other than the {rows} rows planned for ({CHANGED})")
    return (
        f"SELECT * FROM ({sql}) WHERE (SELECT CASE WHEN count(*) <> {int(rows)} "
        f"THEN error({msg}) ELSE true END FROM {table.sql})"
    )


def row_count(weight: str | None) -> str:
    """The aggregate counting rows: ``count(*)``, or the sum of column ``weight``."""
    return "count(*)" if weight is None else f"sum({ident(weight)})"


def _missing(table: Table, q: QuasiIdentifier, key: str) -> str:
    """SQL of the message naming value ``key`` of ``q`` that has no leaf."""
    if q.hierarchy is None:
        head = (
            f"column {q.column.name!r} of table {table.name!r} has a value its default "
            f"hierarchy was not planned for ({CHANGED}): "
        )
        return f"{literal(head)} || {key}"
    head = f"hierarchy {q.hierarchy!r} of column {q.column.name!r} does not cover value '"
    tail = f"' of table {table.name!r}; add it to the hierarchy"
    return f"{literal(head)} || {key} || {literal(tail)}"


def hierarchy_lists(coded: Coded, qis: list[QuasiIdentifier]) -> str:
    """SQL of a ``UINTEGER[][][]``: per QI, per level, the label code of every leaf.

    The leaves are sorted once, as one list of every level's code, then split by level
    (a list per level ordered by the leaf sorts as often as there are levels).
    """
    return ", ".join(
        "(SELECT ["
        + ", ".join(f"list_transform(s, lambda e: e.a{i})" for i in range(q.height + 1))
        + "] FROM (SELECT list({"
        + ", ".join(f"'a{i}': a{i}" for i in range(q.height + 1))
        + f"}} ORDER BY a0) AS s FROM {coded.values[j].ref}))"
        for j, q in enumerate(qis)
    )
