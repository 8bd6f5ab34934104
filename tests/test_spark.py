"""``kanon.spark.anonymize``: kanon's local methods on Spark DataFrames (``local[2]``).

Every release is checked twice, independently of the runner: a Spark ``groupBy`` over
the released QIs and a DuckDB ``GROUP BY`` over the collected rows (each combination,
``'*'`` included, holds ≥ k rows); the row ids come back once each with their sensitive
values; the QI with a given hierarchy is released as a node of it above the value, the
others (default hierarchies, built per part) as an interval holding it, the value or
``'*'``. Generated tables have NULLs, skew, duplicates, unicode; parts of 1 to 7 rows force
the merging of parts below k.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
import kanon.spark
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from tests import spark_session
from tests.strategies import tables
from tests.test_anonymize import _arrow, _untruthful
from tests.test_mondrian import _untruthful_values

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

QI = ["q0", "q1", "q2"]


spark = spark_session.spark  # the session fixture: one local[2] SparkSession


def _min_class_spark(rel: DataFrame, qi: list[str]) -> int:
    from pyspark.sql import functions as f

    ((smallest,),) = rel.groupBy(*qi).count().agg(f.min("count")).collect()
    return int(smallest)


@pytest.mark.slow
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    method=st.sampled_from(kanon.spark.LOCAL_METHODS),
    part_rows=st.sampled_from([1, 3, 7, 1000]),
)
def test_release_is_k_anonymous_truthful_and_complete(
    spark: SparkSession, data: dict[str, list[Any]], k_seed: int, method: str, part_rows: int
) -> None:
    source = _arrow(data)
    n = source.num_rows
    k = 1 + k_seed % n
    con = kanon.install(duckdb.connect())
    con.register("src_view", source)
    con.execute("CREATE TABLE t AS SELECT * FROM src_view")
    has_q1 = con.execute("SELECT count(q1) FROM t").fetchall()[0][0] > 0
    trees: dict[str, Any] = {}
    if has_q1:
        kanon.hierarchy.auto(con, "h_q1", table="t", column="q1", fanout=2)
        trees["q1"] = con.sql("SELECT * FROM h_q1").to_arrow_table()
    rel = kanon.spark.anonymize(
        spark.createDataFrame(source),
        k,
        QI,
        method=method,
        hierarchies=trees,
        identifiers=["name"],
        sensitive=["s"],
        insensitive=["rid"],
        partition_rows=part_rows,
    )
    assert rel.columns == source.column_names
    assert _min_class_spark(rel, QI) >= k
    con.register("rel_view", rel.toArrow())
    con.execute("CREATE TABLE rel AS SELECT * FROM rel_view")
    cols = ", ".join(QI)
    ((rows, smallest),) = con.execute(
        f"SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY {cols})"
    ).fetchall()
    assert (rows, smallest >= k) == (n, True)
    assert con.execute(
        "SELECT count(*) FROM t s FULL JOIN rel r USING (rid) "
        "WHERE s.rid IS NULL OR r.rid IS NULL OR s.s IS DISTINCT FROM r.s"
    ).fetchall() == [(0,)]
    assert con.execute("SELECT count(DISTINCT rid), min(name), max(name) FROM rel").fetchall() == [
        (n, "*", "*")
    ]
    assert _untruthful(con, "t", "rel", "q1", "h_q1" if has_q1 else None) == []
    for column in ("q0", "q2"):
        assert _untruthful_values(con, "t", "rel", column, True) == [], column
    con.close()


@pytest.mark.slow
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.2]),
    drop=st.booleans(),
)
def test_optimal_is_duckdbs_release(
    spark: SparkSession, data: dict[str, list[Any]], k_seed: int, suppression: float, drop: bool
) -> None:
    """The histogram's search and the Spark SQL view give kanon(method := 'optimal')'s rows."""
    source = _arrow(data)
    k = 1 + k_seed % source.num_rows
    con = kanon.install(duckdb.connect())
    con.register("src_view", source)
    con.execute("CREATE TABLE t AS SELECT * FROM src_view")
    kanon.configure(
        con, "t", qi=dict.fromkeys(QI), identifiers=["name"], sensitive=["s"], insensitive=["rid"]
    )
    options: dict[str, Any] = {
        "method": "optimal",
        "max_suppression": suppression,
        "drop_suppressed": drop,
    }
    sdf = spark.createDataFrame(source)
    roles: dict[str, Any] = {"identifiers": ["name"], "sensitive": ["s"], "insensitive": ["rid"]}
    try:
        expected = kanon.anonymize("t", k, con=con, **options).fetchall()
    except InvalidInputError as err:
        expected, refused = [], str(err)
    else:
        refused = ""
    finally:
        con.close()
    if refused:
        assert "no generalization satisfies" in refused
        with pytest.raises(InvalidInputError, match="no generalization satisfies"):
            kanon.spark.anonymize(sdf, k, QI, **roles, **options)
        return
    rel = kanon.spark.anonymize(sdf, k, QI, **roles, **options)
    assert rel.columns == source.column_names
    rows = [tuple(r) for r in rel.collect()]
    assert sorted(map(repr, rows)) == sorted(map(repr, expected))
    if rows:
        assert _min_class_spark(rel, QI) >= k


def test_parts_run_with_the_whole_tables_effort() -> None:
    from kanon.plan.release.forest import FULL_EFFORT_ROWS
    from kanon.spark import _part_options

    # Parts are small; the forest's default effort follows the whole table's rows, as
    # kanon(...) chooses it in DuckDB. A given effort and other methods stay as they are.
    big, small = FULL_EFFORT_ROWS + 1, FULL_EFFORT_ROWS
    assert _part_options("forest", big, {})["effort"] == "fast"
    assert _part_options("forest", small, {})["effort"] == "full"
    assert _part_options("forest", big, {"effort": "full", "labels": "range"}) == {
        "effort": "full",
        "labels": "range",
    }
    assert _part_options("mondrian", big, {"l": 2}) == {"l": 2}
    assert _part_options("forest_paper", big, {}) == {}  # no improvement passes


@pytest.mark.slow
def test_parts_are_cut_and_merged(spark: SparkSession) -> None:
    """2,000 rows in parts of about 100: several parts, the release still k-anonymous."""
    from pyspark.sql import functions as f

    sdf = spark.range(2000).selectExpr(
        "id",
        "CAST(20 + (id * 7) % 50 AS INT) AS age",
        "10000 + (id * 13) % 400 AS zip",
        "CASE WHEN id % 2 = 0 THEN 'f' ELSE 'm' END AS sex",
        "CASE WHEN id % 3 = 0 THEN NULL ELSE 'flu' END AS dx",
    )
    rel = kanon.spark.anonymize(
        sdf,
        10,
        ["age", "zip", "sex"],
        method="mondrian",
        insensitive=["id"],
        sensitive=["dx"],
        partition_rows=100,
    )
    assert rel.count() == 2000
    assert _min_class_spark(rel, ["age", "zip", "sex"]) >= 10
    # The sensitive column keeps its type and values.
    assert rel.schema["dx"].dataType == sdf.schema["dx"].dataType
    assert rel.schema["id"].dataType == sdf.schema["id"].dataType
    assert sorted(r.id for r in rel.select("id").collect()) == list(range(2000))
    # l-diversity in every part: each class holds at least 2 distinct diagnoses.
    diverse = kanon.spark.anonymize(
        sdf.fillna("cold", ["dx"]).withColumn("dx", f.expr("dx || CAST(id % 3 AS STRING)")),
        10,
        ["age", "zip", "sex"],
        method="mondrian",
        insensitive=["id"],
        sensitive=["dx"],
        partition_rows=100,
        l=2,
    )
    per_class = diverse.groupBy("age", "zip", "sex").agg(f.countDistinct("dx").alias("l"))
    assert per_class.agg(f.min("l")).collect()[0][0] >= 2


def test_hostile_column_names(spark: SparkSession) -> None:
    """Columns named like the runner's own names (its part column, tables, views)."""
    names = ["kanon_part0", "part", "h0", "kanon_spark_input", "o'brien `x`.y"]
    source = pa.table(
        {
            names[0]: pa.array([i % 3 for i in range(30)], pa.int64()),
            names[1]: pa.array([str(i % 2) for i in range(30)]),
            names[2]: pa.array([i % 5 for i in range(30)], pa.int64()),
            names[3]: pa.array([f"x{i}" for i in range(30)]),
            names[4]: pa.array(range(30), pa.int64()),
        }
    )
    rel = kanon.spark.anonymize(
        spark.createDataFrame(source),
        4,
        names[:3],
        hierarchies={
            "h0": pa.table({"v": list(range(5)), "l1": ["lo"] * 3 + ["hi"] * 2, "l2": ["*"] * 5})
        },
        identifiers=[names[3]],
        insensitive=[names[4]],
        partition_rows=7,
    )
    assert rel.columns == names
    assert _min_class_spark(rel, names[:3]) >= 4
    rows = rel.toDF(*[f"c{i}" for i in range(5)]).select("c3", "c4").collect()
    assert {r[0] for r in rows} == {"*"}
    assert sorted(r[1] for r in rows) == list(range(30))


def test_bad_input_is_a_clear_error(spark: SparkSession) -> None:
    sdf = spark.range(20).selectExpr("id", "id % 4 AS a", "CAST(id % 3 AS STRING) AS b")
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"qi": ["zz"], "insensitive": ["id", "a", "b"]}, ConfigError, "'zz'.*not a column"),
        ({"qi": ["a", "b"], "insensitive": ["id", "__kanon_x"]}, ConfigError, "reserved"),
        ({"qi": ["a"]}, ConfigError, "have no role"),
        ({"qi": ["a"], "insensitive": ["a", "id", "b"]}, ConfigError, "two roles"),
        ({"qi": "a", "insensitive": ["id", "b"]}, ConfigError, "non-empty list"),
        ({"qi": ["a", "b"], "insensitive": ["id"], "k": 0}, InvalidInputError, "k must be"),
        ({"qi": ["a", "b"], "insensitive": ["id"], "k": 21}, InvalidInputError, "fewer than"),
        (
            {"qi": ["a", "b"], "insensitive": ["id"], "method": "datafly"},
            InvalidInputError,
            "local methods.*and 'optimal'",
        ),
        (
            {"qi": ["a"], "sensitive": ["b"], "insensitive": ["id"], "method": "optimal", "l": 2},
            InvalidInputError,
            "l-diversity, t-closeness and δ-presence are not expressed",
        ),
        (
            {
                "qi": ["a", "b"],
                "insensitive": ["id"],
                "method": "optimal",
                "hierarchies": {"a": pa.table({"v": [0, 1], "l": ["*", "*"]})},
            },
            HierarchyError,
            r"hierarchies\['a'\] does not fit the DataFrame.*does not cover 2 value",
        ),
        (
            {"qi": ["a", "b"], "insensitive": ["id"], "partition_rows": 0},
            InvalidInputError,
            "partition_rows",
        ),
        (
            {"qi": ["a", "b"], "insensitive": ["id"], "hierarchies": {"id": pa.table({})}},
            ConfigError,
            "not a QI",
        ),
        (
            {"qi": ["a", "b"], "insensitive": ["id"], "hierarchies": {"a": [1, 2]}},
            ConfigError,
            "Spark DataFrame or a pyarrow Table",
        ),
        (
            {
                "qi": ["a", "b"],
                "insensitive": ["id"],
                "hierarchies": {"a": pa.table({"v": [0, 1, 2, 3], "l": ["x", "x", "y", "y"]})},
            },
            HierarchyError,
            "roots",
        ),
        (
            {
                "qi": ["a", "b"],
                "insensitive": ["id"],
                "hierarchies": {"a": pa.table({"v": [0, 1], "l": ["*", "*"]})},
            },
            HierarchyError,
            r"hierarchies\['a'\] does not fit the DataFrame.*does not cover 2 value",
        ),
    ]
    reserved = sdf.withColumn("__kanon_x", sdf["id"])
    for kwargs, error, message in cases:
        args = {"k": 2, **kwargs}
        frame = reserved if "__kanon_x" in str(kwargs) else sdf
        with pytest.raises(error, match=message):
            kanon.spark.anonymize(frame, args.pop("k"), args.pop("qi"), **args)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    sensitive=st.sampled_from([None, "s", "q2"]),
    t_distance=st.sampled_from([None, "equal", "ordered"]),
    recursive=st.sampled_from([(None, None), (2, 3.0)]),
    declare_name=st.booleans(),
)
def test_check_is_kanon_check(
    spark: SparkSession,
    data: dict[str, list[Any]],
    sensitive: str | None,
    t_distance: str | None,
    recursive: tuple[int | None, float | None],
    declare_name: bool,
) -> None:
    """The Spark report equals ``kanon.check`` on the same rows, field by field."""
    source = _arrow(data)
    qi = ["q0", "q1"] if sensitive == "q2" else QI
    roles: dict[str, Any] = {
        "identifiers": ["name"] if declare_name else [],
        "insensitive": ["rid"],
    }
    options: dict[str, Any] = {
        "t_distance": t_distance,
        "recursive_l": recursive[0],
        "recursive_c": recursive[1],
    }
    expected = kanon.check(source, qi=qi, sensitive=sensitive, **options, **roles)
    got = kanon.spark.check(spark.createDataFrame(source), qi, sensitive, **options, **roles)
    for field, value in expected.to_dict().items():
        if isinstance(value, float):
            assert getattr(got, field) == pytest.approx(value, rel=1e-9, abs=1e-12), field
        else:
            assert getattr(got, field) == value, field


def test_check_errors(spark: SparkSession) -> None:
    sdf = spark.range(10).selectExpr("id", "id % 2 AS a", "CAST(id % 3 AS STRING) AS b")
    with pytest.raises(ConfigError, match="'zz' is not a column"):
        kanon.spark.check(sdf, ["zz"])
    with pytest.raises(ConfigError, match="non-empty list"):
        kanon.spark.check(sdf, [])
    with pytest.raises(ConfigError, match="two roles"):
        kanon.spark.check(sdf, ["a"], "a")
    with pytest.raises(InvalidInputError, match="not available on Spark"):
        kanon.spark.check(sdf, ["a"], "b", t_distance="hierarchical")
    with pytest.raises(InvalidInputError, match="risk_threshold"):
        kanon.spark.check(sdf, ["a"], risk_threshold=2.0)
    report = kanon.spark.check(sdf, ["a"], "b")
    assert (report.k, report.rows, report.identifying_columns) == (5, 10, ("id",))


CONNECT = """
import duckdb, pyarrow as pa
from pyspark.sql import SparkSession, functions as f
import kanon, kanon.spark

spark = SparkSession.builder.remote("local[2]").getOrCreate()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
con = duckdb.connect()
source = con.sql(
    "SELECT i AS id, 20 + (i * 7) % 60 AS age, "
    "CASE WHEN i % 10 = 0 THEN NULL ELSE 'z' || (i * 13) % 9 END AS \\"we`ird\\", "
    "i % 4 AS dx FROM range(300) r(i)"
).to_arrow_table()
con.register("source", source.select(["age", "we`ird"]).rename_columns(["age", "w"]))
sdf = spark.createDataFrame(source)
qi = ["age", "we`ird"]
for method in ("mondrian", "forest", "optimal"):
    rel = kanon.spark.anonymize(
        sdf, 5, qi, method=method, identifiers=["id"], insensitive=["dx"], partition_rows=100
    )
    counts = rel.toDF("id", "age", "w", "dx").groupBy("age", "w").count()
    ((rows, smallest),) = counts.agg(f.sum("count"), f.min("count")).collect()
    assert (rows, smallest >= 5) == (300, True), (method, rows, smallest)
report = kanon.spark.check(sdf, qi, identifiers=["id"], insensitive=["dx"])
expected = con.sql(
    "SELECT count(*), min(n) FROM (SELECT count(*) AS n FROM source GROUP BY age, w)"
).fetchall()
assert [(report.classes, report.k)] == expected, (report, expected)
spark.stop()
print("connect ok")
"""


@pytest.mark.slow
def test_runs_under_spark_connect() -> None:
    """Every path (parts, optimal, check) under a local Spark Connect server."""
    package = str(Path(kanon.__file__).resolve().parent.parent)
    path = os.pathsep.join([package, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", CONNECT],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("connect ok")
