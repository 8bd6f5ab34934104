"""What the local recodings (forest, Mondrian) share: leaf keys, packs, levels, release.

Their plan, after the coded parts of :mod:`kanon.plan.coding`:

1. The keys (:func:`key_ctes`): the *key* of every leaf of QI ``j``, the number Mondrian cuts order
   and measure it by: the value's position on its axis for numbers and dates (the NULL
   leaf beyond the largest value), the leaf's depth-first position otherwise.
2. Large tables are cut in SQL into packs (:mod:`kanon.plan.release.packs`), so that no
   packed list holds the whole table and DuckDB packs them in parallel.
3. One kernel call per pack (the method's), returning each row's group and each group's
   level per QI (:func:`level_cte`).
4. Labels (:mod:`kanon.plan.labels`): the hierarchy node holding the group, or the
   group's observed values (``labels := 'range'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.hierarchy.base import ROOT, value_text
from kanon.plan.coding import Coded, code_column, coded_ctes, keyed_by_value
from kanon.plan.hierarchies import hierarchy_cte
from kanon.plan.labels import is_ordered, label_at, range_label, release_columns, uses_range
from kanon.plan.measures import exact_positions
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident, literal
from kanon.sql.types import position

if TYPE_CHECKING:
    from kanon.plan.catalog import Table
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = [
    "GROUP",
    "LEVELS",
    "key_ctes",
    "key_lists",
    "label_column",
    "level_column",
    "level_columns",
    "level_cte",
    "local_release",
    "range_column",
    "spans_sql",
    "tuple_groups_ctes",
]


#: The helper column of a row's group (the assignment's contract with kanon.materialize).
GROUP = ident(internal("grp"))
#: The helper column of a row's levels per QI in the assignment query.
LEVELS = ident(internal("lvl"))


def level_column(j: int) -> str:
    """The helper column of a group's level of QI ``j``, quoted."""
    return ident(internal(f"level{j}"))


def label_column(j: int) -> str:
    """The assignment's column of a row's released label of QI ``j``, quoted."""
    return ident(internal(f"label{j}"))


def range_column(j: int) -> str:
    """The helper column of a group's range label of QI ``j``, quoted."""
    return ident(internal(f"range{j}"))


def key_ctes(table: Table, qis: list[QuasiIdentifier], coded: Coded) -> list[Cte]:
    """Per QI ``j`` (``a0``, ``x``, ``raw``, ``val``): the key of every leaf.

    Numbers and dates: ``raw`` is the value's position (:func:`kanon.sql.types.position`,
    NULL for the NULL leaf), ``x`` the same with the NULL leaf at ``max + max(max -
    min, 1)`` and ``val`` the value itself; other types: ``x`` is the leaf code ``a0``
    (depth-first hierarchy order), ``raw`` and ``val`` NULL. The source is scanned again
    only for floating-point values (whose leaf key is text).
    """
    out = []
    for j, q in enumerate(qis):
        v = coded.values[j].ref
        if is_ordered(q):
            c = ident(q.column.name)
            if keyed_by_value(q):
                # The leaf's key is the value itself: no pass over the data.
                p = f"SELECT a0, {position('vk', q.column.type)} AS x, vk AS val FROM {v}"
            else:
                points = (
                    f"(SELECT DISTINCT {value_text(c, q.column.type)} AS key, "
                    f"{position(c, q.column.type)} AS x, {c} AS val FROM {table.sql} "
                    f"WHERE {c} IS NOT NULL)"
                )
                p = f"SELECT v.a0, d.x, d.val FROM {v} v LEFT JOIN {points} d ON v.k = d.key"
            # Positions that cannot measure the values (NaN, ±inf, overflowing spans,
            # integers beyond doubles) become ranks.
            sql = (
                f"WITH p0 AS ({p}), p AS ({exact_positions('p0', ranked=q.codes)}) "
                "SELECT a0, coalesce(x, (SELECT coalesce(max(x) + greatest(max(x) - min(x), "
                "1.0), 0.0) FROM p)) AS x, x AS raw, val FROM p"
            )
        else:
            sql = (
                "SELECT a0, CAST(a0 AS DOUBLE) AS x, "
                f"CAST(NULL AS DOUBLE) AS raw, NULL AS val FROM {v}"
            )
        out.append(Cte(internal(f"keys{j}"), sql, ("a0", "x", "raw", "val")))
    return out


def key_lists(keys: list[Cte], given: tuple[float, ...] | None = None) -> tuple[str, str]:
    """SQL of the keys (``DOUBLE[][]``, per QI by leaf code) and spans (``DOUBLE[]``).

    The spans are the keys' (max - min), or ``given`` (see ``Request.spans``).
    """
    lists = ", ".join(f"(SELECT list(x ORDER BY a0) FROM {k.ref})" for k in keys)
    if given is not None:
        return f"[{lists}]::DOUBLE[][]", f"[{', '.join(map(repr, given))}]::DOUBLE[]"
    spans = ", ".join(f"(SELECT max(x) - min(x) FROM {k.ref})" for k in keys)
    return f"[{lists}]::DOUBLE[][]", f"[{spans}]::DOUBLE[]"


def spans_sql(table: Table, qis: list[QuasiIdentifier]) -> str:
    """SQL of one row: the spans of the QIs' keys over ``table`` (see ``Request.spans``)."""
    coded = coded_ctes(table, qis, [hierarchy_cte(j, q) for j, q in enumerate(qis)])
    keys = key_ctes(table, qis, coded)
    return with_query([*coded.ctes, *keys], f"SELECT {key_lists(keys)[1]}")


def level_cte(m: int, kernel: Cte) -> Cte:
    """Per group, its level per QI as the columns of :func:`level_column`.

    ``kernel`` returns per pack ``b`` the levels ``r.lv`` of its groups. Fixed-width
    columns join far faster than a list per row.
    """
    levels = ", ".join(f"lvl[{j + 1}]::UINTEGER AS {level_column(j)}" for j in range(m))
    return Cte(
        internal("group_levels"),
        f"SELECT {GROUP}, {levels} FROM (SELECT "
        f"((b << 32) + (generate_subscripts(r.lv, 1) - 1))::UBIGINT AS {GROUP}, "
        f"unnest(r.lv) AS lvl FROM {kernel.ref})",
    )


def tuple_groups_ctes(coded: Coded, kernel: Cte, m: int) -> tuple[list[Cte], Cte]:
    """The groups, levels and the tuples joined to them, of a kernel giving every tuple a group.

    ``kernel`` returns per pack ``b`` (its tuples ``ts``) ``r.g``, the group of every
    tuple, and ``r.lv``, the levels of every group. The last CTE holds every tuple's
    codes, rows ``n``, :data:`GROUP` and level columns, materialized: joined to the rows
    in one step, it is the build side (the optimizer cannot size the kernel's unnested
    output and otherwise built the hash table over the rows with every column), and the
    rows are read once, streaming.
    """
    groups = Cte(
        internal("groups"),
        f"SELECT unnest(ts) AS t, ((b << 32) + unnest(r.g))::UBIGINT AS {GROUP} FROM {kernel.ref}",
    )
    levels = level_cte(m, kernel)
    codes = ", ".join(f"tt.{code_column(j)}" for j in range(m))
    tuple_groups = Cte(
        internal("tuple_groups"),
        f"SELECT {codes}, tt.n, g.{GROUP}, {level_columns(m, 'lv')} FROM {coded.tuples.ref} tt "
        f"JOIN {groups.ref} g ON g.t = tt.t "
        f"JOIN {levels.ref} lv ON lv.{GROUP} = g.{GROUP}",
        materialized=True,
    )
    return [groups, levels, tuple_groups], tuple_groups


def level_columns(m: int, alias: str) -> str:
    """The level columns of :func:`level_cte` read through ``alias``."""
    return ", ".join(f"{alias}.{level_column(j)}" for j in range(m))


def local_release(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    coded: Coded,
    ctes: list[Cte],
    rows_sql: str,
    labels: str,
    *,
    range_labels: Cte | None = None,
) -> tuple[str, str]:
    """The release and assignment queries of a local recoding.

    ``rows_sql`` selects every source row (alias-free ``SELECT``) with its leaf codes,
    :data:`GROUP` and :func:`level_column` ``j`` (per QI ``j``, the level of the group's
    lowest common hierarchy node). ``labels``: ``'hierarchy'``, ``'range'`` or
    ``'mondrian'`` (ranges for numbers and dates, hierarchy nodes for the rest). The
    range labels (:func:`range_column`) come from ``range_labels`` (one row per group,
    already among ``ctes``), else they are aggregated from the rows here.
    """
    m = len(qis)
    assigned = Cte(internal("assigned"), rows_sql)
    ctes = [*ctes, assigned]
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    if ranged and range_labels is None:
        cols = {j: ident(qis[j].column.name) for j in ranged}
        aggs = ", ".join(
            range_label(qis[j], value_text(cols[j], qis[j].column.type), cols[j], "1")
            + f" AS {range_column(j)}"
            for j in ranged
        )
        range_labels = Cte(
            internal("range_labels"),
            f"SELECT {GROUP}, {aggs} FROM {assigned.ref} GROUP BY {GROUP}",
        )
        ctes.append(range_labels)

    def generalized(j: int) -> str:
        if j in ranged:
            return f"lb.{range_column(j)}"
        lvl = f"a.{level_column(j)}"
        return (
            f"CASE WHEN {lvl} = {qis[j].height} THEN {literal(ROOT)} "
            f"ELSE {label_at(j, qis[j], lvl)} END"
        )

    out = release_columns(table, qis, identifiers, "a", generalized)
    joins = " ".join(
        f"JOIN {coded.values[j].ref} v{j} ON v{j}.a0 = a.{code_column(j)}"
        for j in range(m)
        if j not in ranged
    )
    if ranged and range_labels is not None:
        joins += f" JOIN {range_labels.ref} lb USING ({GROUP})"
    source = ", ".join(f"a.{ident(c.name)}" for c in table.columns)
    return (
        with_query(ctes, f"SELECT {', '.join(out)} FROM {assigned.ref} a {joins}"),
        with_query(
            ctes,
            f"SELECT {source}, a.{GROUP}, [{level_columns(m, 'a')}] AS {LEVELS}, "
            + ", ".join(f"{generalized(j)} AS {label_column(j)}" for j in range(m))
            + f" FROM {assigned.ref} a {joins}",
        ),
    )
