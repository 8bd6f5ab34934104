"""The planner of ``kanon(..., method := 'optimal')``: full-domain generalization.

The generated SQL (one statement) codes every quasi-identifier against its hierarchy
(:func:`kanon._anonymize.coded_ctes`), sends the histogram of distinct code tuples with
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
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kanon._anonymize import (
    HISTORIC_METHODS,
    code_columns,
    coded_ctes,
    hierarchy_cte,
    hierarchy_lists,
    keyed_by_value,
    label_at,
    release_columns,
)
from kanon._metrics import exact_positions, has_position, ncp_sql, position, value_points
from kanon._models import model_args
from kanon._sql import literal
from kanon.exceptions import InvalidInputError
from kanon.hierarchy import ROOT

if TYPE_CHECKING:
    from collections.abc import Callable

    from kanon._anonymize import AnonymizeOptions, AnonymizePlan, QuasiIdentifier
    from kanon._catalog import Table
    from kanon._models import ResolvedModels

__all__ = [
    "HISTORIC_REPORT",
    "Transformation",
    "level_bounds",
    "optimal_ctes",
    "optimal_sql",
    "search_sql",
    "tuple_marks",
]

#: The columns of ``kanon_search`` reporting a historic algorithm (NULL for the optimum).
HISTORIC_REPORT = ("unprotected_rows", "unprotected_classes", "suppressed_cells", "topped_up_rows")


@dataclass(frozen=True)
class Transformation:
    """A full-domain generalization of a table (one row of ``kanon_search``).

    The optimal one (``method='optimal'``), or that of Sweeney's Datafly or μ-Argus
    (``'datafly'``, ``'mu_argus'``): those minimize no metric and search no lattice
    (``metric``, ``cost``, ``nodes`` and ``checked`` are None) but report what they
    left unprotected (None for ``'optimal'``).
    """

    levels: dict[str, int]  # quasi-identifier -> level
    suppressed: int  # rows whose quasi-identifiers become '*'
    metric: str | None
    cost: float | None  # the metric's value
    classes: int  # equivalence classes, the suppressed ones included
    nodes: int | None  # lattice nodes within the level bounds
    checked: int | None  # nodes grouped by the search
    seconds: float  # time of the search in the kernel
    method: str | None = None  # 'optimal', 'datafly' or 'mu_argus'
    # Rows / classes the historic algorithm alone left below k (suppressed by finishing).
    unprotected_rows: int | None = None
    unprotected_classes: int | None = None
    suppressed_cells: int | None = None  # cells μ-Argus suppressed (in rows), 0 for Datafly
    topped_up_rows: int | None = None  # rows suppressed only to give the '*' class k rows

    def to_dict(self) -> dict[str, Any]:
        """Return the transformation as a plain dict."""
        return asdict(self)


def search_sql(plan: AnonymizePlan, options: AnonymizeOptions) -> str:
    """Return the SQL of ``kanon_search(...)``: one row describing the optimum.

    ``plan`` is the planned ``kanon(..., method := 'optimal')`` call with ``options``;
    for ``'datafly'`` and ``'mu_argus'`` the row describes their release instead
    (:func:`kanon._historic.search_sql`).
    """
    if options.method in HISTORIC_METHODS:
        # Imported here: the historic planner builds on the same modules as this one.
        from kanon._historic import search_sql as historic_search_sql

        return historic_search_sql(plan, options)
    if options.method != "optimal":
        msg = (
            "kanon_search supports method 'optimal', 'datafly' or 'mu_argus' (full-domain "
            f"generalization), got {options.method!r}"
        )
        raise InvalidInputError(msg)
    qis = list(plan.qis)
    models = plan.models
    coded = qis if models is None or models.hierarchy is None else [*qis, models.hierarchy]
    ctes = [hierarchy_cte(j, q) for j, q in enumerate(coded)]
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
    return (
        "WITH "
        + ",\n".join(optimal_ctes(plan.table, qis, options, plan.rows, ctes, models))
        + f"\nSELECT map_from_entries(list_zip([{names}], r.levels)) AS levels, {stats}, "
        f"{literal(options.metric or 'loss')} AS metric, {literal('optimal')} AS method, "
        + ", ".join(f"NULL::BIGINT AS {key}" for key in HISTORIC_REPORT)
        + ' FROM "__kanon_run"'
    )


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


def optimal_sql(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    options: AnonymizeOptions,
    rows: int,
    ctes: list[str],
    models: ResolvedModels | None = None,
) -> tuple[str, str]:
    """Return the release query of the optimal full-domain generalization, twice.

    (The release has no group assignment to store, so its assignment query is itself.)
    """
    ctes = optimal_ctes(table, qis, options, rows, ctes, models)
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
        identifiers,
        ctes,
        marks,
        lambda _: hidden,
        hidden if options.drop_suppressed else None,
    )
    return sql, sql


def tuple_marks(m: int, field: str) -> tuple[str, str]:
    """The CTE and join giving each row ``s."__kanon_x"``: its tuple's value in ``r.{field}``.

    ``r.{field}`` (of ``__kanon_run``) holds a value per tuple ``t`` of ``__kanon_t``.
    """
    return (
        f'"__kanon_s" AS (SELECT unnest(r.{field}) AS "__kanon_x", '
        f'(generate_subscripts(r.{field}, 1) - 1)::UBIGINT AS t FROM "__kanon_run")',
        f'JOIN "__kanon_t" t USING ({code_columns(m)}) JOIN "__kanon_s" s ON s.t = t.t',
    )


def transformation_release(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    ctes: list[str],
    marks: tuple[str, str],
    hidden: Callable[[int], str],
    dropped: str | None,
) -> str:
    """The release of a full-domain transformation computed by ``__kanon_run``.

    ``r.levels`` holds a level per QI; ``marks`` is the CTE ``__kanon_s`` and the join
    that give each row its mark ``s."__kanon_x"`` (:func:`tuple_marks`, or the
    suppressed tuples): QI ``j`` of a row is ``'*'`` where ``hidden(j)`` holds (or at
    the top level), else its label at the level; rows where ``dropped`` holds are left
    out.
    """
    m = len(qis)
    marks_cte, marks_join = marks
    ctes = [*ctes, marks_cte]
    # Per QI, every leaf's label at the chosen level ('*' at the top): a lookup the
    # rows join by their leaf code.
    for j, q in enumerate(qis):
        lvl = f"r.levels[{j + 1}]"
        label = f"CASE WHEN {lvl} = {q.height} THEN {literal(ROOT)} ELSE {label_at(j, q, lvl)} END"
        ctes.append(
            f'"__kanon_g{j}" AS (SELECT v{j}.a0, {label} AS label '
            f'FROM "__kanon_v{j}" v{j} CROSS JOIN "__kanon_run")'
        )

    def generalized(j: int) -> str:
        return f"CASE WHEN {hidden(j)} THEN {literal(ROOT)} ELSE g{j}.label END"

    out = release_columns(table, qis, identifiers, "r", generalized)
    joins = " ".join(f'JOIN "__kanon_g{j}" g{j} ON g{j}.a0 = r."__kanon_c{j}"' for j in range(m))
    where = "" if dropped is None else f" WHERE NOT ({dropped})"
    return (
        "WITH " + ",\n".join(ctes) + f'\nSELECT {", ".join(out)} FROM "__kanon_r" r '
        f"{marks_join} {joins}{where}"
    )
