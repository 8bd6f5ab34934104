"""Column roles on every entry point: identifiers, undeclared identifying columns, names.

Issue 18, item 2: a configured identifier is never released however the table is named
or whatever ``qi`` says; every entry point (SQL, Python on tables, relations and frames,
the command line) declares identifiers, sensitive and insensitive columns; an undeclared
column whose values single out rows stops the release unless the call keeps it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.cli import commands as cli
from kanon.exceptions import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

METHODS = ["forest", "forest_paper", "mondrian", "optimal", "datafly", "mu_argus"]
ROWS = 60
K = 5


def _patients(con: duckdb.DuckDBPyConnection, table: str = "patients") -> None:
    """60 rows: unique names and SSNs, a low-cardinality diagnosis."""
    con.execute(
        f"CREATE TABLE {table} AS SELECT 'person ' || i AS name, (100300 + i)::VARCHAR AS ssn, "
        "20 + i % 40 AS age, (53700 + i % 12)::VARCHAR AS zip, 'd' || (i % 4) AS dx "
        f"FROM range({ROWS}) r(i)"
    )


def _assert_hidden(rows: list[tuple[Any, ...]], columns: list[str], hidden: list[str]) -> None:
    """The ``hidden`` columns are '*' in every released row."""
    assert len(rows) == ROWS
    for name in hidden:
        j = columns.index(name)
        assert {r[j] for r in rows} == {"*"}, name


def _assert_k(con: duckdb.DuckDBPyConnection, sql: str, qi: list[str]) -> None:
    """An independent GROUP BY over the released QIs: every class has at least K rows."""
    cols = ", ".join(qi)
    ((smallest,),) = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM ({sql}) GROUP BY {cols})"
    ).fetchall()
    assert smallest is not None
    assert smallest >= K


# --- a table is the same table however it is named -------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "name", ["patients", "main.patients", '"Patients"', "memory.main.patients", "MAIN.PATIENTS"]
)
def test_configured_identifiers_hidden_under_any_name(
    con: duckdb.DuckDBPyConnection, method: str, name: str
) -> None:
    _patients(con)
    kanon.configure(
        con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"], sensitive=["dx"]
    )
    sql = f"SELECT * FROM kanon({name!r}, k := {K}, method := {method!r})"
    rel = con.execute(sql)
    columns = [d[0] for d in rel.description]
    _assert_hidden(rel.fetchall(), columns, ["name", "ssn"])
    _assert_k(con, sql, ["age", "zip"])
    out = kanon.anonymize(name, k=K, con=con, method=method)
    _assert_hidden(out.fetchall(), out.columns, ["name", "ssn"])


@pytest.mark.parametrize("method", ["forest", "optimal"])
@pytest.mark.parametrize("name", ["main.patients", '"Patients"', "memory.main.patients"])
def test_materialize_finds_the_configuration_under_any_name(
    con: duckdb.DuckDBPyConnection, method: str, name: str
) -> None:
    _patients(con)
    kanon.configure(
        con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"], sensitive=["dx"]
    )
    kanon.materialize(con, name, K, "rel", method=method)
    rel = con.execute("SELECT * FROM rel")
    columns = [d[0] for d in rel.description]
    _assert_hidden(rel.fetchall(), columns, ["name", "ssn"])


def test_configure_under_a_qualified_name_is_found_under_the_bare_name(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _patients(con)
    kanon.configure(con, "MAIN.Patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    kanon.configure(con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    # One configuration: the second call replaced the first (same table).
    assert con.execute("SELECT count(*) FROM kanon_columns").fetchall() == [(4,)]
    rel = con.execute(f"SELECT * FROM kanon('patients', k := {K}, keep_undeclared := true)")
    columns = [d[0] for d in rel.description]
    _assert_hidden(rel.fetchall(), columns, ["name", "ssn"])


def test_old_rows_under_the_bare_name_still_count(con: duckdb.DuckDBPyConnection) -> None:
    _patients(con)
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role) VALUES "
        "('patients', 'age', 'qi'), ('patients', 'zip', 'qi'), ('Patients', 'name', 'identifier'), "
        "('PATIENTS', 'ssn', 'identifier'), ('patients', 'dx', 'sensitive')"
    )
    rel = con.execute(f"SELECT * FROM kanon('main.patients', k := {K})")
    columns = [d[0] for d in rel.description]
    _assert_hidden(rel.fetchall(), columns, ["name", "ssn"])


def test_a_table_of_the_same_name_in_another_schema_is_another_table(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _patients(con)
    con.execute("CREATE SCHEMA s2")
    _patients(con, "s2.patients")
    kanon.configure(con, "s2.patients", qi=["age"], identifiers=["name", "ssn"], sensitive=["dx"])
    with pytest.raises(duckdb.Error, match="no quasi-identifiers"):
        con.execute("SELECT * FROM kanon('patients', k := 5)")
    rel = con.execute("SELECT * FROM kanon('s2.patients', k := 5, insensitive := ['zip'])")
    _assert_hidden(rel.fetchall(), [d[0] for d in rel.description], ["name", "ssn"])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    flips=st.lists(st.booleans(), min_size=8, max_size=8),
    qualified=st.sampled_from(["", "main.", "memory.main."]),
    quoted=st.booleans(),
)
def test_random_spellings_of_the_name_find_the_configuration(
    con: duckdb.DuckDBPyConnection, flips: list[bool], qualified: str, quoted: bool
) -> None:
    con.execute("DROP TABLE IF EXISTS patients")
    _patients(con)
    kanon.configure(con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    bare = "".join(c.upper() if f else c for c, f in zip("patients", flips, strict=True))
    name = qualified + (f'"{bare}"' if quoted else bare)
    out = kanon.anonymize(name, k=K, con=con, sensitive=["dx"])
    _assert_hidden(out.fetchall(), out.columns, ["name", "ssn"])


# --- identifiers are never released -----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_configured_identifier_in_qi_is_refused(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    _patients(con)
    kanon.configure(con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    with pytest.raises(
        duckdb.Error, match=r"'ssn'.*configured as an identifier.*remove it from qi"
    ):
        con.execute(
            f"SELECT * FROM kanon('main.patients', k := {K}, qi := ['age', 'ssn'], "
            f"method := {method!r})"
        )
    with pytest.raises(ConfigError, match=r"'ssn'.*configured as an identifier"):
        kanon.anonymize("patients", k=K, qi=["age", "SSN"], con=con, method=method)


def test_identifier_given_another_role_in_the_call_is_refused(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _patients(con)
    kanon.configure(con, "patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    with pytest.raises(ConfigError, match=r"'name'.*configured as an identifier.*insensitive"):
        kanon.anonymize("patients", k=K, con=con, insensitive=["name"], sensitive=["dx"])
    with pytest.raises(ConfigError, match="two roles in this call"):
        kanon.anonymize("patients", k=K, con=con, qi=["age"], insensitive=["age"])


def test_config_rows_differing_in_case_with_two_roles_are_refused(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _patients(con)
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role) VALUES "
        "('patients', 'age', 'qi'), ('patients', 'SSN', 'qi'), ('patients', 'ssn', 'identifier')"
    )
    for method in METHODS:
        with pytest.raises(duckdb.Error, match=r"two roles.*case-insensitively"):
            con.execute(f"SELECT * FROM kanon('patients', k := {K}, method := {method!r})")
    with pytest.raises(ConfigError, match="two roles"):
        kanon.anonymize("patients", k=K, con=con, qi=["age"], keep_undeclared=True)


# --- every entry point declares roles ---------------------------------------------------


def _frame_rows() -> dict[str, list[Any]]:
    return {
        "name": [f"person {i}" for i in range(ROWS)],
        "ssn": [str(100300 + i) for i in range(ROWS)],
        "age": [20 + i % 40 for i in range(ROWS)],
        "dx": [f"d{i % 4}" for i in range(ROWS)],
        "note": [f"n{i}" for i in range(ROWS)],
    }


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "relation", "table"])
def test_python_inputs_declare_roles(con: duckdb.DuckDBPyConnection, kind: str) -> None:
    data: Any = pa.table(_frame_rows())
    if kind == "pandas":
        data = data.to_pandas()
    elif kind == "polars":
        data = pl.from_arrow(data)
    elif kind == "relation":
        data = con.from_arrow(data)
    elif kind == "table":
        con.register("frame", data)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
        data = "t"
    out = kanon.anonymize(
        data,
        k=K,
        qi=["age"],
        con=con,
        identifiers=["name", "ssn"],
        sensitive=["dx"],
        insensitive=["note"],
    )
    table = pa.table(out.to_arrow_table() if kind in ("relation", "table") else out)
    if kind == "pandas":
        assert isinstance(out, pd.DataFrame)
    for column in ("name", "ssn"):
        assert set(table.column(column).to_pylist()) == {"*"}
    assert sorted(table.column("note").to_pylist()) == sorted(_frame_rows()["note"])
    # Without the roles the unique columns stop the release, naming them and the fix.
    with pytest.raises(ConfigError, match=r"'name' .*'ssn' .*'note' .*keep_undeclared") as info:
        kanon.anonymize(data, k=K, qi=["age"], con=con, sensitive="dx")
    assert "identifiers" in str(info.value)
    kept = kanon.anonymize(data, k=K, qi=["age"], con=con, keep_undeclared=True)
    kept = pa.table(kept.to_arrow_table() if kind in ("relation", "table") else kept)
    assert sorted(kept.column("name").to_pylist()) == sorted(_frame_rows()["name"])


def test_sql_macro_declares_roles(con: duckdb.DuckDBPyConnection) -> None:
    _patients(con)
    sql = (
        f"SELECT * FROM kanon('patients', k := {K}, qi := ['age', 'zip'], "
        "identifiers := ['name', 'ssn'], sensitive := ['dx'])"
    )
    rel = con.execute(sql)
    _assert_hidden(rel.fetchall(), [d[0] for d in rel.description], ["name", "ssn"])
    _assert_k(con, sql, ["age", "zip"])
    with pytest.raises(duckdb.Error, match=r"'name' .*'ssn' .*keep_undeclared := true"):
        con.execute(f"SELECT * FROM kanon('patients', k := {K}, qi := ['age', 'zip'])")
    rel = con.execute(
        f"SELECT name FROM kanon('patients', k := {K}, qi := ['age', 'zip'], "
        "keep_undeclared := true)"
    )
    assert len({r[0] for r in rel.fetchall()}) == ROWS
    # A sensitive column for l-diversity is declared too.
    rel = con.execute(
        f"SELECT * FROM kanon('patients', k := {K}, qi := ['age', 'zip'], method := 'optimal', "
        "identifiers := ['name', 'ssn'], sensitive := 'dx', l := 2)"
    )
    _assert_hidden(rel.fetchall(), [d[0] for d in rel.description], ["name", "ssn"])


def test_explain_and_materialize_declare_roles(con: duckdb.DuckDBPyConnection) -> None:
    _patients(con)
    sql = kanon.explain(
        con, "patients", K, ["age", "zip"], identifiers=["name", "ssn"], sensitive=["dx"]
    )
    rel = con.execute(sql)
    _assert_hidden(rel.fetchall(), [d[0] for d in rel.description], ["name", "ssn"])
    with pytest.raises(ConfigError, match=r"'name' .*'ssn' "):
        kanon.explain(con, "patients", K, ["age", "zip"], sensitive=["dx"])
    for method in ("forest", "optimal"):
        kanon.materialize(
            con,
            "patients",
            K,
            f"rel_{method}",
            ["age", "zip"],
            method=method,
            identifiers=["name", "ssn"],
            insensitive=["dx"],
        )
        rel = con.execute(f"SELECT * FROM rel_{method}")
        _assert_hidden(rel.fetchall(), [d[0] for d in rel.description], ["name", "ssn"])
        with pytest.raises(ConfigError, match=r"'name' .*'ssn' "):
            kanon.materialize(con, "patients", K, "rel_x", ["age", "zip"], method=method)


def _write_csv(path: Path) -> None:
    duckdb.execute(
        "COPY (SELECT 'person ' || i AS name, 20 + i % 40 AS age, 'd' || (i % 4) AS dx "
        f"FROM range({ROWS}) r(i)) TO '{path}' (FORMAT csv, HEADER)"
    ).fetchall()


def test_cli_declares_roles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _write_csv(src)
    base = ["anonymize", str(src), "--k", str(K), "--qi", "age", "--out", str(out), "--quiet"]
    assert cli.main(base) == 2
    err = capsys.readouterr().err
    assert "'name'" in err
    assert "--identifiers" in err
    assert "--keep-undeclared" in err
    assert not out.exists()
    assert cli.main([*base, "--identifiers", "name", "--sensitive", "dx"]) == 0
    rows = duckdb.execute(f"SELECT name, dx FROM '{out}'").fetchall()
    assert {r[0] for r in rows} == {"*"}
    assert {r[1] for r in rows} == {"d0", "d1", "d2", "d3"}
    assert cli.main([*base, "--insensitive", "name,dx"]) == 0
    assert cli.main([*base, "--keep-undeclared"]) == 0
    names = duckdb.execute(f"SELECT count(DISTINCT name) FROM '{out}'").fetchall()
    assert names == [(ROWS,)]
    capsys.readouterr()
    assert cli.main(["check", str(src), "--qi", "age", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["identifying_columns"] == ["name"]
    assert cli.main(["check", str(src), "--qi", "age", "--identifiers", "name", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identifying_columns"] == []


# --- undeclared identifying columns -----------------------------------------------------


def test_rule_fires_on_identifying_columns_only(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT i AS rid, 'user' || i || '@mail.org' AS email, "
        "20 + i % 40 AS age, 'd' || (i % 7) AS dx, i % 2 = 0 AS flag, "
        "CASE WHEN i = 3 THEN 'rare' ELSE 'common' END AS one_rare, NULL::VARCHAR AS empty "
        "FROM range(1000) r(i)"
    )
    report = kanon.check("t", qi=["age"], con=con)
    assert report.identifying_columns == ("rid", "email")
    ((cols,),) = con.execute(
        "SELECT identifying_columns FROM kanon_check('t', qi := ['age'])"
    ).fetchall()
    assert cols == ["rid", "email"]
    with pytest.raises(
        duckdb.Error,
        match=r"carry the quasi-identifiers.*'rid' .*'email' ",
    ):
        con.execute("SELECT * FROM kanon('t', k := 5, qi := ['age'])")
    # Beside the QIs, a rare value (one_rare) or a diagnosis finer than the classes
    # (dx) carries them too; a column that age determines (flag) or all NULL does not.
    base = "SELECT count(*) FROM kanon('t', k := 5, qi := ['age'], identifiers := ['email']"
    with pytest.raises(duckdb.Error, match=r"'one_rare' \(smallest class: at most 1\)"):
        con.execute(f"{base}, insensitive := ['rid'])").fetchall()
    with pytest.raises(duckdb.Error, match=r"'dx' \(smallest class: [1-4]\)"):
        con.execute(f"{base}, insensitive := ['rid', 'one_rare'])").fetchall()
    out = con.execute(
        "SELECT count(*) FROM kanon('t', k := 5, qi := ['age'], identifiers := ['email'], "
        "insensitive := ['rid', 'one_rare'], sensitive := ['dx'])"
    ).fetchall()
    assert out == [(1000,)]
    # Declared roles in the configuration count as well.
    kanon.configure(
        con,
        "t",
        qi=["age"],
        identifiers=["rid", "email"],
        sensitive=["dx"],
        insensitive=["one_rare"],
    )
    assert kanon.check("t", con=con).identifying_columns == ()
    assert con.execute("SELECT count(*) FROM kanon('t', k := 5)").fetchall() == [(1000,)]


def test_one_rare_value_is_refused_though_few_values_are_unique(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT 20 + i % 9 AS age, 'd' || (i % 3) AS dx, "
        "CASE WHEN i = 0 THEN 'x' ELSE 'y' END AS one_off FROM range(30) r(i)"
    )
    # Not identifying by the check's rule (1 unique value), but the row holding 'x'
    # is singled out beside its age label.
    assert kanon.check("t", qi=["age"], con=con).identifying_columns == ()
    with pytest.raises(duckdb.Error, match=r"'one_off' \(smallest class: at most 1\)"):
        con.execute("SELECT count(*) FROM kanon('t', k := 3, qi := ['age'])").fetchall()
    # dx is a function of age: beside the QIs it splits no class, and passes.
    sql = "SELECT count(*) FROM kanon('t', k := 3, qi := ['age'], insensitive := ['one_off'])"
    assert con.execute(sql).fetchall() == [(30,)]


def test_search_releases_no_rows_and_is_not_refused(con: duckdb.DuckDBPyConnection) -> None:
    _patients(con)
    found = kanon.search("patients", k=K, qi=["age", "zip"], con=con)
    assert found.classes >= 1


def test_a_table_of_an_attached_database_under_its_names(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("ATTACH ':memory:' AS other")
    _patients(con, "other.main.patients")
    kanon.configure(con, "other.patients", qi=["age", "zip"], identifiers=["name", "ssn"])
    stored = con.execute("SELECT DISTINCT table_name FROM kanon_columns").fetchall()
    assert stored == [("other.main.patients",)]
    for name in ("other.patients", "OTHER.MAIN.PATIENTS", 'other."Patients"'):
        out = kanon.anonymize(name, k=K, con=con, sensitive=["dx"])
        _assert_hidden(out.fetchall(), out.columns, ["name", "ssn"])
    # The table of the same name in the current database is another table.
    _patients(con)
    with pytest.raises(ConfigError, match="no quasi-identifiers"):
        kanon.anonymize("patients", k=K, con=con)
