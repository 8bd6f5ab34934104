"""Bad arguments and inputs get a kanon error that names the problem and the fix.

Never a DuckDB binder error from generated SQL: wrong types, NULLs, out-of-range values,
tables the SQL functions cannot see, non-finite weights, too many quasi-identifiers.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import kanon
from kanon._options import MACROS
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.catalog import MAX_QIS

TABLE = (
    "SELECT i % 7 AS age, (i % 3)::VARCHAR AS zz, [i % 4, 5]::INT[] AS basket FROM range(60) r(i)"
)
MACRO_ARGUMENTS = {name: macro.kinds() for name, macro in MACROS.items()}
CALLS = {
    "kanon": "SELECT * FROM kanon('{t}', k := 4, qi := ['age'])",
    "kanon_check": "SELECT * FROM kanon_check('{t}', qi := ['age'])",
    "kanon_classes": "SELECT * FROM kanon_classes('{t}', qi := ['age'])",
    "kanon_search": "SELECT * FROM kanon_search('{t}', 4, qi := ['age'])",
    "kanon_metrics": "SELECT * FROM kanon_metrics('{t}', 'plain', qi := ['age'])",
    "kanon_verify": "SELECT * FROM kanon_verify('{t}', 'plain', qi := ['age'], "
    "policy := {{'k': 2}})",
    "kanon_hkp": "SELECT * FROM kanon_hkp('{t}', h := 0.5, k := 2, p := 2, private := ['5'])",
}


def _sql_error(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    with pytest.raises(duckdb.Error) as info:
        con.sql(sql).fetchall()
    return str(info.value)


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("kind", ["temp", "uncommitted", "registered"])
def test_sql_functions_explain_which_tables_they_can_see(
    con: duckdb.DuckDBPyConnection, call: str, kind: str
) -> None:
    con.execute(f"CREATE TABLE plain AS {TABLE}")
    if kind == "temp":
        con.execute(f"CREATE TEMP TABLE tt AS {TABLE}")
    elif kind == "uncommitted":
        con.execute("BEGIN TRANSACTION")
        con.execute(f"CREATE TABLE tt AS {TABLE}")
    else:
        con.register("tt", con.sql(TABLE).to_arrow_table())
    text = _sql_error(con, CALLS[call].format(t="tt"))
    assert "ConfigError: unknown table 'tt'" in text
    assert "TEMP tables" in text
    assert "kanon.anonymize" in text
    assert "Binder Error" not in text


def test_the_python_api_reads_temp_tables_and_dataframes(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """What the message recommends works."""
    con.execute(f"CREATE TEMP TABLE tt AS {TABLE}")
    others = {"insensitive": ["zz", "basket"]}
    assert len(kanon.anonymize("tt", 4, ["age"], con=con, **others).fetchall()) == 60
    frame = con.sql(TABLE).to_arrow_table()
    assert kanon.anonymize(frame, 4, ["age"], **others).num_rows == 60
    assert isinstance(kanon.anonymize(frame, 4, ["age"], **others), pa.Table)


@pytest.mark.parametrize("weight", [math.inf, -math.inf, math.nan, 0.0, -1.0])
def test_configure_refuses_weights_that_are_not_positive_and_finite(
    con: duckdb.DuckDBPyConnection, weight: float
) -> None:
    con.execute(f"CREATE TABLE t AS {TABLE}")
    with pytest.raises(ConfigError, match="positive finite"):
        kanon.configure(con, "t", qi=["age"], weights={"age": weight})
    assert con.execute("SELECT count(*) FROM kanon_columns").fetchone() == (0,)


@pytest.mark.parametrize("weight", ["'inf'", "'nan'", "'-inf'"])
def test_a_non_finite_weight_written_by_sql_is_named(
    con: duckdb.DuckDBPyConnection, weight: str
) -> None:
    """A table created before the CHECK tightened (or replaced by hand) still holds one."""
    con.execute(f"CREATE TABLE t AS {TABLE}")
    con.execute(
        "CREATE OR REPLACE TABLE kanon_columns AS SELECT 't' AS table_name, 'age' AS "
        f"column_name, 'qi' AS role, NULL::VARCHAR AS hierarchy, {weight}::DOUBLE AS weight, "
        "0 AS priority"
    )
    for method in ("forest", "mondrian", "optimal", "datafly"):
        text = _sql_error(con, f"SELECT * FROM kanon('t', k := 4, method := '{method}')")
        assert "ConfigError: kanon_columns gives column 'age'" in text
        assert "positive finite" in text
    with pytest.raises(ConfigError, match="positive finite"):
        kanon.anonymize("t", 4, con=con)


def test_the_config_table_refuses_non_finite_weights(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(duckdb.ConstraintException):
        con.execute(
            "INSERT INTO kanon_columns (table_name, column_name, role, weight) "
            "VALUES ('t', 'age', 'qi', 'inf'::DOUBLE)"
        )


@pytest.mark.parametrize("bad", [{"age": "heavy"}, {"age": True}, ["age"], {"age": None}])
def test_configure_names_malformed_weights_and_priorities(
    con: duckdb.DuckDBPyConnection, bad: object
) -> None:
    con.execute(f"CREATE TABLE t AS {TABLE}")
    with pytest.raises(ConfigError, match="weight"):
        kanon.configure(con, "t", qi=["age"], weights=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="priorit"):
        kanon.configure(con, "t", qi=["age"], priorities=bad)  # type: ignore[arg-type]


def test_too_many_quasi_identifiers_get_a_clear_limit(con: duckdb.DuckDBPyConnection) -> None:
    m = 199
    cols = ", ".join(f"(i * {j + 1} % 3) AS c{j}" for j in range(m))
    con.execute(f"CREATE TABLE w AS SELECT {cols} FROM range(50) r(i)")
    qi = "[" + ", ".join(f"'c{j}'" for j in range(m)) + "]"
    for method in ("forest", "mondrian", "optimal", "datafly", "mu_argus"):
        text = _sql_error(
            con, f"SELECT * FROM kanon('w', k := 5, qi := {qi}, method := '{method}')"
        )
        assert f"at most {MAX_QIS} quasi-identifiers" in text
        assert "expression depth" not in text
    assert f"at most {MAX_QIS}" in _sql_error(con, f"SELECT * FROM kanon_check('w', qi := {qi})")
    with pytest.raises(InvalidInputError, match=f"at most {MAX_QIS}"):
        kanon.configure(con, "w", qi=[f"c{j}" for j in range(m)])


@pytest.mark.slow
def test_the_limit_of_quasi_identifiers_works(con: duckdb.DuckDBPyConnection) -> None:
    """MAX_QIS columns are released k-anonymous by the local methods and the historic ones.

    The optimal search names its own bound (the lattice's size) and how to narrow it.
    """
    cols = ", ".join(f"(i * {j + 1} % 3) AS c{j}" for j in range(MAX_QIS))
    con.execute(f"CREATE TABLE w AS SELECT {cols} FROM range(40) r(i)")
    names = [f"c{j}" for j in range(MAX_QIS)]
    keys = ", ".join(names)
    with pytest.raises(
        duckdb.Error, match=r"InvalidInputError: optimal: the lattice has .* max_level"
    ):
        kanon.anonymize("w", 5, names, con=con, method="optimal").fetchall()
    for method in ("forest", "mondrian", "datafly", "mu_argus"):
        out = kanon.anonymize("w", 5, names, con=con, method=method).to_arrow_table()
        smallest = con.sql(f"SELECT min(n) FROM (SELECT count(*) AS n FROM out GROUP BY {keys})")
        assert out.num_rows == 40
        assert smallest.fetchall()[0][0] >= 5, method


# --- Every parameter of every macro, given a value of the wrong type --------------------

WRONG = {
    "name": ["[1, 2]", "42", "TRUE"],
    "text": ["[1, 2]", "42"],
    "int": ["1.7", "'x'", "TRUE", "-1.5::DOUBLE"],
    "number": ["'x'", "TRUE", "[1]"],
    "bool": ["'yes'", "2"],
    "names": ["'age'", "[1, 2]", "42"],
    "levels": ["['a']", "MAP {'age': 'x'}", "42"],
    "priorities": ["['a']", "MAP {'age': 'x'}", "MAP {'age': 1.5}", "MAP {'age': 0}", "42"],
    "items": ["'5'", "42", "[TRUE]"],
    "name_or_names": ["42", "[1, 2]", "TRUE"],
    "policy": ["42", "[1, 2]", "TRUE", "''"],
}
# Valid arguments per macro: positional first, the table's name substituted.
BASE_ARGS = {
    "kanon": {"tbl": "'t'", "k": "4", "qi": "['age']"},
    "kanon_check": {"tbl": "'t'", "qi": "['age']"},
    "kanon_classes": {"tbl": "'t'", "qi": "['age']"},
    "kanon_search": {"tbl": "'t'", "k": "4", "qi": "['age']"},
    "kanon_metrics": {"original": "'t'", "released": "'plain'", "qi": "['age']"},
    "kanon_verify": {
        "source": "'t'",
        "release": "'plain'",
        "qi": "['age']",
        "policy": "{'k': 2}",
    },
    "kanon_hkp": {"tbl": "'t'", "h": "0.5", "k": "2", "p": "2", "private": "['5']"},
    "kanon_hkp_report": {"tbl": "'t'", "h": "0.5", "k": "2", "p": "2", "private": "['5']"},
}


def _macro_parameters(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT function_name, parameters FROM duckdb_functions() "
        "WHERE function_type = 'table_macro' AND function_name LIKE 'kanon%'"
    ).fetchall()
    return {str(name): list(params) for name, params in rows}


def test_every_macro_parameter_has_a_declared_kind(con: duckdb.DuckDBPyConnection) -> None:
    macros = _macro_parameters(con)
    assert set(macros) == set(MACRO_ARGUMENTS) == set(BASE_ARGS)
    for name, params in macros.items():
        assert params == list(MACRO_ARGUMENTS[name]), name  # in declared order


POSITIONAL = ("tbl", "original", "released", "source", "release")


def _call(macro: str, args: dict[str, str]) -> str:
    positional = [v for k, v in args.items() if k in POSITIONAL]
    named = [f"{k} := {v}" for k, v in args.items() if k not in POSITIONAL]
    return f"SELECT * FROM {macro}({', '.join(positional + named)})"


@pytest.mark.parametrize("macro", sorted(BASE_ARGS))
def test_a_wrongly_typed_argument_is_named(con: duckdb.DuckDBPyConnection, macro: str) -> None:
    con.execute(f"CREATE TABLE t AS {TABLE}")
    con.execute(f"CREATE TABLE plain AS {TABLE}")
    for param, kind in MACRO_ARGUMENTS[macro].items():
        for value in WRONG[kind]:
            sql = _call(macro, {**BASE_ARGS[macro], param: value})
            text = _sql_error(con, sql)
            assert f"{param} must be" in text, (sql, text)
            assert "InvalidInputError: " in text, (sql, text)
            assert "Binder Error" not in text, (sql, text)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM kanon('t', k := 1.7, qi := ['age'])", "k must be a whole number, got 1.7"),
        (
            "SELECT * FROM kanon('t', k := 4, qi := ['age'], seed := -1)",
            "seed must be a whole number in [0, 2^64)",
        ),
        ("SELECT * FROM kanon('t', k := NULL, qi := ['age'])", "needs k"),
        ("SELECT * FROM kanon('t', k := 0, qi := ['age'])", "k must be a positive integer"),
        (
            "SELECT * FROM kanon(NULL, k := 4, qi := ['age'])",
            "table name must be a non-empty string",
        ),
        ("SELECT * FROM kanon('t', k := 4, qi := 'age')", "qi must be a list of column names"),
        (
            "SELECT * FROM kanon('t', k := 4, qi := ['age'], method := 'best')",
            "method must be one of",
        ),
        (
            "SELECT * FROM kanon_hkp('t', h := 2, k := 2, p := 2, private := ['5'])",
            "h must lie in (0, 1]",
        ),
        (
            "SELECT * FROM kanon_hkp('t', h := 0.5, k := 2, p := 2, private := '5')",
            "private must be",
        ),
        ("SELECT * FROM kanon_metrics('t', 'plain', k := 0.5)", "k must be a whole number"),
    ],
)
def test_the_issues_argument_errors(
    con: duckdb.DuckDBPyConnection, sql: str, expected: str
) -> None:
    con.execute(f"CREATE TABLE t AS {TABLE}")
    con.execute(f"CREATE TABLE plain AS {TABLE}")
    text = _sql_error(con, sql)
    assert expected in text, text
    assert "Binder Error" not in text


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"k": "3"}, "k must be a positive integer"),
        ({"k": 3, "seed": -1}, "seed must be a whole number in"),
        ({"k": 3, "method": 5}, "anonymize(): method must be a string, got 5"),
        ({"k": 3, "method": "fast"}, "method must be one of"),
        ({"k": 3, "min_level": [1]}, "min_level must be a map of column name to level"),
        ({"k": 3, "priorities": [1]}, "priorities must be a map of column name to priority"),
        ({"k": 3, "priorities": {"age": 1.5}}, "whole numbers >= 1 (lower = more important)"),
        ({"k": 3, "qi": [1]}, "qi must be a column name or a list of column names"),
        ({"k": 3, "identifiers": 5}, "identifiers must be a list of column names"),
        ({"k": 3, "keep_undeclared": "yes"}, "keep_undeclared must be TRUE or FALSE"),
        ({"k": 3, "sed": 1}, "anonymize() got unknown keyword(s) sed; it takes method,"),
    ],
)
def test_python_arguments_of_the_wrong_type_are_named(kwargs: dict, expected: str) -> None:
    data = pa.table({"age": [30, 31, 32, 40, 41, 42], "x": list("abcdef")})
    with pytest.raises(InvalidInputError) as info:
        kanon.anonymize(data, **{"qi": ["age"], "insensitive": ["x"], **kwargs})
    assert expected in str(info.value)


def test_a_single_qi_name_is_a_list_of_one() -> None:
    """``qi="age"`` means the column age, not the columns a, g and e."""
    data = pa.table({"age": [30, 31, 32, 40, 41, 42], "x": list("abcdef")})
    out = kanon.anonymize(data, 3, qi="age", insensitive=["x"])  # type: ignore[arg-type]
    assert out.column("age").to_pylist()[0].startswith("[")
    assert kanon.check(data, qi="age").k == 1  # type: ignore[arg-type]


def _python_calls(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    return {
        "qi": lambda: kanon.check("t", 5, con=con),
        "sensitive": lambda: kanon.check("t", ["age"], 5, con=con),
        "risk_threshold": lambda: kanon.check("t", ["age"], con=con, risk_threshold="x"),
        "qi ": lambda: kanon.classes("t", 5, con=con),
        "private": lambda: kanon.hkp("t", h=0.5, k=2, p=2, con=con, private=5),
        "qi  ": lambda: kanon.configure(con, "t", qi=5),
        "identifiers": lambda: kanon.configure(con, "t", qi=["age"], identifiers=5),
        "name": lambda: kanon.to_sql(con, 5, "postgres"),
    }


@pytest.mark.parametrize(
    "param",
    ["qi", "sensitive", "risk_threshold", "qi ", "private", "qi  ", "identifiers", "name"],
)
def test_python_functions_name_a_wrongly_typed_argument(
    con: duckdb.DuckDBPyConnection, param: str
) -> None:
    con.execute(f"CREATE TABLE t AS {TABLE}")
    with pytest.raises(InvalidInputError, match=f"{param.strip()} must be"):
        _python_calls(con)[param]()


def test_install_refuses_a_users_table_named_like_the_config_table() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE kanon_columns (mine INTEGER)")
    con.execute("INSERT INTO kanon_columns VALUES (42)")
    with pytest.raises(ConfigError, match="not kanon's configuration table"):
        kanon.install(con)
    assert con.execute("SELECT * FROM kanon_columns").fetchall() == [(42,)]
