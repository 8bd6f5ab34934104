"""kanon.to_sql: a global-release view transpiled to PostgreSQL gives DuckDB's rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

import kanon
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.sql.quote import ident, literal
from tests import pg
from tests.strategies import INTS, TEXT

if TYPE_CHECKING:
    from collections.abc import Sequence

postgres = pg.postgres  # the session fixture: a throwaway PostgreSQL server

SOURCE = 'so"urce; DROP TABLE x; --'
AGE = "age"
CITY = 'we"ird col'  # the text quasi-identifier: hostile name
KEPT = [("cité", "VARCHAR"), ("n", "INTEGER")]
VIEW = "release 50%"
PG_TYPES = {"INTEGER": "integer", "VARCHAR": "text"}
ROOT = "*"

Row = tuple[Any, ...]
Table = tuple[list[tuple[str, str]], list[Row]]

TEXTS = st.one_of(TEXT, st.sampled_from(["back\\slash", "50%", "ß", "tab\there"]))
MASKS = st.sampled_from(["*", "it's", "ü\\", '"x"', "%s", ""])


def age_hierarchy(values: Sequence[int]) -> Table:
    """ARX wide format: level_0 the INTEGER value, pairs, sign, a single root."""
    rows = [
        (v, f"[{v - v % 2}-{v - v % 2 + 1}]", "<0" if v < 0 else ">=0", ROOT)
        for v in sorted(set(values))
    ]
    columns = [("level_0", "INTEGER")] + [(f"level_{i}", "VARCHAR") for i in (1, 2, 3)]
    return columns, rows


def city_hierarchy(values: Sequence[str]) -> Table:
    """ARX wide format: level_0 the VARCHAR value, its first letter, a single root."""
    rows = [(v, v[:1] + "…", ROOT) for v in sorted(set(values))]
    return [("level_0", "VARCHAR"), ("level_1", "VARCHAR"), ("level_2", "VARCHAR")], rows


def source_table(rows: list[Row]) -> Table:
    return [(AGE, "INTEGER"), (CITY, "VARCHAR"), *KEPT], rows


def release_sql(levels: dict[str, int], k: int, mask: str) -> str:
    """The view of a global release: labels by LEFT JOIN, classes under k masked."""
    joins, labels = [], {}
    for j, (column, level) in enumerate(levels.items()):
        h = f"h{j}"
        joins.append(
            f"LEFT JOIN {ident('h_' + column)} AS {h} "
            f"ON CAST(s.{ident(column)} AS VARCHAR) = CAST({h}.level_0 AS VARCHAR)"
        )
        labels[column] = f"CAST({h}.{ident(f'level_{level}')} AS VARCHAR)"
    size = f"count(*) OVER (PARTITION BY {', '.join(labels.values())})"
    columns = [f"s.{ident(name)}" for name, _ in KEPT] + [
        f"CASE WHEN {label} IS NULL THEN NULL WHEN {size} < {literal(k)} "
        f"THEN {literal(mask)} ELSE {label} END AS {ident(column)}"
        for column, label in labels.items()
    ]
    return (
        f"CREATE VIEW {ident(VIEW)} AS SELECT {', '.join(columns)} "
        f"FROM {ident(SOURCE)} AS s {' '.join(joins)}"
    )


def tables_for(rows: list[Row]) -> dict[str, Table]:
    return {
        SOURCE: source_table(rows),
        "h_" + AGE: age_hierarchy([r[0] for r in rows if r[0] is not None]),
        "h_" + CITY: city_hierarchy([r[1] for r in rows if r[1] is not None]),
    }


def load_duckdb(con: duckdb.DuckDBPyConnection, tables: dict[str, Table]) -> None:
    for name, (columns, rows) in tables.items():
        spec = ", ".join(f"{ident(c)} {t}" for c, t in columns)
        con.execute(f"CREATE TABLE {ident(name)} ({spec})")
        if rows:
            marks = ", ".join("?" for _ in columns)
            con.executemany(f"INSERT INTO {ident(name)} VALUES ({marks})", rows)


def load_postgres(conn: Any, tables: dict[str, Table]) -> None:
    for name, (columns, rows) in tables.items():
        spec = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(PG_TYPES[t])) for c, t in columns
        )
        conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), spec))
        if rows:
            insert = sql.SQL("INSERT INTO {} VALUES ({})").format(
                sql.Identifier(name), sql.SQL(", ").join(sql.Placeholder() * len(columns))
            )
            with conn.cursor() as cur:
                cur.executemany(insert, rows)


def normalized(rows: Sequence[Sequence[Any]]) -> list[tuple[str | None, ...]]:
    """Rows as tuples of str/None, sorted (NULLs last in each position)."""
    out = [tuple(None if v is None else str(v) for v in row) for row in rows]
    return sorted(out, key=lambda row: [(v is None, v or "") for v in row])


def duckdb_release(
    rows: list[Row], levels: dict[str, int], k: int, mask: str
) -> tuple[duckdb.DuckDBPyConnection, list[str], list[tuple[str | None, ...]]]:
    con = duckdb.connect()
    load_duckdb(con, tables_for(rows))
    con.execute(release_sql(levels, k, mask))
    result = con.execute(f"SELECT * FROM {ident(VIEW)}")
    names = [d[0] for d in result.description]
    return con, names, normalized(result.fetchall())


def postgres_release(
    server: pg.Postgres, rows: list[Row], view_sql: str
) -> tuple[list[str], list[tuple[str | None, ...]]]:
    with server.connect() as conn, conn.transaction(force_rollback=True):
        load_postgres(conn, tables_for(rows))
        conn.execute(view_sql)  # no parameters: psycopg sends the text as it is
        cur = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(VIEW)))
        names = [d.name for d in cur.description or []]
        return names, normalized(cur.fetchall())


ROWS: list[Row] = [
    (34, "O'Brien", "ü", 1),
    (34, "O'Brien", "ü", 1),
    (35, "O'Brien", "x", 2),
    (None, "日本", None, 3),
    (36, None, "y", 4),
    (41, "Zürich", "z", 5),
    (-3, '"q"', "", 6),
    (-4, '"q"', "", 6),
]


def test_release_view_gives_the_same_rows_in_postgres(postgres: pg.Postgres) -> None:
    con, names, expected = duckdb_release(ROWS, {AGE: 1, CITY: 1}, k=2, mask="*")
    view_sql = kanon.to_sql(con, VIEW, "postgres")
    assert "COUNT(*)" in view_sql
    assert "COUNT()" not in view_sql
    assert names == ["cité", "n", AGE, CITY]
    # NULL stays NULL, the other labels of a class under k are masked, larger classes kept.
    assert ("ü", "1", "[34-35]", "O…") in expected
    assert (None, "3", None, "*") in expected
    assert ("y", "4", "*", None) in expected
    assert ("z", "5", "*", "*") in expected
    assert ("", "6", "[-4--3]", '"…') in expected
    assert postgres_release(postgres, ROWS, view_sql) == (names, expected)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.none(), INTS),
            st.one_of(st.none(), TEXTS),
            st.one_of(st.none(), TEXTS),
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
        ),
        min_size=1,
        max_size=30,
    ),
    age_level=st.integers(0, 3),
    city_level=st.integers(0, 2),
    k=st.integers(1, 4),
    mask=MASKS,
)
def test_transpiled_release_matches_duckdb(
    postgres: pg.Postgres,
    rows: list[Row],
    age_level: int,
    city_level: int,
    k: int,
    mask: str,
) -> None:
    levels = {AGE: age_level, CITY: city_level}
    con, names, expected = duckdb_release(rows, levels, k, mask)
    got = postgres_release(postgres, rows, kanon.to_sql(con, VIEW, "postgres"))
    assert got == (names, expected)


def test_other_dialects_differ_and_parse_back() -> None:
    con, _, _ = duckdb_release(ROWS, {AGE: 2, CITY: 0}, k=3, mask="it's")
    # A second view whose casts each dialect spells its own way (INT64, BIGINT, NUMBER...).
    con.execute(
        f"CREATE VIEW typed AS SELECT CAST(n AS BIGINT) AS n, CAST({ident(CITY)} AS VARCHAR) "
        f"AS c, 'it''s' AS q FROM {ident(SOURCE)}"
    )
    dialects = ("postgres", "snowflake", "bigquery", "spark")
    typed = {d: kanon.to_sql(con, "typed", d) for d in dialects}
    assert len(set(typed.values())) == len(dialects), typed
    for view in (VIEW, "typed"):
        for dialect in dialects:
            text = kanon.to_sql(con, view, dialect)
            assert dialect == "postgres" or text != kanon.to_sql(con, view, "postgres")
            tree = sqlglot.parse_one(text, read=dialect)
            assert isinstance(tree, sqlglot.exp.Create)
            assert tree.kind == "VIEW"
            assert tree.find(sqlglot.exp.Table) is not None
            assert view == VIEW or "COUNT(*)" not in text
            assert view != VIEW or "COUNT(*)" in text


def test_duckdb_dialect_recreates_the_view() -> None:
    con, _, expected = duckdb_release(ROWS, {AGE: 1, CITY: 2}, k=2, mask="*")
    text = kanon.to_sql(con, VIEW, "duckdb")
    con.execute(f"DROP VIEW {ident(VIEW)}")
    con.execute(text)
    assert normalized(con.execute(f"SELECT * FROM {ident(VIEW)}").fetchall()) == expected


def test_unknown_dialect_names_the_allowed_values() -> None:
    con, _, _ = duckdb_release(ROWS, {AGE: 1, CITY: 1}, k=2, mask="*")
    with pytest.raises(InvalidInputError, match="tsql") as err:
        kanon.to_sql(con, VIEW, "tsql")
    for dialect in ("postgres", "snowflake", "bigquery", "spark", "duckdb"):
        assert repr(dialect) in str(err.value)


@pytest.mark.parametrize("name", ["nope", "RELEASE 50%", SOURCE, "x' OR 1=1 --", "duckdb_tables"])
def test_unknown_view_is_a_config_error(name: str) -> None:
    con, _, _ = duckdb_release(ROWS, {AGE: 1, CITY: 1}, k=2, mask="*")
    with pytest.raises(ConfigError) as err:
        kanon.to_sql(con, name)
    assert repr(name) in str(err.value)


def test_name_and_dialect_must_be_strings() -> None:
    con = duckdb.connect()
    with pytest.raises(InvalidInputError, match="name"):
        kanon.to_sql(con, 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="dialect"):
        kanon.to_sql(con, "v", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "construct"),
    [
        ("SELECT a, count(*) AS n FROM t GROUP BY ALL", "GROUP BY ALL"),
        ("SELECT a FROM t ORDER BY ALL", "ORDER BY ALL"),
        ("SELECT [1, 2, 3] AS l FROM t", "list literal"),
        ("SELECT list_value(a, a) AS l FROM t", "list literal"),
        ("SELECT b[1] AS c FROM t", "indexing"),
        ("SELECT COLUMNS('a') FROM t", "COLUMNS(...)"),
        ("SELECT * FROM query_table('t')", "query_table"),
        ("SELECT * FROM query('SELECT 1 AS a')", "query"),
        ("SELECT {'x': a} AS s FROM t", "struct literal"),
        ("SELECT * EXCLUDE (a) FROM t", "EXCLUDE"),
        ("SELECT t.a FROM t POSITIONAL JOIN t AS u", "POSITIONAL JOIN"),
        ("SELECT a FROM t LIMIT 10%", "LIMIT n%"),
        ("SELECT CAST(a AS INTEGER[]) AS l FROM t", "INT[] type"),
        ("SELECT a FROM t QUALIFY count(*) OVER (PARTITION BY a) >= 2", "QUALIFY"),
        ("SELECT a FROM t WHERE b SIMILAR TO 'x.*'", "SIMILAR TO"),
    ],
)
def test_duckdb_only_constructs_are_refused(query: str, construct: str) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    con.execute(f"CREATE VIEW v AS {query}")
    with pytest.raises(InvalidInputError, match="DuckDB-only") as err:
        kanon.to_sql(con, "v", "postgres")
    assert construct in str(err.value)
    assert "'v'" in str(err.value)
    assert kanon.to_sql(con, "v", "duckdb").startswith('CREATE VIEW "v"')


def test_qualify_is_kept_where_the_target_has_it() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER)")
    con.execute("CREATE VIEW v AS SELECT a FROM t QUALIFY count(*) OVER (PARTITION BY a) >= 2")
    for dialect in ("snowflake", "bigquery"):
        assert "QUALIFY" in kanon.to_sql(con, "v", dialect)
    with pytest.raises(InvalidInputError, match="QUALIFY"):
        kanon.to_sql(con, "v", "spark")


def test_count_star_aggregate_is_rewritten() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a INTEGER)")
    con.execute("CREATE VIEW v AS SELECT a, count(*) AS n FROM t GROUP BY a")
    assert kanon.to_sql(con, "v") == (
        'CREATE VIEW "v" AS SELECT "a", COUNT(*) AS "n" FROM "t" GROUP BY "a"'
    )


def test_view_in_current_schema_wins_and_ambiguity_is_refused() -> None:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA s1; CREATE SCHEMA s2")
    con.execute("CREATE VIEW s1.v AS SELECT 1 AS one; CREATE VIEW s2.v AS SELECT 2 AS two")
    with pytest.raises(ConfigError, match="several schemas"):
        kanon.to_sql(con, "v")
    con.execute("CREATE VIEW main.v AS SELECT 3 AS three")
    assert kanon.to_sql(con, "v") == 'CREATE VIEW "v" AS SELECT 3 AS "three"'
