"""The verdict planner: ``kanon_verify(source, release, policy := ...)`` as one SQL query.

Every rule of the policy is measured by plain SQL over the release as published (and the
source's row count), whatever made the release: one row per rule with its threshold, the
measured value, whether it passed, and the rows, classes and columns that break it. A
class is a set of rows equal on the released QIs (NULL equal to NULL, the suppressed rows,
every QI ``'*'``, one class). The source gives the roles: its QIs and sensitive columns
(given, else configured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kanon.exceptions import ConfigError
from kanon.hierarchy.base import ROOT
from kanon.plan.catalog import Column, Table, configured, resolve_columns, resolve_table
from kanon.plan.metrics import plan_metrics
from kanon.plan.models import ground_distance
from kanon.plan.policy import RULES, Policy, policy_of
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident, literal, string_list

if TYPE_CHECKING:
    from collections.abc import Sequence

    import duckdb

__all__ = ["COLUMNS", "VerifyPlan", "plan_verify"]

#: The columns of the verdict, one row per rule.
COLUMNS = ("rule", "threshold", "value", "passed", "rows", "classes", "columns", "detail")


@dataclass(frozen=True)
class VerifyPlan:
    """The verdict's SQL and what it was judged on."""

    sql: str
    policy: Policy
    qi: tuple[str, ...]
    sensitive: tuple[str, ...]
    #: Per column released besides the QIs: ``name, reason`` (its acceptance, or NULL),
    #: ``starred`` (every value '*' or NULL), ``rare_rows`` and ``share`` (rows whose
    #: value fewer than the policy's k rows hold), in release order.
    columns_sql: str


def _roles(
    source: Table, qi: Sequence[str], sensitive: Sequence[str], config: list[tuple[str, str]]
) -> tuple[list[Column], list[Column]]:
    """The source's QIs and sensitive columns: those given, else those configured."""
    names = list(qi) or [c for c, role in config if role == "qi"]
    if not names:
        msg = (
            f"no quasi-identifiers for table {source.name!r}: pass qi := [...] or configure "
            "them with kanon.configure(...) / INSERT INTO kanon_columns"
        )
        raise ConfigError(msg)
    qis = resolve_columns(source, names, "qi")
    given = list(sensitive) or [c for c, role in config if role == "sensitive"]
    sens = resolve_columns(source, given, "sensitive")
    clash = {c.name for c in qis} & {c.name for c in sens}
    if clash:
        msg = f"column {sorted(clash)[0]!r} cannot be both a quasi-identifier and sensitive"
        raise ConfigError(msg)
    return qis, sens


def _released(release: Table, column: Column, what: str) -> Column:
    """The release's column of the source's ``column``, or an error naming it."""
    try:
        return release.column(column.name)
    except ConfigError:
        names = ", ".join(repr(c.name) for c in release.columns)
        msg = (
            f"the release {release.name!r} has no column {column.name!r} (a {what} of the "
            f"source); its columns are {names}"
        )
        raise ConfigError(msg) from None


def _row(rule: str, threshold: str, body: str) -> str:
    """One verdict row: ``body`` selects value, passed, rows, classes, columns, detail."""
    return (
        f"SELECT {literal(rule)} AS rule, {threshold}::DOUBLE AS threshold, value::DOUBLE AS "
        "value, passed, rows::BIGINT AS rows, classes::BIGINT AS classes, "
        f"columns::VARCHAR[] AS columns, detail::VARCHAR AS detail FROM ({body})"
    )


def _named(flags: list[tuple[str, str]]) -> str:
    """SQL of the ``VARCHAR[]`` of names whose condition holds, in order."""
    if not flags:
        return "[]::VARCHAR[]"
    items = ", ".join(f"CASE WHEN {cond} THEN {literal(name)} END" for name, cond in flags)
    return f"list_filter([{items}], lambda x: x IS NOT NULL)"


def _class_stats_cte(i: int, keys: list[str], hist: Cte, entries: bool) -> Cte:
    """Per class, from sensitive column ``i``'s histogram (the keys, ``v``, ``c``).

    Columns: ``n`` its rows, ``d`` its distinct values, ``big_n`` the release's rows and,
    with ``entries``, ``e`` the list of its values' (c, t): rows in the class, in the release.
    """
    e = ", list({'c': h.c::HUGEINT, 't': d.t}) AS e" if entries else ""
    totals = (
        f"SELECT v, sum(c)::HUGEINT AS t, sum(sum(c)) OVER ()::HUGEINT AS big_n FROM {hist.ref} "
        "GROUP BY v"
    )
    return Cte(
        internal(f"class_stats_{i}"),
        f"SELECT {', '.join(f'h.{c}' for c in keys)}, sum(h.c)::HUGEINT AS n, count(*) AS d, "
        f"any_value(d.big_n) AS big_n{e} FROM {hist.ref} h JOIN ({totals}) d "
        f"ON h.v IS NOT DISTINCT FROM d.v GROUP BY {', '.join(f'h.{c}' for c in keys)}",
        materialized=True,
    )


def _equal_emd_cte(i: int, keys: list[str], stats: Cte) -> Cte:
    """Per class, the EMD with equal ground distance, in exact integer sums.

    ``0.5 Σ_v |c_v N - t_v n| / (n N)``, the values a class lacks adding ``n t_v`` each.
    """
    held = "list_sum(list_transform(e, lambda z: abs(z.c * big_n - z.t * n)))"
    others = "n * (big_n - list_sum(list_transform(e, lambda z: z.t)))"
    return Cte(
        internal(f"emd_{i}"),
        f"SELECT {', '.join(keys)}, ({held} + {others}) / (2.0 * n * big_n) AS x, n "
        f"FROM {stats.ref}",
        (*keys, "x", "n"),
    )


def _ordered_emd_cte(i: int, keys: list[str], hist: Cte) -> Cte:
    """Per class, the EMD with ordered ground distance to the release's distribution.

    ``Σ_{i<m} |C_i N - TC_i n| / (n N (m - 1))`` over the cumulative counts, in exact
    integers over each class's present values only (no product of classes and domain):
    summed segment by segment between a class's values, each segment's crossing found by
    an ASOF join. Columns: the keys, ``x`` (the EMD) and ``n`` (the class's rows).
    """
    k = ", ".join(keys)
    hk = ", ".join(f"h.{c}" for c in keys)
    big = "::HUGEINT"
    hist_n = f"SELECT {k}, v, c{big} AS c, sum(c) OVER (PARTITION BY {k}){big} AS n FROM {hist.ref}"
    values = f"SELECT v, sum(c){big} AS t FROM {hist.ref} GROUP BY v"
    codes = (
        "SELECT v, t, row_number() OVER (ORDER BY v ASC NULLS LAST) AS i, "
        "sum(t) OVER (ORDER BY v ASC NULLS LAST) AS tc, sum(t) OVER () AS big_n, "
        f"count(*) OVER () AS m FROM ({values})"
    )
    # Prefix sums STC_i of the cumulative counts, with a row 0 (TC_0 = STC_0 = 0).
    prefix = (
        "SELECT i, tc, sum(tc) OVER (ORDER BY i) AS stc, big_n, m FROM "
        f"(SELECT i, tc, big_n, m FROM ({codes}) UNION ALL "
        f"SELECT 0, 0{big}, (SELECT sum(t) FROM ({values})), "
        f"(SELECT count(*) FROM ({values})))"
    )
    # A class's segments: from each value held (C constant) up to the next one held, the
    # last to m - 1; the first, from 1 up to the first value held, with C = 0.
    segments = (
        f"SELECT {hk}, h.n, d.i AS a, least(coalesce(lead(d.i) OVER w - 1, d.m - 1), d.m - 1) "
        "AS b, sum(h.c) OVER (w ROWS UNBOUNDED PRECEDING) AS cc, d.big_n "
        f"FROM ({hist_n}) h JOIN ({codes}) d ON h.v IS NOT DISTINCT FROM d.v "
        f"WINDOW w AS (PARTITION BY {hk} ORDER BY d.i)"
    )
    first = (
        f"SELECT {k}, n, 1 AS a, min(a) - 1 AS b, 0{big} AS cc, any_value(big_n) AS big_n "
        f"FROM ({segments}) GROUP BY {k}, n"
    )
    spans = (
        f"SELECT *, (cc * big_n - 1) // n AS lim FROM (SELECT * FROM ({segments}) "
        f"UNION ALL SELECT * FROM ({first}))"
    )
    # x: the last index whose TC_x n < C N (TC_x <= lim; none when C = 0), clamped into
    # [a - 1, b].
    crossing = (
        "SELECT s.*, greatest(s.a - 1, least(s.b, coalesce(x.i, 0))) AS x FROM "
        f"({spans}) s ASOF LEFT JOIN ({prefix}) x ON s.lim >= x.tc"
    )
    stc = f"(SELECT i, stc FROM ({prefix}))"
    total = (
        "sum(CASE WHEN s.b < s.a THEN 0 ELSE s.cc * s.big_n * (s.x - s.a + 1) - s.n * "
        "(px.stc - pa.stc) + s.n * (pb.stc - px.stc) - s.cc * s.big_n * (s.b - s.x) END)"
    )
    scale = "(any_value(s.n) * any_value(s.big_n) * (any_value(m.m) - 1))"
    body = (
        f"SELECT {', '.join(f's.{c}' for c in keys)}, CASE WHEN any_value(m.m) <= 1 THEN 0.0 "
        f"ELSE {total} / {scale} END AS x, any_value(s.n) AS n FROM ({crossing}) s "
        f"JOIN {stc} pa ON pa.i = s.a - 1 JOIN {stc} px ON px.i = s.x "
        f"JOIN {stc} pb ON pb.i = greatest(s.b, s.a - 1), "
        f"(SELECT count(*) AS m FROM ({values})) m GROUP BY {', '.join(f's.{c}' for c in keys)}"
    )
    return Cte(internal(f"emd_{i}"), body, (*keys, "x", "n"))


def _class_rule(
    rule: str,
    threshold: float,
    measures: list[tuple[str, Cte]],
    keys: list[str],
    texts: tuple[str, str],
) -> tuple[list[Cte], str]:
    """The verdict row of a rule on a per-class measure of each sensitive column.

    ``measures``: per column, its name and a CTE of (keys, ``x`` the measure, ``n`` the
    class's rows). The rule passes at or above the threshold when it is ``l``, at or
    below otherwise. A class breaks it when one column's measure does; ``texts``: the
    detail when it passes (``{}``: the value) and when it fails (rows, classes, columns).
    """
    k = ", ".join(keys)
    at_least = not RULES[rule].at_most_passes
    agg = "min" if at_least else "max"
    breaks = f"x < {threshold!r}" if at_least else f"x > {threshold!r}"
    per_class = Cte(
        internal(f"{rule}_measures"),
        " UNION ALL ".join(
            f"SELECT {i} AS col, {k}, x, n FROM {m.ref}" for i, (_, m) in enumerate(measures)
        ),
        materialized=True,
    )
    # The classes that break the rule (in one column or more), counted once.
    # One column: each class is one row of the measures; else a class counts once.
    broken = (
        f"SELECT n FROM {per_class.ref} WHERE {breaks}"
        if len(measures) == 1
        else f"SELECT {k}, any_value(n) AS n FROM {per_class.ref} WHERE {breaks} GROUP BY {k}"
    )
    failing = Cte(
        internal(f"{rule}_failing"),
        f"SELECT coalesce(sum(n), 0) AS rows, count(*) AS classes FROM ({broken})",
        materialized=True,
    )
    columns = _named(
        [
            (name, f"bool_or({breaks}) FILTER (WHERE col = {i})")
            for i, (name, _) in enumerate(measures)
        ]
    )
    passed, failed = texts
    body = (
        f"SELECT {agg}(x) AS value, coalesce(NOT bool_or({breaks}), true) AS passed, "
        f"(SELECT rows FROM {failing.ref}) AS rows, (SELECT classes FROM {failing.ref}) "
        f"AS classes, {columns} AS columns, CASE WHEN coalesce(bool_or({breaks}), false) "
        f"THEN format({literal(failed)}, (SELECT rows FROM {failing.ref}), (SELECT classes "
        f"FROM {failing.ref}), array_to_string({columns}, ', ')) ELSE format({literal(passed)}, "
        f"coalesce({agg}(x), 0)) END AS detail FROM {per_class.ref}"
    )
    return [per_class, failing], _row(rule, repr(threshold), body)


def plan_verify(
    con: duckdb.DuckDBPyConnection,
    source: str,
    release: str,
    policy: Any,
    qi: Sequence[str] = (),
    sensitive: Sequence[str] = (),
) -> VerifyPlan:
    """Return the SQL of ``kanon_verify(source, release, policy := ...)``.

    Args:
        con: the connection whose catalog holds both tables (and ``kanon_policies``).
        source: the table the release was made from (its roles, its row count).
        release: the release as published.
        policy: a stored policy's name, or its rules (see ``kanon.plan.policy``).
        qi: the QIs (default: the source's configured ones).
        sensitive: the sensitive columns (default: the source's configured ones).
    """
    checked = policy_of(con, policy)
    src = resolve_table(con, source)
    rel = resolve_table(con, release)
    if src.sql == rel.sql:
        msg = f"the release {release!r} is the source table; pass the release"
        raise ConfigError(msg)
    config = [(c, r) for c, r, _ in configured(con, src)]
    qis, sens = _roles(src, qi, sensitive, config)
    thresholds = checked.thresholds
    if ("l" in thresholds or "t" in thresholds) and not sens:
        rules = " and ".join(r for r in ("l", "t") if r in thresholds)
        msg = (
            f"the policy's rule {rules} needs a sensitive column and table {src.name!r} has "
            "none: pass sensitive := '...' or declare one with kanon.configure(..., "
            "sensitive=[...])"
        )
        raise ConfigError(msg)
    rel_qis = [_released(rel, q, "quasi-identifier") for q in qis]
    rel_sens = [_released(rel, s, "sensitive column") for s in sens]
    others = [c for c in rel.columns if c.name not in {q.name for q in rel_qis}]
    # The release's columns by position: QIs q0.., sensitive s0.., the others o0...
    keys = [f"q{j}" for j in range(len(rel_qis))]
    select = [f"{ident(c.name)} AS q{j}" for j, c in enumerate(rel_qis)]
    select += [f"{ident(c.name)} AS s{i}" for i, c in enumerate(rel_sens)]
    select += [f"{ident(c.name)} AS o{i}" for i, c in enumerate(others)]
    star = " AND ".join(
        f"coalesce(CAST(q{j} AS VARCHAR) = {literal(ROOT)}, false)" for j in range(len(keys))
    )
    released = Cte(
        internal("release"),
        f"SELECT *, {star} AS star FROM (SELECT {', '.join(select)} FROM {rel.sql})",
        materialized=False,
    )
    totals = Cte(
        internal("totals"),
        f"SELECT (SELECT count(*) FROM {src.sql}) AS source_rows, count(*) AS rows, "
        "count(*) FILTER (WHERE star) AS starred "
        f"FROM {released.ref}",
        materialized=True,
    )
    ctes = [released, totals]
    rows: list[str] = []
    tot = totals.ref
    qi_names = string_list([q.name for q in rel_qis])
    if "k" in thresholds:
        k = int(thresholds["k"])
        classes = Cte(
            internal("classes"),
            f"SELECT {', '.join(keys)}, count(*) AS n FROM {released.ref} "
            f"GROUP BY {', '.join(keys)}",
        )
        ctes.append(classes)
        c = classes.ref
        rows.append(
            _row(
                "k",
                str(k),
                f"SELECT min(n) AS value, coalesce(min(n) >= {k}, true) AS passed, "
                f"coalesce(sum(n) FILTER (WHERE n < {k}), 0) AS rows, "
                f"count(*) FILTER (WHERE n < {k}) AS classes, CASE WHEN count(*) FILTER "
                f"(WHERE n < {k}) > 0 THEN {qi_names} ELSE [] END AS columns, "
                f"CASE WHEN count(*) FILTER (WHERE n < {k}) = 0 THEN format('every class "
                f"holds at least {k} rows (the smallest {{:,}})', coalesce(min(n), 0)) ELSE "
                f"format('{{:,}} rows in {{:,}} classes hold fewer than {k} rows', "
                f"sum(n) FILTER (WHERE n < {k}), count(*) FILTER (WHERE n < {k})) END AS detail "
                f"FROM {c}",
            )
        )
    # Per sensitive column, the class histograms (value NULL one of them) of l and t.
    ordered = [ground_distance(None, c) == "ordered" for c in sens]
    hists: list[Cte] = []
    stats: list[Cte] = []
    if "l" in thresholds or "t" in thresholds:
        k_ = ", ".join(keys)
        for i in range(len(rel_sens)):
            hist = Cte(
                internal(f"histogram_{i}"),
                f"SELECT {k_}, s{i} AS v, count(*) AS c FROM {released.ref} GROUP BY {k_}, s{i}",
                materialized=True,
            )
            entries = "t" in thresholds and not ordered[i]
            stats.append(_class_stats_cte(i, keys, hist, entries))
            hists.append(hist)
            ctes += [hist, stats[-1]]
    if "l" in thresholds:
        lv = thresholds["l"]
        measures = []
        for i, (s_col, st) in enumerate(zip(rel_sens, stats, strict=True)):
            m = Cte(internal(f"distinct_{i}"), f"SELECT {', '.join(keys)}, d AS x, n FROM {st.ref}")
            ctes.append(m)
            measures.append((s_col.name, m))
        per_class, row = _class_rule(
            "l",
            lv,
            measures,
            keys,
            (
                f"every class holds at least {lv:g} distinct values of each sensitive column "
                "(the fewest {:,})",
                "{:,} rows in {:,} classes hold fewer than " + f"{lv:g} distinct values of {{}}",
            ),
        )
        ctes += per_class
        rows.append(row)
    if "t" in thresholds:
        tv = thresholds["t"]
        measures = []
        for i, s_col in enumerate(sens):
            emd = (
                _ordered_emd_cte(i, keys, hists[i])
                if ordered[i]
                else _equal_emd_cte(i, keys, stats[i])
            )
            ctes.append(emd)
            measures.append((s_col.name, emd))
        per_class, row = _class_rule(
            "t",
            tv,
            measures,
            keys,
            (
                f"every class lies within {tv:g} of the distribution of each sensitive "
                "column (the farthest {:.4f})",
                "{:,} rows in {:,} classes lie farther than "
                + f"{tv:g} from the distribution of {{}}",
            ),
        )
        ctes += per_class
        rows.append(row)
    ctes_id, row = _identifying(
        checked, thresholds.get("identifying_columns", 0.0), others, keys, released, tot
    )
    if "identifying_columns" in thresholds:
        ctes += ctes_id
        rows.append(row)
    columns_sql = (
        with_query(
            [released, totals, *ctes_id[:-1]],
            f"SELECT name, reason, starred, rare_rows, share FROM {ctes_id[-2].ref} ORDER BY i",
        )
        if ctes_id
        else "SELECT NULL::VARCHAR AS name, NULL::VARCHAR AS reason, NULL::BOOLEAN AS starred, "
        "0::BIGINT AS rare_rows, 0.0::DOUBLE AS share WHERE false"
    )
    if "suppressed" in thresholds:
        sv = thresholds["suppressed"]
        share = "CASE WHEN rows = 0 THEN 0.0 ELSE starred / rows END"
        rows.append(
            _row(
                "suppressed",
                repr(sv),
                f"SELECT {share} AS value, {share} <= {sv!r} AS passed, starred AS rows, "
                "(starred > 0)::INT AS classes, [] AS columns, format('{:,} of the release''s {:,} "
                f"rows have every QI suppressed', starred, rows) AS detail FROM {tot}",
            )
        )
    if "loss" in thresholds:
        lo = thresholds["loss"]
        metrics = plan_metrics(con, source, release, tuple(q.name for q in qis))
        rows.append(
            _row(
                "loss",
                repr(lo),
                f"SELECT gcp AS value, gcp <= {lo!r} AS passed, NULL AS rows, NULL AS classes, "
                "[] AS columns, format('GCP {:.4f}: the mean share of each released cell''s "
                "domain its label covers', gcp) AS detail FROM (SELECT gcp FROM "
                f"({metrics}))",
            )
        )
    rv = thresholds["rows"]
    missing = "greatest(source_rows - rows, 0)"
    share = f"CASE WHEN source_rows = 0 THEN 0.0 ELSE {missing} / source_rows END"
    rows.append(
        _row(
            "rows",
            repr(rv),
            f"SELECT {share} AS value, {share} <= {rv!r} AS passed, {missing} AS rows, "
            "NULL AS classes, [] AS columns, CASE WHEN rows > source_rows THEN format('the "
            "release holds {:,} rows more than the source', rows - source_rows) ELSE format("
            f"'{{:,}} of {{:,}} source rows are missing from the release', {missing}, source_rows) "
            f"END AS detail FROM {tot}",
        )
    )
    sql = with_query(ctes, " UNION ALL ".join(f"({r})" for r in rows))
    return VerifyPlan(
        sql, checked, tuple(q.name for q in qis), tuple(s.name for s in sens), columns_sql
    )


def _identifying(
    policy: Policy,
    threshold: float,
    others: list[Column],
    keys: list[str],
    released: Cte,
    totals: str,
) -> tuple[list[Cte], str]:
    """The CTEs and the verdict row of ``identifying_columns``.

    Per column released besides the QIs (a column whose every value is ``'*'`` or NULL
    excepted, and the ones the policy accepts, listed with their reasons): the rows whose
    (non-NULL) value fewer than the policy's k rows hold. The rule's value is the largest
    share; its rows and classes are those singled out by a column above the threshold.
    """
    k = policy.k
    accepted = {c.lower(): (c, reason) for c, reason in policy.accepted.items()}
    if not others:
        body = (
            "SELECT 0.0 AS value, true AS passed, 0 AS rows, 0 AS classes, [] AS columns, "
            "'no column is released besides the quasi-identifiers' AS detail"
        )
        return [], _row("identifying_columns", repr(threshold), body)
    # Per column, its values that fewer than k rows hold, and whether it is all '*'.
    rare = [
        Cte(
            internal(f"rare_{i}"),
            f"SELECT o{i} AS v, count(*) AS cnt FROM {released.ref} WHERE o{i} IS NOT NULL "
            f"GROUP BY o{i} HAVING count(*) < {k}",
            materialized=True,
        )
        for i in range(len(others))
    ]
    probes = []
    for i, col in enumerate(others):
        o = f"o{i}"
        starred = (
            f"(SELECT coalesce(bool_and({o} = {literal(ROOT)}), true) FROM {released.ref} "
            f"WHERE {o} IS NOT NULL)"
            if col.type.upper() == "VARCHAR"
            else f"(SELECT count({o}) = 0 FROM {released.ref})"
        )
        probes.append(
            f"SELECT {i} AS i, (SELECT coalesce(sum(cnt), 0) FROM {rare[i].ref}) AS rare_rows, "
            f"{starred} AS starred"
        )
    names = "[" + ", ".join(literal(c.name) for c in others) + "]"
    reasons = (
        "["
        + ", ".join(
            literal(accepted[c.name.lower()][1]) if c.name.lower() in accepted else "NULL"
            for c in others
        )
        + "]"
    )
    stats = Cte(
        internal("identifying"),
        f"SELECT p.i, {names}[p.i + 1] AS name, {reasons}[p.i + 1] AS reason, p.rare_rows, "
        "p.starred, CASE WHEN t.rows = 0 THEN 0.0 ELSE p.rare_rows / t.rows END AS share "
        f"FROM ({' UNION ALL '.join(probes)}) p, {totals} t",
        materialized=True,
    )
    s = stats.ref
    judged_cond = "NOT starred AND reason IS NULL"
    offending = f"{judged_cond} AND share > {threshold!r}"
    # The rows singled out by an offending column, and the classes holding them.
    singled_by = " OR ".join(
        f"((SELECT bool_or({offending}) FROM {s} WHERE i = {i}) AND o{i} IN "
        f"(SELECT v FROM {rare[i].ref}))"
        for i in range(len(others))
    )
    singled = Cte(
        internal("singled"),
        f"SELECT coalesce(sum(n), 0) AS rows, count(*) AS classes FROM (SELECT "
        f"{', '.join(keys)}, count(*) AS n FROM {released.ref} WHERE {singled_by} "
        f"GROUP BY {', '.join(keys)})",
        materialized=True,
    )
    body = (
        f"SELECT coalesce(max(share) FILTER (WHERE {judged_cond}), 0.0) AS value, "
        f"coalesce(NOT bool_or({offending}), true) AS passed, "
        "any_value(g.rows) AS rows, any_value(g.classes) AS classes, "
        f"coalesce(list(name ORDER BY i) FILTER (WHERE {offending}), []) AS columns, "
        "coalesce(string_agg(CASE WHEN reason IS NOT NULL THEN format('{} accepted ({}): "
        "{:.2f} % of rows hold a value fewer than " + str(k) + " rows hold', name, reason, "
        "100 * share) WHEN NOT starred AND rare_rows > 0 THEN format('{}: {:,} rows ({:.2f} %) "
        "hold a value fewer than " + str(k) + " rows hold', name, rare_rows, 100 * share) END, "
        "'; ' ORDER BY i), 'no column singles out a row') AS detail "
        f"FROM {s}, {singled.ref} g"
    )
    return [*rare, stats, singled], _row("identifying_columns", repr(threshold), body)
