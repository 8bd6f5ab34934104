"""``kanon_search(...)``: the full-domain transformation a method chooses, as one row."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from kanon.exceptions import InvalidInputError
from kanon.plan.hierarchies import hierarchy_cte
from kanon.plan.release.method import Request
from kanon.plan.release.registry import METHODS

if TYPE_CHECKING:
    from kanon.plan.release.options import AnonymizeOptions
    from kanon.plan.release.resolve import AnonymizePlan

__all__ = ["Transformation", "search_sql"]


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
    classes: int  # the release's classes, as kanon_metrics counts them ('*' one class)
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
    for ``'datafly'`` and ``'mu_argus'`` the row describes their release instead.
    """
    method = METHODS[options.method]
    if method.search is None:
        full_domain = ", ".join(repr(name) for name, m in METHODS.items() if not m.local)
        msg = (
            f"kanon_search supports the full-domain methods ({full_domain}), got {options.method!r}"
        )
        raise InvalidInputError(msg)
    request = Request(
        plan.table, list(plan.qis), plan.identifiers, options, plan.rows, [], plan.models
    )
    hierarchies = [hierarchy_cte(j, q) for j, q in enumerate(request.coded)]
    return method.search(replace(request, hierarchies=hierarchies))
