"""What the local recodings (forest, Mondrian) share: leaf keys, packs, levels, release.

Their plan, after the coded parts of :mod:`kanon.planner.coding`:

1. ``__kanon_k{j}``: the *key* of every leaf of QI ``j``, the number Mondrian cuts order
   and measure it by: the value's position on its axis for numbers and dates (the NULL
   leaf beyond the largest value), the leaf's depth-first position otherwise.
2. Large tables are cut in SQL, round by round, by Mondrian cuts (the attribute of
   widest normalized range whose median cut leaves ≥ k rows on both sides) into packs,
   so that no packed list holds the whole table and DuckDB packs them in parallel.
3. One kernel call per pack (the method's), returning each row's group and each group's
   level per QI (``__kanon_lv``).
4. Labels (:mod:`kanon.planner.labels`): the hierarchy node holding the group, or the
   group's observed values (``labels := 'range'``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kanon._sql import ident, literal
from kanon._types import position
from kanon.hierarchy.base import ROOT, value_text
from kanon.planner.coding import keyed_by_value
from kanon.planner.labels import is_ordered, label_at, range_label, release_columns, uses_range
from kanon.planner.measures import exact_positions

if TYPE_CHECKING:
    from kanon._catalog import Table
    from kanon.planner.hierarchies import QuasiIdentifier

__all__ = [
    "key_ctes",
    "key_lists",
    "level_columns",
    "level_cte",
    "local_release",
    "pack_ctes",
    "rounds_for",
]


def key_ctes(table: Table, qis: list[QuasiIdentifier]) -> list[str]:
    """CTEs ``__kanon_k{j}`` (``a0``, ``x``, ``raw``, ``val``): the key of every leaf of QI ``j``.

    Numbers and dates: ``raw`` is the value's position (:func:`kanon._types.position`,
    NULL for the NULL leaf), ``x`` the same with the NULL leaf at ``max + max(max -
    min, 1)`` and ``val`` the value itself; other types: ``x`` is the leaf code ``a0``
    (depth-first hierarchy order), ``raw`` and ``val`` NULL. The source is scanned again
    only for floating-point values (whose leaf key is text).
    """
    out = []
    for j, q in enumerate(qis):
        v = f'"__kanon_v{j}"'
        if is_ordered(q):
            c = ident(q.column.name)
            if keyed_by_value(q):
                # The leaf's key is the value itself: no pass over the data.
                p = f"SELECT a0, {position('vk', q.column.type)} AS x, vk AS val FROM {v}"
            else:
                points = (
                    f"(SELECT DISTINCT {value_text(c, q.column.type)} AS key, "
                    f"{position(c, q.column.type)} AS x, {c} AS val FROM {table.sql} "
                    f"WHERE {c} IS NOT NULL)"
                )
                p = f"SELECT v.a0, d.x, d.val FROM {v} v LEFT JOIN {points} d ON v.k = d.key"
            # Positions that cannot measure the values (NaN, ±inf, overflowing spans,
            # integers beyond doubles) become ranks.
            out.append(
                f'"__kanon_k{j}" AS (WITH p0 AS ({p}), p AS ({exact_positions("p0")}) '
                "SELECT a0, coalesce(x, (SELECT coalesce(max(x) + greatest(max(x) - min(x), "
                "1.0), 0.0) FROM p)) AS x, x AS raw, val FROM p)"
            )
        else:
            out.append(
                f'"__kanon_k{j}" AS (SELECT a0, CAST(a0 AS DOUBLE) AS x, '
                f"CAST(NULL AS DOUBLE) AS raw, NULL AS val FROM {v})"
            )
    return out


def key_lists(m: int) -> tuple[str, str]:
    """SQL of the keys (``DOUBLE[][]``, per QI by leaf code) and spans (``DOUBLE[]``)."""
    keys = ", ".join(f'(SELECT list(x ORDER BY a0) FROM "__kanon_k{j}")' for j in range(m))
    spans = ", ".join(f'(SELECT max(x) - min(x) FROM "__kanon_k{j}")' for j in range(m))
    return f"[{keys}]::DOUBLE[][]", f"[{spans}]::DOUBLE[]"


def rounds_for(rows: int, pack_rows: int) -> int:
    """SQL cutting rounds that bring ``rows`` to packs of about ``pack_rows`` rows."""
    if rows <= pack_rows:
        return 0
    return math.ceil(math.log2(rows / pack_rows)) + 1


def pack_ctes(m: int, k: int, rounds: int, pack_rows: int) -> list[str]:
    """CTEs cutting the tuples into packs; the last, ``__kanon_pk``, one row per pack.

    ``__kanon_pk`` has ``b`` (the pack), ``tuples`` (the codes of its tuples, packed),
    ``counts`` and ``ts`` (their numbers ``t``), in order of ``t``.

    Each round takes the blocks above ``pack_rows`` rows and cuts each on the attribute
    of widest normalized range (over the table's span) among those whose median cut
    (``x <= median``, or else ``x < median``) leaves at least ``k`` rows on both sides.
    """
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    xs = [f"x{j}" for j in range(m)]
    joins = " ".join(f'JOIN "__kanon_k{j}" k{j} ON k{j}.a0 = t.{codes[j]}' for j in range(m))
    spans = ", ".join(f'(SELECT max(x) - min(x) FROM "__kanon_k{j}")' for j in range(m))
    keyed = ", ".join(f"k{j}.x AS x{j}" for j in range(m))
    ctes = [
        f'"__kanon_sp" AS (SELECT [{spans}] AS span)',
        f'"__kanon_b0" AS (SELECT t.*, 0::UBIGINT AS b, {keyed} FROM "__kanon_t" t {joins})',
    ]
    for i in range(rounds):
        src = f'"__kanon_b{i}"'
        lo = ", ".join(f"min({x})" for x in xs)
        hi = ", ".join(f"max({x})" for x in xs)
        ctes.append(
            f'"__kanon_qs{i}" AS (SELECT b, sum(n) AS rows, [{lo}] AS lo, [{hi}] AS hi '
            f"FROM {src} GROUP BY b HAVING sum(n) > {pack_rows})"
        )
        # The median of every attribute (as quantile_disc: the value at position
        # floor((tuples - 1) / 2)) from a histogram of its keys per block: hash
        # aggregates spill to disk, quantile_disc's state does not.
        counts = " UNION ALL ".join(
            f"SELECT b, {j} AS j, {x} AS x, count(*) AS c FROM {src} "
            f'WHERE b IN (SELECT b FROM "__kanon_qs{i}") GROUP BY b, {x}'
            for j, x in enumerate(xs)
        )
        ctes.append(
            f'"__kanon_q{i}" AS (SELECT q.*, m.med FROM "__kanon_qs{i}" q JOIN ('
            "SELECT b, list(x ORDER BY j) AS med FROM (SELECT b, j, x, c, "
            "sum(c) OVER (PARTITION BY b, j ORDER BY x ROWS UNBOUNDED PRECEDING) AS upto, "
            f"sum(c) OVER (PARTITION BY b, j) AS total FROM ({counts})) "
            "WHERE upto - c <= (total - 1) // 2 AND (total - 1) // 2 < upto GROUP BY b"
            ") m USING (b))"
        )
        le = ", ".join(
            f"coalesce(sum(s.n) FILTER (WHERE s.{x} <= q.med[{j + 1}]), 0)"
            for j, x in enumerate(xs)
        )
        lt = ", ".join(
            f"coalesce(sum(s.n) FILTER (WHERE s.{x} < q.med[{j + 1}]), 0)" for j, x in enumerate(xs)
        )
        ctes.append(
            f'"__kanon_w{i}" AS (SELECT s.b, any_value(q.rows) AS rows, any_value(q.lo) AS lo, '
            f"any_value(q.hi) AS hi, any_value(q.med) AS med, [{le}] AS le, [{lt}] AS lt "
            f'FROM {src} s JOIN "__kanon_q{i}" q USING (b) GROUP BY s.b)'
        )
        # Per attribute: the cut's side sizes, whether it is allowed, and its score (the
        # normalized range; -1 when not allowed). The chosen attribute is the first best.
        ok_le = [f"(w.le[{j}] >= {k} AND w.rows - w.le[{j}] >= {k})" for j in range(1, m + 1)]
        ok_lt = [f"(w.lt[{j}] >= {k} AND w.rows - w.lt[{j}] >= {k})" for j in range(1, m + 1)]
        scores = ", ".join(
            f"CASE WHEN sp.span[{j}] > 0 AND w.hi[{j}] > w.lo[{j}] AND ({ok_le[j - 1]} OR "
            f"{ok_lt[j - 1]}) THEN (w.hi[{j}] - w.lo[{j}]) / sp.span[{j}] ELSE -1.0 END"
            for j in range(1, m + 1)
        )
        # Of the two sides of the median value, the allowed one closer to half.
        inclusive = ", ".join(
            f"{ok_le[j - 1]} AND (NOT {ok_lt[j - 1]} OR "
            f"abs(2 * w.le[{j}] - w.rows) <= abs(2 * w.lt[{j}] - w.rows))"
            for j in range(1, m + 1)
        )
        ctes.append(
            f'"__kanon_z{i}" AS (SELECT b, j, med[j] AS cut, inc[j] AS inclusive FROM ('
            f"SELECT w.b, w.med, [{inclusive}] AS inc, [{scores}] AS sc, "
            "list_position(sc, list_max(sc)) AS j "
            f'FROM "__kanon_w{i}" w CROSS JOIN "__kanon_sp" sp) WHERE sc[j] >= 0)'
        )
        x_of = "CASE z.j " + " ".join(f"WHEN {j + 1} THEN s.{x}" for j, x in enumerate(xs)) + " END"
        ctes.append(
            f'"__kanon_b{i + 1}" AS (SELECT s.* EXCLUDE (b), s.b * 2 + CASE WHEN z.j IS NULL '
            f"THEN 0 WHEN {x_of} > z.cut OR (NOT z.inclusive AND {x_of} = z.cut) THEN 1 "
            f'ELSE 0 END AS b FROM {src} s LEFT JOIN "__kanon_z{i}" z ON z.b = s.b)'
        )
    code_list = ", ".join(codes)
    ctes.append(
        f'"__kanon_pk" AS (SELECT b, flatten(list([{code_list}] ORDER BY t)) AS tuples, '
        f'list(n ORDER BY t) AS counts, list(t ORDER BY t) AS ts FROM "__kanon_b{rounds}" '
        "GROUP BY b)"
    )
    return ctes


def level_cte(m: int) -> str:
    """CTE ``__kanon_lv``: per group, its level per QI as columns ``"__kanon_l{j}"``.

    Fixed-width columns join far faster than a list per row.
    """
    levels = ", ".join(f'lvl[{j + 1}]::UINTEGER AS "__kanon_l{j}"' for j in range(m))
    return (
        f'"__kanon_lv" AS (SELECT "__kanon_grp", {levels} FROM (SELECT '
        '((b << 32) + (generate_subscripts(r.lv, 1) - 1))::UBIGINT AS "__kanon_grp", '
        'unnest(r.lv) AS lvl FROM "__kanon_run"))'
    )


def level_columns(m: int, alias: str) -> str:
    """The level columns of :func:`level_cte` read through ``alias``."""
    return ", ".join(f'{alias}."__kanon_l{j}"' for j in range(m))


def local_release(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    ctes: list[str],
    rows_sql: str,
    labels: str,
    *,
    labelled: bool = False,
) -> tuple[str, str]:
    """The release and assignment queries of a local recoding.

    ``rows_sql`` selects every source row (alias-free ``SELECT``) with its leaf codes,
    ``"__kanon_grp"`` (group) and ``"__kanon_l{j}"`` (per QI ``j``, the level of the
    group's lowest common hierarchy node). ``labels``: ``'hierarchy'``, ``'range'`` or
    ``'mondrian'`` (ranges for numbers and dates, hierarchy nodes for the rest). With
    ``labelled``, the rows also carry the range labels ``"__kanon_rl{j}"``; otherwise
    they are aggregated from the rows here.
    """
    m = len(qis)
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    ctes = [*ctes, f'"__kanon_a" AS ({rows_sql})']
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    if ranged and not labelled:
        cols = {j: ident(qis[j].column.name) for j in ranged}
        aggs = ", ".join(
            range_label(qis[j], value_text(cols[j], qis[j].column.type), cols[j], "1")
            + f' AS "__kanon_rl{j}"'
            for j in ranged
        )
        ctes.append(
            f'"__kanon_lb" AS (SELECT "__kanon_grp", {aggs} FROM "__kanon_a" '
            'GROUP BY "__kanon_grp")'
        )

    def generalized(j: int) -> str:
        if j in ranged:
            return f'{"a" if labelled else "lb"}."__kanon_rl{j}"'
        lvl = f'a."__kanon_l{j}"'
        return (
            f"CASE WHEN {lvl} = {qis[j].height} THEN {literal(ROOT)} "
            f"ELSE {label_at(j, qis[j], lvl)} END"
        )

    out = release_columns(table, qis, identifiers, "a", generalized)
    joins = " ".join(
        f'JOIN "__kanon_v{j}" v{j} ON v{j}.a0 = a.{codes[j]}' for j in range(m) if j not in ranged
    )
    if ranged and not labelled:
        joins += ' JOIN "__kanon_lb" lb USING ("__kanon_grp")'
    head = "WITH " + ",\n".join(ctes)
    source = ", ".join(f"a.{ident(c.name)}" for c in table.columns)
    tail = f'FROM "__kanon_a" a {joins}'
    return (
        f"{head}\nSELECT {', '.join(out)} {tail}",
        f'{head}\nSELECT {source}, a."__kanon_grp", [{level_columns(m, "a")}] '
        'AS "__kanon_lvl" FROM "__kanon_a" a',
    )
