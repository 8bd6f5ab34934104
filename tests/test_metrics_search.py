"""``kanon_metrics`` reports the optimal search's metrics of a release.

For every metric of ``kanon_search`` (with and without suppression, suppressed rows kept
or dropped, equal and unequal weights), the column of ``kanon_metrics`` that measures it,
computed from the release and the original table alone, equals the ``cost`` the search
reports for the node it released. Plus: NUE is NULL for a locally recoded release, and a
hand-worked example.
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import kanon
from kanon.plan.metrics import COLUMNS
from tests.strategies import tables
from tests.test_anonymize import _load
from tests.test_optimal import SETTINGS, _configure, _has_values

#: Search metric → the column of kanon_metrics that measures it.
METRIC_COLUMN = {
    "loss": "loss",
    "height": "height",
    "nue": "nue",
    "nue_nonmonotonic": "nue_nonmonotonic",
    "dm": "dm_nonmonotonic",
    "dm_star": "dm_star",
    "aecs": "aecs",
}


def _sql_metrics(con: duckdb.DuckDBPyConnection, original: str, released: str) -> dict[str, Any]:
    cur = con.execute(f"SELECT * FROM kanon_metrics('{original}', '{released}')")
    names = [d[0] for d in cur.description]
    (row,) = cur.fetchall()
    return dict(zip(names, row, strict=True))


@pytest.mark.slow
@settings(max_examples=10, **SETTINGS)
@given(
    data=tables(max_rows=30),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.2, 0.4]),
    drop=st.booleans(),
    weighted=st.booleans(),
    defaults=st.booleans(),
)
def test_metrics_equal_the_search_cost(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    k_seed: int,
    suppression: float,
    drop: bool,
    weighted: bool,
    defaults: bool,
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    # Hierarchy tables of their own, or the types' defaults (intervals, suppression).
    hierarchies: dict[str, str | None] = (
        dict.fromkeys(("q0", "q1", "q2")) if defaults else dict(_configure(con, "t"))
    )
    kanon.configure(
        con,
        "t",
        qi=hierarchies,
        identifiers=["name"],
        sensitive=["s"],
        insensitive=["rid"],
        weights={"q0": 2.5, "q1": 0.5, "q2": 1.0} if weighted else None,
    )
    n = len(data["q0"])
    k = 1 + k_seed % n
    for metric, column in METRIC_COLUMN.items():
        args = (
            f"k := {k}, method := 'optimal', metric := '{metric}', "
            f"max_suppression := {suppression}, drop_suppressed := {str(drop).lower()}"
        )
        try:
            found = kanon.search(
                "t",
                k,
                con=con,
                metric=metric,
                max_suppression=suppression,
                drop_suppressed=drop,
            )
        except duckdb.InvalidInputException as err:
            if "no generalization satisfies" not in str(err):
                raise
            return
        con.execute(f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', {args})")
        m = kanon.metrics("t", "rel", con=con)
        value = getattr(m, column)
        assert value is not None, (metric, m)
        assert value == pytest.approx(found.cost, rel=1e-9, abs=1e-12), (metric, found, m)
        assert m.suppressed == found.suppressed
        # One notion of a class: the release's, the kept suppressed rows one class.
        assert m.classes == found.classes, (metric, found, m)
        if metric == "nue_nonmonotonic":
            # The SQL macro returns the same row, named as the dataclass.
            sql = _sql_metrics(con, "t", "rel")
            assert list(sql) == list(COLUMNS)
            for name, expected in m.to_dict().items():
                if isinstance(expected, dict):
                    assert dict(sql[name]) == pytest.approx(expected), name
                elif expected is None:
                    assert sql[name] is None, name
                else:
                    assert sql[name] == pytest.approx(expected, rel=1e-12, abs=1e-12), name
        # Relations between the columns.
        assert m.dm_star is not None
        assert m.aecs == pytest.approx(m.rows / m.classes)
        assert m.nue_nonmonotonic is not None
        assert m.nue is not None
        assert m.nue_nonmonotonic >= m.nue - 1e-9
        if m.suppressed == 0:
            assert m.dm_star == m.dm == m.dm_nonmonotonic
            assert m.nue_nonmonotonic == pytest.approx(m.nue)
        if not weighted and m.rows == n:
            assert m.loss == pytest.approx(m.gcp, rel=1e-9, abs=1e-12)


def _pets(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE pets AS SELECT * FROM (VALUES ('Ann', 27, 'cat'), ('Bob', 30, 'cat'), "
        "('Cid', 38, 'cat'), ('Dee', 40, 'cat')) v(name, age, pet)"
    )
    kanon.configure(con, "pets", qi=["age", "pet"], identifiers=["name"])


def test_nue_is_null_for_a_forest_release_with_mixed_levels(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _pets(con)
    con.execute("CREATE TABLE pets_k2 AS SELECT * FROM kanon('pets', k := 2)")
    ages = {r[0] for r in con.execute("SELECT DISTINCT age FROM pets_k2").fetchall()}
    # ages {27, 30} → [25..30] (level 3 of 6), {38, 40} → [38..40] (level 2 of 6).
    assert len(ages) == 2
    m = kanon.metrics("pets", "pets_k2", con=con, k=2)
    assert m.nue is None
    assert m.nue_nonmonotonic is None
    assert m.suppressed == 0
    assert m.dm_star == m.dm == m.dm_nonmonotonic == 8
    assert m.height == pytest.approx(m.cost)
    assert m.loss == pytest.approx(m.gcp)
    assert m.aecs == pytest.approx(2.0)
    sql = _sql_metrics(con, "pets", "pets_k2")
    assert sql["nue"] is None
    assert sql["nue_nonmonotonic"] is None


def _tiny(con: duckdb.DuckDBPyConnection, weight: float) -> None:
    """a: x1 (3 rows), x2, y1, z1; hierarchy x1, x2 → X; y1 → Y; z1 → Z; all → '*'."""
    con.execute(
        "CREATE TABLE tiny AS SELECT * FROM (VALUES (1, 'x1'), (2, 'x1'), (3, 'x1'), "
        "(4, 'x2'), (5, 'y1'), (6, 'z1')) v(id, a)"
    )
    con.execute(
        "CREATE TABLE tiny_h AS SELECT * FROM (VALUES ('x1', 'X', '*'), ('x2', 'X', '*'), "
        "('y1', 'Y', '*'), ('z1', 'Z', '*')) v(a, l1, l2)"
    )
    kanon.configure(con, "tiny", qi={"a": "tiny_h"}, insensitive=["id"], weights={"a": weight})


@pytest.mark.parametrize("weight", [1.0, 2.0])
def test_hand_worked_metrics(con: duckdb.DuckDBPyConnection, weight: float) -> None:
    _tiny(con, weight)
    # The node "level 1" with k = 2: X holds 4 rows, Y and Z one each (suppressed).
    con.execute(
        "CREATE TABLE kept AS SELECT id, CASE WHEN a LIKE 'x%' THEN 'X' ELSE '*' END AS a FROM tiny"
    )
    con.execute("CREATE TABLE dropped AS SELECT * FROM kept WHERE a <> '*'")
    nue = 3 * math.log2(4 / 3) + 1 * math.log2(4 / 1)  # Y and Z hold one value each: 0
    penalty = 1 * math.log2(2 / 1) + 1 * math.log2(2 / 1)  # S = 2: one row in Y, one in Z
    ncp_x = (2 - 1) / (4 - 1)  # X covers 2 of the 4 distinct values
    for name, rows, classes, dm in (("kept", 6, 2, 4**2 + 2**2), ("dropped", 4, 1, 4**2)):
        m = kanon.metrics("tiny", name, con=con, k=2)
        assert (m.rows, m.classes, m.dm, m.suppressed) == (rows, classes, dm, 2), name
        assert m.dm_star == 4**2 + 1 + 1  # the node's classes X, Y, Z
        assert m.dm_nonmonotonic == 4**2 + 6 * 2  # N · |E| per suppressed class
        assert m.aecs == pytest.approx(rows / classes)
        assert m.nue == pytest.approx(weight * nue)
        assert m.nue_nonmonotonic == pytest.approx(weight * (nue + penalty))
        assert m.height == pytest.approx(weight * (4 * 1 / 2 + 2 * 1))
        assert m.loss == pytest.approx((4 * ncp_x + 2 * 1) / 6)
    # The search chooses that node for every metric and reports the same numbers.
    for metric, column in METRIC_COLUMN.items():
        for drop in (False, True):
            found = kanon.search(
                "tiny", 2, con=con, metric=metric, max_suppression=0.4, drop_suppressed=drop
            )
            assert found.levels == {"a": 1}, metric
            m = kanon.metrics("tiny", "dropped" if drop else "kept", con=con)
            assert getattr(m, column) == pytest.approx(found.cost), (metric, drop)


def test_all_stars_is_the_top_node_not_suppression(con: duckdb.DuckDBPyConnection) -> None:
    _tiny(con, 1.0)
    con.execute("CREATE TABLE top AS SELECT id, '*' AS a FROM tiny")
    m = kanon.metrics("tiny", "top", con=con)
    assert m.suppressed == 0
    assert (m.dm, m.dm_star, m.dm_nonmonotonic) == (36, 36, 36)
    # Every row under '*': Σ c_v log2(6 / c_v) over x1 (3), x2, y1, z1.
    assert m.nue == pytest.approx(3 * math.log2(2) + 3 * math.log2(6))
    assert m.nue_nonmonotonic == pytest.approx(m.nue)
    assert (m.height, m.loss, m.aecs) == (pytest.approx(6.0), pytest.approx(1.0), 6.0)
