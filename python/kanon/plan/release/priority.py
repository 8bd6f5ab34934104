"""The greedy local recodings over the levels of the hierarchies.

* ``method := 'priority'``: PrioPrivacy's local recoding of prioritized quasi-identifiers
  (Bampoulidis, Markopoulos and Lupu 2019): the least important QIs are generalized and
  suppressed first, so that the important ones keep their values on as many rows as
  possible. Priorities come from ``priorities := MAP {...}`` or
  ``kanon_columns.priority`` (lower = more important; QIs without one are the least
  important).
* ``method := 'iterated'``: ARX's local recoding, iterated global recoding: step by step,
  the full-domain generalization of least weighted non-uniform entropy over the rows not
  yet released among those with a class of k rows, whose classes of k rows are released
  there (``kanon-core::iterated``). Weights are the priorities' (as for the forest) or the
  configured ones.

Both kernels are strict, a ``'*'`` being a released value like any other. The plan (one
statement): the coded parts (:mod:`kanon.plan.coding`), the leaf keys and packs of
:mod:`kanon.plan.release.local` (tables above the method's pack size are cut by Mondrian cuts
in SQL first), one call of the kernel UDF per pack, then the tuples joined to their
groups and hierarchy labels, and the rows to their tuples.
"""

from __future__ import annotations

import json

from kanon.plan.coding import HIERARCHIES, code_columns, coded_ctes, hierarchy_lists
from kanon.plan.hierarchies import priority_ranks, priority_weights
from kanon.plan.release.local import (
    GROUP,
    key_ctes,
    level_columns,
    local_release,
    tuple_groups_ctes,
)
from kanon.plan.release.memory import memory_guard
from kanon.plan.release.method import Method, Request
from kanon.plan.release.packs import PACK_PARAMETERS, pack_ctes, rounds_for
from kanon.sql.cte import Cte, internal
from kanon.sql.kernel import Kernel
from kanon.sql.quote import literal

__all__ = ["ITERATED", "ITERATED_PACK_ROWS", "PRIORITY", "PRIORITY_PACK_ROWS"]

#: Tables above this many rows are cut in SQL into packs of about this many: the greedy
#: groups a pack's unreleased tuples once per pattern of QIs.
PRIORITY_PACK_ROWS = 1 << 18
#: The same for ``'iterated'``, whose steps (at most rows / k) each order the lattice and
#: whose checks (at most one per node) each group the pack's unreleased tuples.
ITERATED_PACK_ROWS = 1 << 15


def priority_sql(request: Request) -> tuple[str, str]:
    """The release and assignment queries of ``method := 'priority'``."""
    order = ", ".join(str(r) for r in priority_ranks([q.priority for q in request.qis]))
    return _greedy_sql(request, PRIORITY_KERNEL, {"ranks": f"[{order}]"}, PRIORITY_PACK_ROWS)


def iterated_sql(request: Request) -> tuple[str, str]:
    """The release and assignment queries of ``method := 'iterated'``."""
    qis = request.qis
    weighted = priority_weights([q.priority for q in qis]) or [q.weight for q in qis]
    weights = ", ".join(repr(float(w)) for w in weighted)
    return _greedy_sql(request, ITERATED_KERNEL, {"weights": f"[{weights}]"}, ITERATED_PACK_ROWS)


def _greedy_sql(
    request: Request, kernel_udf: Kernel, per_qi: dict[str, str], pack_rows: int
) -> tuple[str, str]:
    """The queries of a greedy kernel ``udf`` taking ``per_qi``, a value per QI."""
    table, qis, options = request.table, request.qis, request.options
    m = len(qis)
    coded = coded_ctes(table, qis, request.hierarchies)
    keys = key_ctes(table, qis, coded)
    guard = memory_guard(options.method, ("mondrian", "optimal"), qis, request.rows, coded)
    rounds = rounds_for(request.rows, pack_rows)
    packs = pack_ctes(coded, keys, options.k, rounds, pack_rows, guard)
    call = kernel_udf.call(
        tuples="tuples",
        counts="counts",
        ts="ts",
        hierarchies=f"[{hierarchy_lists(coded, qis)}]",
        k=str(options.k),
        options=literal(json.dumps({"m": m})),
        **per_qi,
    )
    kernel = Cte(
        internal("kernel"), f"SELECT b, ts, {call} AS r FROM {packs.packs.ref}", ("b", "ts", "r")
    )
    joined, tuple_groups = tuple_groups_ctes(coded, kernel, m)
    rows_sql = (
        f"SELECT r.*, t.{GROUP}, {level_columns(m, 't')} FROM {coded.rows.ref} r "
        f"JOIN {tuple_groups.ref} t USING ({code_columns(m)})"
    )
    ctes = [*coded.ctes, *keys, *packs.ctes, kernel, *joined]
    return local_release(table, qis, request.identifiers, coded, ctes, rows_sql, "hierarchy")


def _greedy_kernel(name: str, per_qi: tuple[str, str]) -> Kernel:
    """A greedy kernel: a pack, its hierarchies, one value per QI, k; groups and levels."""
    return Kernel(
        f"kanon_{name}",
        name,
        (
            *PACK_PARAMETERS,
            ("hierarchies", HIERARCHIES),
            per_qi,
            ("k", "UBIGINT"),
            ("options", "VARCHAR"),
        ),
        "STRUCT(g UINTEGER[], lv UINTEGER[][])",
    )


#: ``kanon_priority``: PrioPrivacy's greedy over the QIs' ranks.
PRIORITY_KERNEL = _greedy_kernel("priority", ("ranks", "UINTEGER[]"))
#: ``kanon_iterated``: ARX's iterated global recoding, the QIs weighted.
ITERATED_KERNEL = _greedy_kernel("iterated", ("weights", "DOUBLE[]"))
PRIORITY = Method("priority", PRIORITY_KERNEL, priority_sql, options=("priorities",))
ITERATED = Method("iterated", ITERATED_KERNEL, iterated_sql, options=("priorities",))
