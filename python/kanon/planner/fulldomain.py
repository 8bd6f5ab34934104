"""What the full-domain methods (optimal, Datafly, μ-Argus) share: marks and release.

Their kernels return one level per quasi-identifier and, per tuple or for the
suppressed tuples, a mark; the release takes every row's label at its column's level,
``'*'`` where the mark says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon._sql import literal
from kanon.hierarchy.base import ROOT
from kanon.planner.coding import code_columns
from kanon.planner.labels import label_at, release_columns

if TYPE_CHECKING:
    from collections.abc import Callable

    from kanon._catalog import Table
    from kanon.planner.hierarchies import QuasiIdentifier

__all__ = ["HISTORIC_REPORT", "transformation_release", "tuple_marks"]

#: The columns of ``kanon_search`` reporting a historic algorithm (NULL for the optimum).
HISTORIC_REPORT = ("unprotected_rows", "unprotected_classes", "suppressed_cells", "topped_up_rows")


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
