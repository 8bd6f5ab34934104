"""``method := 'priority'``: PrioPrivacy's local recoding of prioritized quasi-identifiers.

Bampoulidis, Markopoulos and Lupu (2019): the least important QIs are generalized and
suppressed first, so that the important ones keep their values on as many rows as
possible; kanon's kernel (``kanon-core::priority``) is strict, a ``'*'`` being a
released value like any other. Priorities come from ``priorities := MAP {...}`` or
``kanon_columns.priority`` (lower = more important; QIs without one are the least
important).

The plan (one statement): the coded parts (:mod:`kanon.planner.coding`), the leaf keys
and packs of :mod:`kanon.planner.local` (tables above :data:`PRIORITY_PACK_ROWS` rows
are cut by Mondrian cuts in SQL first), one call of the kernel UDF ``kanon_priority``
per pack, then the tuples joined to their groups and hierarchy labels, and the rows to
their tuples.
"""

from __future__ import annotations

import json

from kanon._sql import literal
from kanon.planner.coding import code_columns, coded_ctes, hierarchy_lists
from kanon.planner.hierarchies import priority_ranks
from kanon.planner.local import (
    GROUP,
    key_ctes,
    level_columns,
    local_release,
    pack_ctes,
    rounds_for,
    tuple_groups_ctes,
)
from kanon.planner.method import Method, Request
from kanon.planner.sql import Cte, internal

__all__ = ["PRIORITY", "PRIORITY_PACK_ROWS"]

#: Tables above this many rows are cut in SQL into packs of about this many: the greedy
#: groups a pack's unreleased tuples once per pattern of QIs.
PRIORITY_PACK_ROWS = 1 << 18


def priority_sql(request: Request) -> tuple[str, str]:
    """The release and assignment queries of ``method := 'priority'``."""
    table, qis, options = request.table, request.qis, request.options
    m = len(qis)
    coded = coded_ctes(table, qis, request.hierarchies)
    keys = key_ctes(table, qis, coded)
    packs = pack_ctes(
        coded, keys, options.k, rounds_for(request.rows, PRIORITY_PACK_ROWS), PRIORITY_PACK_ROWS
    )
    order = ", ".join(str(r) for r in priority_ranks([q.priority for q in qis]))
    kernel = Cte(
        internal("kernel"),
        "SELECT b, ts, kanon_priority(tuples, counts, "
        f"[{hierarchy_lists(coded, qis)}], [{order}]::UINTEGER[], {options.k}::UBIGINT, "
        f"{literal(json.dumps({'m': m}))}) AS r FROM {packs.packs.ref}",
        ("b", "ts", "r"),
    )
    joined, tuple_groups = tuple_groups_ctes(coded, kernel, m)
    rows_sql = (
        f"SELECT r.*, t.{GROUP}, {level_columns(m, 't')} FROM {coded.rows.ref} r "
        f"JOIN {tuple_groups.ref} t USING ({code_columns(m)})"
    )
    ctes = [*coded.ctes, *keys, *packs.ctes, kernel, *joined]
    return local_release(table, qis, request.identifiers, coded, ctes, rows_sql, "hierarchy")


PRIORITY = Method("priority", "kanon_priority", priority_sql)
