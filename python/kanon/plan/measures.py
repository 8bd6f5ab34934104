"""Measures of values on their axes: positions made exact, distinct points, NCP.

Shared by the optimal search's label losses, Mondrian's keys and ``kanon_metrics``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.hierarchy.base import value_text
from kanon.sql.quote import ident
from kanon.sql.types import position

if TYPE_CHECKING:
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = ["exact_positions", "ncp_sql", "value_points"]


def exact_positions(points: str, *, ranked: bool = False) -> str:
    """SQL of ``points`` with its positions ``x`` made ranks where they cannot measure.

    ``points`` is a relation with columns ``x`` (a :func:`position`) and ``val`` (the
    value). Positions are doubles: they collide for integers and decimals beyond 2**53
    (HUGEINT, DECIMAL(38)) and are useless for NaN, ±inf or spans that overflow (±1e308,
    or 0 and 1e308 once the NULL leaf's key is placed a span beyond the largest). Then
    every value's ``x`` is its rank among the distinct values (1, 2, ..., in DuckDB's
    order, NaN last); a NULL value keeps a NULL ``x``. With ``ranked``, ``points`` holds
    one row per distinct value and a column ``a0`` of its position in value order (a
    hierarchy's leaf codes where they follow the values), which gives the ranks without
    a sort.
    """
    # The NULL leaf's key lies one span beyond the largest (kanon.plan.release.local.key_ctes):
    # it and the span up to it must be finite too.
    beyond = "(max(x) + greatest(max(x) - min(x), 1.0))"
    values = "count(val)" if ranked else "count(DISTINCT val)"
    usable = (
        f"(SELECT coalesce(bool_and(isfinite(x)) AND isfinite({beyond} - min(x)) "
        f"AND isfinite({beyond}) AND count(DISTINCT x) = {values}, TRUE) "
        f"FROM {points} WHERE val IS NOT NULL)"
    )
    rank = "a0 + 1" if ranked else "dense_rank() OVER (ORDER BY val)"
    return (
        f"SELECT * REPLACE (CASE WHEN {usable} THEN x WHEN val IS NULL THEN NULL "
        f"ELSE CAST({rank} AS DOUBLE) END AS x) "
        f"FROM {points}"
    )


def value_points(q: QuasiIdentifier, source: str) -> str:
    """Return SQL of the distinct non-NULL values of QI ``q`` in ``source``.

    Columns: ``key`` (the value as hierarchy text), ``x`` (its :func:`position`, NULL
    for unordered types) and ``val`` (the value).
    """
    c = ident(q.column.name)
    return (
        f"(SELECT DISTINCT {value_text(c, q.column.type)} AS key, "
        f"{position(c, q.column.type)} AS x, {c} AS val FROM {source} WHERE {c} IS NOT NULL)"
    )


def ncp_sql(leaves: str, lo: str, hi: str, card: str, domain_lo: str, domain_hi: str) -> str:
    """Return SQL of a label's normalized certainty penalty.

    ``(hi - lo) / (max - min)`` of the values under it when the column is ordered
    (``domain_lo`` not NULL), else ``(leaves - 1) / (distinct values - 1)``; 0 for a
    single value or none.
    """
    return (
        f"CASE WHEN {domain_lo} IS NOT NULL THEN CASE WHEN {domain_hi} > {domain_lo} THEN "
        f"coalesce(({hi} - {lo}) / ({domain_hi} - {domain_lo}), 0.0) ELSE 0.0 END "
        f"ELSE CASE WHEN {card} > 1 THEN greatest({leaves} - 1, 0) / ({card} - 1) ELSE 0.0 END "
        "END"
    )
