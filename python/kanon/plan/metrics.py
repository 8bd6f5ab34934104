"""Utility metrics of a release: generalization cost, GCP, the search's metrics.

The released table is compared label by label with the hierarchy of each
quasi-identifier, restricted to the values that occur in the original table. N is the
number of original rows, w_j the weight of QI j (``kanon_columns.weight``, default 1).

Which rows are suppressed: the released rows whose every QI label is ``'*'`` (unless
every released row is, then the release is the top node and nothing is suppressed),
plus the rows missing from the release (dropped suppressed rows: N - released rows,
when positive). **suppressed** (S) counts both; the other released rows are *kept*.

The level of a column: the lowest hierarchy level whose labels (over the original
values; ``'*'`` at the top) include every label of the column's kept rows other than
NULL (level 0 when the kept rows hold only NULLs). Full-domain releases (``method :=
'optimal'``) have one; a locally recoded column (the forest's labels at mixed levels)
has none.

* **cost**: Σ over released cells of ``w_j · level / L_j`` (Aggarwal et al.'s
  objective), where ``level`` is the lowest level carrying the label, ``L_j`` the
  hierarchy's height; a NULL costs 0.
* **GCP**: the mean over released cells of the normalized certainty penalty of the label:
  ``(hi - lo) / (max - min)`` for numbers and dates (the range of the original values
  under the label over the column's range), ``(leaves - 1) / (|A| - 1)`` for other types
  (original values under the label over the column's distinct values); ``'*'`` costs 1,
  an unchanged value (and a kept NULL) 0. Unweighted, over released rows only. Labels
  of observed values (``labels := 'range'``, Mondrian: ``[lo..hi]``, ``{a, b}``) cover
  the present values they name; for **cost**, **height** and NUE they count as the
  lowest hierarchy node above those values.
* **DM**: Σ |E|² over the equivalence classes E of the released labels (the kept
  ``'*'`` rows form one class, dropped rows none).
* **C_AVG**: (rows / classes) / k, with k the requested k (default: the smallest class).

The metrics of the optimal search (``kanon_search``'s ``cost`` for ``metric :=``
``'loss'``, ``'height'``, ``'nue'``, ``'nue_nonmonotonic'``, ``'dm'``, ``'dm_star'``,
``'aecs'``; see ``kanon-core::lattice::Metric``), computed from the release and the
original table:

* **loss** (search ``'loss'``): ``(Σ released cells w_j · NCP + dropped rows · Σ w_j) /
  (N · Σ w_j)``: GCP weighted and over the N original rows, a dropped row losing 1 per
  cell (a kept suppressed row does: its cells are ``'*'``). Equals **gcp** when the
  weights are equal and no row is dropped.
* **height** (search ``'height'``): Σ over kept cells of ``w_j · l_j / L_j`` with ``l_j``
  the column's level (NULL cells included), plus ``Σ w_j`` per suppressed row (kept or
  dropped). Equals **cost** unless rows are dropped, a column keeps NULLs below its top,
  or a label occurs at several levels. For a column without a level its cells cost as
  in **cost**.
* **nue** (search ``'nue'``, ARX's non-uniform entropy, monotonic): Σ_j w_j · Σ over the
  labels g at level l_j of Σ_{values v under g} c_v · log2(n_g / c_v), with c_v the
  original rows of value v (NULL a value of its own, under the root only) and n_g the
  original rows under g: every original row at its label of the node, the suppressed
  ones included, so no row correspondence is needed.
* **nue_nonmonotonic** (search ``'nue_nonmonotonic'``): **nue** plus Σ_j w_j · Σ_g s_g ·
  log2(S / s_g), where s_g = n_g - (kept rows labelled g) are the suppressed rows whose
  label at level l_j is g.
  **nue** and **nue_nonmonotonic** are NULL when a column has no level (local
  recoding): the label of every original row is then unknown without a row
  correspondence.
* **dm_star** (search ``'dm_star'``, DM*): Σ |E|² over the classes of the original table
  generalized to the columns' levels, every suppressed class counted on its own (so it
  differs from **dm** once rows are suppressed: the release merges the suppressed
  classes into one ``'*'`` class, or drops them). Without a level in some column:
  **dm** when no row is dropped, else NULL.
* **dm_nonmonotonic** (search ``'dm'``, ARX's non-monotonic DM): Σ over kept classes
  |E|² + N · S (N · |E| per suppressed class).
* **aecs** (search ``'aecs'``): released rows / released classes (the kept ``'*'`` rows
  form one class; dropped rows are not released) = C_AVG · k.

ARX's NUE *quality* (0-1, higher is better; ARX 3.7.1's
``QualityModelColumnOrientedNonUniformEntropy``, unweighted, as the PrioPrivacy paper
reports it), for every release, local recodings included: every cell at the level of its
label (the lowest carrying it, ``'*'`` the top, NULL 0), a dropped row's cells ``'*'``.
Per QI j, over the levels l_0 < l_1 < ... of its cells, step i adds Σ_x a_x · log2(b_g /
a_x): a_x the cells at level ≥ l_i whose original value's ancestor at l_{i-1} (0 for i =
0) is x, b_g those whose ancestor at l_i is g (the a_x under g). res_j is the sum, top_j =
Σ_v c_v · log2(N / c_v) the same for every cell ``'*'``. No row correspondence is needed
(see :func:`_quality_ctes`).

* **nue_quality**: 1 - Σ_j res_j / Σ_j top_j (ARX's aggregate; 1 when every top_j is 0).
* **nue_quality_by_column**: 1 - res_j / top_j per QI, in QI order (a ``MAP``). For a
  full-domain release res_j is column j's (unweighted) term of **nue_nonmonotonic**.

When a label occurs at several levels, the lowest consistent level is taken (as the
search's tie-break does); a release made with ``min_level`` above that level can then
read lower in **height** and the NUE columns.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kanon.exceptions import ConfigError, InvalidInputError
from kanon.hierarchy.base import ROOT, value_text
from kanon.plan.catalog import configured_full, resolve_table
from kanon.plan.hierarchies import hierarchy_cte, resolve_qis
from kanon.plan.measures import exact_positions, ncp_sql, value_points
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident, literal
from kanon.sql.types import has_position

if TYPE_CHECKING:
    from collections.abc import Sequence

    import duckdb

    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = ["COLUMNS", "METRICS", "Metric", "Metrics", "plan_metrics"]


@dataclass(frozen=True)
class Metric:
    """One measure of ``kanon_metrics``: its column and field, its SQL, how it is shown.

    ``sql`` is an expression over the parts of :func:`plan_metrics`' last query (the
    subqueries ``c`` (classes), ``s`` (cells), ``t`` (totals), ``x`` (DM*) and the
    per-QI sums in braces). ``label`` (empty: not printed) and ``legend`` are the printed
    report's row, also the HTML report's when ``report``; a per-QI metric (``kind``
    ``dict``) prints one row per QI, ``{column}`` in its label and legend.
    """

    name: str
    sql: str
    kind: type
    optional: bool = False
    label: str = ""
    legend: str = ""
    share: bool = False  # printed as a percent
    report: bool = False  # a row of the HTML report's summary

    def value(self, x: Any) -> Any:
        """The Python value of this metric's SQL value."""
        if x is None and self.optional:
            return None
        if self.kind is dict:
            return {str(c): float(v) for c, v in dict(x).items()}
        return self.kind(x)

    def shown(self, x: Any, decimals: int = 3) -> str:
        """The value as the reports print it (the HTML report with 4 decimals)."""
        return percent(x) if self.share else number(x, decimals)


#: Every column of ``kanon_metrics``, in order (see the module docstring); the fields of
#: :class:`Metrics` are these, in this order (a test checks it).
METRICS = (
    Metric("rows", "c.rows", int, label="rows", legend="rows released"),
    Metric(
        "classes",
        "c.classes",
        int,
        label="classes",
        legend="groups of rows equal on all quasi-identifiers",
    ),
    Metric(
        "min_class",
        "c.min_class",
        int,
        label="smallest class",
        legend="the k the release achieves",
    ),
    Metric("k", "c.k", int),
    Metric(
        "cost", "s.cost", float, label="cost", legend="sum of weight x level / height over cells"
    ),
    Metric(
        "gcp",
        "s.gcp",
        float,
        label="GCP",
        legend="share of detail lost, 0 none, 100 % every QI *",
        share=True,
        report=True,
    ),
    Metric(
        "dm",
        "c.dm",
        int,
        label="DM",
        legend="discernibility: sum of class size squared",
        report=True,
    ),
    Metric(
        "c_avg",
        "CAST(c.rows AS DOUBLE) / c.classes / c.k",
        float,
        label="C_AVG",
        legend="(rows / classes) / k, k = {k}: 1 is ideal",
        report=True,
    ),
    Metric(
        "gcp_by_column",
        "s.gcp_by_column",
        dict,
        label="GCP of {column}",
        legend="detail lost in column {column}",
        share=True,
        report=True,
    ),
    Metric(
        "suppressed",
        "t.s",
        int,
        label="suppressed",
        legend="rows with every QI * or left out",
        report=True,
    ),
    Metric(
        "loss",
        "CASE WHEN t.n = 0 THEN 0.0 ELSE (s.wloss + t.dropped * {total_weight}) "
        "/ (t.n * {total_weight}) END",
        float,
        label="loss",
        legend="GCP weighted, dropped rows losing all",
        share=True,
    ),
    Metric("height", "s.height + t.dropped * {total_weight}", float),
    Metric(
        "nue",
        "{gen}",
        float,
        optional=True,
        label="NUE",
        legend="non-uniform entropy (ARX); n/a without one level per QI",
    ),
    Metric("nue_nonmonotonic", "{gen} + {pen}", float, optional=True),
    Metric(
        "dm_star",
        "CASE WHEN {leveled} THEN x.dm_star WHEN t.dropped = 0 THEN c.dm END",
        int,
        optional=True,
        label="DM*",
        legend="sum of class size squared, suppressed apart",
    ),
    Metric("dm_nonmonotonic", "(c.dm_kept + t.n * t.s)::BIGINT", int),
    Metric(
        "aecs",
        "CAST(c.rows AS DOUBLE) / c.classes",
        float,
        label="AECS",
        legend="average class size",
    ),
    Metric(
        "nue_quality",
        "{nue_quality}",
        float,
        label="NUE quality",
        legend="ARX's entropy quality, 100 % nothing lost",
        share=True,
        report=True,
    ),
    Metric(
        "nue_quality_by_column",
        "MAP {{{nue_by_column}}}",
        dict,
        label="NUE quality of {column}",
        share=True,
    ),
)
#: The columns of ``kanon_metrics``, in order.
COLUMNS = tuple(metric.name for metric in METRICS)


@dataclass(frozen=True)
class Metrics:
    """The utility of a release (one row of ``kanon_metrics``; see the module docstring).

    The fields are :data:`METRICS`, in order.
    """

    rows: int
    classes: int
    min_class: int
    k: int
    cost: float
    gcp: float
    dm: int
    c_avg: float
    gcp_by_column: dict[str, float]
    suppressed: int = 0
    loss: float = 0.0
    height: float = 0.0
    nue: float | None = None
    nue_nonmonotonic: float | None = None
    dm_star: int | None = None
    dm_nonmonotonic: int = 0
    aecs: float = 0.0
    nue_quality: float = 1.0
    nue_quality_by_column: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Metrics:
        """The metrics of one row of :func:`plan_metrics`' query (columns :data:`COLUMNS`)."""
        return cls(**{m.name: m.value(x) for m, x in zip(METRICS, row, strict=True)})

    def to_dict(self) -> dict[str, Any]:
        """Return the metrics as a plain dict."""
        return asdict(self)

    def rows_shown(self) -> list[tuple[Metric, str, str, str]]:
        """The printed rows: metric, label, value, legend; the per-QI ones last, by QI."""
        out = []
        for metric in METRICS:
            if metric.label and metric.kind is not dict:
                value = getattr(self, metric.name)
                legend = metric.legend.format(k=self.k)
                out.append((metric, metric.label, metric.shown(value), legend))
        for metric in METRICS:
            if metric.label and metric.kind is dict:
                for column, value in getattr(self, metric.name).items():
                    label = metric.label.format(column=column)
                    legend = metric.legend.format(column=column)
                    out.append((metric, label, metric.shown(value), legend))
        return out

    def __str__(self) -> str:
        shown = [(label, value, legend) for _, label, value, legend in self.rows_shown()]
        width = max(len(a) for a, _, _ in shown)
        digits = max(len(b) for _, b, _ in shown)
        return "\n".join(f"  {a:<{width}}  {b:>{digits}}   {c}".rstrip() for a, b, c in shown)


def percent(x: float | None) -> str:
    """A share as printed in reports: ``12.34%``, ``n/a`` for None."""
    return "n/a" if x is None else f"{x:.2%}"


def number(x: float | None, decimals: int = 3) -> str:
    """A count or measure as printed in reports: ``1,234`` / ``1.234``, ``n/a`` for None."""
    if x is None:
        return "n/a"
    return f"{x:,}" if isinstance(x, int) else f"{x:,.{decimals}f}"


@dataclass(frozen=True)
class _Column:
    """The CTEs measuring one QI of the release against its hierarchy."""

    hierarchy: Cte  # hierarchy_cte of the QI
    present: Cte  # its leaves present in the original, with positions x and values
    domain: Cte  # one row: distinct values card, lo and hi
    nodes: Cte  # per label: its lowest level, leaves under it, lo, hi and a leaf rep


def _nodes_ctes(j: int, q: QuasiIdentifier, hierarchy: Cte, source: str, released: Cte) -> _Column:
    """The leaves of QI ``j`` present in ``source``, its domain, and every label's node.

    Besides the hierarchy's labels, the nodes hold the labels of the release's observed
    values (:func:`_observed_labels`).
    """
    top = q.height
    joined = f"SELECT h.*, d.x, d.val FROM {hierarchy.ref} h JOIN {value_points(q, source)} d"
    # Unordered types have no positions: their labels cost by the values under them.
    positions = exact_positions("p0") if has_position(q.column.type) else "SELECT * FROM p0"
    present = Cte(internal(f"present{j}"), f"WITH p0 AS ({joined} ON h.k = d.key) {positions}")
    domain = Cte(
        internal(f"domain{j}"),
        f"SELECT count(*) AS card, min(x) AS lo, max(x) AS hi FROM {present.ref}",
        ("card", "lo", "hi"),
    )
    per_level = " UNION ALL ".join(
        f"SELECT {'k' if i == 0 else f'l{i}'} AS label, {i} AS lvl, count(*) AS leaves, "
        f"min(x) AS lo, max(x) AS hi, min(k) AS rep FROM {present.ref} GROUP BY 1"
        for i in range(top + 1)
    )
    base = (
        "SELECT label, min(lvl) AS lvl, arg_min(leaves, lvl) AS leaves, "
        "arg_min(lo, lvl) AS lo, arg_min(hi, lvl) AS hi, arg_min(rep, lvl) AS rep "
        f"FROM ({per_level}) GROUP BY label"
    )
    nodes = Cte(
        internal(f"nodes{j}"),
        f"WITH {internal('base')} AS ({base}) SELECT * FROM {internal('base')} UNION ALL "
        f"{_observed_labels(j, top, present, released, internal('base'))}",
        ("label", "lvl", "leaves", "lo", "hi", "rep"),
    )
    return _Column(hierarchy, present, domain, nodes)


def _observed_labels(j: int, top: int, present: Cte, released: Cte, base: str) -> str:
    """SQL of the released labels of QI ``j`` that publish observed values, as nodes.

    ``labels := 'range'`` and Mondrian publish ``[lo..hi]`` (numbers, dates: the present
    values from lo to hi) and ``{a, b}`` (other types: those values, sorted as text).
    Only labels no hierarchy node carries count, and only when they are exactly such a
    label of present values (a set is rebuilt from the values it names). Each is a
    node at the level of its values' lowest common ancestor (its cost and NUE level),
    with their positions ``lo``, ``hi`` and count ``leaves`` (its GCP).
    """
    inner = "u.label[2:-2]"
    members = (
        f"SELECT u.label, p.* FROM {internal('observed')} u JOIN {present.ref} p ON CASE "
        f"WHEN u.label LIKE '[%..%]' THEN p.x BETWEEN "
        f"(SELECT x FROM {present.ref} WHERE k = split_part({inner}, '..', 1)) AND "
        f"(SELECT x FROM {present.ref} WHERE k = split_part({inner}, '..', 2)) "
        f"ELSE position(', ' || p.k || ', ' IN ', ' || {inner} || ', ') > 0 END"
    )
    lca = " ".join(
        f"WHEN count(DISTINCT {'k' if i == 0 else f'l{i}'}) = 1 THEN {i}" for i in range(top)
    )
    exact = (
        "CASE WHEN label LIKE '[%..%]' THEN '[' || arg_min(k, x) || '..' || arg_max(k, x) "
        "|| ']' ELSE '{' || string_agg(k, ', ' ORDER BY k) || '}' END = label"
    )
    return (
        f"SELECT label, CASE {lca} ELSE {top} END AS lvl, count(*) AS leaves, min(x) AS lo, "
        f"max(x) AS hi, min(k) AS rep FROM (WITH {internal('observed')} AS "
        f"(SELECT DISTINCT x{j} AS label FROM {released.ref} "
        f"WHERE (x{j} LIKE '[%..%]' OR x{j} LIKE '{{%}}') AND x{j} NOT IN "
        f"(SELECT label FROM {base})) {members}) GROUP BY label HAVING {exact}"
    )


@dataclass(frozen=True)
class _Level:
    """The CTEs of one QI's level in the release and its NUE parts."""

    ctes: list[Cte]
    level: Cte  # one row: lvl, the column's level (NULL if none)
    value_counts: Cte  # per original value key: cnt and its label at the level
    entropy: Cte  # one row: lvl, gen (NUE's generalization part) and pen (the penalty)
    quality: Cte  # one row: res (ARX's level-wise NUE of the release) and top (its maximum)


def _level_ctes(
    j: int, q: QuasiIdentifier, column: _Column, released: Cte, tuples: Cte, totals: Cte
) -> _Level:
    """CTEs giving QI ``j``'s level in the release and its NUE parts.

    In order: every (label, level) of the hierarchy over the present values, the top as
    ``'*'``; the kept released rows per label (NULL included); the column's level
    ``lvl`` (the lowest level holding every kept label other than NULL, 0 if there is
    none, NULL if no level holds them all); the original rows per value ``key`` with
    ``cnt`` and the value's ``label`` at the column's level (``'*'`` at the top); the
    original rows ``n`` per label at the column's level; ``gen`` (NUE's generalization
    part, NULL without a level) and ``pen`` (the non-monotonic penalty).
    """
    top = q.height
    present = column.present.ref
    levels = [f"SELECT k AS label, 0 AS lvl FROM {present}"]
    levels += [f"SELECT l{i}, {i} FROM {present}" for i in range(1, top)]
    levels.append(f"SELECT {literal(ROOT)}, {top}")
    path = ", ".join(["h.k", *(f"h.l{i}" for i in range(1, top)), literal(ROOT)])
    labels = Cte(
        internal(f"labels{j}"),
        f"SELECT DISTINCT label, lvl FROM ({' UNION ALL '.join(levels)})",
        ("label", "lvl"),
    )
    kept = Cte(
        internal(f"kept{j}"),
        f"SELECT x{j} AS label, count(*)::BIGINT AS n FROM {released.ref} WHERE NOT sup GROUP BY 1",
        ("label", "n"),
    )
    level = Cte(
        internal(f"level{j}"),
        "SELECT CASE WHEN a.labels = 0 THEN 0 ELSE "
        "min(h.lvl) FILTER (WHERE h.hits = a.labels) END AS lvl "
        f"FROM (SELECT count(label) AS labels FROM {kept.ref}) a LEFT JOIN "
        f"(SELECT v.lvl, count(*) AS hits FROM {kept.ref} c JOIN {labels.ref} v "
        "ON c.label = v.label GROUP BY v.lvl) h ON true GROUP BY a.labels",
        ("lvl",),
    )
    paths = Cte(
        internal(f"paths{j}"),
        f"SELECT v.key, v.cnt, [{path}] AS anc FROM "
        f"(SELECT k{j} AS key, sum(n)::BIGINT AS cnt FROM {tuples.ref} GROUP BY 1) v "
        f"LEFT JOIN {column.hierarchy.ref} h ON v.key = h.k",
        ("key", "cnt", "anc"),
    )
    value_counts = Cte(
        internal(f"value_counts{j}"),
        f"SELECT v.key, v.cnt, v.anc[l.lvl + 1] AS label FROM {paths.ref} v "
        f"CROSS JOIN {level.ref} l",
        ("key", "cnt", "label"),
    )
    label_counts = Cte(
        internal(f"label_counts{j}"),
        f"SELECT label, sum(cnt)::BIGINT AS n FROM {value_counts.ref} GROUP BY 1",
        ("label", "n"),
    )
    entropy = Cte(
        internal(f"entropy{j}"),
        "SELECT l.lvl, CASE WHEN l.lvl IS NULL THEN NULL ELSE g.gen END "
        f"AS gen, p.pen FROM {level.ref} l, "
        f"(SELECT coalesce(sum(v.cnt * log2(g.n / v.cnt)), 0.0) AS gen FROM {value_counts.ref} v "
        f"JOIN {label_counts.ref} g ON v.label IS NOT DISTINCT FROM g.label) g, "
        "(SELECT coalesce(sum(d.s * log2(t.s / d.s)), 0.0) AS pen FROM "
        f"(SELECT g.n - coalesce(c.n, 0) AS s FROM {label_counts.ref} g LEFT JOIN {kept.ref} c "
        f"ON g.label IS NOT DISTINCT FROM c.label) d CROSS JOIN {totals.ref} t "
        "WHERE d.s > 0) p",
        ("lvl", "gen", "pen"),
    )
    quality = _quality_ctes(j, q, column, paths, kept, totals)
    ctes = [labels, kept, level, paths, value_counts, label_counts, entropy, *quality]
    return _Level(ctes, level, value_counts, entropy, quality[-1])


def _quality_ctes(
    j: int, q: QuasiIdentifier, column: _Column, paths: Cte, kept: Cte, totals: Cte
) -> list[Cte]:
    """CTEs of QI ``j``'s ARX non-uniform entropy (``QualityModelColumnOrientedNonUniformEntropy``).

    Every cell is at the level of its label (the lowest carrying it; ``'*'`` the top, a
    NULL 0); the suppressed rows, kept or dropped, are ``'*'`` cells. Over the distinct
    levels l_0 < l_1 < ... of the cells, step i (from ``prev`` = l_{i-1}, 0 for i = 0,
    to ``cur`` = l_i) adds Σ_x a_x · log2(b_g / a_x): a_x the cells at level ≥ ``cur``
    whose original value's ancestor at ``prev`` is x, b_g the same at ``cur`` (the sum
    of a_x under g). No row correspondence is needed: a cell below ``cur`` is at or
    below ``prev``, so its original's ancestor at ``prev`` is its label's; a_x is the
    original rows under x less those cells. ``res`` is the sum over the steps, ``top``
    the same for the release of every cell ``'*'``: Σ_v c_v · log2(N / c_v).
    """
    # The released cells per label with the label's level and a leaf under it.
    cells = Cte(
        internal(f"cells_by_level{j}"),
        "SELECT c.label, c.n, CASE WHEN c.label IS NULL THEN 0 "
        f"WHEN c.label = {literal(ROOT)} THEN {q.height} ELSE d.lvl END AS lvl, d.rep "
        f"FROM (SELECT label, n FROM {kept.ref} UNION ALL "
        f"SELECT {literal(ROOT)}, s FROM {totals.ref}) c "
        f"LEFT JOIN {column.nodes.ref} d ON c.label = d.label WHERE c.n > 0",
        ("label", "n", "lvl", "rep"),
    )
    steps = Cte(
        internal(f"steps{j}"),
        "SELECT * FROM (SELECT coalesce(lag(lvl) OVER (ORDER BY lvl), 0) AS prev, lvl AS cur "
        f"FROM (SELECT DISTINCT lvl FROM {cells.ref} WHERE lvl IS NOT NULL)) WHERE cur > prev",
        ("prev", "cur"),
    )
    # a_x per step: the original rows under x, less the cells below the step's level.
    counts = Cte(
        internal(f"step_counts{j}"),
        "SELECT cur, x, g, sum(n) AS a FROM ("
        f"SELECT s.cur, p.anc[s.prev + 1] AS x, p.anc[s.cur + 1] AS g, p.cnt AS n "
        f"FROM {steps.ref} s CROSS JOIN {paths.ref} p UNION ALL "
        f"SELECT s.cur, p.anc[s.prev + 1], p.anc[s.cur + 1], -c.n FROM {steps.ref} s "
        f"JOIN {cells.ref} c ON c.lvl < s.cur JOIN {paths.ref} p "
        "ON p.key IS NOT DISTINCT FROM c.rep) GROUP BY cur, x, g",
        ("cur", "x", "g", "a"),
    )
    quality = Cte(
        internal(f"quality{j}"),
        "SELECT r.res, m.top FROM "
        "(SELECT coalesce(sum(a * log2(b / a)), 0.0) AS res FROM "
        f"(SELECT a, sum(a) OVER (PARTITION BY cur, g) AS b FROM {counts.ref}) WHERE a > 0) r, "
        "(SELECT coalesce(sum(p.cnt * log2(t.n / p.cnt)), 0.0) AS top "
        f"FROM {paths.ref} p CROSS JOIN {totals.ref} t) m",
        ("res", "top"),
    )
    return [cells, steps, counts, quality]


def _node_classes_cte(levels: list[_Level], tuples: Cte) -> Cte:
    """``dm_star``: Σ |E|² over the original's classes generalized to the columns' levels.

    Meaningless when a column has no level.
    """
    joins = " ".join(
        f"JOIN {lv.value_counts.ref} v{j} ON t.k{j} IS NOT DISTINCT FROM v{j}.key"
        for j, lv in enumerate(levels)
    )
    labels = ", ".join(f"v{j}.label" for j in range(len(levels)))
    return Cte(
        internal("dm_star"),
        "SELECT sum(n * n)::BIGINT AS dm_star FROM "
        f"(SELECT sum(t.n) AS n FROM {tuples.ref} t {joins} GROUP BY {labels})",
        ("dm_star",),
    )


def plan_metrics(
    con: duckdb.DuckDBPyConnection,
    original: str,
    released: str,
    qi: tuple[str, ...] = (),
    k: int | None = None,
) -> str:
    """Return the SQL of ``kanon_metrics(original, released, ...)``: one row of metrics.

    The QIs and hierarchies are those of ``original`` (given or configured, defaults by
    type); ``released`` must have the same QI columns, holding labels. The columns are
    :data:`COLUMNS`, in that order (see the module docstring).
    """
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        msg = f"k must be a positive integer or NULL, got {k!r}"
        raise InvalidInputError(msg)
    src = resolve_table(con, original)
    rel = resolve_table(con, released)
    qis = resolve_qis(con, src, qi, configured_full(con, src))
    rel_cols = [rel.column(q.column.name) for q in qis]
    if src.sql == rel.sql:
        msg = f"the released table {released!r} is the original table; pass the release"
        raise ConfigError(msg)
    m = len(qis)
    # The released labels as text, and which rows are suppressed: every QI '*', unless
    # every row is (the top node).
    labels = ", ".join(
        f"CAST(r.{ident(rc.name)} AS VARCHAR) AS x{j}" for j, rc in enumerate(rel_cols)
    )
    star = " AND ".join(f"coalesce(x{j} = {literal(ROOT)}, false)" for j in range(m))
    release_labels = Cte(
        internal("released"),
        "SELECT *, star AND NOT bool_and(star) OVER () AS sup "
        f"FROM (SELECT *, {star} AS star FROM (SELECT {labels} FROM {rel.sql} r))",
        materialized=True,
    )
    hierarchies = [hierarchy_cte(j, q) for j, q in enumerate(qis)]
    columns = [
        _nodes_ctes(j, q, hierarchies[j], src.sql, release_labels) for j, q in enumerate(qis)
    ]
    ctes = [*hierarchies, release_labels]
    for col in columns:
        ctes += [col.present, col.domain, col.nodes]
    # The original's distinct QI tuples with their rows.
    keys = ", ".join(
        f"{value_text(ident(q.column.name), q.column.type)} AS k{j}" for j, q in enumerate(qis)
    )
    tuples = Cte(
        internal("original_tuples"),
        f"SELECT {keys}, count(*)::BIGINT AS n FROM {src.sql} GROUP BY ALL",
        materialized=True,
    )
    # N original rows; S suppressed = kept '*' rows + rows missing from the release.
    totals = Cte(
        internal("totals"),
        "SELECT o.n, r.released, r.kept, "
        "r.released - r.kept + greatest(o.n - r.released, 0) AS s, "
        "greatest(o.n - r.released, 0) AS dropped FROM "
        f"(SELECT coalesce(sum(n), 0)::BIGINT AS n FROM {tuples.ref}) o, "
        "(SELECT count(*)::BIGINT AS released, count(*) FILTER (WHERE NOT sup)::BIGINT "
        f"AS kept FROM {release_labels.ref}) r",
        ("n", "released", "kept", "s", "dropped"),
    )
    ctes += [tuples, totals]
    levels = [
        _level_ctes(j, q, columns[j], release_labels, tuples, totals) for j, q in enumerate(qis)
    ]
    for lv in levels:
        ctes += lv.ctes
    dm_star = _node_classes_cte(levels, tuples)
    ctes.append(dm_star)
    cells = []
    costs = []
    heights = []
    losses = []
    joins = []
    for j, (q, rc) in enumerate(zip(qis, rel_cols, strict=True)):
        label = f"r.x{j}"
        n, d = f"n{j}", f"d{j}"
        joins.append(f"LEFT JOIN {columns[j].nodes.ref} {n} ON {label} = {n}.label")
        joins.append(f"CROSS JOIN {columns[j].domain.ref} {d}")
        joins.append(f"CROSS JOIN {levels[j].level.ref} l{j}")
        unknown = (
            f"error('label ' || {label} || ' of column ' || "
            f"{literal(rc.name)} || ' is not a label of its hierarchy over the original values')"
        )
        ncp = ncp_sql(f"{n}.leaves", f"{n}.lo", f"{n}.hi", f"{d}.card", f"{d}.lo", f"{d}.hi")
        cells.append(
            f"CASE WHEN {label} IS NULL THEN 0.0 WHEN {label} = {literal(ROOT)} "
            f"THEN 1.0 WHEN {n}.label IS NULL THEN {unknown} ELSE {ncp} END AS g{j}"
        )
        weight = float(q.weight)
        height = max(q.height, 1)
        by_label = (
            f"CASE WHEN {label} IS NULL THEN 0.0 WHEN {label} = {literal(ROOT)} "
            f"THEN {weight!r} ELSE {weight!r} * {n}.lvl / {height} END"
        )
        costs.append(f"{by_label} AS c{j}")
        # The search's Height: every cell at its column's level (NULLs included).
        heights.append(
            f"CASE WHEN r.sup THEN {weight!r} WHEN l{j}.lvl IS NOT NULL "
            f"THEN {weight!r} * l{j}.lvl / {height} ELSE {by_label} END AS h{j}"
        )
        losses.append(f"{weight!r} * g{j}")
    total_weight = sum(float(q.weight) for q in qis)
    per_cell = Cte(
        internal("cells"),
        f"SELECT {', '.join(cells + costs + heights)} "
        f"FROM {release_labels.ref} r {' '.join(joins)}",
    )
    groups = ", ".join(f"x{j}" for j in range(m))
    classes = Cte(
        internal("classes"),
        "SELECT count(*)::BIGINT AS n, bool_or(sup) AS sup "
        f"FROM {release_labels.ref} GROUP BY {groups}",
        ("n", "sup"),
    )
    ctes += [per_cell, classes]
    by_column = ", ".join(f"{literal(q.column.name)}: avg(g{j})" for j, q in enumerate(qis))
    k_sql = "min(n)" if k is None else str(k)
    weights = [repr(float(q.weight)) for q in qis]
    gen = " + ".join(f"{w} * e{j}.gen" for j, w in enumerate(weights))
    pen = " + ".join(f"{w} * e{j}.pen" for j, w in enumerate(weights))
    leveled = " AND ".join(f"e{j}.lvl IS NOT NULL" for j in range(m))
    entropy = ", ".join(f"{lv.entropy.ref} e{j}" for j, lv in enumerate(levels))
    quality = ", ".join(f"{lv.quality.ref} u{j}" for j, lv in enumerate(levels))
    res = " + ".join(f"u{j}.res" for j in range(m))
    top = " + ".join(f"u{j}.top" for j in range(m))
    nue_by_column = ", ".join(
        f"{literal(q.column.name)}: {_quality_sql(f'u{j}.res', f'u{j}.top')}"
        for j, q in enumerate(qis)
    )
    parts = {
        "total_weight": repr(total_weight),
        "gen": gen,
        "pen": pen,
        "leveled": leveled,
        "nue_quality": _quality_sql(res, top),
        "nue_by_column": nue_by_column,
    }
    selected = ", ".join(f"{metric.sql.format(**parts)} AS {metric.name}" for metric in METRICS)
    return with_query(
        ctes,
        f"SELECT {selected} FROM "
        f"(SELECT sum(n)::BIGINT AS rows, count(*)::BIGINT AS classes, min(n)::BIGINT "
        f"AS min_class, ({k_sql})::BIGINT AS k, sum(n * n)::BIGINT AS dm, "
        "coalesce(sum(n * n) FILTER (WHERE NOT sup), 0)::BIGINT AS dm_kept "
        f"  FROM {classes.ref}) c, "
        f"(SELECT coalesce(sum({' + '.join(f'c{j}' for j in range(m))}), 0) AS cost, "
        f"coalesce(avg(({' + '.join(f'g{j}' for j in range(m))}) / {m}), 0) AS gcp, "
        f"{{{by_column}}} AS gcp_by_column, "
        f"coalesce(sum({' + '.join(losses)}), 0) AS wloss, "
        f"coalesce(sum({' + '.join(f'h{j}' for j in range(m))}), 0) AS height "
        f"  FROM {per_cell.ref}) s, {totals.ref} t, {dm_star.ref} x, "
        f"{entropy}, {quality}",
    )


def _quality_sql(res: str, top: str) -> str:
    """SQL of ARX's NUE quality ``1 - res / top`` (1 when ``top`` is 0), in [0, 1].

    Clamped: ``res`` and ``top`` are sums in another order when every cell is ``'*'``.
    """
    return (
        f"CAST(CASE WHEN ({top}) > 0 THEN greatest(0.0, least(1.0, 1.0 - ({res}) / ({top}))) "
        "ELSE 1.0 END AS DOUBLE)"
    )
