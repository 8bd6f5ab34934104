"""``kanon(...)`` / ``kanon.anonymize``: k-anonymity, truthfulness and accounting, in SQL.

Every release is checked independently of the planner: a plain ``GROUP BY`` over the
released labels, a join back to the source on a row id (no row lost or added, other
columns unchanged), and the label of every cell looked up among the ancestors of the
original value in a hierarchy table built separately with ``kanon.hierarchy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

import kanon
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from tests.conftest import data_dir
from tests.strategies import tables

if TYPE_CHECKING:
    import random
    from collections.abc import Sequence

QI = ("q0", "q1", "q2")


def _arrow(data: dict[str, list[Any]]) -> pa.Table:
    """The generated table with a row id and a name (an identifier)."""
    n = len(data["q0"])
    return pa.table(
        {
            "rid": pa.array(range(n), pa.int64()),
            "name": pa.array([f"person {i}" for i in range(n)]),
            "q0": pa.array(data["q0"], pa.int64()),
            "q1": pa.array(data["q1"], pa.string()),
            "q2": pa.array(data["q2"], pa.int64()),
            "s": pa.array(data["s"], pa.string()),
        }
    )


def _load(con: duckdb.DuckDBPyConnection, name: str, data: dict[str, list[Any]]) -> None:
    arrow = _arrow(data)
    con.register("__arrow_in", arrow)
    con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM __arrow_in')
    con.unregister("__arrow_in")


def _min_class(con: duckdb.DuckDBPyConnection, rel: str, qi: Sequence[str]) -> int:
    cols = ", ".join(f'"{c}"' for c in qi)
    return int(
        con.execute(
            f"SELECT min(n) FROM (SELECT count(*) AS n FROM {rel} GROUP BY {cols})"
        ).fetchall()[0][0]
    )


def _untruthful(
    con: duckdb.DuckDBPyConnection, src: str, rel: str, column: str, hierarchy: str | None
) -> list[tuple[Any, ...]]:
    """Cells whose label is not the value, an ancestor of it in ``hierarchy``, or '*'."""
    c = f'"{column}"'
    if hierarchy is None:  # all NULL: only NULL or '*' are truthful
        return con.execute(
            f"SELECT s.{c}, r.{c} FROM {src} s JOIN {rel} r USING (rid) "
            f"WHERE r.{c} IS NOT NULL AND r.{c} <> '*'"
        ).fetchall()
    cols = [r[0] for r in con.execute(f'DESCRIBE "{hierarchy}"').fetchall()]
    labels = ", ".join(f'CAST(h."{x}" AS VARCHAR)' for x in cols)
    return con.execute(
        f"""
        SELECT s.{c}, r.{c} FROM {src} s JOIN {rel} r USING (rid)
        LEFT JOIN "{hierarchy}" h ON CAST(h."{cols[0]}" AS VARCHAR) = CAST(s.{c} AS VARCHAR)
        WHERE NOT (r.{c} = '*'
                   OR (s.{c} IS NULL AND r.{c} IS NULL)
                   OR list_contains([{labels}], r.{c}))
        """
    ).fetchall()


def _assert_release(
    con: duckdb.DuckDBPyConnection,
    src: str,
    rel: str,
    k: int,
    hierarchies: dict[str, str | None],
) -> None:
    n_src = con.execute(f"SELECT count(*) FROM {src}").fetchall()[0][0]
    n_rel = con.execute(f"SELECT count(*) FROM {rel}").fetchall()[0][0]
    assert n_rel == n_src
    assert _min_class(con, rel, list(hierarchies)) >= k
    # Every source row exactly once; sensitive column unchanged; identifiers hidden.
    assert con.execute(
        f"SELECT count(*) FROM {src} s FULL JOIN {rel} r USING (rid) "
        "WHERE s.rid IS NULL OR r.rid IS NULL OR s.s IS DISTINCT FROM r.s"
    ).fetchall() == [(0,)]
    assert con.execute(f"SELECT count(DISTINCT rid) FROM {rel}").fetchall() == [(n_src,)]
    assert con.execute(f"SELECT DISTINCT name FROM {rel}").fetchall() == [("*",)]
    for column, hierarchy in hierarchies.items():
        assert _untruthful(con, src, rel, column, hierarchy) == [], column


def _configure(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str | None]:
    """Roles for the generated table: q1 with a configured AutoBuild hierarchy."""
    hierarchies: dict[str, str | None] = {}
    has_q1 = con.execute(f'SELECT count(q1) FROM "{table}"').fetchall()[0][0] > 0
    if has_q1:
        kanon.hierarchy.auto(con, f"{table}_h_q1", table=table, column="q1", fanout=2)
    kanon.configure(
        con,
        table,
        qi={"q0": None, "q1": f"{table}_h_q1" if has_q1 else None, "q2": None},
        identifiers=["name"],
        sensitive=["s"],
        insensitive=["rid"],
    )
    # Independent copies of the defaults, to check truthfulness against.
    for column in ("q0", "q2"):
        if con.execute(f'SELECT count("{column}") FROM "{table}"').fetchall()[0][0]:
            kanon.hierarchy.intervals(con, f"{table}_h_{column}", table=table, column=column)
            hierarchies[column] = f"{table}_h_{column}"
        else:
            hierarchies[column] = None
    hierarchies["q1"] = f"{table}_h_q1" if has_q1 else None
    return {c: hierarchies[c] for c in QI}


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=tables(max_rows=40), k_seed=st.integers(1, 1000), seed=st.sampled_from([0, 7]))
def test_sql_release_is_k_anonymous_truthful_and_complete(
    con: duckdb.DuckDBPyConnection, data: dict[str, list[Any]], k_seed: int, seed: int
) -> None:
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    before = con.execute("SELECT * FROM t ORDER BY rid").fetchall()
    con.execute(
        f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', k := {k}, seed := {seed})"
    )
    _assert_release(con, "t", "rel", k, hierarchies)
    assert con.execute("SELECT * FROM t ORDER BY rid").fetchall() == before
    # Same seed, same release; and the same for the rows in another order.
    again = con.execute(
        f"SELECT * FROM kanon('t', k := {k}, seed := {seed}) ORDER BY rid"
    ).fetchall()
    assert again == con.execute("SELECT * FROM rel ORDER BY rid").fetchall()


@pytest.mark.slow
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=tables(max_rows=30), k_seed=st.integers(1, 1000), shuffle=st.randoms())
def test_release_does_not_depend_on_row_order(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    k_seed: int,
    shuffle: random.Random,
) -> None:
    _load(con, "t", data)
    n = len(data["q0"])
    k = 1 + k_seed % n
    order = list(range(n))
    shuffle.shuffle(order)
    # The same rows (row id and name included) stored in another order.
    con.execute(
        "CREATE OR REPLACE TABLE u AS SELECT t.* FROM t JOIN "
        "(SELECT unnest($order) AS rid, generate_subscripts($order, 1) AS pos) o USING (rid) "
        "ORDER BY o.pos",
        {"order": order},
    )
    released = [
        con.execute(
            f"SELECT * FROM kanon('{t}', k := {k}, qi := ['q0', 'q1', 'q2'], "
            "identifiers := ['name'], sensitive := ['s'], insensitive := ['rid']) ORDER BY ALL"
        ).fetchall()
        for t in ("t", "u")
    ]
    assert released[0] == released[1]
    assert len(released[0]) == n


def test_release_keeps_columns_in_order_and_types(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS id, 20 + i % 50 AS age, 'zip' || (i % 7) AS zip, "
        "DATE '2000-01-01' + i::INTEGER AS born, i % 3 = 0 AS flag, i * 1.5 AS score "
        "FROM range(200) r(i)"
    )
    kanon.configure(
        con, "p", qi=["age", "zip", "born"], identifiers=["id"], insensitive=["flag", "score"]
    )
    rel = con.sql("SELECT * FROM kanon('p', k := 4)")
    assert rel.columns == ["id", "age", "zip", "born", "flag", "score"]
    source_types = [str(t) for t in con.table("p").types]
    assert [str(t) for t in rel.types] == ["VARCHAR"] * 4 + source_types[4:]
    con.execute("CREATE TABLE r AS SELECT * FROM kanon('p', k := 4)")
    assert _min_class(con, "r", ["age", "zip", "born"]) >= 4
    assert con.execute("SELECT count(*), count(DISTINCT score) FROM r").fetchall() == [(200, 200)]


@pytest.mark.parametrize("method", ["forest", "mondrian", "optimal", "datafly"])
def test_every_row_finds_its_own_leaf_whatever_its_type(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    # Rows find their leaves by value (integers, decimals, text, booleans, timestamps)
    # or by text (floating point, with -0.0 read as 0.0; time zones): with k = 1 nothing
    # is generalized, so every label is the row's own value.
    con.execute(
        "CREATE TABLE ty AS SELECT i AS rid, "
        "(CASE WHEN i % 5 = 0 THEN -0.0 WHEN i % 7 = 0 THEN NULL ELSE i / 4 END)::DOUBLE AS d, "
        "(i % 6 / 4)::DECIMAL(9, 2) AS dec, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 2 = 0 END AS b, "
        "TIMESTAMP '2020-01-01 10:00:00' + to_hours(i % 4) AS ts, "
        "TIMESTAMPTZ '2020-01-01 10:00:00+00' + to_hours(i % 3) AS tz, "
        "['ä', 'ß', '😀', NULL][i % 4 + 1] AS u FROM range(40) r(i)"
    )
    qi = ["d", "dec", "b", "ts", "tz", "u"]
    texts = ", ".join(
        "CAST(d + 0.0 AS VARCHAR)" if c == "d" else f"CAST({c} AS VARCHAR)" for c in qi
    )
    want = con.execute(f"SELECT rid, {texts} FROM ty ORDER BY rid").fetchall()
    release = f"kanon('ty', k := 1, qi := {qi}, method := '{method}', insensitive := ['rid'])"
    got = con.execute(f"SELECT rid, {', '.join(qi)} FROM {release} ORDER BY rid").fetchall()
    assert got == want
    con.execute(
        f"CREATE TABLE ty_r AS SELECT * FROM kanon('ty', k := 4, qi := {qi}, method := '{method}', "
        "insensitive := ['rid'])"
    )
    assert _min_class(con, "ty_r", qi) >= 4
    assert con.execute("SELECT count(*) FROM ty_r").fetchall() == [(40,)]


def test_column_names_of_the_generated_sql_are_ordinary_names(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Names the generated SQL uses for its own columns and aliases, as source columns.
    names = ["k", "l1", "a0", "n", "t", "r", "s", "v0", "lv", "g"]
    cols = ", ".join(f'(i * {j + 1}) % 5 AS "{c}"' for j, c in enumerate(names))
    con.execute(f"CREATE TABLE odd AS SELECT {cols} FROM range(60) r(i)")
    rel = con.sql("SELECT * FROM kanon('odd', k := 3, qi := ['k', 'a0', 'n'])")
    assert rel.columns == names
    con.execute("CREATE TABLE odd_r AS SELECT * FROM kanon('odd', k := 3, qi := ['k', 'a0', 'n'])")
    assert _min_class(con, "odd_r", ["k", "a0", "n"]) >= 3
    # The other columns are unchanged, row for row.
    others = ", ".join(f'"{c}"' for c in names if c not in ("k", "a0", "n"))
    assert sorted(con.execute(f"SELECT {others} FROM odd_r").fetchall()) == sorted(
        con.execute(f"SELECT {others} FROM odd").fetchall()
    )


ADULT_QI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]


@pytest.mark.slow
def test_adult_release_with_arx_hierarchies(con: duckdb.DuckDBPyConnection) -> None:
    folder = data_dir() / "adult"
    con.execute(
        "CREATE TABLE a AS SELECT row_number() OVER () AS rid, * "
        "FROM read_csv(?, delim = ';', header = true)",
        [str(folder / "adult.csv")],
    )
    cols = ADULT_QI
    for c in cols:
        kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
    kanon.configure(con, "a", qi={c: f"h_{c}" for c in cols}, insensitive=["rid"])
    for k in (2, 5):
        con.execute(f"CREATE OR REPLACE TABLE r AS SELECT * FROM kanon('a', k := {k})")
        assert _min_class(con, "r", cols) >= k
        # pycanon, an independent implementation, agrees on the release.
        assert anonymity.k_anonymity(con.sql("SELECT * FROM r").df(), cols) >= k
        assert con.execute("SELECT count(*), count(DISTINCT rid) FROM r").fetchall() == [
            (30162, 30162)
        ]
        for c in cols:
            assert _untruthful(con, "a", "r", c, f"h_{c}") == []


@pytest.mark.slow
def test_adult_loses_less_than_arx_local_recoding(con: duckdb.DuckDBPyConnection) -> None:
    """The forest, started from the cheapest classes where they cost less, loses less.

    ARX's local recoding (Loss metric) lost 8.18 / 12.07 / 19.98 % GCP on Adult at
    k = 10 / 25 / 100 (issue 24, measured with ARX's source); the forest from its own
    groups alone lost 8.5 / 13.0 / 22.4 %, with the cheapest classes as its second start
    7.99 / 11.89 / 19.86 %. Every column is read as text, so GCP counts values as ARX does.
    """
    folder = data_dir() / "adult"
    con.execute(
        "CREATE TABLE a AS SELECT * FROM read_csv(?, delim = ';', header = true, "
        "all_varchar = true)",
        [str(folder / "adult.csv")],
    )
    for c in ADULT_QI:
        kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
    kanon.configure(con, "a", qi={c: f"h_{c}" for c in ADULT_QI})
    for k, arx in ((10, 0.0818), (25, 0.1207), (100, 0.1998)):
        con.execute(f"CREATE OR REPLACE TABLE r AS SELECT * FROM kanon('a', k := {k})")
        assert _min_class(con, "r", ADULT_QI) >= k
        found = kanon.metrics("a", "r", con=con, k=k)
        assert found.min_class >= k
        assert found.gcp < arx, (k, found.gcp)


# --------------------------------------------------------------------------- errors


def test_errors_name_the_problem(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE e AS SELECT i AS age, 'x' || (i % 3) AS zip FROM range(10) r(i)")
    with pytest.raises(duckdb.Error, match="unknown table 'nope'"):
        con.sql("SELECT * FROM kanon('nope', k := 2)").fetchall()
    with pytest.raises(duckdb.Error, match="no column 'agee'"):
        con.sql("SELECT * FROM kanon('e', k := 2, qi := ['agee'])").fetchall()
    with pytest.raises(duckdb.Error, match="no quasi-identifiers"):
        con.sql("SELECT * FROM kanon('e', k := 2)").fetchall()
    with pytest.raises(duckdb.Error, match="k = 11 exceeds the number of rows"):
        con.sql("SELECT * FROM kanon('e', k := 11, qi := ['age'])").fetchall()
    with pytest.raises(duckdb.Error, match="k must be a positive integer"):
        con.sql("SELECT * FROM kanon('e', k := 0, qi := ['age'])").fetchall()
    with pytest.raises(duckdb.Error, match="needs k"):
        con.sql("SELECT * FROM kanon('e', k := NULL, qi := ['age'])").fetchall()
    with pytest.raises(duckdb.Error, match="method must be one of 'forest'"):
        con.sql("SELECT * FROM kanon('e', k := 2, qi := ['age'], method := 'x')").fetchall()
    with pytest.raises(InvalidInputError, match="seed must be a whole number in"):
        kanon.anonymize("e", 2, ["age"], con=con, seed=-1)
    with pytest.raises(ConfigError, match="lists column 'age'"):
        kanon.anonymize("e", 2, ["age", "AGE"], con=con)


def test_hierarchy_problems_are_named(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE e AS SELECT 'x' || (i % 3) AS zip FROM range(10) r(i)")
    con.execute("CREATE TABLE h (v VARCHAR, l1 VARCHAR, l2 VARCHAR)")
    con.execute("INSERT INTO h VALUES ('x0', 'a', '*'), ('x1', 'a', '*')")
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role, hierarchy) "
        "VALUES ('e', 'zip', 'qi', 'h')"
    )
    with pytest.raises(
        HierarchyError, match=r"hierarchy 'h' of column 'zip' does not cover value\(s\) 'x2'"
    ):
        kanon.anonymize("e", 2, con=con)
    # The SQL macros check the values as the statement runs, under every method.
    for method in ("forest", "mondrian", "optimal", "datafly", "mu_argus"):
        with pytest.raises(
            duckdb.Error,
            match=r"hierarchy 'h' of column 'zip' does not cover value 'x2' of table 'e'",
        ):
            con.sql(f"SELECT * FROM kanon('e', k := 2, method := '{method}')").fetchall()
    with pytest.raises(duckdb.Error, match=r"does not cover value 'x2'"):
        con.sql("SELECT * FROM kanon_search('e', k := 2)").fetchall()
    con.execute("INSERT INTO h VALUES ('x2', 'b', '*'), ('x2', 'b', '*')")
    with pytest.raises(HierarchyError, match=r"lists level-0 value.* more than once: 'x2'"):
        kanon.anonymize("e", 2, con=con)
    con.execute("DELETE FROM h WHERE v = 'x2'")
    con.execute("INSERT INTO h VALUES ('x2', 'a', '+')")
    with pytest.raises(HierarchyError, match="label 'a' at level 1 has more than one parent"):
        kanon.anonymize("e", 2, con=con)
    con.execute("UPDATE h SET l1 = 'b' WHERE v = 'x2'")
    with pytest.raises(HierarchyError, match="2 roots"):
        kanon.anonymize("e", 2, con=con)
    con.execute("UPDATE h SET l2 = '*', l1 = NULL WHERE v = 'x2'")
    with pytest.raises(HierarchyError, match="NULL label"):
        kanon.anonymize("e", 2, con=con)
    con.execute("DROP TABLE h")
    with pytest.raises(ConfigError, match="hierarchy table 'h' of column 'zip' does not exist"):
        kanon.anonymize("e", 2, con=con)


# --------------------------------------------------------------------------- Python API


def test_anonymize_returns_the_input_type(con: duckdb.DuckDBPyConnection) -> None:
    import pandas as pd
    import polars as pl

    frame = {"age": [30, 31, 32, 40, 41, 42], "dx": list("abcdef")}
    out_pa = kanon.anonymize(pa.table(frame), k=3, qi=["age"], sensitive=["dx"])
    assert isinstance(out_pa, pa.Table)
    out_pd = kanon.anonymize(pd.DataFrame(frame), k=3, qi=["age"], sensitive=["dx"])
    assert isinstance(out_pd, pd.DataFrame)
    out_pl = kanon.anonymize(pl.DataFrame(frame), k=3, qi=["age"], sensitive=["dx"])
    assert isinstance(out_pl, pl.DataFrame)
    rel = con.sql("SELECT * FROM (VALUES (30, 'a'), (31, 'b'), (32, 'c'), (40, 'd')) v(age, dx)")
    out_rel = kanon.anonymize(rel, k=2, qi=["age"], con=con, sensitive="dx")
    assert isinstance(out_rel, duckdb.DuckDBPyRelation)
    con.execute(
        "CREATE TABLE f AS SELECT * FROM (VALUES (30, 'a'), (31, 'b'), (40, 'd')) v(age, dx)"
    )
    out_name = kanon.anonymize("f", 3, ["age"], con=con, sensitive=["dx"])
    assert sorted(out_name.fetchall()) == [("*", "a"), ("*", "b"), ("*", "d")]
    for out in (out_pa, pa.Table.from_pandas(out_pd), out_pl.to_arrow()):
        assert sorted(out.column("age").to_pylist()) == ["[30..32]"] * 3 + ["[39..42]"] * 3


def test_explain_returns_the_sql_of_the_macro(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE f AS SELECT i AS age, i % 2 AS b FROM range(20) r(i)")
    sql = kanon.explain(con, "f", 4, ["age"], seed=3, insensitive=["b"])
    assert "kanon_forest(" in sql
    assert sorted(con.sql(sql).fetchall()) == sorted(
        con.sql(
            "SELECT * FROM kanon('f', k := 4, qi := ['age'], seed := 3, insensitive := ['b'])"
        ).fetchall()
    )
    # The SQL runs on a connection where only the kernel UDFs are installed.
    other = duckdb.connect()
    other.execute("CREATE TABLE f AS SELECT i AS age, i % 2 AS b FROM range(20) r(i)")
    kanon.engine.install.install_kernels(other)
    assert sorted(other.sql(sql).fetchall()) == sorted(con.sql(sql).fetchall())


def test_k_equal_to_rows_puts_everything_in_one_class(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE f AS SELECT i AS age, 'z' || i AS zip FROM range(5) r(i)")
    rows = con.sql("SELECT * FROM kanon('f', k := 5, qi := ['age', 'zip'])").fetchall()
    assert len(set(rows)) == 1
    assert rows[0] == ("*", "*")
    one = con.sql("SELECT * FROM kanon('f', k := 1, qi := ['age', 'zip']) ORDER BY age").fetchall()
    assert one == [(str(i), f"z{i}") for i in range(5)]


def test_stale_sql_stops_instead_of_losing_rows(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE f AS SELECT i AS age, 'z' || (i % 3) AS zip FROM range(20) r(i)")
    con.execute("CREATE TABLE hz AS SELECT 'z' || i AS v, '*' AS top FROM range(3) r(i)")
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role, hierarchy) "
        "VALUES ('f', 'age', 'qi', NULL), ('f', 'zip', 'qi', 'hz')"
    )
    sql = kanon.explain(con, "f", 4)
    con.execute("INSERT INTO f VALUES (99, 'z0')")  # outside the planned [0, 19]
    with pytest.raises(duckdb.Error, match=r"outside the range \[0, 19\]"):
        con.sql(sql).fetchall()
    con.execute("DELETE FROM f WHERE age = 99")
    con.execute("INSERT INTO f VALUES (5, 'z7')")  # not in the hierarchy table
    with pytest.raises(
        duckdb.Error, match="hierarchy 'hz' of column 'zip' does not cover value 'z7'"
    ):
        con.sql(sql).fetchall()
