"""kanon.install / kanon.configure: idempotence, config tables, validation, atomicity."""

from __future__ import annotations

import duckdb
import pytest

import kanon
from kanon import hierarchy
from kanon.exceptions import ConfigError, HierarchyError


@pytest.fixture
def people(con: duckdb.DuckDBPyConnection) -> str:
    con.execute(
        "CREATE TABLE people AS SELECT * FROM (VALUES "
        "(1, 'Ann', 34, '53711', 'flu', [1, 2]), (2, 'Bob', 35, '53712', 'hiv', [3]), "
        "(3, 'Cy', 36, '53703', 'flu', [4])) AS v(id, name, age, zip, dx, tags)"
    )
    return "people"


def _config(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT column_name, role, hierarchy, weight, priority FROM kanon_columns "
        "ORDER BY column_name"
    ).fetchall()


def test_install_is_idempotent_and_creates_config() -> None:
    with duckdb.connect() as con:
        kanon.install(con)
        con.execute(
            "INSERT INTO kanon_columns (table_name, column_name, role) VALUES ('t', 'a', 'qi')"
        )
        kanon.install(con)
        assert con.execute("SELECT count(*) FROM kanon_columns").fetchone() == (1,)
        names = {
            r[0]
            for r in con.execute(
                "SELECT function_name FROM duckdb_functions() WHERE function_name LIKE 'kanon%'"
            ).fetchall()
        }
        assert {"kanon_check", "kanon_classes", "kanon_class_stats"} <= names


def test_configure_writes_roles(con: duckdb.DuckDBPyConnection, people: str) -> None:
    hierarchy.mask(con, "h_zip", table=people, column="zip")
    kanon.configure(
        con,
        people,
        qi={"age": None, "zip": "h_zip"},
        identifiers=["id", "name"],
        sensitive=["dx"],
        weights={"zip": 2.0},
        priorities={"age": 1},
    )
    assert _config(con) == [
        ("age", "qi", None, 1.0, 1),
        ("dx", "sensitive", None, 1.0, 0),
        ("id", "identifier", None, 1.0, 0),
        ("name", "identifier", None, 1.0, 0),
        ("zip", "qi", "h_zip", 2.0, 0),
    ]
    kanon.configure(con, people, qi=["age"])  # replaces the table's configuration
    assert _config(con) == [("age", "qi", None, 1.0, 0)]


def test_plain_sql_inserts_work(con: duckdb.DuckDBPyConnection, people: str) -> None:
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role) VALUES "
        "('people', 'zip', 'qi'), ('people', 'dx', 'sensitive')"
    )
    row = con.execute("SELECT k, classes, l_distinct FROM kanon_check('people')").fetchone()
    assert row == (1, 3, 1)
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO kanon_columns (table_name, column_name, role) "
            "VALUES ('people', 'age', 'secret')"
        )


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"qi": ["nope"]}, ConfigError, "has no column 'nope'"),
        ({"qi": ["age"], "sensitive": ["age"]}, ConfigError, "two roles"),
        ({"qi": {"zip": "no_such_hierarchy"}}, ConfigError, "no_such_hierarchy"),
        ({"qi": ["tags"]}, ConfigError, "no default generalizer"),
        ({"qi": ["age"], "weights": {"zip": 2.0}}, ConfigError, "not a quasi-identifier"),
        ({"qi": ["age"], "weights": {"age": 0.0}}, ConfigError, "positive"),
        ({"qi": {"zip": "h_bad"}}, HierarchyError, "53703"),
    ],
)
def test_configure_rejects_and_writes_nothing(
    con: duckdb.DuckDBPyConnection,
    people: str,
    kwargs: dict[str, object],
    error: type[Exception],
    fragment: str,
) -> None:
    kanon.configure(con, people, qi=["age"])
    before = _config(con)
    con.execute(
        "CREATE TABLE h_bad AS SELECT * FROM (VALUES ('53711', '5371*', '*'), "
        "('53712', '5371*', '*')) AS v(level_0, level_1, level_2)"
    )
    with pytest.raises(error, match=fragment):
        kanon.configure(con, people, **kwargs)  # type: ignore[arg-type]
    assert _config(con) == before


def test_unknown_table(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ConfigError, match="unknown table 'ghost'"):
        kanon.configure(con, "ghost", qi=["a"])


def test_configure_refuses_a_reserved_hierarchy_name(
    con: duckdb.DuckDBPyConnection, people: str
) -> None:
    # Every later call refuses names in kanon's reserved namespace: configure refuses
    # them too, with the same message, rather than storing one (a hierarchy table named
    # so, or a hierarchy table with a column named so).
    hierarchy.mask(con, "h_zip", table=people, column="zip")
    con.execute("CREATE TABLE __kanon_h_zip AS SELECT * FROM h_zip")
    con.execute("CREATE TABLE h_cols AS SELECT * RENAME (level_2 AS __kanon_top) FROM h_zip")
    for name in ("__kanon_h_zip", "main.__kanon_h_zip", "__KANON_h_zip", "h_cols"):
        kanon.configure(con, people, qi=["age", "zip"])
        con.execute("UPDATE kanon_columns SET hierarchy = ? WHERE column_name = 'zip'", [name])
        with pytest.raises(ConfigError) as later:
            kanon.anonymize(people, 2, con=con)
        kanon.configure(con, people, qi=["age", "zip"])
        before = _config(con)
        with pytest.raises(ConfigError) as err:
            kanon.configure(con, people, qi={"age": None, "zip": name})
        assert str(err.value) == str(later.value)
        assert "'__kanon'" in str(err.value)
        assert "rename it" in str(err.value)
        assert _config(con) == before
