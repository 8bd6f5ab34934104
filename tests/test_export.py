"""Releases that leave DuckDB: ``kanon.to_sql(..., directory=)`` on PostgreSQL and Spark SQL.

Every release ``kanon.materialize`` stores (local: forest, Mondrian; global: optimal) is
exported as Parquet files and a ``CREATE VIEW`` statement, loaded next to a copy of the
source on a real PostgreSQL server and in Spark SQL (``local[2]``), and read there: the
rows must be exactly DuckDB's. Tables have NULLs, duplicates, unicode, doubles and dates,
and columns named like the aliases and helpers of the view's own SQL.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql as psql

import kanon
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.release.registry import LOCAL_METHODS
from kanon.sql.quote import ident, literal
from tests import pg, spark_session
from tests.strategies import TEXT

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb
    from pyspark.sql import SparkSession

postgres = pg.postgres  # the session fixture: a throwaway PostgreSQL server
spark = spark_session.spark  # the session fixture: one local[2] SparkSession

# Column names the view's SQL uses as aliases (s, a, l, t), one with a quote and a
# semicolon, one with unicode; Spark's catalog takes only [A-Za-z0-9_] in table names.
ID, AGE, CITY, INCOME, DAY, KEPT = "s", "a", 'we"ird; col', "l", "t", "cité"
COLUMNS = {ID: "INTEGER", AGE: "INTEGER", CITY: "VARCHAR", INCOME: "DOUBLE", DAY: "DATE"}
COLUMNS[KEPT] = "VARCHAR"
QI = [AGE, CITY, INCOME, DAY]
PG_TYPES = {
    pa.int32(): "integer",
    pa.int64(): "bigint",
    pa.string(): "text",
    pa.float64(): "float8",
    pa.date32(): "date",
}
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
_names = itertools.count()

Row = tuple[Any, ...]


@st.composite
def _rows(draw: st.DrawFn) -> list[Row]:
    """Rows with NULLs, repeated rows and values, unicode, doubles and dates."""
    row = st.tuples(
        st.integers(0, 5),
        st.one_of(st.none(), st.integers(17, 90)),
        st.one_of(st.none(), TEXT),
        st.one_of(st.none(), st.sampled_from([0.5, -0.0, 1e-9, 12.25, 1e6, 3.0])),
        st.one_of(st.none(), st.dates()),
        st.one_of(st.none(), TEXT),
    )
    rows = draw(st.lists(row, min_size=1, max_size=30))
    return rows + draw(st.lists(st.sampled_from(rows), max_size=5))  # whole-row duplicates


def _load(con: duckdb.DuckDBPyConnection, table: str, rows: list[Row]) -> None:
    spec = ", ".join(f"{ident(c)} {t}" for c, t in COLUMNS.items())
    con.execute(f"CREATE TABLE {ident(table)} ({spec})")
    con.executemany(f"INSERT INTO {ident(table)} VALUES (?, ?, ?, ?, ?, ?)", rows)
    kanon.configure(con, table, qi=dict.fromkeys(QI), identifiers=[ID], insensitive=[KEPT])


def _release(con: duckdb.DuckDBPyConnection, table: str, k: int, method: str) -> str | None:
    """Materialize ``table``'s release (None when no optimal node fits)."""
    name = f"rel_{next(_names)}"
    options: dict[str, Any] = {"method": method}
    if method == "optimal":
        options["max_suppression"] = 0.2
    try:
        kanon.materialize(con, table, k, name, **options)
    except InvalidInputError as err:
        if "no generalization satisfies" not in str(err):
            raise
        return None
    return name


def _normalized(rows: list[Row] | list[Any]) -> list[tuple[str | None, ...]]:
    out = [tuple(None if v is None else str(v) for v in row) for row in rows]
    return sorted(out, key=lambda row: [(v is None, v or "") for v in row])


def _files(folder: Path) -> dict[str, Path]:
    """Table name → its Parquet file, for the plain names these tests use."""
    return {p.stem: p for p in folder.glob("*.parquet")}


def _to_postgres(conn: Any, table: str, path: Path) -> None:
    """Create ``table`` in PostgreSQL from a Parquet file, with its column types."""
    data = pq.read_table(path)
    spec = psql.SQL(", ").join(
        psql.SQL("{} {}").format(psql.Identifier(f.name), psql.SQL(PG_TYPES[f.type]))
        for f in data.schema
    )
    conn.execute(psql.SQL("CREATE TABLE {} ({})").format(psql.Identifier(table), spec))
    copy = psql.SQL("COPY {} FROM STDIN").format(psql.Identifier(table))
    with conn.cursor() as cur, cur.copy(copy) as out:
        for row in data.to_pylist():
            out.write_row(list(row.values()))


def _in_postgres(
    server: pg.Postgres, files: dict[str, Path], statement: str, view: str
) -> list[Row]:
    with server.connect() as conn, conn.transaction(force_rollback=True):
        for table, path in files.items():
            _to_postgres(conn, table, path)
        conn.execute(statement)
        return list(conn.execute(psql.SQL("SELECT * FROM {}").format(psql.Identifier(view))))


def _in_spark(
    session: SparkSession, files: dict[str, Path], statement: str, view: str
) -> list[Row]:
    try:
        for table, path in files.items():
            session.sql(f"CREATE TABLE `{table}` USING parquet LOCATION '{path}'")
        session.sql(statement)
        return [tuple(r) for r in session.sql(f"SELECT * FROM `{view}`").collect()]
    finally:
        session.sql(f"DROP VIEW IF EXISTS `{view}`")
        for table in files:
            session.sql(f"DROP TABLE IF EXISTS `{table}`")


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(
    rows=_rows(),
    k_seed=st.integers(1, 1000),
    method=st.sampled_from(["forest", "mondrian", "optimal"]),
)
def test_exported_release_gives_duckdbs_rows_in_postgres_and_spark(
    con: duckdb.DuckDBPyConnection,
    postgres: pg.Postgres,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[Row],
    k_seed: int,
    method: str,
) -> None:
    source = f"src_{next(_names)}"
    _load(con, source, rows)
    k = 1 + k_seed % len(rows)
    view = _release(con, source, k, method)
    if view is None:
        return
    expected = _normalized(con.execute(f"SELECT * FROM {ident(view)}").fetchall())
    assert len(expected) == len(rows) or method == "optimal"
    folder = tmp_path_factory.mktemp("export")
    con.execute(f"COPY {ident(source)} TO '{folder / source}.parquet' (FORMAT parquet)")
    statements = {
        d: kanon.to_sql(con, view, d, directory=folder / d) for d in ("postgres", "spark")
    }
    for dialect, statement in statements.items():
        written = _files(folder / dialect)
        reads = {f"{view}__kanon_{part}" for part in ("rows", "labels")}
        if method == "optimal":
            assert all(t.startswith(f"{view}__kanon_h") for t in written)
        else:
            assert set(written) == reads
        assert (folder / dialect / f"{view}.sql").read_text() == statement + ";\n"
    pg_files = {source: folder / f"{source}.parquet", **_files(folder / "postgres")}
    assert _normalized(_in_postgres(postgres, pg_files, statements["postgres"], view)) == expected
    spark_files = {source: folder / f"{source}.parquet", **_files(folder / "spark")}
    assert _normalized(_in_spark(spark, spark_files, statements["spark"], view)) == expected


@pytest.mark.slow
@settings(max_examples=15, **SETTINGS)
@given(rows=_rows(), k_seed=st.integers(1, 1000), method=st.sampled_from(LOCAL_METHODS))
def test_every_local_view_is_its_release(
    con: duckdb.DuckDBPyConnection, rows: list[Row], k_seed: int, method: str
) -> None:
    """The stored view of every local method gives kanon(...)'s rows, k-anonymous."""
    source = f"src_{next(_names)}"
    _load(con, source, rows)
    k = 1 + k_seed % len(rows)
    view = _release(con, source, k, method)
    assert view is not None
    released = con.execute(
        f"SELECT * FROM kanon({literal(source)}, k := {k}, method := {literal(method)})"
    ).fetchall()
    shown = con.execute(f"SELECT * FROM {ident(view)}").fetchall()
    assert _normalized(shown) == _normalized(released)
    cols = ", ".join(ident(c) for c in QI)
    ((smallest,),) = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM {ident(view)} GROUP BY {cols})"
    ).fetchall()
    assert smallest >= k


def test_refreshed_release_with_new_nulls_exports_the_same_rows(
    con: duckdb.DuckDBPyConnection, postgres: pg.Postgres, tmp_path: Path
) -> None:
    """A refresh that brings the first NULLs of a column rewrites the view's row matching."""
    rows = [(i, 20 + i % 7, "abc"[i % 3], float(i % 4), None, "x") for i in range(40)]
    _load(con, "src", rows)
    kanon.materialize(con, "src", 4, "rel")
    con.execute("INSERT INTO src VALUES (99, NULL, NULL, NULL, NULL, 'y')")
    con.execute("INSERT INTO src SELECT * FROM src WHERE s < 3")  # duplicate rows
    kanon.refresh(con, "rel")
    expected = _normalized(con.execute("SELECT * FROM rel").fetchall())
    assert len(expected) == 44
    statement = kanon.to_sql(con, "rel", "postgres", directory=tmp_path)
    con.execute(f"COPY src TO '{tmp_path / 'src'}.parquet' (FORMAT parquet)")
    assert _normalized(_in_postgres(postgres, _files(tmp_path), statement, "rel")) == expected


def test_export_errors(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    _load(con, "src", [(i, 20 + i % 3, "ab"[i % 2], 1.0, None, "x") for i in range(12)])
    con.execute("CREATE VIEW plain AS SELECT * FROM src")
    with pytest.raises(ConfigError, match=r"not a release made by kanon\.materialize"):
        kanon.to_sql(con, "plain", "postgres", directory=tmp_path)
    kanon.materialize(con, "src", 3, "rel", method="mondrian")
    kanon.to_sql(con, "rel", "postgres", directory=tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ConfigError, match="does not replace files"):
        kanon.to_sql(con, "rel", "spark", directory=tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before
    with pytest.raises(InvalidInputError, match="forest releases only"):
        kanon.refresh(con, "rel")


def test_file_names_encode_what_a_file_system_cannot_hold(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _load(con, "src", [(i, 20 + i % 3, "ab"[i % 2], 1.0, None, "x") for i in range(12)])
    name = 'r/e:l* "50%"'
    kanon.materialize(con, "src", 3, name)
    kanon.to_sql(con, name, "postgres", directory=tmp_path)
    encoded = "r%2Fe%3Al%2A %2250%25%22"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{encoded}.sql",
        f"{encoded}__kanon_labels.parquet",
        f"{encoded}__kanon_rows.parquet",
    ]
