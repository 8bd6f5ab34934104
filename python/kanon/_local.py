"""Local recoding at scale: Mondrian, blocks, and range labels.

``method := 'mondrian'`` (LeFevre, DeWitt, Ramakrishnan 2006) and the blocked forest
share one plan (all CTEs of one statement):

1. The coded CTEs of :func:`kanon._anonymize.coded_ctes` (rows with leaf codes, the
   distinct code tuples ``__kanon_t`` with their counts).
2. ``__kanon_k{j}``: the *key* of every leaf of QI ``j``, the number Mondrian orders and
   measures it by: the value's position on its axis for numbers and dates (the NULL leaf
   beyond the largest value), the leaf's depth-first position in its hierarchy for
   other types.
3. Tables above ``PACK_ROWS`` rows (Mondrian: ``MONDRIAN_PACK_ROWS``) are cut in SQL,
   round by round, by Mondrian cuts
   (the attribute of widest normalized range whose median cut leaves ≥ k rows on both
   sides) into packs, so that no packed list holds the whole table and DuckDB packs
   them in parallel (``GROUP BY`` pack). Every pack holds ≥ k rows.
4. One kernel call per pack: ``kanon_mondrian`` finishes the Mondrian cuts (groups), or
   ``kanon_forest`` cuts the pack into blocks of at most ``block_size`` rows by Mondrian
   cuts and runs the forest in each (in parallel).
5. Labels: the hierarchy node holding the group (``labels := 'hierarchy'``), or the
   group's observed values (``'range'``): ``[lo..hi]`` for numbers and dates, ``{a, b}``
   for other types, the value itself when the group holds one. A group of NULLs stays
   NULL; a group mixing NULL and values becomes ``'*'``.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

from kanon._anonymize import coded_ctes, hierarchy_lists, keyed_by_value, label_at, release_columns
from kanon._metrics import exact_positions, position
from kanon._models import model_args
from kanon._sql import ident, literal
from kanon.hierarchy import ROOT, value_text

if TYPE_CHECKING:
    from kanon._anonymize import AnonymizeOptions, QuasiIdentifier
    from kanon._catalog import Table
    from kanon._models import ResolvedModels

__all__ = [
    "LABELS",
    "PACK_ROWS",
    "is_ordered",
    "key_ctes",
    "mondrian_sql",
    "pack_ctes",
    "rounds_for",
]

#: Label modes of local recoding.
LABELS = ("hierarchy", "range")
#: The forest's tables above this many rows are cut in SQL into packs (so no packed list
#: holds a large table whole); the kernel cuts each pack into blocks. A pack holds about
#: a quarter of the table, at least this many and at most ``PACK_ROWS_MAX`` rows, so the
#: SQL cuts in at most three rounds up to 16M rows. 10M generated rows under a 6 GB
#: memory limit (fast passes, 2-core machine): 101 s in packs of 2^18 rows (7 cutting
#: rounds), 85 s in packs of 2^21 (4 rounds), 81 s in packs of 2^22 (3 rounds), at a
#: peak of 7.0-7.4 GB each.
PACK_ROWS = 1 << 18
PACK_ROWS_MAX = 1 << 22
#: The same for Mondrian, whose kernel is cheap per row: the SQL cutting rounds cost more
#: than a larger pack (1M generated rows: 2.7-3.0 s in one pack, 3.8-4.7 s in four; 10M
#: under a 6 GB memory limit: 104 s in packs of 2^20 rows, 74 s in packs of 2^22).
MONDRIAN_PACK_ROWS = 1 << 22


def is_ordered(q: QuasiIdentifier) -> bool:
    """Whether QI ``q`` lies on an axis (numbers and dates): ranges, not sets."""
    return position("x", q.column.type) != "CAST(NULL AS DOUBLE)"


def key_ctes(table: Table, qis: list[QuasiIdentifier]) -> list[str]:
    """CTEs ``__kanon_k{j}`` (``a0``, ``x``, ``raw``, ``val``): the key of every leaf of QI ``j``.

    Numbers and dates: ``raw`` is the value's position (:func:`kanon._metrics.position`,
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


def range_label(q: QuasiIdentifier, text: str, val: str, n: str) -> str:
    """SQL aggregate of a group's label of QI ``q``, over its rows or its tuples.

    Per row or tuple: ``text``, the value as hierarchy text (NULL for NULL); ``val``, the
    value itself (numbers and dates); ``n``, its rows (``1`` over rows).

    Numbers and dates: ``[lo..hi]``; other types: ``{a, b}`` (sorted as text). One value:
    the value; only NULLs: NULL; NULLs and values: ``'*'``.
    """
    if is_ordered(q):
        # One value iff the texts of the least and the greatest are one (a leaf has one
        # text and one value): no DISTINCT aggregate.
        lo, hi = f"arg_min({text}, {val})", f"arg_max({text}, {val})"
        one, many = f"{lo} = {hi}", f"'[' || {lo} || '..' || {hi} || ']'"
    else:
        one = f"count(DISTINCT {text}) = 1"
        many = f"'{{' || string_agg(DISTINCT {text}, ', ' ORDER BY {text}) || '}}'"
    present = f"coalesce(sum({n}) FILTER (WHERE {text} IS NOT NULL), 0)"
    return (
        f"CASE WHEN {present} = 0 THEN NULL WHEN {present} < sum({n}) THEN {literal(ROOT)} "
        f"WHEN {one} THEN any_value({text}) ELSE {many} END"
    )


def uses_range(q: QuasiIdentifier, labels: str) -> bool:
    """Whether QI ``q`` is labelled by its observed values under ``labels``."""
    return labels == "range" or (labels == "mondrian" and is_ordered(q))


def level_cte(m: int) -> str:
    """CTE ``__kanon_lv``: per group, its level per QI as columns ``"__kanon_l{j}"``.

    Fixed-width columns join far faster than a list per row (4M rows: 7.8 s for the
    list).
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


def mondrian_sql(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    options: AnonymizeOptions,
    rows: int,
    ctes: list[str],
    models: ResolvedModels | None = None,
) -> tuple[str, str]:
    """The release and assignment queries of ``method := 'mondrian'``.

    With l-diversity or t-closeness (``models``) every cut must leave both sides
    satisfying them, and the table is one pack (the SQL cuts check k only).
    """
    m = len(qis)
    ctes = coded_ctes(table, qis, ctes, None if models is None else models.hierarchy)
    extra = model_args(table, qis, models)
    ctes += extra.ctes
    ctes += key_ctes(table, qis)
    rounds = 0 if models is not None else rounds_for(rows, MONDRIAN_PACK_ROWS)
    ctes += pack_ctes(m, options.k, rounds, MONDRIAN_PACK_ROWS)
    keys, spans = key_lists(m)
    labels = options.labels or "mondrian"
    # Published as sets, a categorical QI loses by its number of values: measure it so.
    sets = [labels == "range" and not is_ordered(q) for q in qis]
    kernel_options = {"m": m, "models": extra.options, "sets": sets}
    ctes.append(
        '"__kanon_run" AS (SELECT b, ts, kanon_mondrian(tuples, counts, '
        f"{keys}, {spans}, [{hierarchy_lists(qis)}], {options.k}::UBIGINT, "
        f'{literal(json.dumps(kernel_options))}, {extra.args}) AS r FROM "__kanon_pk")'
    )
    ctes.append(
        '"__kanon_g" AS (SELECT unnest(ts) AS t, ((b << 32) + unnest(r.g))::UBIGINT '
        'AS "__kanon_grp" FROM "__kanon_run")'
    )
    ctes.append(level_cte(m))
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    code_list = ", ".join(codes)
    # Tuples with their group and levels (and range labels) first, materialized: joined
    # to the rows in one step, they are the build side (the optimizer cannot size the
    # kernel's unnested output and otherwise built the hash table over the rows with
    # every column), and the rows are read once, streaming.
    ctes.append(
        f'"__kanon_tg" AS MATERIALIZED (SELECT {", ".join(f"tt.{c}" for c in codes)}, '
        f'tt.n, g."__kanon_grp", {level_columns(m, "lv")} FROM "__kanon_t" tt '
        'JOIN "__kanon_g" g ON g.t = tt.t '
        'JOIN "__kanon_lv" lv ON lv."__kanon_grp" = g."__kanon_grp")'
    )
    ranged = [j for j, q in enumerate(qis) if uses_range(q, labels)]
    labelled = "tg"
    if ranged:
        aggs = ", ".join(
            range_label(qis[j], f"v{j}.k", f"k{j}.val", "tg.n") + f' AS "__kanon_rl{j}"'
            for j in ranged
        )
        joins = " ".join(
            f'JOIN "__kanon_v{j}" v{j} ON v{j}.a0 = tg.{codes[j]} '
            f'JOIN "__kanon_k{j}" k{j} ON k{j}.a0 = tg.{codes[j]}'
            for j in ranged
        )
        ctes.append(
            f'"__kanon_lb" AS (SELECT tg."__kanon_grp", {aggs} FROM "__kanon_tg" tg '
            f'{joins} GROUP BY tg."__kanon_grp")'
        )
        ctes.append(
            '"__kanon_tl" AS MATERIALIZED (SELECT tg.*, '
            + ", ".join(f'lb."__kanon_rl{j}"' for j in ranged)
            + ' FROM "__kanon_tg" tg JOIN "__kanon_lb" lb USING ("__kanon_grp"))'
        )
        labelled = "tl"
    carried = [f'{labelled}."__kanon_grp"', level_columns(m, labelled)]
    carried += [f'{labelled}."__kanon_rl{j}"' for j in ranged]
    rows_sql = (
        f'SELECT r.*, {", ".join(carried)} FROM "__kanon_r" r '
        f'JOIN "__kanon_{labelled}" {labelled} USING ({code_list})'
    )
    return local_release(table, qis, identifiers, ctes, rows_sql, labels, labelled=True)


#: The forest's default block size: above it, a pack is cut into blocks by Mondrian
#: cuts. Measured on the 2-core development machine: with hierarchy labels, blocks of
#: 10,000 rows cost Adult (30,162 rows) 4 % more GCP at k = 10 than one block, and 1M
#: generated rows take 21 s with 10,000 and 23 s with 50,000; with range labels (whose
#: neighbour search is a full scan) Adult takes 0.5-0.9 s per run in blocks of 5,000
#: rows against 0.7-1.4 s in blocks of 10,000, at 1-2 % more loss.
BLOCK_ROWS = {"hierarchy": 50_000, "range": 5_000}
#: Tables of at most this many rows get the forest's full improvement passes by default,
#: larger ones the fast passes (``effort := 'fast'``). Measured on the 2-core development
#: machine with the generated census table (8 QIs, k = 5): the full passes take about 20
#: µs per row (1M rows in 23-26 s), the fast ones a sixth of that for 12 % more loss.
FULL_EFFORT_ROWS = 1 << 20


def forest_sql(
    table: Table,
    qis: list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    options: AnonymizeOptions,
    rows: int,
    ctes: list[str],
) -> tuple[str, str]:
    """The forest's release and assignment queries: packs, blocks, groups, labels."""
    # Imported here: the forest's variants are defined with the planner.
    from kanon._anonymize import METHODS

    m = len(qis)
    ctes = coded_ctes(table, qis, ctes)
    ctes += key_ctes(table, qis)
    pack = min(max(rows // 4, PACK_ROWS), PACK_ROWS_MAX)
    rounds = rounds_for(rows, pack)
    ctes += pack_ctes(m, options.k, rounds, pack)
    cut_keys, cut_spans = key_lists(m)
    labels = options.labels or "hierarchy"
    cost, improve = METHODS[options.method]
    if labels == "range" and options.method == "forest":
        cost = "range"
    block = BLOCK_ROWS[labels] if options.block_size is None else options.block_size
    effort = options.effort or ("full" if rows <= FULL_EFFORT_ROWS else "fast")
    passes = effort if improve else "none"
    kernel_options = {"m": m, "cost": cost, "improve": passes, "block_size": block}
    range_keys = ", ".join(
        f'(SELECT list(raw ORDER BY a0) FROM "__kanon_k{j}")' if is_ordered(q) else "[]::DOUBLE[]"
        for j, q in enumerate(qis)
    )
    weights = ", ".join(repr(float(q.weight)) for q in qis)
    ctes.append(
        '"__kanon_run" AS (SELECT b, ts, kanon_forest(tuples, counts, '
        f"[{hierarchy_lists(qis)}], [{weights}]::DOUBLE[], {options.k}::UBIGINT, "
        f"{options.seed}::UBIGINT, {literal(json.dumps(kernel_options))}, "
        f'[{range_keys}]::DOUBLE[][], {cut_keys}, {cut_spans}) AS r FROM "__kanon_pk")'
    )
    ctes.append(
        '"__kanon_g" AS (SELECT b, ((b << 32) + unnest(r.g))::UBIGINT AS "__kanon_grp", '
        '(generate_subscripts(r.g, 1) - 1)::UBIGINT AS "__kanon_i" FROM "__kanon_run")'
    )
    # Where the rows of each tuple start in its pack's list of groups.
    ctes.append(
        '"__kanon_o" AS (SELECT unnest(ts) AS "__kanon_t", unnest(r.o) AS "__kanon_o" '
        'FROM "__kanon_run")'
    )
    ctes.append(level_cte(m))
    codes = ", ".join(f'"__kanon_c{j}"' for j in range(m))
    # The kernel numbers the rows of a tuple copy by copy: a tuple's only row is its copy
    # 0, and the rows of a tuple occurring more often are ordered by their other columns.
    # Their quasi-identifiers are equal (one code per value), so ordering by them too
    # would decide nothing and only slow the sort; rows equal in every column are
    # interchangeable.
    qi_names = {q.column.name for q in qis}
    others = [f"r.{ident(c.name)}" for c in table.columns if c.name not in qi_names]
    order = f" ORDER BY {', '.join(others)}" if others else ""
    joined = f'FROM "__kanon_r" r JOIN "__kanon_b{rounds}" p USING ({codes})'
    ctes.append(
        f'"__kanon_n" AS (SELECT r.*, p.b AS "__kanon_b", p.t AS "__kanon_t", '
        f'0::UBIGINT AS "__kanon_c" {joined} WHERE p.n = 1 '
        f"UNION ALL SELECT r.*, p.b, p.t, (row_number() OVER (PARTITION BY p.t{order}) - 1)"
        f"::UBIGINT {joined} WHERE p.n > 1)"
    )
    rows_sql = (
        'SELECT n.* EXCLUDE ("__kanon_b", "__kanon_t", "__kanon_c"), g."__kanon_grp", '
        f"{level_columns(m, 'lv')} "
        'FROM "__kanon_n" n JOIN "__kanon_o" o USING ("__kanon_t") '
        'JOIN "__kanon_g" g ON g.b = n."__kanon_b" AND g."__kanon_i" = o."__kanon_o" + '
        'n."__kanon_c" '
        'JOIN "__kanon_lv" lv ON lv."__kanon_grp" = g."__kanon_grp"'
    )
    return local_release(table, qis, identifiers, ctes, rows_sql, labels)
