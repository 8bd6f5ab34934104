"""kanon_check / kanon.check against an independent oracle and a plain SQL GROUP BY."""

from __future__ import annotations

import math

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings

import kanon
from kanon.exceptions import ConfigError, InvalidInputError
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
