"""No undeclared column carries the quasi-identifiers, for every method and entry point.

A column without a role passes through only if, beside the released QIs, every class
stays at least k rows. The oracle is a plain ``GROUP BY`` over the release made with
``keep_undeclared`` (the same release: the methods are deterministic): a release
without it must succeed exactly when that check passes, and must then hold the same
rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.cli import commands as cli
from kanon.exceptions import ConfigError
from tests.strategies import tables

if TYPE_CHECKING:
    from pathlib import Path

QI = ["q0", "q1", "q2"]
METHODS = ["forest", "forest_paper", "mondrian", "optimal", "datafly", "mu_argus", "iterated"]
#: Columns derived from the QIs, and two that carry nothing.
DERIVED = {
    "copy": "q0",
    "concat": "coalesce(CAST(q0 AS VARCHAR), '-') || '/' || coalesce(q1, '-')",
    "hash": "hash(q1, q2) % 1000",
    "coarse": "q0 // 2",
    "note": "'age ' || coalesce(CAST(q0 AS VARCHAR), '?') || ', zip ' || coalesce(q1, '?')",
    "constant": "'same'",
    "nulls": "NULL::VARCHAR",
}
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


def _load(con: duckdb.DuckDBPyConnection, data: dict[str, list[object]], derived: str) -> None:
    con.execute("DROP TABLE IF EXISTS t")
    con.execute("DROP TABLE IF EXISTS src")
    arrow = pa.table(data)  # noqa: F841  (read by the replacement scan below)
    con.execute("CREATE TABLE src AS SELECT * FROM arrow")
    con.execute(f"CREATE TABLE t AS SELECT q0, q1, q2, s, {DERIVED[derived]} AS d FROM src")


def _smallest(con: duckdb.DuckDBPyConnection, release: str) -> int:
    """The smallest class of the released QIs and ``d``: the independent check."""
    ((n,),) = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM ({release}) GROUP BY q0, q1, q2, d)"
    ).fetchall()
    return int(n)


def _kept(con: duckdb.DuckDBPyConnection, k: int, method: str) -> str | None:
    """The release with ``d`` kept unchanged, as a table; None if the method finds none."""
    try:
        con.execute(
            "CREATE OR REPLACE TABLE kept AS SELECT * FROM kanon('t', "
            f"k := {k}, qi := {QI}, sensitive := ['s'], method := '{method}', "
            "keep_undeclared := true)"
        )
    except duckdb.InvalidInputException as err:
        found = str(err)
    else:
        return "SELECT * FROM kept"
    assert "no generalization satisfies" in found or "k =" in found
    return None


@settings(max_examples=30, **SETTINGS)
@given(
    data=tables(max_rows=30),
    derived=st.sampled_from(sorted(DERIVED)),
    method=st.sampled_from(METHODS),
    k=st.integers(2, 4),
    entry=st.sampled_from(["sql", "python", "materialize"]),
)
def test_an_undeclared_column_passes_exactly_when_it_keeps_every_class_k(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[object]],
    derived: str,
    method: str,
    k: int,
    entry: str,
) -> None:
    if len(data["q0"]) < k:
        return
    _load(con, data, derived)
    kept = _kept(con, k, method)
    if kept is None:
        return
    passes = _smallest(con, kept) >= k
    options = {"sensitive": ["s"], "method": method}
    objects = (
        "SELECT table_name FROM duckdb_tables() UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1"
    )
    before = con.execute(objects).fetchall()
    refused = None
    try:
        if entry == "sql":
            out = con.sql(
                f"SELECT * FROM kanon('t', k := {k}, qi := {QI}, sensitive := ['s'], "
                f"method := '{method}')"
            ).to_arrow_table()
        elif entry == "python":
            out = kanon.anonymize(con.table("t").to_arrow_table(), k, QI, **options)
        else:
            if method in ("datafly", "mu_argus"):
                return  # materialize stores the local methods and optimal only
            kanon.materialize(con, "t", k, "rel", QI, **options)
            out = con.sql("SELECT * FROM rel").to_arrow_table()
    except (duckdb.Error, ConfigError) as err:
        refused = str(err)
    if refused is not None:
        assert not passes, f"refused a release that passes: {refused}"
        assert "'d' (smallest class:" in refused
        # Nothing of the refused release is left, and an earlier example's release of
        # the same name (the connection serves every example) is as it was.
        assert con.execute(objects).fetchall() == before
        return
    assert passes, "released a column that carries the quasi-identifiers"
    con.register("out_release", out)
    assert _smallest(con, "SELECT * FROM out_release") >= k
    assert con.execute("SELECT count(*) FROM out_release").fetchall() == [(len(data["q0"]),)]
    con.unregister("out_release")


def test_the_issue_cases_are_refused_naming_the_column_and_class(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Every QI combination held by 2 rows, k = 5: a free-text column repeating the QIs.
    con.execute(
        "CREATE TABLE t AS SELECT i % 250 AS age, (i // 250) % 2 AS zip, "
        "'patient aged ' || (i % 250) || ' in ' || ((i // 250) % 2) AS memo, "
        "i % 250 AS age_copy, CASE WHEN i < 9 THEN 'u' || i ELSE 'common' END AS rare "
        "FROM range(1000) r(i)"
    )
    base = "SELECT * FROM kanon('t', k := 5, qi := ['age', 'zip']"
    for column, others in (
        ("memo", "'age_copy', 'rare'"),
        ("age_copy", "'memo', 'rare'"),
        ("rare", "'memo', 'age_copy'"),  # 9 unique values in 1,000 rows: 0.9 %
    ):
        with pytest.raises(duckdb.Error, match=rf"'{column}' \(smallest class: (at most )?\d+\)"):
            con.execute(f"{base}, insensitive := [{others}])").fetchall()
    # Declared, or kept on purpose, they are released.
    released = con.execute(f"{base}, insensitive := ['memo', 'age_copy', 'rare'])").fetchall()
    assert len(released) == 1000
    assert len(con.execute(f"{base}, keep_undeclared := true)").fetchall()) == 1000


def test_the_check_runs_on_every_statement(con: duckdb.DuckDBPyConnection) -> None:
    """No result is reused: a column made identifying just before is refused at once."""
    con.execute("CREATE TABLE t AS SELECT i % 10 AS age, 'same' AS memo FROM range(100) r(i)")
    sql = "SELECT count(*) FROM kanon('t', k := 5, qi := ['age'])"
    assert con.execute(sql).fetchall() == [(100,)]
    con.execute("UPDATE t SET memo = 'row ' || rowid")
    with pytest.raises(duckdb.Error, match=r"'memo' .smallest class: (at most )?1"):
        con.execute(sql).fetchall()


def test_refresh_checks_the_new_rows(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT 20 + i % 10 AS age, 'd' || (i % 2) AS dx, "
        "'same' AS memo FROM range(200) r(i)"
    )
    kanon.materialize(con, "t", 5, "rel", ["age"], sensitive=["dx"])
    con.execute("INSERT INTO t SELECT 20 + i % 10, 'd0', 'new ' || i FROM range(40) r(i)")
    with pytest.raises(ConfigError, match=r"'memo' .smallest class: (at most )?1"):
        kanon.refresh(con, "rel")
    # The view still shows the release as it was, without the new rows.
    assert con.execute("SELECT count(*), count(DISTINCT memo) FROM rel").fetchall() == [(200, 1)]


def test_the_cli_refuses_a_column_that_carries_the_qis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = tmp_path / "people.csv", tmp_path / "out.csv"
    duckdb.execute(
        "COPY (SELECT i % 50 AS age, 'aged ' || (i % 50) AS memo FROM range(200) r(i)) "
        f"TO '{src}' (HEADER)"
    )
    args = ["anonymize", str(src), "--k", "5", "--qi", "age", "--out", str(out)]
    assert cli.main(args) != 0
    assert "'memo' (smallest class:" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main([*args, "--insensitive", "memo"]) == 0


def test_a_global_view_never_lets_an_undeclared_column_carry_the_qis_later(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """The optimal view re-applies its transformation on every read: changed rows count."""
    con.execute("CREATE TABLE t AS SELECT 20 + i % 10 AS age, 'same' AS memo FROM range(100) r(i)")
    kanon.materialize(con, "t", 5, "rel", ["age"], method="optimal")
    assert con.execute("SELECT count(*) FROM rel").fetchall() == [(100,)]
    con.execute("UPDATE t SET memo = 'row ' || rowid WHERE rowid < 3")
    smallest = con.execute(
        "SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY age, memo)"
    ).fetchall()
    assert smallest[0][0] >= 5
    assert con.execute("SELECT count(*) FROM rel WHERE memo LIKE 'row %'").fetchall() == [(0,)]
