"""(α,k)-anonymity (``alpha := …``): enforced by optimal and Mondrian, measured by the check.

Releases are judged by plain SQL: per released class (the suppressed rows one class),
the most frequent sensitive value's rows over the class's rows, NULL a value of its own.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.exceptions import InvalidInputError
from tests.strategies import tables
from tests.test_anonymize import _configure, _load, _min_class

QI = ("q0", "q1", "q2")


def _worst_alpha(con: duckdb.DuckDBPyConnection, rel: str, qi: tuple[str, ...], s: str) -> float:
    """The largest share of one sensitive value in a class of ``rel``, by GROUP BY."""
    keys = ", ".join(f'"{q}"' for q in qi)
    return con.execute(
        f"SELECT max(top / n) FROM (SELECT {keys}, max(c)::DOUBLE AS top, sum(c) AS n FROM "
        f'(SELECT {keys}, "{s}", count(*) AS c FROM {rel} GROUP BY ALL) GROUP BY ALL)'
    ).fetchall()[0][0]


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    alpha=st.sampled_from([0.5, 0.75, 1.0]),
    method=st.sampled_from(["mondrian", "optimal"]),
)
def test_releases_hold_alpha_by_group_by(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    k_seed: int,
    alpha: float,
    method: str,
) -> None:
    _load(con, "t", data)
    _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    suppression = ", max_suppression := 0.5" if method == "optimal" else ""
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, method := '{method}', sensitive := 's', "
        f"alpha := {alpha}{suppression})"
    )
    top = max(data["s"].count(v) for v in set(data["s"]))
    if top > alpha * n:
        # The coarsest release, the table as one class, breaks α: nothing satisfies it.
        with pytest.raises(duckdb.Error, match=r"privacy models|no generalization satisfies"):
            con.execute(sql)
        return
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    assert con.execute("SELECT count(*) FROM rel").fetchall() == [(n,)]
    assert _min_class(con, "rel", list(QI)) >= k
    assert _worst_alpha(con, "rel", QI, "s") <= alpha + 1e-12
    checked = con.execute(
        "SELECT alpha FROM kanon_check('rel', qi := ['q0', 'q1', 'q2'], sensitive := 's')"
    ).fetchall()[0][0]
    assert checked == pytest.approx(_worst_alpha(con, "rel", QI, "s"), abs=1e-12)


def test_check_reports_alpha_by_name(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i % 3 AS zip, CASE WHEN i < 8 THEN 'flu' ELSE NULL END AS dx "
        "FROM range(12) r(i)"
    )
    # zip 0: 4 rows (3 flu, 1 NULL); zip 1 and 2 likewise or all flu.
    expected = _worst_alpha(con, "p", ("zip",), "dx")
    report = kanon.check("p", qi=["zip"], sensitive="dx", con=con)
    assert report.alpha == pytest.approx(expected)
    assert report.to_dict()["alpha"] == report.alpha
    assert "(α,k): largest share of one value" in str(report)
    no_sensitive = kanon.check("p", qi=["zip"], con=con)
    assert no_sensitive.alpha is None
    with pytest.raises(AttributeError, match="alphaa"):
        _ = report.alphaa


def test_alpha_errors_name_the_problem(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE p AS SELECT i % 10 AS age, i % 3 AS dx FROM range(50) r(i)")
    cases = [
        ("alpha := 1.5", r"alpha must be a number in \[0, 1\], got 1.5"),
        ("alpha := -0.1", r"alpha must be a number in \[0, 1\]"),
        ("alpha := 'x'", "alpha must be a number"),
        ("alpha := 0.5", "need a sensitive column"),
        ("alpha := 0.2, sensitive := 'dx'", "no generalization satisfies k = 2, alpha <= 0.2"),
    ]
    for args, message in cases:
        with pytest.raises(duckdb.Error, match=message):
            con.execute(
                f"SELECT * FROM kanon('p', k := 2, qi := ['age'], method := 'optimal', {args})"
            ).fetchall()
    with pytest.raises(duckdb.Error, match="alpha does not apply to method 'forest'"):
        con.execute(
            "SELECT * FROM kanon('p', k := 2, qi := ['age'], sensitive := 'dx', alpha := 0.5)"
        ).fetchall()
    with pytest.raises(InvalidInputError, match="alpha must be a number in"):
        kanon.anonymize("p", 2, con=con, qi=["age"], method="optimal", sensitive="dx", alpha=2)
    with pytest.raises(InvalidInputError, match="not expressed in it"):
        kanon.materialize(
            con, "p", 2, "p_view", qi=["age"], method="optimal", sensitive="dx", alpha=0.5
        )
