"""Mondrian, range labels and the blocked forest, checked independently in SQL.

Every release is checked by a plain ``GROUP BY`` over the released labels (each
combination ≥ k), a join back to the source on a row id (no row lost or added, other
columns unchanged) and a truthfulness check of every cell: a hierarchy label must be
an ancestor of the original value; a range ``[lo..hi]`` must contain it; a set
``{a, b}`` must list it; a single value must be the value. Tiny pack and block sizes
make many packs and blocks form.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
import kanon.plan.release.forest
import kanon.plan.release.mondrian
import kanon.plan.release.packs
from kanon.exceptions import InvalidInputError
from tests.strategies import tables
from tests.test_anonymize import _configure, _load, _min_class, _untruthful

QI = ("q0", "q1", "q2")


def _untruthful_values(
    con: duckdb.DuckDBPyConnection, src: str, rel: str, column: str, ordered: bool
) -> list[tuple[Any, ...]]:
    """Cells whose observed-value label does not hold the original value."""
    c = f'"{column}"'
    if ordered:
        inside = (
            f"(r.{c} LIKE '[%..%]' AND s.{c} BETWEEN "
            f"TRY_CAST(split_part(trim(r.{c}, '[]'), '..', 1) AS DOUBLE) AND "
            f"TRY_CAST(split_part(trim(r.{c}, '[]'), '..', 2) AS DOUBLE))"
        )
    else:
        inside = (
            f"(r.{c} LIKE '{{%}}' AND list_contains("
            f"string_split(r.{c}[2:-2], ', '), CAST(s.{c} AS VARCHAR)))"
        )
    return con.execute(
        f"SELECT s.{c}, r.{c} FROM {src} s JOIN {rel} r USING (rid) "
        f"WHERE NOT coalesce(r.{c} = '*' OR (s.{c} IS NULL AND r.{c} IS NULL) "
        f"OR r.{c} = CAST(s.{c} AS VARCHAR) OR {inside}, FALSE)"
    ).fetchall()


def _check(
    con: duckdb.DuckDBPyConnection,
    k: int,
    hierarchies: dict[str, str | None],
    labels: str | None,
    method: str,
) -> None:
    """Check ``rel`` (a release of ``t``): k, rows, columns, truthful labels."""
    ranged = {"q0", "q2"} if labels is None and method == "mondrian" else set()
    if labels == "range":
        ranged = set(QI)
    n_src = con.execute("SELECT count(*) FROM t").fetchall()[0][0]
    assert con.execute("SELECT count(*) FROM rel").fetchall()[0][0] == n_src
    assert _min_class(con, "rel", list(QI)) >= k
    # Every source row exactly once; sensitive column unchanged; identifiers hidden.
    assert con.execute(
        "SELECT count(*) FROM t s FULL JOIN rel r USING (rid) "
        "WHERE s.rid IS NULL OR r.rid IS NULL OR s.s IS DISTINCT FROM r.s"
    ).fetchall() == [(0,)]
    assert con.execute("SELECT count(DISTINCT rid) FROM rel").fetchall() == [(n_src,)]
    assert con.execute("SELECT DISTINCT name FROM rel").fetchall() == [("*",)]
    for column, hierarchy in hierarchies.items():
        if column not in ranged:
            assert _untruthful(con, "t", "rel", column, hierarchy) == [], column
    for column in ranged:
        assert _untruthful_values(con, "t", "rel", column, column != "q1") == [], column


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    labels=st.sampled_from([None, "hierarchy", "range"]),
    pack=st.sampled_from([None, 3, 7]),
    sampled=st.booleans(),
)
def test_mondrian_is_k_anonymous_truthful_and_complete(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    data: dict[str, list[Any]],
    k_seed: int,
    labels: str | None,
    pack: int | None,
    sampled: bool,
) -> None:
    # hypothesis runs every example in one test call: undo the last example's patches.
    monkeypatch.undo()
    if pack is not None:  # cut into packs in SQL first
        monkeypatch.setattr(kanon.plan.release.mondrian, "MONDRIAN_PACK_ROWS", pack)
    if sampled:  # the cuts chosen on a sample of about 2^rounds tuples
        monkeypatch.setattr(kanon.plan.release.packs, "SAMPLE_TUPLES", 1)
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    before = con.execute("SELECT * FROM t ORDER BY rid").fetchall()
    extra = "" if labels is None else f", labels := '{labels}'"
    sql = f"SELECT * FROM kanon('t', k := {k}, method := 'mondrian'{extra})"
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    _check(con, k, hierarchies, labels, "mondrian")
    assert con.execute("SELECT * FROM t ORDER BY rid").fetchall() == before
    assert (
        con.execute(f"{sql} ORDER BY rid").fetchall()
        == con.execute("SELECT * FROM rel ORDER BY rid").fetchall()
    )


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=tables(max_rows=40),
    k_seed=st.integers(1, 1000),
    labels=st.sampled_from([None, "range"]),
    block=st.sampled_from([None, 1, 4, 9]),
    seed=st.sampled_from([0, 3]),
    pack=st.sampled_from([None, 5]),
    sampled=st.booleans(),
    effort=st.sampled_from([None, "full", "fast"]),
)
def test_blocked_forest_is_k_anonymous_truthful_and_complete(
    con: duckdb.DuckDBPyConnection,
    monkeypatch: pytest.MonkeyPatch,
    data: dict[str, list[Any]],
    k_seed: int,
    labels: str | None,
    block: int | None,
    seed: int,
    pack: int | None,
    sampled: bool,
    effort: str | None,
) -> None:
    # hypothesis runs every example in one test call: undo the last example's patches.
    monkeypatch.undo()
    if pack is not None:  # cut into packs in SQL first
        monkeypatch.setattr(kanon.plan.release.forest, "PACK_ROWS", pack)
    if sampled:
        monkeypatch.setattr(kanon.plan.release.packs, "SAMPLE_TUPLES", 1)
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    extra = "" if labels is None else f", labels := '{labels}'"
    extra += "" if block is None else f", block_size := {block}"
    extra += "" if effort is None else f", effort := '{effort}'"
    sql = f"SELECT * FROM kanon('t', k := {k}, seed := {seed}{extra})"
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    _check(con, k, hierarchies, labels, "forest")
    assert (
        con.execute(f"{sql} ORDER BY rid").fetchall()
        == con.execute("SELECT * FROM rel ORDER BY rid").fetchall()
    )


def test_packs_below_k_join_the_largest(con: duckdb.DuckDBPyConnection) -> None:
    # Cuts chosen on a sample may leave a pack below k rows: it joins the largest pack.
    from kanon.plan.release.packs import _joined_to_largest
    from kanon.sql.cte import Cte, with_query

    blocks = Cte("bl", "SELECT * FROM (VALUES (0, 5), (1, 2), (2, 30), (3, 1), (4, 4)) v(b, n)")
    sizes, packed = _joined_to_largest(blocks, 4)
    rows = con.execute(
        with_query(
            [blocks, sizes, packed], f"SELECT b, sum(n) FROM {packed.ref} GROUP BY b ORDER BY b"
        )
    ).fetchall()
    assert rows == [(0, 5), (2, 33), (4, 4)]


def test_sampled_packs_release_what_exact_ones_would_guarantee(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 3,000 skewed rows in packs of about 100 rows, cut on samples of a few tuples per
    # pack: every class still holds k rows and every row is released.
    monkeypatch.setattr(kanon.plan.release.mondrian, "MONDRIAN_PACK_ROWS", 100)
    monkeypatch.setattr(kanon.plan.release.packs, "SAMPLE_TUPLES", 1)
    con.execute(
        "CREATE TABLE t AS SELECT i AS rid, (i * i) % 97 AS a, i % 7 AS b, "
        "CASE WHEN i % 10 = 0 THEN i ELSE 1 END AS c FROM range(3000) r(i)"
    )
    k = 15
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, qi := ['a', 'b', 'c'], method := 'mondrian', "
        "insensitive := ['rid'])"
    )
    con.execute(f"CREATE TABLE rel AS {sql}")
    assert con.execute("SELECT count(*), count(DISTINCT rid) FROM rel").fetchone() == (3000, 3000)
    smallest = con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY a, b, c)")
    assert smallest.fetchone()[0] >= k
    assert (
        con.execute(f"{sql} ORDER BY rid").fetchall()
        == con.execute("SELECT * FROM rel ORDER BY rid").fetchall()
    )


def test_statements_in_two_threads_take_turns_in_the_kernel(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Mondrian's kernel works on one pack at a time, whoever calls it: two statements of
    # many packs each, run in two threads, both finish with the release of a run alone.
    monkeypatch.setattr(kanon.plan.release.mondrian, "MONDRIAN_PACK_ROWS", 100)
    con.execute(
        "CREATE TABLE t AS SELECT i AS rid, (i * 37) % 101 AS a, i % 11 AS b, i % 13 AS c "
        "FROM range(3000) r(i)"
    )
    sql = (
        "SELECT * FROM kanon('t', k := 5, qi := ['a', 'b', 'c'], method := 'mondrian', "
        "insensitive := ['rid']) ORDER BY rid"
    )
    alone = con.execute(sql).fetchall()
    got: dict[int, list[tuple[Any, ...]]] = {}

    def run(i: int) -> None:
        got[i] = kanon.install(con.cursor()).execute(sql).fetchall()

    # Daemons: a deadlock fails the test instead of hanging the run.
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert got == {0: alone, 1: alone}
    assert len(alone) == 3000
    smallest = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM ({sql}) GROUP BY a, b, c)"
    )
    assert smallest.fetchone()[0] >= 5


def test_mondrian_cuts_numbers_at_the_median(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT i AS rid, 20 + i AS age, "
        "CASE WHEN i % 2 = 0 THEN 'f' ELSE 'm' END AS sex FROM range(8) r(i)"
    )
    rows = con.execute(
        "SELECT age, count(*) FROM kanon('t', k := 2, qi := ['age'], method := 'mondrian', "
        "insensitive := ['rid'], sensitive := ['sex']) GROUP BY age ORDER BY age"
    ).fetchall()
    assert rows == [("[20..21]", 2), ("[22..23]", 2), ("[24..25]", 2), ("[26..27]", 2)]
    # Equal normalized ranges: the first QI is cut (sex, 4 + 4 rows).
    by_sex = con.execute(
        "SELECT DISTINCT sex, age FROM kanon('t', k := 4, qi := ['sex', 'age'], "
        "method := 'mondrian', labels := 'range', insensitive := ['rid']) ORDER BY sex"
    ).fetchall()
    assert by_sex == [("f", "[20..26]"), ("m", "[21..27]")]
    # No cut leaves 5 rows on both sides: one group, its values as a set and a range.
    whole = con.execute(
        "SELECT DISTINCT sex, age FROM kanon('t', k := 5, qi := ['sex', 'age'], "
        "method := 'mondrian', labels := 'range', insensitive := ['rid'])"
    ).fetchall()
    assert whole == [("{f, m}", "[20..27]")]


def test_local_options_are_checked(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE t AS SELECT i AS rid, i % 7 AS a FROM range(30) r(i)")
    with pytest.raises(InvalidInputError, match="labels must be"):
        kanon.explain(con, "t", 2, ["a"], method="mondrian", labels="ranges")
    with pytest.raises(InvalidInputError, match="labels does not apply to method 'optimal'"):
        kanon.explain(con, "t", 2, ["a"], method="optimal", labels="range")
    with pytest.raises(InvalidInputError, match="block_size must be a whole number >= 1"):
        kanon.explain(con, "t", 2, ["a"], block_size=0)
    with pytest.raises(InvalidInputError, match="block_size does not apply to method 'mondrian'"):
        kanon.explain(con, "t", 2, ["a"], method="mondrian", block_size=10)
    with pytest.raises(InvalidInputError, match=r"effort must be one of 'full', 'fast', got .slow"):
        kanon.explain(con, "t", 2, ["a"], effort="slow")
    with pytest.raises(InvalidInputError, match="effort applies to 'forest'"):
        kanon.explain(con, "t", 2, ["a"], method="forest_paper", effort="fast")
    with pytest.raises(duckdb.Error, match="effort applies to 'forest'"):
        con.execute(
            "SELECT * FROM kanon('t', k := 2, qi := ['a'], method := 'mondrian', effort := 'full')"
        ).fetchall()


def test_effort_defaults_to_full_up_to_the_threshold(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    con.execute("CREATE TABLE t AS SELECT i AS rid, i % 7 AS a, i % 5 AS b FROM range(30) r(i)")

    def passes(**options: Any) -> str:
        sql = kanon.explain(con, "t", 3, ["a", "b"], insensitive=["rid"], **options)
        return re.findall(r'"improve": "(\w+)"', sql)[0]

    assert passes() == "full"
    assert passes(method="forest_paper") == "none"
    monkeypatch.setattr(kanon.plan.release.forest, "FULL_EFFORT_ROWS", 29)
    assert passes() == "fast"
    assert passes(effort="full") == "full"
    monkeypatch.setattr(kanon.plan.release.forest, "FULL_EFFORT_ROWS", 30)
    assert passes() == "full"
    assert passes(effort="fast") == "fast"


def test_range_blocks_are_smaller_with_the_fast_passes(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE t AS SELECT i AS rid, i % 7 AS a FROM range(30) r(i)")

    def block(**options: Any) -> int:
        sql = kanon.explain(con, "t", 3, ["a"], insensitive=["rid"], **options)
        return int(re.findall(r'"block_size": (\d+)', sql)[0])

    assert block() == 50_000
    assert block(effort="fast") == 50_000
    assert block(labels="range") == 5_000
    assert block(labels="range", effort="fast") == 2_000
    assert block(labels="range", effort="fast", block_size=300) == 300


@pytest.mark.slow
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=tables(max_rows=40), k_seed=st.integers(1, 1000), l_value=st.sampled_from([1, 2, 3]))
def test_mondrian_cuts_keep_l_diversity(
    con: duckdb.DuckDBPyConnection, data: dict[str, list[Any]], k_seed: int, l_value: int
) -> None:
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    distinct = len(set(data["s"]))  # NULL counts as a value of its own
    sql = f"SELECT * FROM kanon('t', k := {k}, method := 'mondrian', l := {l_value})"
    if distinct < l_value:
        with pytest.raises(duckdb.Error, match="violates the privacy models"):
            con.execute(sql)
        return
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    _check(con, k, hierarchies, None, "mondrian")
    smallest_l = con.execute(
        "SELECT min(l) FROM (SELECT count(DISTINCT coalesce(s, '\x00null')) AS l FROM rel "
        "GROUP BY q0, q1, q2)"
    ).fetchall()[0][0]
    assert smallest_l >= l_value
