"""``method := 'datafly'`` and ``'mu_argus'``: Sweeney's greedy full-domain algorithms.

Sweeney (2002), "Achieving k-anonymity privacy protection using generalization and
suppression", describes two greedy full-domain algorithms, kept here as baselines next
to the exact optimum (``method := 'optimal'``, :mod:`kanon.plan.release.optimal`):

* **Datafly** generalizes, one level at a time, the quasi-identifier with the most
  distinct values until the rows in classes below k are at most ``max_suppressed``;
  those rows are suppressed. ``max_suppression`` is that limit as a fraction of the
  rows; at 0 (the default) Datafly follows Sweeney's rule: at most **k rows** (a
  tiny positive fraction such as ``1e-9`` allows none).
* **μ-Argus** generalizes every quasi-identifier on its own until each of its values
  occurs k times, then suppresses single cells of the combinations of 2 and 3
  quasi-identifiers occurring fewer than k times. It never looks at larger combinations,
  so what it releases need not be k-anonymous: ``kanon_search(..., method :=
  'mu_argus')`` reports the rows and classes it left below k (``unprotected_rows``,
  ``unprotected_classes``). It takes no ``max_suppression``.

Both finish the same way (``kanon-core::historic``): rows in classes below k are
suppressed entirely, and a kept class of suppressed rows holding fewer than k rows is
topped up with the smallest classes. The release is therefore k-anonymous, the ``'*'``
class included.

The generated SQL (one statement) codes every quasi-identifier against its hierarchy
(:func:`kanon.plan.coding.coded_ctes`), sends the histogram of distinct code tuples to the
kernel UDF ``kanon_historic``, and gets back one level per quasi-identifier and, per
tuple, a bitmask of its ``'*'`` cells (all bits for a suppressed row). Quasi-identifier j
of a row is ``'*'`` when bit j of its tuple's mask is set, else its hierarchy label at
the level (``'*'`` at the top); identifiers become ``'*'``; other columns are unchanged.
``drop_suppressed`` leaves out the rows whose quasi-identifiers are all suppressed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kanon.plan.coding import HIERARCHIES, coded_ctes, hierarchy_lists
from kanon.plan.release.fulldomain import (
    HISTORIC_REPORT,
    MARK,
    KernelPlan,
    transformation_release,
    tuple_marks,
)
from kanon.plan.release.memory import OK, memory_guard
from kanon.plan.release.method import Method, Request
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.kernel import Kernel
from kanon.sql.quote import literal

if TYPE_CHECKING:
    from kanon.plan.catalog import Table
    from kanon.plan.hierarchies import QuasiIdentifier
    from kanon.plan.release.options import AnonymizeOptions

__all__ = ["DATAFLY", "MU_ARGUS", "historic_ctes", "max_suppressed"]


def max_suppressed(options: AnonymizeOptions, rows: int) -> int | None:
    """Datafly's limit on rows left below k: ``max_suppression`` of ``rows``.

    None (Sweeney's rule, k rows) when ``max_suppression`` is 0, and for μ-Argus.
    """
    if options.method != "datafly" or options.max_suppression == 0.0:
        return None
    return int(options.max_suppression * rows)


def historic_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    options: AnonymizeOptions,
    rows: int,
    hierarchies: list[Cte],
) -> KernelPlan:
    """The coded CTEs and one call of ``kanon_historic``.

    Its struct ``r`` holds ``levels`` (per QI), ``cells`` (per tuple ``t``: the mask of
    its ``'*'`` cells) and ``stats`` (the report).
    """
    m = len(qis)
    coded = coded_ctes(table, qis, hierarchies)
    kernel_options = {
        "m": m,
        "method": options.method,
        "max_suppressed": max_suppressed(options, rows),
        "keep_suppressed": not options.drop_suppressed,
    }
    tuples, counts = coded.tuple_lists(m)
    guard = memory_guard(options.method, ("optimal",), qis, rows, coded, floor="historic")
    call = KERNEL.call(
        tuples=tuples,
        counts=counts,
        hierarchies=f"[{hierarchy_lists(coded, qis)}]",
        k=str(options.k),
        options=literal(json.dumps(kernel_options)),
    )
    kernel = Cte(internal("kernel"), f"SELECT {call} AS r FROM {guard.ref} WHERE {OK}", ("r",))
    return KernelPlan(coded, [*coded.ctes, guard, kernel], kernel)


def historic_sql(request: Request) -> tuple[str, str]:
    """Return the release query of Datafly or μ-Argus, twice.

    (The release has no group assignment to store, so its assignment query is itself.)
    """
    table, qis, options = request.table, request.qis, request.options
    plan = historic_ctes(table, qis, options, request.rows, request.hierarchies)
    full = (1 << len(qis)) - 1  # every cell suppressed: the whole row
    sql = transformation_release(
        table,
        qis,
        request.identifiers,
        plan,
        tuple_marks(plan.coded, plan.kernel, len(qis), "cells"),
        lambda j: f"(s.{MARK} >> {j}) & 1 = 1",
        f"s.{MARK} = {full}::UBIGINT" if options.drop_suppressed else None,
    )
    return sql, sql


def search_sql(request: Request) -> str:
    """Return the SQL of ``kanon_search(..., method := 'datafly' | 'mu_argus')``.

    One row with the columns of the optimal search (``cost``, ``nodes``, ``checked``
    and ``metric`` NULL: these algorithms minimize no metric and search no lattice) and
    the report: ``method``, ``unprotected_rows``, ``unprotected_classes``,
    ``suppressed_cells`` and ``topped_up_rows``.
    """
    qis, options = request.qis, request.options
    names = ", ".join(literal(q.column.name) for q in qis)

    def field(key: str, typ: str = "BIGINT") -> str:
        return f"CAST(r.stats.{key} AS {typ})"

    report = ", ".join(f"{field(key)} AS {key}" for key in HISTORIC_REPORT)
    plan = historic_ctes(request.table, qis, options, request.rows, request.hierarchies)
    return with_query(
        plan.ctes,
        "SELECT map_from_entries(list_zip([" + names + "], r.levels)) AS levels, "
        f"{field('suppressed_rows')} AS suppressed, NULL::DOUBLE AS cost, "
        f"{field('classes')} AS classes, NULL::BIGINT AS nodes, NULL::BIGINT AS checked, "
        f"{field('seconds', 'DOUBLE')} AS seconds, NULL::VARCHAR AS metric, "
        f"{literal(options.method)} AS method, {report} FROM {plan.kernel.ref}",
    )


#: Datafly may leave up to max_suppression of the rows below k (suppressed); μ-Argus
#: suppresses what its rules leave below k, with no limit.
_STATS = (
    "STRUCT(unprotected_rows UBIGINT, unprotected_classes UBIGINT, suppressed_cells UBIGINT, "
    "suppressed_rows UBIGINT, topped_up_rows UBIGINT, steps UBIGINT, classes UBIGINT, "
    "seconds DOUBLE)"
)
#: ``kanon_historic``: the levels chosen, the suppressed cells and the run's stats.
KERNEL = Kernel(
    "kanon_historic",
    "historic",
    (
        ("tuples", "UINTEGER[]"),
        ("counts", "UBIGINT[]"),
        ("hierarchies", HIERARCHIES),
        ("k", "UBIGINT"),
        ("options", "VARCHAR"),
    ),
    f"STRUCT(levels UINTEGER[], cells UBIGINT[], stats {_STATS})",
)
DATAFLY = Method(
    "datafly",
    KERNEL,
    historic_sql,
    search_sql,
    options=("max_suppression", "drop_suppressed"),
)
MU_ARGUS = Method("mu_argus", KERNEL, historic_sql, search_sql, options=("drop_suppressed",))
