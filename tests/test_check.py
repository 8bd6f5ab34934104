"""kanon_check / kanon.check against an independent oracle and a plain SQL GROUP BY."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.plan.check import CheckOptions, plan_check
from tests.oracle import naive_check
from tests.strategies import tables

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(con: duckdb.DuckDBPyConnection, name: str, data: dict[str, list[object]]) -> None:
    con.register(
        "__src",
        pa.table(
            data,
            schema=pa.schema(
                [
                    ("q0", pa.int64()),
                    ("q1", pa.string()),
                    ("q2", pa.int64()),
                    ("s", pa.string()),
                    ("v", pa.int64()),
                ]
            ),
        ),
    )
    con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM __src')
    con.unregister("__src")


def _sql_check(con: duckdb.DuckDBPyConnection, table: str, **params: str) -> dict[str, object]:
    args = ", ".join(f"{k} := {v}" for k, v in params.items())
    rel = con.execute(f"SELECT * FROM kanon_check('{table}', {args})")
    names = [d[0] for d in rel.description]
    (row,) = rel.fetchall()
    return dict(zip(names, row, strict=True))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.slow
@SETTINGS
@given(data=tables())
def test_check_matches_oracle_and_group_by(data: dict[str, list[object]]) -> None:
    with duckdb.connect() as con:
        kanon.install(con)
        _load(con, "t", data)
        rows = con.execute("SELECT * FROM t").fetchdf().to_dict("records")
        rows = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in rows]
        for sens, ordered, param in (("s", False, "'s'"), ("v", True, "'v'")):
            got = _sql_check(con, "t", qi="['q0', 'q1', 'q2']", sensitive=param)
            want = naive_check(rows, ["q0", "q1", "q2"], sens, ordered=ordered)
            for key in ("k", "classes", "rows", "l_distinct"):
                assert got[key] == want[key], key
            for key in ("l_entropy", "t", "prosecutor_max", "prosecutor_avg", "prosecutor_at_risk"):
                assert _close(got[key], want[key]), (key, got[key], want[key])
        (k_sql,) = con.execute(
            "SELECT min(n) FROM (SELECT count(*) AS n FROM t GROUP BY q0, q1, q2)"
        ).fetchone()
        assert _sql_check(con, "t", qi="['q0', 'q1', 'q2']")["k"] == k_sql


@pytest.mark.slow
@SETTINGS
@given(data=tables(max_rows=25))
def test_python_inputs_agree(data: dict[str, list[object]]) -> None:
    table = pa.table(data)
    reports = [
        kanon.check(table, qi=["q0", "q2"], sensitive="s"),
        kanon.check(table.to_pandas(), qi=["q0", "q2"], sensitive="s"),
        kanon.check(pl.from_arrow(table), qi=["q0", "q2"], sensitive="s"),
    ]
    with duckdb.connect() as con:
        con.register("src", table)
        reports.append(kanon.check(con.sql("SELECT * FROM src"), qi=["q0", "q2"], sensitive="s"))
    first = reports[0].to_dict()
    for r in reports[1:]:
        assert r.to_dict().keys() == first.keys()
        for key, value in r.to_dict().items():
            if isinstance(value, float):
                assert _close(value, first[key]), key
            else:
                assert value == first[key], key


def test_recursive_cl_and_journalist_risk(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (1, 'a'), (1, 'a'), (1, 'b'), "
        "(1, 'c'), (2, 'a'), (2, 'b'), (2, 'b')) AS v(zip, dx)"
    )
    con.execute(
        "CREATE TABLE pop AS SELECT * FROM t UNION ALL SELECT * FROM t UNION ALL SELECT 2, 'z'"
    )
    got = _sql_check(
        con,
        "t",
        qi="['zip']",
        sensitive="'dx'",
        recursive_l="2",
        recursive_c="2.0",
        population="'pop'",
    )
    # class 1: counts 3,1,1 -> r1 / (r2 + r3) = 1.5 -> c = 2; class 2: 2,1 -> 2 / 1 -> c = 3.
    assert got["recursive_c"] == 3.0
    assert got["recursive_ok"] is False  # class 2: 2 < 2 * 1 fails
    assert got["journalist_max"] == pytest.approx(1 / 7)
    assert got["journalist_avg"] == pytest.approx((5 / 10 + 3 / 7) / 8)


def test_configured_roles_are_used(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT range % 3 AS age, 'x' || (range % 2) AS dx FROM range(12)"
    )
    kanon.configure(con, "p", qi=["age"], sensitive=["dx"])
    got = _sql_check(con, "p")
    assert (got["k"], got["classes"], got["l_distinct"]) == (4, 3, 2)


def test_empty_table(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE e (a INT, s VARCHAR)")
    got = _sql_check(con, "e", qi="['a']", sensitive="'s'")
    assert (got["k"], got["classes"], got["rows"]) == (0, 0, 0)


def test_classes_histogram(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE h AS SELECT range % 4 AS a, range % 2 AS b FROM range(10)")
    rows = con.execute("SELECT * FROM kanon_classes('h', qi := ['a'])").fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(2, 2, 4), (3, 2, 6)]
    assert rows[-1][4] == pytest.approx(1.0)


@pytest.mark.parametrize("name", ['x"; DROP TABLE y; --', "with space", "naïve 表", "select"])
def test_hostile_names_are_just_names(con: duckdb.DuckDBPyConnection, name: str) -> None:
    q = name.replace("'", "''")
    quoted = '"' + name.replace('"', '""') + '"'
    con.execute("CREATE TABLE y (a INT)")
    con.execute(f'CREATE TABLE {quoted} ({quoted} INT, "d x" VARCHAR)')
    con.execute(f"INSERT INTO {quoted} VALUES (1, 'a'), (1, 'b'), (2, 'a')")
    got = _sql_check(con, q, qi=f"['{q}']", sensitive="'d x'")
    assert (got["k"], got["classes"]) == (1, 2)
    assert con.execute("SELECT count(*) FROM y").fetchone() == (0,)


@pytest.mark.parametrize(
    ("params", "error", "fragment"),
    [
        ({"qi": "['a']"}, "ConfigError", "unknown table 'nope'"),
        ({"qi": "['zz']"}, "ConfigError", "has no column 'zz'"),
        ({}, "ConfigError", "no quasi-identifiers"),
        ({"qi": "['a']", "sensitive": "'a'"}, "ConfigError", "both a quasi-identifier"),
        ({"qi": "['a', 'a']"}, "ConfigError", "twice"),
        ({"qi": "['a']", "t_distance": "'manhattan'"}, "InvalidInputError", "t_distance"),
        ({"qi": "['a']", "risk_threshold": "1.5"}, "InvalidInputError", "risk_threshold"),
        ({"qi": "['a']", "recursive_c": "0.0"}, "InvalidInputError", "recursive_c"),
        ({"qi": "['a']", "population": "'nope2'"}, "ConfigError", "unknown table 'nope2'"),
    ],
)
def test_bad_input_names_the_problem(
    con: duckdb.DuckDBPyConnection, params: dict[str, str], error: str, fragment: str
) -> None:
    con.execute("CREATE TABLE t AS SELECT 1 AS a, 'x' AS s")
    table = "nope" if fragment.startswith("unknown table 'nope'") else "t"
    with pytest.raises(duckdb.InvalidInputException, match=error) as info:
        _sql_check(con, table, **params)
    assert fragment in str(info.value)


def test_population_missing_a_class_is_an_error(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES (1), (2)) AS v(a)")
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES (1), (1)) AS v(a)")
    with pytest.raises(duckdb.InvalidInputException, match="population must contain"):
        _sql_check(con, "s", qi="['a']", population="'p'")


def test_python_errors() -> None:
    with pytest.raises(InvalidInputError, match="pass the connection"):
        kanon.check("t", qi=["a"])
    with pytest.raises(InvalidInputError, match="must be a table name"):
        kanon.check(42, qi=["a"])
    with pytest.raises(ConfigError, match="no column"):
        kanon.check(pa.table({"a": [1]}), qi=["b"])


def test_report_prints_readably() -> None:
    text = str(
        kanon.check(pa.table({"a": [1, 1, 2], "s": ["x", "y", "x"]}), qi=["a"], sensitive="s")
    )
    assert "k (smallest class)" in text
    assert "t-closeness" in text


# --- hierarchical t-closeness ------------------------------------------------------------


def _tree_distance(paths: dict[str | None, list[str]], a: str | None, b: str | None) -> int:
    """Ground distance times H: the level of the lowest common ancestor of two leaves."""
    if a == b:
        return 0
    height = len(next(iter(paths.values())))
    if a is None or b is None:  # the NULL leaf hangs right under the root
        return height
    return next(i for i, (x, y) in enumerate(zip(paths[a], paths[b], strict=True), 1) if x == y)


def _min_cost_transport(
    supply: list[Fraction], demand: list[Fraction], cost: list[list[int]]
) -> Fraction:
    """Exact min-cost transport (successive shortest paths, Bellman-Ford) in fractions."""
    m, n = len(supply), len(demand)
    source, sink = m + n, m + n + 1
    edges: list[list[Any]] = []  # [to, capacity, cost]; edge e's reverse is e ^ 1
    adj: list[list[int]] = [[] for _ in range(m + n + 2)]

    def add(a: int, b: int, cap: Fraction, c: int) -> None:
        adj[a].append(len(edges))
        edges.append([b, cap, c])
        adj[b].append(len(edges))
        edges.append([a, Fraction(0), -c])

    big = sum(supply, Fraction(0)) + 1
    for i, s in enumerate(supply):
        add(source, i, s, 0)
    for j, d in enumerate(demand):
        add(m + j, sink, d, 0)
    for i in range(m):
        for j in range(n):
            add(i, m + j, big, cost[i][j])
    total = Fraction(0)
    while True:
        dist: list[float | int] = [math.inf] * (m + n + 2)
        via = [-1] * (m + n + 2)
        dist[source] = 0
        for _ in range(m + n + 2):
            for u in range(m + n + 2):
                for e in adj[u]:
                    v, cap, c = edges[e]
                    if cap > 0 and dist[u] + c < dist[v]:
                        dist[v], via[v] = dist[u] + c, e
        if dist[sink] == math.inf:
            return total
        push, v = big, sink
        while v != source:
            push = min(push, edges[via[v]][1])
            v = edges[via[v] ^ 1][0]
        v = sink
        while v != source:
            edges[via[v]][1] -= push
            edges[via[v] ^ 1][1] += push
            v = edges[via[v] ^ 1][0]
        total += push * int(dist[sink])


def _hierarchical_t(
    rows: list[tuple[int, str | None]], paths: dict[str | None, list[str]]
) -> float:
    """max over classes of the EMD to the table, by exact transport on the tree metric."""
    height = len(next(iter(paths.values())))
    values = sorted({v for _, v in rows}, key=lambda v: (v is None, v or ""))
    cost = [[_tree_distance(paths, a, b) for b in values] for a in values]
    q = [Fraction(sum(1 for _, v in rows if v == x), len(rows)) for x in values]
    worst = Fraction(0)
    for zip_ in {z for z, _ in rows}:
        cls = [v for z, v in rows if z == zip_]
        p = [Fraction(cls.count(x), len(cls)) for x in values]
        worst = max(worst, _min_cost_transport(p, q, cost) / height)
    return float(worst)


@st.composite
def _hierarchy_tables(
    draw: st.DrawFn,
) -> tuple[dict[str | None, list[str]], list[tuple[int, str | None]]]:
    """A random hierarchy over leaves v0…, labels per level, and rows (zip, value)."""
    m = draw(st.integers(1, 7))
    height = draw(st.integers(1, 3))
    leaves = [f"v{i}" for i in range(m)]
    groups = list(range(m))  # group of each leaf at the current level
    paths: dict[str | None, list[str]] = {leaf: [] for leaf in leaves}
    for level in range(1, height + 1):
        width = max(groups) + 1
        up = (
            [0] * width
            if level == height
            else draw(st.lists(st.integers(0, width - 1), min_size=width, max_size=width))
        )
        groups = [up[g] for g in groups]
        for leaf, g in zip(leaves, groups, strict=True):
            paths[leaf].append("*" if level == height else f"L{level}_{g}")
    values = st.one_of(st.sampled_from(leaves), st.sampled_from(leaves), st.none())
    rows = draw(st.lists(st.tuples(st.integers(0, 3), values), min_size=1, max_size=30))
    return paths, rows


@pytest.mark.slow
@SETTINGS
@given(case=_hierarchy_tables())
def test_hierarchical_t_matches_tree_transport(
    case: tuple[dict[str | None, list[str]], list[tuple[int, str | None]]],
) -> None:
    paths, rows = case
    height = len(next(iter(paths.values())))
    with duckdb.connect() as con:
        kanon.install(con)
        labels = ", ".join(f"l{i} VARCHAR" for i in range(1, height + 1))
        con.execute(f"CREATE TABLE h (d VARCHAR, {labels})")
        con.executemany(
            f"INSERT INTO h VALUES (?{', ?' * height})", [[v, *p] for v, p in paths.items()]
        )
        con.execute("CREATE TABLE t (zip INTEGER, dx VARCHAR)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [list(r) for r in rows])
        kanon.configure(con, "t", qi=["zip"], sensitive=["dx"])
        con.execute("UPDATE kanon_columns SET hierarchy = 'h' WHERE column_name = 'dx'")
        got = _sql_check(con, "t", t_distance="'hierarchical'")
        assert _close(got["t"], _hierarchical_t(rows, paths)), (got["t"], rows, paths)
        # A flat hierarchy (value -> *) is the equal ground distance.
        con.execute("CREATE TABLE flat AS SELECT d, '*' AS top FROM h")
        con.execute("UPDATE kanon_columns SET hierarchy = 'flat' WHERE column_name = 'dx'")
        flat = _sql_check(con, "t", t_distance="'hierarchical'")["t"]
        assert _close(flat, _sql_check(con, "t", t_distance="'equal'")["t"])


def _disease_table(con: duckdb.DuckDBPyConnection) -> None:
    """Li et al.'s (2007) disease hierarchy (Figure 2) and nine patients (Table 3)."""
    con.execute(
        "CREATE TABLE dx_h AS SELECT * FROM (VALUES "
        "('gastric ulcer', 'stomach', 'digestive', '*'), "
        "('gastritis', 'stomach', 'digestive', '*'), "
        "('stomach cancer', 'stomach', 'digestive', '*'), "
        "('colitis', 'colon', 'digestive', '*'), "
        "('colon cancer', 'colon', 'digestive', '*'), "
        "('flu', 'respiratory infection', 'respiratory', '*'), "
        "('pneumonia', 'respiratory infection', 'respiratory', '*'), "
        "('bronchitis', 'respiratory infection', 'respiratory', '*'), "
        "('pulmonary edema', 'vascular lung', 'respiratory', '*'), "
        "('pulmonary embolism', 'vascular lung', 'respiratory', '*')"
        ") AS v(disease, organ, system, top)"
    )
    con.execute(
        "CREATE TABLE patients AS SELECT * FROM (VALUES "
        "(4767, 'gastric ulcer'), (4767, 'stomach cancer'), (4767, 'pneumonia'), "
        "(4760, 'gastritis'), (4760, 'flu'), (4760, 'bronchitis'), "
        "(4790, 'gastritis'), (4790, 'bronchitis'), (4790, 'stomach cancer')"
        ") AS v(zip, disease)"
    )
    kanon.configure(con, "patients", qi=["zip"], sensitive=["disease"])


def test_hierarchical_t_of_the_paper_table(con: duckdb.DuckDBPyConnection) -> None:
    _disease_table(con)
    con.execute("UPDATE kanon_columns SET hierarchy = 'dx_h' WHERE column_name = 'disease'")
    got = _sql_check(con, "patients", t_distance="'hierarchical'")
    # Worked by hand with Li et al.'s formula Σ level(N)/H · min(pos, neg extra): the
    # classes are at 7/27, 8/27 and 5/27; {gastritis, flu, bronchitis} is the farthest.
    assert got["t"] == pytest.approx(8 / 27)
    report = kanon.check("patients", con=con, t_distance="hierarchical")
    assert report.t == pytest.approx(8 / 27)


def test_hierarchical_t_needs_a_hierarchy(con: duckdb.DuckDBPyConnection) -> None:
    _disease_table(con)
    with pytest.raises(duckdb.InvalidInputException, match="ConfigError") as info:
        _sql_check(con, "patients", t_distance="'hierarchical'")
    assert "sensitive column 'disease'" in str(info.value)
    assert "kanon_columns.hierarchy" in str(info.value)


def test_hierarchical_t_value_missing_from_the_hierarchy(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _disease_table(con)
    con.execute("UPDATE kanon_columns SET hierarchy = 'dx_h' WHERE column_name = 'disease'")
    sql = plan_check(con, "patients", CheckOptions(t_distance="hierarchical")).sql
    con.execute("INSERT INTO patients VALUES (4767, 'measles')")
    with pytest.raises(duckdb.InvalidInputException, match="HierarchyError") as info:
        _sql_check(con, "patients", t_distance="'hierarchical'")
    assert "column 'disease'" in str(info.value)
    assert "'measles'" in str(info.value)
    with pytest.raises(HierarchyError, match="'measles'"):
        kanon.check("patients", con=con, t_distance="hierarchical")
    # SQL planned before the value arrived stops rather than mis-coding it.
    with pytest.raises(duckdb.InvalidInputException, match="missing from its hierarchy: measles"):
        con.execute(sql).fetchall()


# --- δ-presence ----------------------------------------------------------------------------


@pytest.mark.slow
@SETTINGS
@given(data=tables(max_rows=30), extra=st.lists(st.integers(0, 3), min_size=1, max_size=30))
def test_delta_presence_matches_group_by(data: dict[str, list[object]], extra: list[int]) -> None:
    with duckdb.connect() as con:
        kanon.install(con)
        _load(con, "t", data)
        # The population: the table plus, for some rows, copies of them and unseen rows.
        con.execute("CREATE TABLE e (i INTEGER, times INTEGER)")
        con.executemany("INSERT INTO e VALUES (?, ?)", list(enumerate(extra)))
        con.execute(
            "CREATE TABLE pop AS SELECT * FROM t UNION ALL "
            "SELECT t.q0, t.q1, t.q2, t.s, t.v "
            "FROM (SELECT *, row_number() OVER () - 1 AS i FROM t) t "
            "JOIN e USING (i) JOIN range(4) r(x) ON r.x < e.times UNION ALL "
            "SELECT 99, 'unseen', 99, 's', 1"
        )
        got = _sql_check(con, "t", qi="['q0', 'q1']", population="'pop'")
        want = con.execute(
            "SELECT min(t.n / p.n), max(t.n / p.n) FROM "
            "(SELECT q0, q1, count(*) AS n FROM t GROUP BY ALL) t JOIN "
            "(SELECT q0, q1, count(*) AS n FROM pop GROUP BY ALL) p "
            "ON t.q0 IS NOT DISTINCT FROM p.q0 AND t.q1 IS NOT DISTINCT FROM p.q1"
        ).fetchone()
        assert want is not None
        assert _close(got["delta_min"], want[0]), (got["delta_min"], want)
        assert _close(got["delta_max"], want[1]), (got["delta_max"], want)
        assert got["delta_min"] <= got["delta_max"] <= 1.0


def test_delta_presence_by_hand(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES (1), (1), (2)) AS v(a)")
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES (1), (1), (1), (1), (2), (3)) AS v(a)")
    got = _sql_check(con, "s", qi="['a']", population="'p'")
    assert (got["delta_min"], got["delta_max"]) == (0.5, 1.0)
    report = kanon.check("s", qi=["a"], con=con, population="p")
    assert (report.delta_min, report.delta_max) == (0.5, 1.0)
    assert "δ-presence, smallest share" in str(report)
    no_pop = _sql_check(con, "s", qi="['a']")
    assert (no_pop["delta_min"], no_pop["delta_max"]) == (None, None)
