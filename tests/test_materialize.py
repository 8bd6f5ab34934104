"""``kanon.materialize`` / ``kanon.refresh``: stored releases, plain views, continuous mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError

if TYPE_CHECKING:
    from pathlib import Path


def _min_class(con: duckdb.DuckDBPyConnection, rel: str, qi: list[str]) -> int:
    cols = ", ".join(f'"{c}"' for c in qi)
    return int(
        con.execute(
            f"SELECT coalesce(min(n), 0) FROM (SELECT count(*) AS n FROM {rel} GROUP BY {cols})"
        ).fetchall()[0][0]
    )


def _pets(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE pets (name VARCHAR, age INTEGER, pet VARCHAR)")
    con.execute(
        "INSERT INTO pets VALUES ('John', 27, 'cats'), ('Susan', 38, 'dogs'), "
        "('Sarah', 30, 'cats'), ('Mark', 40, 'dogs')"
    )
    # The thesis's IntRangeGeneralizer(0, 50) and PrefixGeneralizer.
    kanon.hierarchy.intervals(con, "h_age", table="pets", column="age", min=0, max=50)
    kanon.hierarchy.prefix_words(con, "h_pet", table="pets", column="pet")
    kanon.configure(con, "pets", qi={"age": "h_age", "pet": "h_pet"}, identifiers=["name"])


def test_thesis_continuous_example(tmp_path: Path) -> None:
    """Seed thesis §3.7, figures 3.9-3.11: 4 rows at k = 2, then 3 more."""
    path = str(tmp_path / "pets.duckdb")
    con = kanon.install(duckdb.connect(path))
    _pets(con)
    assert kanon.materialize(con, "pets", k=2, name="pets_k2") == "pets_k2"
    first = [("*", "[25..30]", "cats")] * 2 + [("*", "[38..40]", "dogs")] * 2
    assert con.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall() == first  # figure 3.9
    con.execute(
        "INSERT INTO pets VALUES ('Jack', 38, 'dogs'), ('Jill', 40, 'dogs'), ('Lilly', 27, 'cats')"
    )
    # New rows stay out of the view until they are placed.
    assert con.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall() == first
    report = kanon.refresh(con, "pets_k2")
    assert (report.added, report.removed, report.requeued) == (3, 0, 0)
    # Figure 3.10: the earlier rows keep their groups, the new ones join or pair up.
    second = [("*", "[25..30]", "cats")] * 3 + [("*", "[38..40]", "dogs")] * 4
    assert con.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall() == second
    # Figure 3.11: all rows in one go generalize less.
    at_once = con.sql("SELECT * FROM kanon('pets', k := 2) ORDER BY ALL").fetchall()
    assert (
        at_once
        == [("*", "38", "dogs")] * 2 + [("*", "40", "dogs")] * 2 + [("*", "[25..30]", "cats")] * 3
    )
    con.close()
    # The view is plain SQL: a new connection without kanon reads it.
    plain = duckdb.connect(path)
    assert plain.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall() == second
    plain.close()


def test_refresh_keeps_existing_groups_and_handles_deletes(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS id, 20 + (i * 7) % 60 AS age, "
        "'z' || ((i * 13) % 9) AS zip, i % 4 AS dx FROM range(120) r(i)"
    )
    kanon.hierarchy.intervals(con, "h_age", table="p", column="age", width=5, min=0, max=100)
    kanon.configure(
        con, "p", qi={"age": "h_age", "zip": None}, identifiers=["id"], sensitive=["dx"]
    )
    kanon.materialize(con, "p", k=4, name="p_k4")
    before = dict(con.execute('SELECT id, "__kanon_grp" FROM "p_k4__kanon_rows"').fetchall())
    assert len(before) == 120
    assert _min_class(con, "p_k4", ["age", "zip"]) >= 4
    con.execute(
        "INSERT INTO p SELECT i, 20 + (i * 11) % 60, 'z' || (i % 9), i % 4 "
        "FROM range(120, 150) r(i)"
    )
    report = kanon.refresh(con, "p_k4")
    assert report.added == 30
    after = dict(con.execute('SELECT id, "__kanon_grp" FROM "p_k4__kanon_rows"').fetchall())
    assert {i: after[i] for i in before} == before
    assert con.sql("SELECT count(*) FROM p_k4").fetchall() == [(150,)]
    assert _min_class(con, "p_k4", ["age", "zip"]) >= 4
    # Deleting rows shrinks groups: a group below k is withheld, then re-placed.
    victim = con.execute(
        'SELECT "__kanon_grp" FROM "p_k4__kanon_rows" GROUP BY 1 ORDER BY count(*), 1 LIMIT 1'
    ).fetchall()[0][0]
    members = [
        r[0]
        for r in con.execute(
            'SELECT id FROM "p_k4__kanon_rows" WHERE "__kanon_grp" = ? ORDER BY id', [victim]
        ).fetchall()
    ]
    con.execute(f"DELETE FROM p WHERE id = {members[0]}")
    assert _min_class(con, "p_k4", ["age", "zip"]) >= 4
    shown = con.sql("SELECT count(*) FROM p_k4").fetchall()[0][0]
    assert shown <= 149
    report = kanon.refresh(con, "p_k4")
    assert report.removed == 1
    assert con.sql("SELECT count(*) FROM p_k4").fetchall() == [(149,)]
    assert _min_class(con, "p_k4", ["age", "zip"]) >= 4
    assert con.sql("SELECT DISTINCT id FROM p_k4").fetchall() == [("*",)]
    # Nothing new: a no-op.
    assert kanon.refresh(con, "p_k4").added == 0


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abcü")), min_size=3, max_size=25),
    more=st.lists(st.tuples(st.integers(0, 9), st.sampled_from("abcü")), max_size=25),
    k=st.integers(1, 3),
)
def test_refresh_property(
    con: duckdb.DuckDBPyConnection,
    first: list[tuple[int, str]],
    more: list[tuple[int, str]],
    k: int,
) -> None:
    con.execute("CREATE OR REPLACE TABLE g (a INTEGER, b VARCHAR, s INTEGER)")
    con.executemany("INSERT INTO g VALUES (?, ?, ?)", [(a, b, i) for i, (a, b) in enumerate(first)])
    con.execute(
        "CREATE OR REPLACE TABLE ha AS SELECT i AS v, "
        "CASE WHEN i < 5 THEN 'lo' ELSE 'hi' END AS l1, '*' AS l2 FROM range(10) r(i)"
    )
    kanon.configure(con, "g", qi={"a": "ha", "b": None}, insensitive=["s"])
    kanon.materialize(con, "g", k=k, name="g_k")
    for i, (a, b) in enumerate(more):
        con.execute("INSERT INTO g VALUES (?, ?, ?)", [a, b, 100 + i])
    kanon.refresh(con, "g_k")
    rows = con.sql("SELECT * FROM g_k").fetchall()
    assert len(rows) == len(first) + len(more)
    assert sorted(r[2] for r in rows) == sorted(
        [*range(len(first)), *(100 + i for i in range(len(more)))]
    )
    assert _min_class(con, "g_k", ["a", "b"]) >= k
    for a, b, _ in rows:
        assert a in {"*", "lo", "hi"} or a.isdigit()
        assert b in {"*", "a", "b", "c", "ü"}


def test_materialize_and_refresh_errors(con: duckdb.DuckDBPyConnection) -> None:
    _pets(con)
    with pytest.raises(InvalidInputError, match="is the source table"):
        kanon.materialize(con, "pets", k=2, name="pets")
    con.execute("CREATE TABLE taken (x INTEGER)")
    with pytest.raises(ConfigError, match="a table named 'taken' exists"):
        kanon.materialize(con, "pets", k=2, name="taken")
    # The name is refused before the search, whose k here no release satisfies.
    with pytest.raises(ConfigError, match="a table named 'taken' exists"):
        kanon.materialize(con, "pets", k=10**6, name="taken", method="optimal")
    with pytest.raises(ConfigError, match="'nothing' is not a release"):
        kanon.refresh(con, "nothing")
    kanon.materialize(con, "pets", k=2, name="v")
    con.execute("INSERT INTO pets VALUES ('Old', 77, 'cats')")
    with pytest.raises(HierarchyError, match=r"new value\(s\) '77' of column 'age'"):
        kanon.refresh(con, "v")
    # The failed refresh changed nothing.
    assert con.sql("SELECT count(*) FROM v").fetchall() == [(4,)]
    con.execute("DELETE FROM pets WHERE name = 'Old'")
    con.execute("ALTER TABLE pets ADD COLUMN extra INTEGER")
    with pytest.raises(ConfigError, match="columns of 'pets' changed"):
        kanon.refresh(con, "v")


def test_metrics_of_a_release(con: duckdb.DuckDBPyConnection) -> None:
    _pets(con)
    kanon.materialize(con, "pets", k=2, name="pets_k2")
    m = kanon.metrics("pets", "pets_k2", con=con, k=2)
    # ages {27, 30} → [25..30] (level 3 of 6), {38, 40} → [38..40] (level 2 of 6); pet kept.
    assert (m.rows, m.classes, m.min_class, m.k, m.dm) == (4, 2, 2, 2, 8)
    assert m.c_avg == pytest.approx(1.0)
    assert m.cost == pytest.approx(2 * 3 / 6 + 2 * 2 / 6)
    # numeric NCP: (30 - 27) / (40 - 27) and (40 - 38) / 13, pet 0; mean over 8 cells
    assert m.gcp_by_column["age"] == pytest.approx((2 * 3 / 13 + 2 * 2 / 13) / 4)
    assert m.gcp_by_column["pet"] == 0.0
    assert m.gcp == pytest.approx(m.gcp_by_column["age"] / 2)
    sql = con.sql("SELECT * FROM kanon_metrics('pets', 'pets_k2')").fetchall()[0]
    assert sql[:4] == (4, 2, 2, 2)
    assert sql[4] == pytest.approx(m.cost)
    con.execute("CREATE TABLE bad AS SELECT name, 'nonsense' AS age, pet FROM pets")
    with pytest.raises(duckdb.Error, match="label nonsense of column age is not a label"):
        kanon.metrics("pets", "bad", con=con)


def _objects(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, bool]:
    """The release's view and tables (``name``, ``name__kanon_*``) → whether temporary."""
    rows = con.execute(
        "SELECT table_name, temporary FROM duckdb_tables() UNION ALL "
        "SELECT view_name, temporary FROM duckdb_views() WHERE NOT internal",
    ).fetchall()
    return {n: t for n, t in rows if n == name or n.startswith(f"{name}__kanon_")}


def _temp_pets(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TEMP TABLE tpets AS SELECT 'n' || i AS name, 20 + i % 30 AS age, "
        "['cats', 'dogs'][1 + i % 2] AS pet FROM range(40) r(i)"
    )


@pytest.mark.parametrize("method", ["forest", "mondrian", "optimal"])
def test_a_release_of_a_temp_table_is_temporary(tmp_path: Path, method: str) -> None:
    """A permanent view over a TEMP table breaks for every other connection and on reopen;
    the release of a TEMP source is a TEMP view over TEMP tables, which refresh keeps so."""
    path = str(tmp_path / "db.duckdb")
    con = kanon.install(duckdb.connect(path))
    _temp_pets(con)
    qi = ["age", "pet"]
    args = {"identifiers": ["name"], "method": method}
    assert kanon.materialize(con, "tpets", 4, "rel", qi, **args) == "rel"  # type: ignore[arg-type]
    objects = _objects(con, "rel")
    assert "rel" in objects
    assert "rel__kanon_meta" in objects
    assert all(objects.values()), objects
    assert _min_class(con, "rel", qi) >= 4
    assert con.sql("SELECT count(*) FROM rel").fetchall()[0][0] > 0
    # Materialized again under its name: replaced, still temporary.
    kanon.materialize(con, "tpets", 5, "rel", qi, **args)  # type: ignore[arg-type]
    assert all(_objects(con, "rel").values())
    assert _min_class(con, "rel", qi) >= 5
    if method == "forest":
        con.execute("INSERT INTO tpets SELECT 'new' || i, 20 + i, 'cats' FROM range(5) r(i)")
        assert kanon.refresh(con, "rel").added == 5
        assert all(_objects(con, "rel").values())
        assert _min_class(con, "rel", qi) >= 5
    # to_sql writes a plain CREATE VIEW for another database, and exports its tables.
    sql = kanon.to_sql(con, "rel", "postgres", directory=tmp_path / "export")
    assert sql.startswith('CREATE VIEW "rel"')
    assert list((tmp_path / "export").glob("rel__kanon_*.parquet"))
    other = con.cursor()
    assert _objects(other, "rel") == {}  # nothing in the database for others to break on
    other.close()
    con.close()
    reopened = duckdb.connect(path)
    assert _objects(reopened, "rel") == {}  # and nothing (no copy of the rows) left behind
    reopened.close()


def test_temporary_and_stored_releases_do_not_replace_each_other(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _pets(con)
    _temp_pets(con)
    # A stored release replaced by one of a TEMP source: its tables are kanon's, so
    # they go, and nothing stored is left under the temporary ones.
    kanon.materialize(con, "pets", k=2, name="rel")
    kanon.materialize(con, "tpets", 4, "rel", ["age", "pet"], identifiers=["name"])
    assert all(_objects(con, "rel").values())
    # A temporary release hides any stored object of its names: a stored release is
    # not created under it; the message says how to proceed.
    with pytest.raises(ConfigError, match="temporary release 'rel'") as err:
        kanon.materialize(con, "pets", k=2, name="rel")
    assert "DROP VIEW" in str(err.value)
    assert all(_objects(con, "rel").values())
    # A user's TEMP table of a release's name is never replaced or dropped.
    con.execute("CREATE TEMP TABLE mine__kanon_rows AS SELECT 42 AS x")
    with pytest.raises(ConfigError, match=r"not created by kanon\.materialize"):
        kanon.materialize(con, "tpets", 4, "mine", ["age", "pet"], identifiers=["name"])
    assert con.sql("SELECT * FROM mine__kanon_rows").fetchall() == [(42,)]
    # A stored release whose source became a TEMP table is not refreshed into a view
    # that other connections cannot read.
    kanon.materialize(con, "pets", k=2, name="stored")
    con.execute("ALTER TABLE pets RENAME TO pets_before")
    con.execute("CREATE TEMP TABLE pets AS SELECT * FROM pets_before")
    with pytest.raises(ConfigError, match="copy it into a regular table"):
        kanon.refresh(con, "stored")
    assert not any(_objects(con, "stored").values())


def test_a_temp_hierarchy_is_copied_into_a_stored_release(tmp_path: Path) -> None:
    """The release reads no hierarchy (its tables hold the labels): it stays stored."""
    path = str(tmp_path / "db.duckdb")
    con = kanon.install(duckdb.connect(path))
    _pets(con)
    con.execute("CREATE TEMP TABLE th_age AS SELECT * FROM h_age")
    kanon.configure(con, "pets", qi={"age": "th_age", "pet": "h_pet"}, identifiers=["name"])
    kanon.materialize(con, "pets", k=2, name="pets_k2")
    assert not any(_objects(con, "pets_k2").values())
    expected = con.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall()
    con.close()
    reopened = duckdb.connect(path)
    assert reopened.sql("SELECT * FROM pets_k2 ORDER BY ALL").fetchall() == expected
    reopened.close()
