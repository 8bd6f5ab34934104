"""``priorities``: prioritized quasi-identifiers (issue 21, after PrioPrivacy).

Priorities are whole numbers >= 1, lower = more important, ties allowed; they come from
``priorities := MAP {...}`` (Python ``priorities={...}``, CLI ``--priorities a=1,b=2``)
or ``kanon_columns.priority`` (0: none), the argument first. The forest and Mondrian
weigh their QIs by them (:func:`kanon.plan.hierarchies.priority_weights`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest

import kanon
from kanon.cli import commands as cli
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.hierarchies import priority_weights
from kanon.plan.release.options import AnonymizeOptions
from kanon.plan.release.resolve import plan_anonymize

if TYPE_CHECKING:
    from pathlib import Path

#: Two independent numeric QIs, spread evenly: neither is cheaper to generalize.
GRID = "SELECT (i * 7919) % 1000 AS a, (i * 104729) % 997 AS b, i % 5 AS x FROM range(3000) r(i)"
#: A small table whose QIs have hostile names.
HOSTILE = (
    'SELECT i % 7 AS "priority", (i % 3)::VARCHAR AS "o\'brien", i % 2 AS "Weight" '
    "FROM range(60) r(i)"
)


def _sql_error(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    with pytest.raises(duckdb.Error) as info:
        con.sql(sql).fetchall()
    return str(info.value)


def _gcp(con: duckdb.DuckDBPyConnection, column: str) -> float:
    """The GCP of one column of release ``rel`` of table ``t``."""
    (value,) = con.execute(
        f"SELECT gcp FROM kanon_metrics('t', 'rel', qi := ['{column}'])"
    ).fetchone() or (None,)
    assert isinstance(value, float)
    return value


def _release(con: duckdb.DuckDBPyConnection, method: str, extra: str = "") -> None:
    con.execute(
        "CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', k := 10, qi := ['a', 'b'], "
        f"insensitive := ['x'], method := '{method}', labels := 'hierarchy'{extra})"
    )


# --- The weights --------------------------------------------------------------------------


def test_weights_are_the_papers() -> None:
    """Bampoulidis et al.'s exp1 priorities give the ARX weights (P - rank + 1) / P."""
    exp1 = {
        "sex": 1,
        "salary-class": 1,
        "race": 2,
        "workclass": 3,
        "marital-status": 3,
        "occupation": 4,
        "education": 5,
        "native-country": 6,
        "age": 7,
    }
    weights = priority_weights(list(exp1.values()))
    assert weights == [1, 1, 6 / 7, 5 / 7, 5 / 7, 4 / 7, 3 / 7, 2 / 7, 1 / 7]


def test_weights_rank_densely_and_put_qis_without_a_priority_last() -> None:
    assert priority_weights([None, None]) is None
    assert priority_weights([]) is None
    assert priority_weights([5, 5]) == [1.0, 1.0]
    # Gaps do not count: 10 and 20 are ranks 1 and 2.
    assert priority_weights([20, 10]) == [0.5, 1.0]
    # A QI without a priority takes the rank after the last, which counts in P.
    assert priority_weights([1, None, 2]) == [1.0, 1 / 3, 2 / 3]


# --- Releases -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["forest", "mondrian"])
def test_priorities_keep_the_important_qi_more_precise(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    """Each release is k-anonymous, keeps every row, and favours the top-priority QI."""
    con.execute(f"CREATE TABLE t AS {GRID}")
    gcp = {}
    for name, extra in (
        ("plain", ""),
        ("b first", ", priorities := MAP {'b': 1, 'a': 2}"),
        ("a first", ", priorities := MAP {'a': 1, 'b': 2}"),
    ):
        _release(con, method, extra)
        rows, smallest = con.execute(
            "SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY a, b)"
        ).fetchone() or (0, 0)
        assert (rows, smallest >= 10) == (3000, True), name
        gcp[name] = (_gcp(con, "a"), _gcp(con, "b"))
    assert gcp["b first"][1] <= gcp["plain"][1]
    assert gcp["b first"][1] < gcp["b first"][0]
    assert gcp["a first"][0] <= gcp["plain"][0]
    assert gcp["a first"][0] < gcp["a first"][1]
    assert gcp["b first"] != gcp["plain"]


def test_equal_priorities_change_nothing(con: duckdb.DuckDBPyConnection) -> None:
    """One priority for every QI weighs them all 1: the unweighted release."""
    con.execute(f"CREATE TABLE t AS {GRID}")
    query = (
        "SELECT * FROM kanon('t', k := 10, qi := ['a', 'b'], insensitive := ['x'], "
        "method := '{m}'{p}) ORDER BY ALL"
    )
    for method in ("forest", "mondrian"):
        plain = con.execute(query.format(m=method, p="")).fetchall()
        tied = con.execute(
            query.format(m=method, p=", priorities := MAP {'a': 3, 'b': 3}")
        ).fetchall()
        assert plain == tied, method


def test_mondrian_with_l_diversity_takes_priorities(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    rows = con.execute(
        "SELECT count(*), min(n), min(l) FROM (SELECT count(*) AS n, count(DISTINCT x) AS l "
        "FROM kanon('t', k := 10, qi := ['a', 'b'], sensitive := 'x', l := 2, "
        "method := 'mondrian', priorities := MAP {'b': 1}) GROUP BY a, b)"
    ).fetchone()
    assert rows is not None
    assert rows[1] >= 10
    assert rows[2] >= 2


def test_python_api_takes_priorities(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    via_python = kanon.anonymize(
        "t", 10, ["a", "b"], con=con, insensitive=["x"], priorities={"B": 1, "a": 2}
    ).fetchall()
    via_sql = con.execute(
        "SELECT * FROM kanon('t', k := 10, qi := ['a', 'b'], insensitive := ['x'], "
        "priorities := MAP {'b': 1, 'A': 2})"
    ).fetchall()
    assert sorted(via_python) == sorted(via_sql)


# --- Configured priorities ----------------------------------------------------------------


def _plan_priorities(
    con: duckdb.DuckDBPyConnection, qi: list[str] | None = None, **options: object
) -> dict[str, int | None]:
    # Only the plan's QIs are read: a configured QI left out is not checked here.
    plan = plan_anonymize(con, "t", AnonymizeOptions.of(10, qi, options), check_undeclared=False)
    return {q.column.name: q.priority for q in plan.qis}


def test_configured_priorities_are_read_and_keep_the_qi_order(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"], priorities={"b": 2, "a": 1})
    # The configured order, whatever the priorities (they once sorted the QIs).
    assert list(_plan_priorities(con).items()) == [("a", 1), ("b", 2)]
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"], priorities={"b": 1})
    assert _plan_priorities(con) == {"a": None, "b": 1}
    assert _plan_priorities(con, ["b"]) == {"b": 1}
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"])
    assert _plan_priorities(con) == {"a": None, "b": None}


def test_the_argument_overrides_the_configuration(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"], priorities={"a": 1, "b": 2})
    assert _plan_priorities(con, priorities={"a": 3}) == {"a": 3, "b": 2}
    query = "SELECT * FROM kanon('t', k := 10, method := 'mondrian'{p}) ORDER BY ALL"
    configured = con.execute(query.format(p="")).fetchall()
    overridden = con.execute(query.format(p=", priorities := MAP {'a': 2, 'b': 1}")).fetchall()
    assert configured != overridden
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"], priorities={"a": 2, "b": 1})
    assert con.execute(query.format(p="")).fetchall() == overridden


def test_configured_priorities_do_not_stop_other_methods(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Only the argument is refused by methods that ignore priorities."""
    con.execute(f"CREATE TABLE t AS {GRID}")
    query = "SELECT * FROM kanon('t', k := 10, method := '{}') ORDER BY ALL"
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"])
    plain = {m: con.execute(query.format(m)).fetchall() for m in ("forest_paper", "optimal")}
    kanon.configure(con, "t", qi=["a", "b"], insensitive=["x"], priorities={"a": 1})
    for method in ("forest_paper", "optimal", "datafly", "mu_argus"):
        rows = con.execute(query.format(method)).fetchall()
        assert len(rows) == 3000, method
        # forest_paper is the algorithm as published: no weights from priorities.
        assert method not in plain or rows == plain[method], method


def test_configure_refuses_priorities_below_one(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    for bad in (0, -2):
        with pytest.raises(ConfigError, match=r"priority of column 'a' must be >= 1"):
            kanon.configure(con, "t", qi=["a"], priorities={"a": bad})
    with pytest.raises(ConfigError, match="not a quasi-identifier"):
        kanon.configure(con, "t", qi=["a"], insensitive=["x"], priorities={"x": 1})


def test_a_negative_priority_written_by_sql_is_named(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    con.execute(
        "INSERT INTO kanon_columns (table_name, column_name, role, priority) VALUES "
        "('t', 'a', 'qi', -1), ('t', 'x', 'insensitive', 0), ('t', 'b', 'qi', 0)"
    )
    text = _sql_error(con, "SELECT * FROM kanon('t', k := 10)")
    assert "kanon_columns gives column 'a' of table 't' the priority -1" in text
    assert "priorities are whole numbers >= 1" in text


# --- Errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        (
            "MAP {'a': 1.5}",
            "priorities must be whole numbers >= 1 (lower = more important), "
            "got 1.5 for column 'a'",
        ),
        ("MAP {'a': 'x'}", "got \"x\" for column 'a'"),
        ("MAP {'a': NULL}", "got null for column 'a'"),
        ("MAP {'a': TRUE}", "got true for column 'a'"),
        ("MAP {'a': 0}", "priorities must be >= 1 (1 = most important), got 0 for column 'a'"),
        ("MAP {'a': -3}", "got -3 for column 'a'"),
        ("['a']", "priorities must be a map of column name to priority"),
    ],
)
def test_bad_priority_values_are_named(
    con: duckdb.DuckDBPyConnection, priorities: str, expected: str
) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    text = _sql_error(
        con, f"SELECT * FROM kanon('t', k := 10, qi := ['a', 'b'], priorities := {priorities})"
    )
    assert "InvalidInputError: " in text, text
    assert expected in text, text


@pytest.mark.parametrize("bad", [1.5, "1", None, True, 0])
def test_bad_priority_values_are_named_in_python(
    con: duckdb.DuckDBPyConnection, bad: object
) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    with pytest.raises(InvalidInputError, match=r"priorities must be .* for column 'a'"):
        kanon.anonymize(
            "t",
            10,
            ["a", "b"],
            con=con,
            insensitive=["x"],
            priorities={"a": bad},  # type: ignore[dict-item]
        )


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        (
            "MAP {'nope': 1}",
            "priorities names column 'nope', which is not a column of table 't'",
        ),
        (
            "MAP {'x': 1}",
            "priorities names column 'x', which is not a quasi-identifier of this call (a, b)"
            ": give priorities to quasi-identifiers only, or add 'x' to qi",
        ),
        ("MAP {'A': 1, 'a': 2}", "priorities names column 'a' twice"),
    ],
)
def test_priorities_name_quasi_identifiers(
    con: duckdb.DuckDBPyConnection, priorities: str, expected: str
) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    text = _sql_error(
        con,
        "SELECT * FROM kanon('t', k := 10, qi := ['a', 'b'], insensitive := ['x'], "
        f"priorities := {priorities})",
    )
    assert "ConfigError: " in text, text
    assert expected in text, text


@pytest.mark.parametrize("method", ["forest_paper", "optimal", "datafly", "mu_argus"])
def test_methods_that_ignore_priorities_refuse_them(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    expected = (
        f"priorities does not apply to method '{method}', which ignores it (priorities applies to "
        "'forest', 'mondrian', 'priority', 'iterated')"
    )
    text = _sql_error(
        con,
        f"SELECT * FROM kanon('t', k := 10, qi := ['a'], method := '{method}', "
        "priorities := MAP {'a': 1})",
    )
    assert expected in text, text
    with pytest.raises(InvalidInputError, match="not apply to method"):
        kanon.anonymize("t", 10, ["a"], con=con, method=method, priorities={"a": 1})
    # An empty map is no priorities.
    rows = con.execute(
        f"SELECT count(*) FROM kanon('t', k := 10, qi := ['a'], method := '{method}', "
        "insensitive := ['b', 'x'], priorities := MAP {})"
    ).fetchall()
    assert rows == [(3000,)]


def test_the_search_takes_no_priorities(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE t AS {GRID}")
    with pytest.raises(InvalidInputError, match="unknown keyword"):
        kanon.search("t", 10, ["a"], con=con, priorities={"a": 1})  # type: ignore[call-arg]
    with pytest.raises(duckdb.BinderException):
        con.execute("SELECT * FROM kanon_search('t', k := 10, priorities := MAP {'a': 1})")


def test_hostile_column_names(con: duckdb.DuckDBPyConnection) -> None:
    """QIs named priority, o'brien and Weight take priorities like any other column."""
    con.execute(f"CREATE TABLE t AS {HOSTILE}")
    for method in ("forest", "mondrian"):
        rows = con.execute(
            "SELECT count(*), min(n) FROM (SELECT count(*) AS n FROM kanon('t', k := 4, "
            f"qi := ['priority', 'o''brien', 'weight'], method := '{method}', "
            "priorities := MAP {'PRIORITY': 2, 'o''brien': 1, 'Weight': 3}) "
            'GROUP BY "priority", "o\'brien", "Weight")'
        ).fetchone()
        assert rows is not None
        assert rows[0] >= 1
        assert rows[1] >= 4
    text = _sql_error(
        con,
        "SELECT * FROM kanon('t', k := 4, qi := ['priority'], insensitive := ['o''brien'], "
        "priorities := MAP {'o''brien': 1, '__kanon_grp': 2})",
    )
    assert 'priorities names column "o\'brien", which is not a quasi-identifier' in text
    text = _sql_error(
        con,
        "SELECT * FROM kanon('t', k := 4, qi := ['priority'], "
        "priorities := MAP {'__kanon_grp': 2})",
    )
    assert "priorities names column '__kanon_grp', which is not a column of table 't'" in text


# --- The command line ---------------------------------------------------------------------


def test_the_command_line_takes_priorities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with duckdb.connect() as files:
        files.execute(f"COPY ({GRID}) TO '{tmp_path / 'in.csv'}' (HEADER)")
    base = [
        "anonymize",
        str(tmp_path / "in.csv"),
        "--k",
        "10",
        "--qi",
        "a,b",
        "--insensitive",
        "x",
        "--method",
        "mondrian",
        "--out",
        str(tmp_path / "out.csv"),
    ]
    assert cli.main([*base, "--priorities", "b=1,a=2"]) == 0, capsys.readouterr().err
    with duckdb.connect() as files:
        smallest = files.execute(
            f"SELECT min(n) FROM (SELECT count(*) AS n FROM '{tmp_path / 'out.csv'}' GROUP BY a, b)"
        ).fetchall()
    assert smallest[0][0] >= 10
    assert cli.main([*base, "--priorities", "b=first"]) == 2
    assert "--priorities takes COLUMN=PRIORITY,..., got 'b=first'" in capsys.readouterr().err
    assert cli.main([*base, "--priorities", "b=0"]) == 2
    assert "priorities must be >= 1" in capsys.readouterr().err
    assert cli.main([*base, "--priorities", "nope=1"]) == 2
    assert "priorities names column 'nope'" in capsys.readouterr().err
    assert cli.main([*base[:-4], "--method", "optimal", *base[-2:], "--priorities", "a=1"]) == 2
    assert "not apply to method 'optimal'" in capsys.readouterr().err
