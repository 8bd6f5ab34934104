"""Utility metrics of a release: generalization cost, GCP, discernibility, C_AVG.

The released table is compared label by label with the hierarchy of each
quasi-identifier, restricted to the values that occur in the original table:

* **cost**: Σ over cells of ``weight_j · level / L_j`` (Aggarwal et al.'s objective), where
  ``level`` is the lowest level carrying the label and ``L_j`` the hierarchy's height.
* **GCP**: the mean over cells of the normalized certainty penalty of the label:
  ``(hi - lo) / (max - min)`` for numbers and dates (the range of the original values
  under the label over the column's range), ``(leaves - 1) / (|A| - 1)`` for other types
  (original values under the label over the column's distinct values); ``'*'`` costs 1,
  an unchanged value (and a kept NULL) 0.
* **DM**: Σ |E|² over the equivalence classes E of the released labels.
* **C_AVG**: (rows / classes) / k, with k the requested k (default: the smallest class).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kanon._anonymize import QuasiIdentifier, hierarchy_cte, resolve_qis
from kanon._catalog import DATE_TYPES, FLOAT_TYPES, INT_TYPES, configured_full, resolve_table
from kanon._sql import ident, literal
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.hierarchy import ROOT, value_text

if TYPE_CHECKING:
    import duckdb

__all__ = ["Metrics", "ncp_sql", "plan_metrics", "position", "value_points"]


@dataclass(frozen=True)
class Metrics:
    """The utility of a release (one row of ``kanon_metrics``)."""

    rows: int
    classes: int
    min_class: int
    k: int
    cost: float
    gcp: float
    dm: int
    c_avg: float
    gcp_by_column: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """Return the metrics as a plain dict."""
        return asdict(self)

    def __str__(self) -> str:
        cols = ", ".join(f"{c} {v:.2%}" for c, v in self.gcp_by_column.items())
        return (
            f"rows {self.rows:,}, classes {self.classes:,} (smallest {self.min_class}), "
            f"cost {self.cost:,.2f}, GCP {self.gcp:.2%}, DM {self.dm:,}, "
            f"C_AVG {self.c_avg:.3f} (k = {self.k})\n  GCP by column: {cols}"
        )


def position(expr: str, typ: str) -> str:
    """A number placing a value on its column's axis, NULL for unordered types."""
    base = typ.split("(")[0]
    if base in INT_TYPES or base in FLOAT_TYPES or base == "DECIMAL":
        return f"CAST({expr} AS DOUBLE)"
    if base in DATE_TYPES:
        return f"CAST(epoch({expr}) AS DOUBLE)"
    return "CAST(NULL AS DOUBLE)"


def value_points(q: QuasiIdentifier, source: str) -> str:
    """Return SQL of the distinct non-NULL values of QI ``q`` in ``source``.

    Columns: ``key`` (the value as hierarchy text) and ``x`` (its :func:`position`, NULL
    for unordered types).
    """
    c = ident(q.column.name)
    return (
        f"(SELECT DISTINCT {value_text(c, q.column.type)} AS key, "
        f"{position(c, q.column.type)} AS x FROM {source} WHERE {c} IS NOT NULL)"
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


def _nodes_cte(j: int, q: QuasiIdentifier, source: str) -> list[str]:
    """CTEs ``__kanon_p{j}`` (present leaves), ``__kanon_d{j}`` (domain), ``__kanon_n{j}``."""
    top = q.height
    present = (
        f'"__kanon_p{j}" AS (SELECT h.*, d.x FROM "__kanon_h{j}" h JOIN '
        f"{value_points(q, source)} d ON h.k = d.key)"
    )
    domain = (
        f'"__kanon_d{j}" AS (SELECT count(*) AS card, min(x) AS lo, max(x) AS hi '
        f'FROM "__kanon_p{j}")'
    )
    per_level = " UNION ALL ".join(
        f"SELECT {'k' if i == 0 else f'l{i}'} AS label, {i} AS lvl, count(*) AS leaves, "
        f'min(x) AS lo, max(x) AS hi FROM "__kanon_p{j}" GROUP BY 1'
        for i in range(top + 1)
    )
    nodes = (
        f'"__kanon_n{j}" AS (SELECT label, min(lvl) AS lvl, arg_min(leaves, lvl) AS leaves, '
        f"arg_min(lo, lvl) AS lo, arg_min(hi, lvl) AS hi FROM ({per_level}) GROUP BY label)"
    )
    return [present, domain, nodes]


def plan_metrics(
    con: duckdb.DuckDBPyConnection,
    original: str,
    released: str,
    qi: tuple[str, ...] = (),
    k: int | None = None,
) -> str:
    """Return the SQL of ``kanon_metrics(original, released, ...)``: one row of metrics.

    The QIs and hierarchies are those of ``original`` (given or configured, defaults by
    type); ``released`` must have the same QI columns, holding labels.
    """
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        msg = f"k must be a positive integer or NULL, got {k!r}"
        raise InvalidInputError(msg)
    src = resolve_table(con, original)
    rel = resolve_table(con, released)
    qis = resolve_qis(con, src, qi, configured_full(con, src.name))
    rel_cols = [rel.column(q.column.name) for q in qis]
    if src.sql == rel.sql:
        msg = f"the released table {released!r} is the original table; pass the release"
        raise ConfigError(msg)
    ctes = [hierarchy_cte(j, q) for j, q in enumerate(qis)]
    for j, q in enumerate(qis):
        ctes += _nodes_cte(j, q, src.sql)
    cells = []
    costs = []
    joins = []
    for j, (q, rc) in enumerate(zip(qis, rel_cols, strict=True)):
        label = f"r.{ident(rc.name)}"
        n, d = f"n{j}", f"d{j}"
        joins.append(f'LEFT JOIN "__kanon_n{j}" {n} ON CAST({label} AS VARCHAR) = {n}.label')
        joins.append(f'CROSS JOIN "__kanon_d{j}" {d}')
        unknown = (
            f"error('label ' || CAST({label} AS VARCHAR) || ' of column ' || "
            f"{literal(rc.name)} || ' is not a label of its hierarchy over the original values')"
        )
        ncp = ncp_sql(f"{n}.leaves", f"{n}.lo", f"{n}.hi", f"{d}.card", f"{d}.lo", f"{d}.hi")
        cells.append(
            f"CASE WHEN {label} IS NULL THEN 0.0 WHEN CAST({label} AS VARCHAR) = {literal(ROOT)} "
            f"THEN 1.0 WHEN {n}.label IS NULL THEN {unknown} ELSE {ncp} END AS g{j}"
        )
        weight = float(q.weight)
        height = max(q.height, 1)
        costs.append(
            f"CASE WHEN {label} IS NULL THEN 0.0 WHEN CAST({label} AS VARCHAR) = {literal(ROOT)} "
            f"THEN {weight!r} ELSE {weight!r} * {n}.lvl / {height} END AS c{j}"
        )
    m = len(qis)
    groups = ", ".join(ident(c.name) for c in rel_cols)
    ctes.append(
        f'"__kanon_cells" AS (SELECT {", ".join(cells + costs)} FROM {rel.sql} r {" ".join(joins)})'
    )
    ctes.append(
        f'"__kanon_classes" AS (SELECT count(*)::BIGINT AS n FROM {rel.sql} GROUP BY {groups})'
    )
    by_column = ", ".join(f"{literal(q.column.name)}: avg(g{j})" for j, q in enumerate(qis))
    k_sql = "min(n)" if k is None else str(k)
    return (
        "WITH "
        + ",\n".join(ctes)
        + "\nSELECT c.rows, c.classes, c.min_class, c.k, s.cost, s.gcp, c.dm, "
        "CAST(c.rows AS DOUBLE) / c.classes / c.k AS c_avg, s.gcp_by_column FROM "
        f"(SELECT sum(n)::BIGINT AS rows, count(*)::BIGINT AS classes, min(n)::BIGINT "
        f"AS min_class, ({k_sql})::BIGINT AS k, sum(n * n)::BIGINT AS dm "
        '  FROM "__kanon_classes") c, '
        f"(SELECT coalesce(sum({' + '.join(f'c{j}' for j in range(m))}), 0) AS cost, "
        f"coalesce(avg(({' + '.join(f'g{j}' for j in range(m))}) / {m}), 0) AS gcp, "
        f"{{{by_column}}} AS gcp_by_column "
        '  FROM "__kanon_cells") s'
    )
