"""A table name means, to the planner, exactly the relation DuckDB's binder reads.

The SQL macros plan through a cursor of their own, whose ``USE``, ``search_path`` and
TEMP objects are not the caller's. Each case sets up two relations of one name with a
column ``ssn`` that only one of them configures as an identifier, and checks which
relation the release read and that its identifier is ``'*'``.
"""

from __future__ import annotations

import duckdb
import pytest

import kanon
from kanon.exceptions import ConfigError

ROWS = 12


def _make(con: duckdb.DuckDBPyConnection, name: str, who: str) -> None:
    con.execute(
        f"CREATE TABLE {name} AS SELECT i % 3 AS a, '{who}' AS who, "
        f"'{who}-secret-' || i AS ssn FROM range({ROWS}) r(i)"
    )


def _two_tables(con: duckdb.DuckDBPyConnection, other: str) -> None:
    """``main.t`` releases ``ssn`` unchanged; ``{other}.t`` declares it an identifier."""
    _make(con, "main.t", "main")
    _make(con, f"{other}.t", other)
    kanon.configure(con, "main.t", qi=["a"], insensitive=["ssn", "who"])
    kanon.configure(con, f"{other}.t", qi=["a"], identifiers=["ssn"], insensitive=["who"])


def _released(con: duckdb.DuckDBPyConnection, sql: str) -> set[tuple[str, str]]:
    return {(str(w), str(s)) for w, s in con.execute(f"SELECT who, ssn FROM ({sql})").fetchall()}


@pytest.mark.parametrize(
    "switch", ["USE s", "SET search_path = 's'", "SET schema = 's'", "SET search_path = 'memory.s'"]
)
def test_a_switched_schema_plans_and_reads_the_same_table(
    con: duckdb.DuckDBPyConnection, switch: str
) -> None:
    con.execute("CREATE SCHEMA s")
    _two_tables(con, "s")
    con.execute(switch)
    assert _released(con, "SELECT * FROM kanon('t', k := 3)") == {("s", "*")}
    # The other macros read the same table.
    ((rows,),) = con.execute("SELECT rows FROM kanon_check('t', qi := ['a'])").fetchall()
    assert rows == ROWS
    con.execute("UPDATE s.t SET a = 0 WHERE a = 1")  # only s.t changes
    classes = con.execute("SELECT count(*) FROM kanon_classes('t', qi := ['a'])").fetchall()
    assert classes == [(2,)]
    # Back in main: main.t, which releases ssn as configured.
    con.execute("USE memory.main")
    assert {w for w, _ in _released(con, "SELECT * FROM kanon('t', k := 3)")} == {"main"}


def test_an_attached_catalog_in_use_plans_and_reads_its_table(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute("ATTACH ':memory:' AS o")
    _two_tables(con, "o.main")
    con.execute("USE o")
    assert _released(con, "SELECT * FROM kanon('t', k := 3)") == {("o.main", "*")}


def test_a_table_only_in_another_schema_is_unknown_unless_in_use(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute("CREATE SCHEMA s")
    _make(con, "s.only_here", "s")
    kanon.configure(con, "s.only_here", qi=["a"], identifiers=["ssn"], insensitive=["who"])
    with pytest.raises(duckdb.Error, match="unknown table 'only_here'"):
        con.execute("SELECT * FROM kanon('only_here', k := 3)").fetchall()
    con.execute("USE s")
    assert _released(con, "SELECT * FROM kanon('only_here', k := 3)") == {("s", "*")}


def test_a_temp_table_shadowing_a_persistent_one_is_refused_by_the_macros(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _make(con, "t", "main")
    kanon.configure(con, "t", qi=["a"], identifiers=["ssn"], insensitive=["who"])
    con.execute(
        f"CREATE TEMP TABLE t AS SELECT i % 3 AS a, 'temp' AS who, 'x' || i AS ssn "
        f"FROM range({ROWS}) r(i)"
    )
    for sql in (
        "SELECT * FROM kanon('t', k := 3)",
        "SELECT * FROM kanon('main.t', k := 3)",
        "SELECT * FROM kanon_check('t', qi := ['a'])",
    ):
        with pytest.raises(duckdb.Error, match="names a TEMP table or view of this connection"):
            con.execute(sql).fetchall()
    # Qualified by its catalog, the persistent table is meant, and read.
    got = _released(con, "SELECT * FROM kanon('memory.main.t', k := 3)")
    assert got == {("main", "*")}
    # The Python API reads on the caller's connection: the TEMP table, as DuckDB would.
    out = kanon.anonymize("t", 3, ["a"], con=con, identifiers=["ssn"], insensitive=["who"])
    assert {r[0] for r in out.select("who").fetchall()} == {"temp"}


def test_a_temp_only_table_is_refused_with_the_reason(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TEMP TABLE tmp AS SELECT i % 3 AS a FROM range({ROWS}) r(i)")
    with pytest.raises(duckdb.Error, match="not TEMP tables"):
        con.execute("SELECT * FROM kanon('tmp', k := 3, qi := ['a'])").fetchall()


def test_a_quoted_schema_with_a_dot_in_use(con: duckdb.DuckDBPyConnection) -> None:
    con.execute('CREATE SCHEMA "we.ird"')
    _two_tables(con, '"we.ird"')
    con.execute('USE "we.ird"')
    assert _released(con, "SELECT * FROM kanon('t', k := 3)") == {('"we.ird"', "*")}


def test_the_python_api_resolves_as_the_connection_does(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE SCHEMA s")
    _two_tables(con, "s")
    con.execute("USE s")
    out = kanon.anonymize("t", 3, con=con)
    assert {tuple(r) for r in out.select("who, ssn").fetchall()} == {("s", "*")}
    with pytest.raises(ConfigError, match="unknown table"):
        kanon.anonymize("nowhere", 3, ["a"], con=con)


def test_a_transaction_with_uncommitted_writes_is_refused_with_the_way_out(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(f"CREATE TABLE t AS SELECT i % 4 AS a, i % 3 AS b FROM range({ROWS}) r(i)")
    sql = "SELECT count(*) FROM kanon('t', k := 3, qi := ['a', 'b'])"
    for write in ("INSERT INTO t VALUES (99, 1)", "INSERT INTO t VALUES (1, 1)"):
        con.execute("BEGIN")
        con.execute(write)
        with pytest.raises(duckdb.Error, match=r"after COMMIT .*ROLLBACK.*Python API"):
            con.execute(sql).fetchall()
        con.execute("ROLLBACK")
    # The Python API plans in the caller's transaction: its uncommitted rows count.
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (99, 1), (99, 1), (99, 1)")
    out = kanon.anonymize("t", 3, ["a", "b"], con=con)
    assert out.aggregate("count(*)").fetchall() == [(ROWS + 3,)]
    con.execute("COMMIT")
    assert con.execute(sql).fetchall() == [(ROWS + 3,)]
