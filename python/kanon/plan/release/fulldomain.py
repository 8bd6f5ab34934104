"""What the full-domain methods (optimal, Datafly, μ-Argus) share: marks and release.

Their kernels return one level per quasi-identifier and, per tuple or for the
suppressed tuples, a mark; the release takes every row's label at its column's level,
``'*'`` where the mark says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.hierarchy.base import ROOT
from kanon.plan.coding import code_column, code_columns
from kanon.plan.labels import label_at, release_columns
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Callable

    from kanon.plan.catalog import Table
    from kanon.plan.coding import Coded
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = ["HISTORIC_REPORT", "MARK", "KernelPlan", "transformation_release", "tuple_marks"]

#: The columns of ``kanon_search`` reporting a historic algorithm (NULL for the optimum).
HISTORIC_REPORT = ("unprotected_rows", "unprotected_classes", "suppressed_cells", "topped_up_rows")


@dataclass(frozen=True)
class KernelPlan:
    """The parts of a full-domain plan up to its kernel call (one row, struct ``r``)."""

    coded: Coded
    ctes: list[Cte]  # every CTE, the kernel's last
    kernel: Cte


#: The helper column of a row's mark (what :func:`tuple_marks` gives it).
MARK = ident(internal("mark"))


def tuple_marks(coded: Coded, kernel: Cte, m: int, field: str) -> tuple[Cte, str]:
    """The CTE and join giving each row ``s.{MARK}``: its tuple's value in ``r.{field}``.

    ``r.{field}`` (of the ``kernel`` CTE) holds a value per tuple ``t`` of the tuples.
    """
    marks = Cte(
        internal("marks"),
        f"SELECT unnest(r.{field}) AS {MARK}, "
        f"(generate_subscripts(r.{field}, 1) - 1)::UBIGINT AS t FROM {kernel.ref}",
        ("t", MARK),
    )
    return (
        marks,
        f"JOIN {coded.tuples.ref} t USING ({code_columns(m)}) JOIN {marks.ref} s ON s.t = t.t",
    )


def transformation_release(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    plan: KernelPlan,
    marks: tuple[Cte, str],
    hidden: Callable[[int], str],
    dropped: str | None,
) -> str:
    """The release of a full-domain transformation computed by ``kernel``.

    ``r.levels`` holds a level per QI; ``marks`` is the CTE and the join that give each
    row its mark ``s.{MARK}`` (:func:`tuple_marks`, or the suppressed tuples): QI ``j``
    of a row is ``'*'`` where ``hidden(j)`` holds (or at the top level), else its label
    at the level; rows where ``dropped`` holds are left out.
    """
    coded, kernel = plan.coded, plan.kernel
    marks_cte, marks_join = marks
    ctes = [*plan.ctes, marks_cte]
    # Per QI, every leaf's label at the chosen level ('*' at the top): a lookup the
    # rows join by their leaf code, materialized: inlined, DuckDB computed the label
    # after the rows' join and copied every level's label and the kernel's result into
    # every row (4 GB and 4 s per QI for 100k rows of deep default hierarchies).
    lookups = []
    for j, q in enumerate(qis):
        lvl = f"r.levels[{j + 1}]"
        label = f"CASE WHEN {lvl} = {q.height} THEN {literal(ROOT)} ELSE {label_at(j, q, lvl)} END"
        lookups.append(
            Cte(
                internal(f"labels{j}"),
                f"SELECT v{j}.a0, {label} AS label "
                f"FROM {coded.values[j].ref} v{j} CROSS JOIN {kernel.ref}",
                ("a0", "label"),
                materialized=True,
            )
        )
    ctes += lookups

    def generalized(j: int) -> str:
        return f"CASE WHEN {hidden(j)} THEN {literal(ROOT)} ELSE g{j}.label END"

    out = release_columns(table, qis, identifiers, "r", generalized)
    joins = " ".join(
        f"JOIN {lookup.ref} g{j} ON g{j}.a0 = r.{code_column(j)}"
        for j, lookup in enumerate(lookups)
    )
    where = "" if dropped is None else f" WHERE NOT ({dropped})"
    return with_query(
        ctes, f"SELECT {', '.join(out)} FROM {coded.rows.ref} r {marks_join} {joins}{where}"
    )
