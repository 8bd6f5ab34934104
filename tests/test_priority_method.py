"""``method := 'priority'`` (PrioPrivacy, strict), checked independently in SQL.

Every release is checked by a plain ``GROUP BY`` over the released labels (each
combination, ``'*'`` included, holds ≥ k rows), a join back to the source on a row id
(no row lost or added, other columns unchanged) and a truthfulness check of every cell.

The priority invariant tested: for every set M of the most important QIs (all QIs of
priority ≤ p, for each priority p given but the largest), a row whose values of M are shared by at
least k rows of the table keeps every QI of M exactly, or is released with every other
QI suppressed. (The algorithm generalizes a QI only after every less important one;
before a more important QI joins, the rows left over are released with the joined QIs
suppressed wherever k rows share their values of the rest, moving rows released earlier
with those values over; only such moves, later, touch M on rows whose values of M k
rows share, and they suppress every QI outside M.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
import kanon.plan.release.priority
from tests.strategies import tables
from tests.test_anonymize import _configure, _load
from tests.test_mondrian import QI, _check

if TYPE_CHECKING:
    import duckdb


def _priorities(values: list[int]) -> str:
    entries = ", ".join(f"'{q}': {p}" for q, p in zip(QI, values, strict=True))
    return f"MAP {{{entries}}}"


def _kept_exactly(
    con: duckdb.DuckDBPyConnection, k: int, important: list[str]
) -> list[tuple[Any, ...]]:
    """Rows whose values of ``important`` are shared by ≥ k rows but not released exactly
    (and not with every other QI suppressed)."""
    others = [q for q in QI if q not in important]
    cols = ", ".join(f'"{c}"' for c in important)
    same = " AND ".join(f'c."{c}" IS NOT DISTINCT FROM s."{c}"' for c in important)
    changed = " OR ".join(f'r."{c}" IS DISTINCT FROM CAST(s."{c}" AS VARCHAR)' for c in important)
    return con.execute(
        f"SELECT s.rid FROM t s JOIN rel r USING (rid) "
        f"JOIN (SELECT {cols}, count(*) AS n FROM t GROUP BY ALL) c ON {same} "
        f"WHERE c.n >= {k} AND ({changed})"
        + "".join(f" AND r.\"{c}\" IS DISTINCT FROM '*'" for c in others)
    ).fetchall()


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    ranks=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    pack=st.sampled_from([None, 3, 7]),
)
def test_priority_is_k_anonymous_truthful_and_complete(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    data: dict[str, list[Any]],
    k_seed: int,
    ranks: list[int],
    pack: int | None,
) -> None:
    # hypothesis runs every example in one test call: undo the last example's patches.
    monkeypatch.undo()
    if pack is not None:  # cut into packs in SQL first
        monkeypatch.setattr(kanon.plan.release.priority, "PRIORITY_PACK_ROWS", pack)
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    before = con.execute("SELECT * FROM t ORDER BY rid").fetchall()
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, method := 'priority', "
        f"priorities := {_priorities(ranks)})"
    )
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    _check(con, k, hierarchies, None, "priority")
    assert con.execute("SELECT * FROM t ORDER BY rid").fetchall() == before
    assert (
        con.execute(f"{sql} ORDER BY rid").fetchall()
        == con.execute("SELECT * FROM rel ORDER BY rid").fetchall()
    )
    if pack is None:  # borrowing works within a pack
        for p in sorted(set(ranks))[:-1]:  # M all QIs: rows may be moved as donors
            important = [q for q, r in zip(QI, ranks, strict=True) if r <= p]
            assert _kept_exactly(con, k, important) == [], (p, important)


def test_the_important_column_keeps_its_values(con: duckdb.DuckDBPyConnection) -> None:
    """A skewed table: the column given priority 1 is never touched where k rows share it."""
    con.execute(
        "CREATE TABLE t AS SELECT i AS rid, (i * 7) % 13 AS q0, "
        "['a', 'b', 'c', 'd'][1 + (i * 5) % 4] AS q1, (i * 11) % 29 AS q2, "
        "'x' AS s, 'n' AS name FROM range(300) r(i)"
    )
    _configure(con, "t")
    for first in QI:
        ranks = [1 if q == first else 2 for q in QI]
        con.execute(
            "CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', k := 10, "
            f"method := 'priority', priorities := {_priorities(ranks)})"
        )
        assert _kept_exactly(con, 10, [first]) == [], first
        assert (
            con.execute(
                "SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY q0, q1, q2)"
            ).fetchall()[0][0]
            >= 10
        )
