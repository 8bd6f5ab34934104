"""``method := 'mondrian'``: LeFevre, DeWitt and Ramakrishnan's strict multidimensional cuts.

The plan (one statement): the coded parts (:mod:`kanon.plan.coding`), the privacy
models' arguments (:func:`kanon.plan.release.models.model_args`), the leaf keys and packs of
:mod:`kanon.plan.release.local`, one call of the kernel UDF ``kanon_mondrian`` per pack
(which finishes the cuts into groups), then the tuples joined to their groups and
labels, and the rows to their tuples.
"""

from __future__ import annotations

import json

from kanon.hierarchy.base import ROOT
from kanon.plan.coding import (
    HIERARCHIES,
    Coded,
    code_column,
    code_columns,
    coded_ctes,
    hierarchy_lists,
)
from kanon.plan.hierarchies import QuasiIdentifier, priority_weights
from kanon.plan.labels import is_ordered, range_label, uses_range
from kanon.plan.release.local import (
    GROUP,
    key_ctes,
    key_lists,
    level_columns,
    local_release,
    range_column,
    tuple_groups_ctes,
)
from kanon.plan.release.memory import memory_guard
from kanon.plan.release.method import MODEL_OPTIONS, Method, Request
from kanon.plan.release.models import MODEL_PARAMETERS, model_args
from kanon.plan.release.packs import PACK_PARAMETERS, pack_ctes, rounds_for
from kanon.sql.cte import Cte, internal
from kanon.sql.kernel import Kernel
from kanon.sql.quote import literal

__all__ = ["MONDRIAN", "MONDRIAN_PACK_ROWS"]

#: Tables above this many rows are cut in SQL into packs of about this many: Mondrian's
#: kernel is cheap per row, so its packs are larger than the forest's.
MONDRIAN_PACK_ROWS = 1 << 22


def mondrian_sql(request: Request) -> tuple[str, str]:
    """The release and assignment queries of ``method := 'mondrian'``.

    With l-diversity or t-closeness (``models``) every cut must leave both sides
    satisfying them, and the table is one pack (the SQL cuts check k only).
    """
    table, qis, options, models = request.table, request.qis, request.options, request.models
    m = len(qis)
    sensitive = None if models is None else models.hierarchy
    coded = coded_ctes(table, qis, request.hierarchies, sensitive)
    extra = model_args(table, qis, models, coded)
    keys = key_ctes(table, qis, coded)
    rounds = 0 if models is not None else rounds_for(request.rows, MONDRIAN_PACK_ROWS)
    guard = memory_guard("mondrian", ("optimal",), qis, request.rows, coded)
    packs = pack_ctes(coded, keys, options.k, rounds, MONDRIAN_PACK_ROWS, guard)
    key_list, spans = key_lists(keys, request.spans)
    labels = options.labels or "mondrian"
    # Published as sets, a categorical QI loses by its number of values: measure it so.
    sets = [labels == "range" and not is_ordered(q) for q in qis]
    kernel_options: dict[str, object] = {"m": m, "models": extra.options, "sets": sets}
    # With priorities, a part is cut on the attribute of largest weight x normalized range
    # (PrioPrivacy's weights): an important QI is cut sooner, so it ends more precise.
    # Without, the kernel's default (every weight 1: the widest range, as published). The
    # SQL cuts into packs (tables of over MONDRIAN_PACK_ROWS rows) stay unweighted.
    weights = priority_weights([q.priority for q in qis])
    if weights is not None:
        kernel_options["weights"] = weights
    call = KERNEL.call(
        tuples="tuples",
        counts="counts",
        ts="ts",
        keys=key_list,
        spans=spans,
        hierarchies=f"[{hierarchy_lists(coded, qis)}]",
        k=str(options.k),
        options=literal(json.dumps(kernel_options)),
        **extra.args,
    )
    kernel = Cte(
        internal("kernel"), f"SELECT b, ts, {call} AS r FROM {packs.packs.ref}", ("b", "ts", "r")
    )
    # Tuples with their group and levels first (the build side of the join to the rows).
    joined, tuple_groups = tuple_groups_ctes(coded, kernel, m)
    ctes = [*coded.ctes, *extra.ctes, *keys, *packs.ctes, kernel, *joined]
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    range_labels = None
    if ranged:
        bounds, range_labels = _range_labels(qis, ranged, coded, keys, tuple_groups)
        ctes += [bounds, range_labels]
    rows_sql = (
        f"SELECT r.*, t.{GROUP}, {level_columns(m, 't')} FROM {coded.rows.ref} r "
        f"JOIN {tuple_groups.ref} t USING ({code_columns(m)})"
    )
    return local_release(
        table, qis, request.identifiers, coded, ctes, rows_sql, labels, range_labels=range_labels
    )


def _range_labels(
    qis: list[QuasiIdentifier],
    ranged: list[int],
    coded: Coded,
    keys: list[Cte],
    tuple_groups: Cte,
) -> tuple[Cte, Cte]:
    """Every group's range labels (:func:`range_column`) of the QIs ``ranged``.

    An ordered QI's label comes from its group's least and greatest leaf alone, found by
    ``min`` and ``max`` over the tuples: of the leaf code where the hierarchy's codes
    follow the values (default interval and calendar hierarchies), else of the leaf key
    (distinct per leaf, in value order); the NULL leaf's is the greatest either way (see
    :func:`key_ctes`). Only the groups then look their two leaves up. The labels are
    :func:`range_label`'s: one value, ``[lo..hi]``, NULL for NULLs only, ``'*'`` for NULLs
    and values. Unordered QIs (value sets) are aggregated by :func:`range_label`.
    """
    codes = [code_column(j) for j in range(len(qis))]
    ordered = [j for j in ranged if is_ordered(qis[j])]
    by_code = [j for j in ordered if qis[j].codes]
    aggs = [
        f"min(tg.{codes[j]}) AS lo{j}, max(tg.{codes[j]}) AS hi{j}"
        if j in by_code
        else f"min(k{j}.x) AS lo{j}, max(k{j}.x) AS hi{j}"
        for j in ordered
    ]
    aggs += [
        range_label(qis[j], f"v{j}.k", f"k{j}.val", "tg.n") + f" AS {range_column(j)}"
        for j in ranged
        if j not in ordered
    ]
    joins = " ".join(
        f"JOIN {keys[j].ref} k{j} ON k{j}.a0 = tg.{codes[j]}"
        + ("" if j in ordered else f" JOIN {coded.values[j].ref} v{j} ON v{j}.a0 = tg.{codes[j]}")
        for j in ranged
        if j not in by_code
    )
    bounds = Cte(
        internal("range_bounds"),
        f"SELECT tg.{GROUP}, {', '.join(aggs)} FROM {tuple_groups.ref} tg {joins} "
        f"GROUP BY tg.{GROUP}",
    )

    def label(j: int) -> str:
        if j not in ordered:
            return f"b.{range_column(j)}"
        lo, hi = f"vl{j}.k", f"vh{j}.k"
        return (
            f"CASE WHEN {lo} IS NULL THEN NULL WHEN {hi} IS NULL THEN {literal(ROOT)} "
            f"WHEN b.lo{j} = b.hi{j} THEN {lo} ELSE '[' || {lo} || '..' || {hi} || ']' END "
            f"AS {range_column(j)}"
        )

    def leaf(j: int, end: str, alias: str) -> str:
        found = f"JOIN {coded.values[j].ref} {alias} ON {alias}.a0 = "
        if j in by_code:
            return found + f"b.{end}{j}"
        return f"JOIN {keys[j].ref} k{alias} ON k{alias}.x = b.{end}{j} {found}k{alias}.a0"

    ends = " ".join(
        leaf(j, end, f"v{e}{j}") for j in ordered for e, end in (("l", "lo"), ("h", "hi"))
    )
    labels = Cte(
        internal("range_labels"),
        f"SELECT b.{GROUP}, {', '.join(label(j) for j in ranged)} FROM {bounds.ref} b {ends}",
    )
    return bounds, labels


#: Mondrian cuts only where both sides satisfy l-diversity / t-closeness (not δ-presence).
#: ``kanon_mondrian``: a pack's groups and their levels.
KERNEL = Kernel(
    "kanon_mondrian",
    "mondrian",
    (
        *PACK_PARAMETERS,
        ("keys", "DOUBLE[][]"),
        ("spans", "DOUBLE[]"),
        ("hierarchies", HIERARCHIES),
        ("k", "UBIGINT"),
        ("options", "VARCHAR"),
        *MODEL_PARAMETERS,
    ),
    "STRUCT(g UINTEGER[], lv UINTEGER[][])",
)
MONDRIAN = Method(
    "mondrian",
    KERNEL,
    mondrian_sql,
    options=("labels", "priorities", *MODEL_OPTIONS),
)
