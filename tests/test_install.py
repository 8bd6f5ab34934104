"""``kanon.install`` on several connections, cursors and threads, and read-only.

Python UDFs live in the database's shared system catalog while TEMP macros belong to
one connection: installing on a cursor, on a second connection to the same file or in
several threads at once must neither fail nor change what a release is. A read-only
database is checked, released and measured without a byte written to its file.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING

import duckdb

import kanon
import kanon.engine.install as install

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

RELEASE = (
    "SELECT * FROM kanon('people', k := 3, qi := ['age', 'zip'], seed := 1, "
    "insensitive := ['id'], sensitive := ['dx']) ORDER BY ALL"
)


def _people(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE people AS SELECT i AS id, 20 + i % 37 AS age, "
        "(10000 + (i * 7919) % 53)::VARCHAR AS zip, 'd' || (i % 4) AS dx FROM range(300) r(i)"
    )


def _catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """The persistent tables and views of the current database."""
    return con.execute(
        "SELECT 'table', schema_name, table_name FROM duckdb_tables() "
        "WHERE NOT temporary AND database_name = current_database() "
        "UNION ALL SELECT 'view', schema_name, view_name FROM duckdb_views() "
        "WHERE NOT temporary AND NOT internal AND database_name = current_database() "
        "ORDER BY ALL"
    ).fetchall()


def _smallest_class(con: duckdb.DuckDBPyConnection, rows: list[tuple[object, ...]]) -> int:
    """The smallest class of the released (age, zip) labels, by a plain GROUP BY."""
    con.execute("CREATE OR REPLACE TEMP TABLE released (age VARCHAR, zip VARCHAR)")
    con.executemany("INSERT INTO released VALUES (?, ?)", [(str(r[1]), str(r[2])) for r in rows])
    ((smallest,),) = con.execute(
        "SELECT min(n) FROM (SELECT count(*) AS n FROM released GROUP BY age, zip)"
    ).fetchall()
    return int(smallest)


def test_install_twice_on_a_cursor_and_on_a_second_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "db.duckdb")
    con = kanon.install(duckdb.connect(path))
    _people(con)
    expected = con.execute(RELEASE).fetchall()
    assert len(expected) == 300
    assert _smallest_class(con, expected) >= 3
    # Twice on the same connection.
    assert kanon.install(con) is con
    assert con.execute(RELEASE).fetchall() == expected
    # On a cursor: the UDFs are the connection's, the macros its own.
    cur = con.cursor()
    assert kanon.install(cur) is cur
    kanon.install(cur)
    assert cur.execute(RELEASE).fetchall() == expected
    # On a second connection to the same file.
    other = duckdb.connect(path)
    kanon.install(other)
    assert other.execute(RELEASE).fetchall() == expected
    assert kanon.install(con).execute(RELEASE).fetchall() == expected
    other.close()
    cur.close()
    con.close()


def test_closing_the_connection_that_installed_first(tmp_path: Path) -> None:
    """The others keep working: the UDFs stay alive and plan through an open connection.

    DuckDB frees a closed connection's Python functions while its catalog still lists
    them; before kanon kept them alive, the next call ran freed memory.
    """
    path = str(tmp_path / "db.duckdb")
    first = kanon.install(duckdb.connect(path))
    _people(first)
    expected = first.execute(RELEASE).fetchall()
    second = kanon.install(duckdb.connect(path))
    cur = kanon.install(second.cursor())
    first.close()
    for con in (second, cur, second):
        assert con.execute(RELEASE).fetchall() == expected
        assert con.execute("SELECT k FROM kanon_check('people', qi := ['age'])").fetchall()
        rel = kanon.anonymize(
            "people", 3, ["age", "zip"], con=con, insensitive=["id"], sensitive=["dx"]
        )
        assert len(rel.fetchall()) == 300
    cur.close()
    second.close()


def test_install_and_release_in_threads_one_cursor_each() -> None:
    con = kanon.install(duckdb.connect())
    _people(con)
    expected = con.execute(RELEASE).fetchall()
    results: dict[int, object] = {}
    start = threading.Barrier(4)

    def work(i: int) -> None:
        cur = con.cursor()
        try:
            start.wait()
            kanon.install(cur)
            out = [cur.execute(RELEASE).fetchall() for _ in range(3)]
            # The Python API plans through the shared UDFs as well.
            rel = kanon.anonymize(
                "people", 3, ["age", "zip"], con=cur, seed=1, insensitive=["id"], sensitive=["dx"]
            )
            out.append(sorted(rel.fetchall()))
            results[i] = out
        except Exception as exc:  # reported by the assertion below
            results[i] = exc
        finally:
            cur.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    api = sorted(
        kanon.anonymize(
            "people", 3, ["age", "zip"], con=con, seed=1, insensitive=["id"], sensitive=["dx"]
        ).fetchall()
    )
    for i in range(4):
        assert results[i] == [expected, expected, expected, api], results[i]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_read_only_database_is_checked_and_released_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "ro.duckdb"
    con = duckdb.connect(str(path))
    _people(con)
    con.execute("CREATE TABLE people_k3 AS SELECT * FROM people")  # a stand-in release
    before = _catalog(con)
    con.close()
    digest = _digest(path)

    ro = kanon.install(duckdb.connect(str(path), read_only=True))
    kanon.install(ro)  # idempotent read-only too
    # No config table was created: its absence reads as no configuration.
    assert _catalog(ro) == before
    check = ro.execute(
        "SELECT * FROM kanon_check('people', qi := ['age', 'zip'], sensitive := 'dx')"
    ).fetchall()
    assert check
    report = kanon.check("people", ["age", "zip"], "dx", con=ro)
    assert report.k >= 1
    released = ro.execute(RELEASE).fetchall()
    assert len(released) == 300
    assert _smallest_class(ro, released) >= 3
    for method in ("forest", "mondrian", "optimal", "datafly"):
        rel = kanon.anonymize(
            "people", 3, ["age", "zip"], con=ro, method=method, insensitive=["id"], sensitive=["dx"]
        )
        assert _smallest_class(ro, rel.fetchall()) >= 3
    metrics = ro.execute(
        "SELECT * FROM kanon_metrics('people', 'people_k3', qi := ['age', 'zip'])"
    ).fetchall()
    assert metrics
    assert kanon.metrics("people", "people_k3", ["age", "zip"], con=ro) is not None
    assert _catalog(ro) == before
    ro.close()
    assert _digest(path) == digest
    reopened = duckdb.connect(str(path))
    assert _catalog(reopened) == before
    reopened.close()


def test_a_statement_is_planned_and_its_rows_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``con.execute`` plans ``kanon(...)`` once: its k ≤ rows check counts the table once.

    The relation API (``con.sql``) binds a statement twice, once to build the relation and
    once to run it; the table may change in between, so the second plan is not cached.
    """
    calls: list[str] = []
    planner = install.plan_anonymize

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(str(args[1]))
        return planner(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(install, "plan_anonymize", counting)
    con = duckdb.connect()
    _people(con)
    kanon.install(con)
    rows = con.execute(RELEASE).fetchall()
    assert len(rows) == 300
    assert calls == ["people"]
    calls.clear()
    assert len(con.sql(RELEASE).fetchall()) == 300
    assert calls == ["people", "people"]
