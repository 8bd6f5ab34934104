"""``method := 'optimal'``: full-domain generalization, the optimum over the lattice.

The generated SQL (one statement) codes every quasi-identifier against its hierarchy
(:func:`kanon.planner.coding.coded_ctes`), sends the histogram of distinct code tuples with
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

from kanon._models import model_args
from kanon._sql import literal
from kanon._types import has_position, position
from kanon.exceptions import InvalidInputError
from kanon.planner.coding import code_columns, coded_ctes, hierarchy_lists, keyed_by_value
from kanon.planner.fulldomain import HISTORIC_REPORT, transformation_release
from kanon.planner.measures import exact_positions, ncp_sql, value_points
from kanon.planner.method import Method, Request

if TYPE_CHECKING:
    from kanon._catalog import Table
    from kanon._models import ResolvedModels
    from kanon.planner.hierarchies import QuasiIdentifier
    from kanon.planner.options import AnonymizeOptions

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


def _node_loss(table: Table, qis: list[QuasiIdentifier]) -> tuple[list[str], str]:
    """CTEs and SQL of a ``DOUBLE[][][]``: per QI, per level, the loss of every label by code.

    ``__kanon_p{j}``: QI ``j``'s coded leaves with their positions ``x`` (NULL for
    unordered types; the data is read again only for floating-point values, whose leaf
    key is text).
    """
    ctes = []
    per_qi = []
    for j, q in enumerate(qis):
        top = q.height
        if not has_position(q.column.type):
            points = f'SELECT v.*, CAST(NULL AS DOUBLE) AS x FROM "__kanon_v{j}" v'
        else:
            if keyed_by_value(q):
                # The leaf's key is the value itself: its position needs no pass over the data.
                values = (
                    f"SELECT v.*, {position('v.vk', q.column.type)} AS x, v.vk AS val "
                    f'FROM "__kanon_v{j}" v'
                )
            else:
                values = (
                    f'SELECT v.*, d.x, d.val FROM "__kanon_v{j}" v LEFT JOIN '
                    f"{value_points(q, table.sql)} d ON v.k = d.key"
                )
            # Positions that cannot measure the values (NaN, ±inf, beyond doubles): ranks.
            points = f"WITH p0 AS ({values}) {exact_positions('p0')}"
        ctes.append(f'"__kanon_p{j}" AS ({points})')
        domain = f'(SELECT count(k) AS card, min(x) AS lo, max(x) AS hi FROM "__kanon_p{j}")'
        levels = [f'SELECT 0 AS lvl, a0 AS code, 0.0 AS loss FROM "__kanon_v{j}"']
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
                f'SELECT {i}, p.a{i}, {loss} FROM "__kanon_p{j}" p CROSS JOIN {domain} d '
                f"GROUP BY p.a{i}"
            )
        per_qi.append(
            "(SELECT list(x ORDER BY lvl) FROM (SELECT lvl, list(CAST(loss AS DOUBLE) "
            f"ORDER BY code) AS x FROM ({' UNION ALL '.join(levels)}) GROUP BY lvl))"
        )
    return ctes, f"[{', '.join(per_qi)}]::DOUBLE[][][]"


def _shifts(m: int) -> str:
    """CTE ``__kanon_b``: one row, the shift ``s{j}`` of leaf code ``j`` in a packed tuple.

    Code ``j`` takes just enough bits for the codes of ``__kanon_v{j}``'s leaves (0 for
    one leaf), above those of the codes before it: the layout of
    ``kanon_core::lattice::key_bits``. More than 127 bits in all stop the query.
    """
    width = "CASE WHEN count(*) <= 1 THEN 0 ELSE length(bin(count(*) - 1)) END"
    bits = [f'(SELECT {width} FROM "__kanon_v{j}")' for j in range(m)]
    shifts = [" + ".join(["0", *(f"b{i}" for i in range(j))]) for j in range(m)]
    total = " + ".join(f"b{i}" for i in range(m))
    too_many = literal(
        "the quasi-identifiers have too many distinct values to pack a tuple into 128 bits: "
    )
    return (
        '"__kanon_b" AS (SELECT '
        + ", ".join(f"CAST({x} AS UHUGEINT) AS s{j}" for j, x in enumerate(shifts))
        + f", CASE WHEN {total} > 127 THEN error({too_many} || ({total}) || ' bits') END AS x"
        + " FROM (SELECT "
        + ", ".join(f"{b} AS b{j}" for j, b in enumerate(bits))
        + "))"
    )


def _histogram(m: int, numbered: bool) -> str:
    """SQL of the histogram ``kanon_optimal`` takes: the distinct tuples, packed, counted.

    Without privacy models the rows are grouped by their packed codes, listed in no
    particular order; with them (whose sensitive entries name tuples by their number
    ``t``), the tuples of ``__kanon_t`` in that order.
    """
    key = " | ".join(f'(CAST("__kanon_c{j}" AS UHUGEINT) << b.s{j})' for j in range(m))
    entry = (
        "{'lo': CAST(\"__kanon_key\" & CAST(18446744073709551615 AS UHUGEINT) AS UBIGINT), "
        "'hi': CAST(\"__kanon_key\" >> CAST(64 AS UHUGEINT) AS UBIGINT), 'n': n}"
    )
    # b.x is NULL unless the codes do not fit: its error then stops the query.
    if numbered:
        return (
            f'(SELECT list({entry} ORDER BY t) FROM (SELECT {key} AS "__kanon_key", n, t, b.x '
            'FROM "__kanon_t" CROSS JOIN "__kanon_b" b) WHERE x IS NULL)'
        )
    return (
        f'(SELECT list({entry}) FROM (SELECT {key} AS "__kanon_key", count(*)::UBIGINT AS n '
        'FROM "__kanon_r" CROSS JOIN "__kanon_b" b WHERE b.x IS NULL GROUP BY "__kanon_key"))'
    )


def optimal_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    options: AnonymizeOptions,
    rows: int,
    ctes: list[str],
    models: ResolvedModels | None = None,
) -> list[str]:
    """Return the coded CTEs plus ``__kanon_run``, one call of ``kanon_optimal``.

    Its struct ``r`` holds ``levels`` (per QI), ``s`` (the leaf codes of every tuple
    whose class is suppressed) and ``stats``. ``models`` adds the sensitive entries and
    population paths the privacy models need (``ctes`` then holds the sensitive
    hierarchy as ``__kanon_h{m}`` when the hierarchical distance is asked for).
    """
    m = len(qis)
    lows, highs = level_bounds(qis, options)
    ctes = coded_ctes(table, qis, ctes, None if models is None else models.hierarchy)
    extra = model_args(table, qis, models)
    ctes += extra.ctes
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
    ctes.append(_shifts(m))
    histogram = _histogram(m, models is not None)
    weights = ", ".join(repr(float(q.weight)) for q in qis)
    node_loss = "[]::DOUBLE[][][]"
    if metric == "loss":
        loss_ctes, node_loss = _node_loss(table, qis)
        ctes += loss_ctes
    ctes.append(
        '"__kanon_run" AS (SELECT kanon_optimal('
        f"{histogram}, [{hierarchy_lists(qis)}], [{weights}]::DOUBLE[], {node_loss}, "
        f"{options.k}::UBIGINT, {literal(json.dumps(kernel_options))}, {extra.args}) AS r)"
    )
    return ctes


def optimal_sql(request: Request) -> tuple[str, str]:
    """Return the release query of the optimal full-domain generalization, twice.

    (The release has no group assignment to store, so its assignment query is itself.)
    """
    table, qis, options = request.table, request.qis, request.options
    ctes = optimal_ctes(table, qis, options, request.rows, request.hierarchies, request.models)
    m = len(qis)
    fields = ", ".join(f'x[{j + 1}] AS "__kanon_c{j}"' for j in range(m))
    # The suppressed tuples (few) joined to the rows by their codes.
    marks = (
        f'"__kanon_s" AS (SELECT {fields}, TRUE AS "__kanon_x" '
        'FROM (SELECT unnest(r.s) AS x FROM "__kanon_run"))',
        f'LEFT JOIN "__kanon_s" s USING ({code_columns(m)})',
    )
    hidden = 's."__kanon_x" IS NOT NULL'
    sql = transformation_release(
        table,
        qis,
        request.identifiers,
        ctes,
        marks,
        lambda _: hidden,
        hidden if options.drop_suppressed else None,
    )
    return sql, sql


def search_sql(request: Request) -> str:
    """Return the SQL of ``kanon_search(...)``: one row describing the optimum."""
    qis, options = request.qis, request.options
    names = ", ".join(literal(q.column.name) for q in qis)
    field = "CAST(json_extract(r.stats, {path}) AS {typ})"
    stats = ", ".join(
        field.format(path=literal(f"$.{key}"), typ=typ) + f" AS {key}"
        for key, typ in (
            ("suppressed", "BIGINT"),
            ("cost", "DOUBLE"),
            ("classes", "BIGINT"),
            ("nodes", "BIGINT"),
            ("checked", "BIGINT"),
            ("seconds", "DOUBLE"),
        )
    )
    return (
        "WITH "
        + ",\n".join(
            optimal_ctes(
                request.table, qis, options, request.rows, request.hierarchies, request.models
            )
        )
        + f"\nSELECT map_from_entries(list_zip([{names}], r.levels)) AS levels, {stats}, "
        f"{literal(options.metric or 'loss')} AS metric, {literal('optimal')} AS method, "
        + ", ".join(f"NULL::BIGINT AS {key}" for key in HISTORIC_REPORT)
        + ' FROM "__kanon_run"'
    )


OPTIMAL = Method("optimal", "kanon_optimal", optimal_sql, search_sql)
