"""``method := 'forest'`` and ``'forest_paper'``: Aggarwal et al.'s forest, in blocks.

The plan (one statement): the coded parts (:mod:`kanon.plan.coding`), the leaf keys
and packs of :mod:`kanon.plan.release.local`, one call of the kernel UDF ``kanon_forest`` per
pack (which cuts the pack into blocks of at most ``block_size`` rows by Mondrian cuts
and runs the forest in each, in parallel), then every row joined to its group: the
kernel numbers the rows of a tuple copy by copy and returns where each tuple's rows
start; a tuple's only row is its copy 0, the rows of a tuple occurring more often are
ordered by their non-QI columns (equal inputs give equal releases, whatever the row
order).
"""

from __future__ import annotations

import json

from kanon.plan.coding import HIERARCHIES, code_columns, coded_ctes, hierarchy_lists
from kanon.plan.hierarchies import priority_weights
from kanon.plan.labels import is_ordered
from kanon.plan.release.local import (
    GROUP,
    key_ctes,
    key_lists,
    level_columns,
    level_cte,
    local_release,
)
from kanon.plan.release.memory import memory_guard
from kanon.plan.release.method import Method, Request
from kanon.plan.release.packs import PACK_PARAMETERS, pack_ctes, rounds_for
from kanon.sql.cte import Cte, internal
from kanon.sql.kernel import Kernel
from kanon.sql.quote import ident, literal

__all__ = ["BLOCK_ROWS", "FOREST", "FOREST_PAPER", "FULL_EFFORT_ROWS", "PACK_ROWS"]

#: variant → (pair cost, improvement passes). "forest": NCP pair costs, repair and
#: improvement passes (the default). "forest_paper": Aggarwal et al.'s algorithm as
#: published (level / height pair costs, FOREST, DECOMPOSE, repair pass only).
VARIANTS: dict[str, tuple[str, bool]] = {"forest": ("ncp", True), "forest_paper": ("height", False)}
#: Tables above this many rows are cut in SQL into packs (so no packed list holds a large
#: table whole): about a quarter of the table each, within [PACK_ROWS, PACK_ROWS_MAX].
PACK_ROWS = 1 << 18
PACK_ROWS_MAX = 1 << 22
#: The default block size per label mode: above it, a pack is cut into blocks by
#: Mondrian cuts (range labels' neighbour search is a full scan: smaller blocks).
BLOCK_ROWS = {"hierarchy": 50_000, "range": 5_000}
#: The range labels' default block size with the fast passes (benches/README.md).
FAST_RANGE_BLOCK_ROWS = 2_000
#: Tables of at most this many rows get the full improvement passes by default, larger
#: ones the fast passes (``effort := 'fast'``); measurements in benches/README.md.
FULL_EFFORT_ROWS = 1 << 18


def forest_sql(request: Request) -> tuple[str, str]:
    """The forest's release and assignment queries: packs, blocks, groups, labels."""
    table, qis, options, rows = request.table, request.qis, request.options, request.rows
    m = len(qis)
    coded = coded_ctes(table, qis, request.hierarchies)
    keys = key_ctes(table, qis, coded)
    pack = min(max(rows // 4, PACK_ROWS), PACK_ROWS_MAX)
    rounds = rounds_for(rows, pack)
    guard = memory_guard(options.method, ("mondrian", "optimal"), qis, rows, coded)
    packs = pack_ctes(coded, keys, options.k, rounds, pack, guard)
    cut_keys, cut_spans = key_lists(keys, request.spans)
    labels = options.labels or "hierarchy"
    cost, improve = VARIANTS[options.method]
    if labels == "range" and options.method == "forest":
        cost = "range"
    effort = options.effort or ("full" if rows <= FULL_EFFORT_ROWS else "fast")
    if options.block_size is not None:
        block = options.block_size
    elif labels == "range" and effort == "fast":
        block = FAST_RANGE_BLOCK_ROWS
    else:
        block = BLOCK_ROWS[labels]
    passes = effort if improve else "none"
    kernel_options = {"m": m, "cost": cost, "improve": passes, "block_size": block}
    range_keys = ", ".join(
        f"(SELECT list(raw ORDER BY a0) FROM {keys[j].ref})" if is_ordered(q) else "[]::DOUBLE[]"
        for j, q in enumerate(qis)
    )
    # With priorities, PrioPrivacy's weights take the place of the configured ones (not
    # for forest_paper, the algorithm as published, which takes no priorities).
    prioritized = (
        priority_weights([q.priority for q in qis]) if options.method == "forest" else None
    )
    weighted = prioritized or [q.weight for q in qis]
    weights = ", ".join(repr(float(w)) for w in weighted)
    call = KERNEL.call(
        tuples="tuples",
        counts="counts",
        ts="ts",
        hierarchies=f"[{hierarchy_lists(coded, qis)}]",
        weights=f"[{weights}]",
        k=str(options.k),
        seed=str(options.seed),
        options=literal(json.dumps(kernel_options)),
        keys=f"[{range_keys}]",
        cut_keys=cut_keys,
        spans=cut_spans,
    )
    kernel = Cte(
        internal("kernel"), f"SELECT b, ts, {call} AS r FROM {packs.packs.ref}", ("b", "ts", "r")
    )
    index, offset, tuple_, pack_, copy = (
        ident(internal(x)) for x in ("index", "offset", "tuple", "pack", "copy")
    )
    groups = Cte(
        internal("groups"),
        f"SELECT b, ((b << 32) + unnest(r.g))::UBIGINT AS {GROUP}, "
        f"(generate_subscripts(r.g, 1) - 1)::UBIGINT AS {index} FROM {kernel.ref}",
    )
    # Where the rows of each tuple start in its pack's list of groups.
    offsets = Cte(
        internal("offsets"),
        f"SELECT unnest(ts) AS {tuple_}, unnest(r.o) AS {offset} FROM {kernel.ref}",
    )
    levels = level_cte(m, kernel)
    # The kernel numbers the rows of a tuple copy by copy: a tuple's only row is its copy
    # 0, and the rows of a tuple occurring more often are ordered by their other columns.
    # Their quasi-identifiers are equal (one code per value), so ordering by them too
    # would decide nothing and only slow the sort; rows equal in every column are
    # interchangeable.
    qi_names = {q.column.name for q in qis}
    others = [f"r.{ident(c.name)}" for c in table.columns if c.name not in qi_names]
    order = f" ORDER BY {', '.join(others)}" if others else ""
    joined = f"FROM {coded.rows.ref} r JOIN {packs.blocks.ref} p USING ({code_columns(m)})"
    numbered = Cte(
        internal("numbered"),
        f"SELECT r.*, p.b AS {pack_}, p.t AS {tuple_}, "
        f"0::UBIGINT AS {copy} {joined} WHERE p.n = 1 "
        f"UNION ALL SELECT r.*, p.b, p.t, (row_number() OVER (PARTITION BY p.t{order}) - 1)"
        f"::UBIGINT {joined} WHERE p.n > 1",
    )
    rows_sql = (
        f"SELECT n.* EXCLUDE ({pack_}, {tuple_}, {copy}), g.{GROUP}, "
        f"{level_columns(m, 'lv')} "
        f"FROM {numbered.ref} n JOIN {offsets.ref} o USING ({tuple_}) "
        f"JOIN {groups.ref} g ON g.b = n.{pack_} AND g.{index} = o.{offset} + n.{copy} "
        f"JOIN {levels.ref} lv ON lv.{GROUP} = g.{GROUP}"
    )
    ctes = [*coded.ctes, *keys, *packs.ctes, kernel, groups, offsets, levels, numbered]
    return local_release(table, qis, request.identifiers, coded, ctes, rows_sql, labels)


_STATS = (
    "STRUCT(tuples UBIGINT, vertices UBIGINT, own_groups UBIGINT, cuts UBIGINT[], "
    "repaired UBIGINT, cost_before_improve DOUBLE, cost DOUBLE, groups UBIGINT)"
)
#: ``kanon_forest``: a pack's groups and levels, its stats, and where each tuple's rows
#: start in the list of groups.
KERNEL = Kernel(
    "kanon_forest",
    "forest",
    (
        *PACK_PARAMETERS,
        ("hierarchies", HIERARCHIES),
        ("weights", "DOUBLE[]"),
        ("k", "UBIGINT"),
        ("seed", "UBIGINT"),
        ("options", "VARCHAR"),
        ("keys", "DOUBLE[][]"),
        ("cut_keys", "DOUBLE[][]"),
        ("spans", "DOUBLE[]"),
    ),
    f"STRUCT(g UINTEGER[], lv UINTEGER[][], stats {_STATS}, o UBIGINT[])",
)
FOREST = Method(
    "forest",
    KERNEL,
    forest_sql,
    options=("seed", "labels", "block_size", "effort", "priorities"),
)
#: The algorithm as published: no improvement passes (effort) and no priorities.
FOREST_PAPER = Method("forest_paper", KERNEL, forest_sql, options=("seed", "labels", "block_size"))
