"""``method := 'mondrian'``: LeFevre, DeWitt and Ramakrishnan's strict multidimensional cuts.

The plan (one statement): the coded parts (:mod:`kanon.planner.coding`), the privacy
models' arguments (:func:`kanon._models.model_args`), the leaf keys and packs of
:mod:`kanon.planner.local`, one call of the kernel UDF ``kanon_mondrian`` per pack
(which finishes the cuts into groups), then the tuples joined to their groups and
labels, and the rows to their tuples.
"""

from __future__ import annotations

import json

from kanon._models import model_args
from kanon._sql import literal
from kanon.planner.coding import code_column, code_columns, coded_ctes, hierarchy_lists
from kanon.planner.hierarchies import priority_weights
from kanon.planner.labels import is_ordered, range_label, uses_range
from kanon.planner.local import (
    GROUP,
    key_ctes,
    key_lists,
    level_columns,
    local_release,
    pack_ctes,
    range_column,
    rounds_for,
    tuple_groups_ctes,
)
from kanon.planner.method import Method, Request
from kanon.planner.sql import Cte, internal

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
    packs = pack_ctes(coded, keys, options.k, rounds, MONDRIAN_PACK_ROWS)
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
    kernel = Cte(
        internal("kernel"),
        "SELECT b, ts, kanon_mondrian(tuples, counts, "
        f"{key_list}, {spans}, [{hierarchy_lists(coded, qis)}], {options.k}::UBIGINT, "
        f"{literal(json.dumps(kernel_options))}, {extra.args}) AS r FROM {packs.packs.ref}",
        ("b", "ts", "r"),
    )
    # Tuples with their group and levels first (the build side of the join to the rows).
    joined, tuple_groups = tuple_groups_ctes(coded, kernel, m)
    codes = [code_column(j) for j in range(m)]
    ctes = [*coded.ctes, *extra.ctes, *keys, *packs.ctes, kernel, *joined]
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    labelled = tuple_groups
    if ranged:
        aggs = ", ".join(
            range_label(qis[j], f"v{j}.k", f"k{j}.val", "tg.n") + f" AS {range_column(j)}"
            for j in ranged
        )
        joins = " ".join(
            f"JOIN {coded.values[j].ref} v{j} ON v{j}.a0 = tg.{codes[j]} "
            f"JOIN {keys[j].ref} k{j} ON k{j}.a0 = tg.{codes[j]}"
            for j in ranged
        )
        range_labels = Cte(
            internal("range_labels"),
            f"SELECT tg.{GROUP}, {aggs} FROM {tuple_groups.ref} tg {joins} GROUP BY tg.{GROUP}",
        )
        labelled = Cte(
            internal("tuple_labels"),
            "SELECT tg.*, "
            + ", ".join(f"lb.{range_column(j)}" for j in ranged)
            + f" FROM {tuple_groups.ref} tg JOIN {range_labels.ref} lb USING ({GROUP})",
            materialized=True,
        )
        ctes += [range_labels, labelled]
    carried = [f"t.{GROUP}", level_columns(m, "t")]
    carried += [f"t.{range_column(j)}" for j in ranged]
    rows_sql = (
        f"SELECT r.*, {', '.join(carried)} FROM {coded.rows.ref} r "
        f"JOIN {labelled.ref} t USING ({code_columns(m)})"
    )
    return local_release(
        table, qis, request.identifiers, coded, ctes, rows_sql, labels, labelled=True
    )


MONDRIAN = Method("mondrian", "kanon_mondrian", mondrian_sql)
