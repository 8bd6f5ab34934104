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
from kanon.planner.coding import coded_ctes, hierarchy_lists
from kanon.planner.labels import is_ordered, range_label, uses_range
from kanon.planner.local import (
    key_ctes,
    key_lists,
    level_columns,
    level_cte,
    local_release,
    pack_ctes,
    rounds_for,
)
from kanon.planner.method import Method, Request

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
    ctes = coded_ctes(table, qis, request.hierarchies, None if models is None else models.hierarchy)
    extra = model_args(table, qis, models)
    ctes += extra.ctes
    ctes += key_ctes(table, qis)
    rounds = 0 if models is not None else rounds_for(request.rows, MONDRIAN_PACK_ROWS)
    ctes += pack_ctes(m, options.k, rounds, MONDRIAN_PACK_ROWS)
    keys, spans = key_lists(m)
    labels = options.labels or "mondrian"
    # Published as sets, a categorical QI loses by its number of values: measure it so.
    sets = [labels == "range" and not is_ordered(q) for q in qis]
    kernel_options = {"m": m, "models": extra.options, "sets": sets}
    ctes.append(
        '"__kanon_run" AS (SELECT b, ts, kanon_mondrian(tuples, counts, '
        f"{keys}, {spans}, [{hierarchy_lists(qis)}], {options.k}::UBIGINT, "
        f'{literal(json.dumps(kernel_options))}, {extra.args}) AS r FROM "__kanon_pk")'
    )
    ctes.append(
        '"__kanon_g" AS (SELECT unnest(ts) AS t, ((b << 32) + unnest(r.g))::UBIGINT '
        'AS "__kanon_grp" FROM "__kanon_run")'
    )
    ctes.append(level_cte(m))
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    code_list = ", ".join(codes)
    # Tuples with their group and levels (and range labels) first, materialized: joined
    # to the rows in one step, they are the build side (the optimizer cannot size the
    # kernel's unnested output and otherwise built the hash table over the rows with
    # every column), and the rows are read once, streaming.
    ctes.append(
        f'"__kanon_tg" AS MATERIALIZED (SELECT {", ".join(f"tt.{c}" for c in codes)}, '
        f'tt.n, g."__kanon_grp", {level_columns(m, "lv")} FROM "__kanon_t" tt '
        'JOIN "__kanon_g" g ON g.t = tt.t '
        'JOIN "__kanon_lv" lv ON lv."__kanon_grp" = g."__kanon_grp")'
    )
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    labelled = "tg"
    if ranged:
        aggs = ", ".join(
            range_label(qis[j], f"v{j}.k", f"k{j}.val", "tg.n") + f' AS "__kanon_rl{j}"'
            for j in ranged
        )
        joins = " ".join(
            f'JOIN "__kanon_v{j}" v{j} ON v{j}.a0 = tg.{codes[j]} '
            f'JOIN "__kanon_k{j}" k{j} ON k{j}.a0 = tg.{codes[j]}'
            for j in ranged
        )
        ctes.append(
            f'"__kanon_lb" AS (SELECT tg."__kanon_grp", {aggs} FROM "__kanon_tg" tg '
            f'{joins} GROUP BY tg."__kanon_grp")'
        )
        ctes.append(
            '"__kanon_tl" AS MATERIALIZED (SELECT tg.*, '
            + ", ".join(f'lb."__kanon_rl{j}"' for j in ranged)
            + ' FROM "__kanon_tg" tg JOIN "__kanon_lb" lb USING ("__kanon_grp"))'
        )
        labelled = "tl"
    carried = [f'{labelled}."__kanon_grp"', level_columns(m, labelled)]
    carried += [f'{labelled}."__kanon_rl{j}"' for j in ranged]
    rows_sql = (
        f'SELECT r.*, {", ".join(carried)} FROM "__kanon_r" r '
        f'JOIN "__kanon_{labelled}" {labelled} USING ({code_list})'
    )
    return local_release(table, qis, request.identifiers, ctes, rows_sql, labels, labelled=True)


MONDRIAN = Method("mondrian", "kanon_mondrian", mondrian_sql)
