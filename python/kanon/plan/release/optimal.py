"""``method := 'optimal'``: full-domain generalization, the optimum over the lattice.

The generated SQL (one statement) codes every quasi-identifier against its hierarchy
(:func:`kanon.plan.coding.coded_ctes`), sends the histogram of distinct code tuples with
their counts, each tuple's codes packed into one 128-bit key (grouped by that key: one
column instead of one per quasi-identifier), as one list in no particular order (no
sort, no numbering; in tuple order when privacy models name tuples), to the kernel UDF
``kanon_optimal`` (the lattice search of ``kanon-core::lattice``), and gets back one
level per quasi-identifier and the codes of the tuples whose class is suppressed (few),
which the rows join by their codes. Every row then takes its hierarchy label at that
level (``'*'`` at the top, and for suppressed rows); identifiers become ``'*'``;
other columns are unchanged; suppressed rows are kept (their quasi-identifiers ``'*'``)
or dropped.

For the ``loss`` metric the kernel receives the loss of every hierarchy label as
``kanon_metrics`` computes GCP: ``(hi - lo) / (max - min)`` of the original values under
the label for numbers and dates, ``(values under it - 1) / (distinct values - 1)``
otherwise, 1 at the top.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kanon.exceptions import InvalidInputError
from kanon.plan.coding import (
    HIERARCHIES,
    code_column,
    code_columns,
    coded_ctes,
    hierarchy_lists,
    keyed_by_value,
    row_count,
)
from kanon.plan.measures import exact_positions, ncp_sql, value_points
from kanon.plan.release.fulldomain import HISTORIC_REPORT, MARK, KernelPlan, transformation_release
from kanon.plan.release.memory import OK, memory_guard
from kanon.plan.release.method import ALL_MODEL_OPTIONS, Method, Request
from kanon.plan.release.models import MODEL_PARAMETERS, model_args
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.kernel import Kernel
from kanon.sql.quote import literal
from kanon.sql.types import has_position, position

if TYPE_CHECKING:
    from kanon.plan.catalog import Table
    from kanon.plan.coding import Coded
    from kanon.plan.hierarchies import QuasiIdentifier
    from kanon.plan.release.models import ResolvedModels
    from kanon.plan.release.options import AnonymizeOptions

__all__ = ["OPTIMAL", "level_bounds", "optimal_ctes"]


def level_bounds(
    qis: list[QuasiIdentifier], options: AnonymizeOptions
) -> tuple[list[int], list[int]]:
    """The lowest and highest level allowed per quasi-identifier, checked."""
    names = {q.column.name.lower(): j for j, q in enumerate(qis)}
    lows = [0] * len(qis)
    highs = [q.height for q in qis]
    for bounds, name in ((options.min_level, "min_level"), (options.max_level, "max_level")):
        for column, level in bounds:
            j = names.get(column.lower())
            if j is None:
                msg = (
                    f"{name} names column {column!r}, which is not a quasi-identifier of this "
                    f"call ({', '.join(q.column.name for q in qis)})"
                )
                raise InvalidInputError(msg)
            top = qis[j].height
            if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= top:
                msg = (
                    f"{name} of column {qis[j].column.name!r} must be a level between 0 and "
                    f"{top} (its hierarchy's height), got {level!r}"
                )
                raise InvalidInputError(msg)
            (lows if name == "min_level" else highs)[j] = level
    for j, q in enumerate(qis):
        if lows[j] > highs[j]:
            msg = (
                f"min_level {lows[j]} of column {q.column.name!r} is above its max_level {highs[j]}"
            )
            raise InvalidInputError(msg)
    return lows, highs


def _node_loss(table: Table, qis: list[QuasiIdentifier], coded: Coded) -> tuple[list[Cte], str]:
    """CTEs and SQL of a ``DOUBLE[][][]``: per QI, per level, the loss of every label by code.

    The CTEs: QI ``j``'s coded leaves with their positions ``x`` (NULL for unordered
    types; the data is read again only for floating-point values, whose leaf key is
    text).
    """
    ctes = []
    per_qi = []
    for j, q in enumerate(qis):
        top = q.height
        v = coded.values[j].ref
        if not has_position(q.column.type):
            sql = f"SELECT v.*, CAST(NULL AS DOUBLE) AS x FROM {v} v"
        else:
            if keyed_by_value(q):
                # The leaf's key is the value itself: its position needs no pass over the data.
                values = (
                    f"SELECT v.*, {position('v.vk', q.column.type)} AS x, v.vk AS val FROM {v} v"
                )
            else:
                values = (
                    f"SELECT v.*, d.x, d.val FROM {v} v LEFT JOIN "
                    f"{value_points(q, table.sql)} d ON v.k = d.key"
                )
            # Positions that cannot measure the values (NaN, ±inf, beyond doubles): ranks.
            sql = f"WITH p0 AS ({values}) {exact_positions('p0', ranked=q.codes)}"
        points = Cte(internal(f"points{j}"), sql)
        ctes.append(points)
        domain = f"(SELECT count(k) AS card, min(x) AS lo, max(x) AS hi FROM {points.ref})"
        levels = [f"SELECT 0 AS lvl, a0 AS code, 0.0 AS loss FROM {v}"]
        # The NULL leaf's label below the root has no leaves and no positions: loss 0.
        range_loss = ncp_sql(
            "count(p.k)",
            "min(p.x)",
            "max(p.x)",
            "any_value(d.card)",
            "any_value(d.lo)",
            "any_value(d.hi)",
        )
        for i in range(1, top + 1):
            loss = "1.0" if i == top else range_loss
            levels.append(
                f"SELECT {i}, p.a{i}, {loss} FROM {points.ref} p CROSS JOIN {domain} d "
                f"GROUP BY p.a{i}"
            )
        per_qi.append(
            "(SELECT list(x ORDER BY lvl) FROM (SELECT lvl, list(CAST(loss AS DOUBLE) "
            f"ORDER BY code) AS x FROM ({' UNION ALL '.join(levels)}) GROUP BY lvl))"
        )
    return ctes, f"[{', '.join(per_qi)}]::DOUBLE[][][]"


def _shifts(coded: Coded, m: int) -> Cte:
    """One row: the shift ``s{j}`` of leaf code ``j`` in a packed tuple.

    Code ``j`` takes just enough bits for the codes of QI ``j``'s leaves (0 for one
    leaf), above those of the codes before it: the layout of
    ``kanon_core::lattice::key_bits``. More than 127 bits in all stop the query.
    """
    width = "CASE WHEN count(*) <= 1 THEN 0 ELSE length(bin(count(*) - 1)) END"
    bits = [f"(SELECT {width} FROM {coded.values[j].ref})" for j in range(m)]
    shifts = [" + ".join(["0", *(f"b{i}" for i in range(j))]) for j in range(m)]
    total = " + ".join(f"b{i}" for i in range(m))
    too_many = literal(
        "the quasi-identifiers have too many distinct values to pack a tuple into 128 bits: "
    )
    return Cte(
        internal("shifts"),
        "SELECT "
        + ", ".join(f"CAST({x} AS UHUGEINT) AS s{j}" for j, x in enumerate(shifts))
        + f", CASE WHEN {total} > 127 THEN error({too_many} || ({total}) || ' bits') END AS x"
        + " FROM (SELECT "
        + ", ".join(f"{b} AS b{j}" for j, b in enumerate(bits))
        + ")",
    )


def _histogram(coded: Coded, shifts: Cte, m: int, numbered: bool, weight: str | None) -> str:
    """SQL of the histogram ``kanon_optimal`` takes: the distinct tuples, packed, counted.

    Without privacy models the rows are grouped by their packed codes, listed in no
    particular order; with them (whose sensitive entries name tuples by their number
    ``t``), the coded tuples in that order.
    """
    key = " | ".join(f"(CAST({code_column(j)} AS UHUGEINT) << b.s{j})" for j in range(m))
    entry = (
        "{'lo': CAST(\"__kanon_key\" & CAST(18446744073709551615 AS UHUGEINT) AS UBIGINT), "
        "'hi': CAST(\"__kanon_key\" >> CAST(64 AS UHUGEINT) AS UBIGINT), 'n': n}"
    )
    # b.x is NULL unless the codes do not fit: its error then stops the query.
    if numbered:
        return (
            f'(SELECT list({entry} ORDER BY t) FROM (SELECT {key} AS "__kanon_key", n, t, b.x '
            f"FROM {coded.tuples.ref} CROSS JOIN {shifts.ref} b) WHERE x IS NULL)"
        )
    return (
        f'(SELECT list({entry}) FROM (SELECT {key} AS "__kanon_key", '
        f"{row_count(weight)}::UBIGINT AS n "
        f"FROM {coded.rows.ref} CROSS JOIN {shifts.ref} b WHERE b.x IS NULL "
        'GROUP BY "__kanon_key"))'
    )


def optimal_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    options: AnonymizeOptions,
    rows: int,
    hierarchies: list[Cte],
    models: ResolvedModels | None = None,
    weight: str | None = None,
) -> KernelPlan:
    """The coded CTEs and one call of ``kanon_optimal`` (``weight``: see ``coded_ctes``).

    Its struct ``r`` holds ``levels`` (per QI), ``s`` (the leaf codes of every tuple
    whose class is suppressed) and ``stats``. ``models`` adds the sensitive entries and
    population paths the privacy models need (``hierarchies`` then holds the sensitive
    column's last when the hierarchical distance is asked for).
    """
    m = len(qis)
    lows, highs = level_bounds(qis, options)
    sensitive = None if models is None else models.hierarchy
    coded = coded_ctes(table, qis, hierarchies, sensitive, weight)
    extra = model_args(table, qis, models, coded)
    ctes = [*coded.ctes, *extra.ctes]
    metric = options.metric or "loss"
    kernel_options = {
        "m": m,
        "metric": metric,
        "max_suppressed": int(options.max_suppression * rows),
        "keep_suppressed": not options.drop_suppressed,
        "min_level": lows,
        "max_level": highs,
        "models": extra.options,
    }
    shifts = _shifts(coded, m)
    ctes.append(shifts)
    histogram = _histogram(coded, shifts, m, models is not None, weight)
    weights = ", ".join(repr(float(q.weight)) for q in qis)
    node_loss = "[]::DOUBLE[][][]"
    if metric == "loss":
        loss_ctes, node_loss = _node_loss(table, qis, coded)
        ctes += loss_ctes
    guard = memory_guard("optimal", (), qis, rows, coded)
    call = KERNEL.call(
        histogram=histogram,
        hierarchies=f"[{hierarchy_lists(coded, qis)}]",
        weights=f"[{weights}]",
        node_loss=node_loss,
        k=str(options.k),
        options=literal(json.dumps(kernel_options)),
        **extra.args,
    )
    kernel = Cte(internal("kernel"), f"SELECT {call} AS r FROM {guard.ref} WHERE {OK}", ("r",))
    return KernelPlan(coded, [*ctes, guard, kernel], kernel)


def optimal_sql(request: Request) -> tuple[str, str]:
    """Return the release query of the optimal full-domain generalization, twice.

    (The release has no group assignment to store, so its assignment query is itself.)
    """
    table, qis, options = request.table, request.qis, request.options
    plan = optimal_ctes(table, qis, options, request.rows, request.hierarchies, request.models)
    m = len(qis)
    fields = ", ".join(f"x[{j + 1}] AS {code_column(j)}" for j in range(m))
    # The suppressed tuples (few) joined to the rows by their codes.
    suppressed = Cte(
        internal("suppressed"),
        f"SELECT {fields}, TRUE AS {MARK} FROM (SELECT unnest(r.s) AS x FROM {plan.kernel.ref})",
    )
    marks = (suppressed, f"LEFT JOIN {suppressed.ref} s USING ({code_columns(m)})")
    hidden = f"s.{MARK} IS NOT NULL"
    sql = transformation_release(
        table,
        qis,
        request.identifiers,
        plan,
        marks,
        lambda _: hidden,
        hidden if options.drop_suppressed else None,
    )
    return sql, sql


def search_sql(request: Request) -> str:
    """Return the SQL of ``kanon_search(...)``: one row describing the optimum."""
    qis, options = request.qis, request.options
    names = ", ".join(literal(q.column.name) for q in qis)
    stats = ", ".join(
        f"CAST(r.stats.{key} AS {typ}) AS {key}"
        for key, typ in (
            ("suppressed", "BIGINT"),
            ("cost", "DOUBLE"),
            ("classes", "BIGINT"),
            ("nodes", "BIGINT"),
            ("checked", "BIGINT"),
            ("seconds", "DOUBLE"),
        )
    )
    plan = optimal_ctes(
        request.table, qis, options, request.rows, request.hierarchies, request.models
    )
    return with_query(
        plan.ctes,
        f"SELECT map_from_entries(list_zip([{names}], r.levels)) AS levels, {stats}, "
        f"{literal(options.metric or 'loss')} AS metric, {literal('optimal')} AS method, "
        + ", ".join(f"NULL::BIGINT AS {key}" for key in HISTORIC_REPORT)
        + f" FROM {plan.kernel.ref}",
    )


_STATS = (
    "STRUCT(seconds DOUBLE, cost DOUBLE, suppressed UBIGINT, classes UBIGINT, nodes UBIGINT, "
    "checked UBIGINT, rolled_up UBIGINT, tagged UBIGINT)"
)
#: ``kanon_optimal``: the optimum's levels, its suppressed tuples and the search's stats.
KERNEL = Kernel(
    "kanon_optimal",
    "optimal",
    (
        ("histogram", "STRUCT(lo UBIGINT, hi UBIGINT, n UBIGINT)[]"),
        ("hierarchies", HIERARCHIES),
        ("weights", "DOUBLE[]"),
        ("node_loss", "DOUBLE[][][]"),
        ("k", "UBIGINT"),
        ("options", "VARCHAR"),
        *MODEL_PARAMETERS,
    ),
    f"STRUCT(levels UINTEGER[], s UINTEGER[][], stats {_STATS})",
)
OPTIMAL = Method(
    "optimal",
    KERNEL,
    optimal_sql,
    search_sql,
    options=(
        "metric",
        "max_suppression",
        "drop_suppressed",
        "min_level",
        "max_level",
        *ALL_MODEL_OPTIONS,
    ),
)
