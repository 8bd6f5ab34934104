"""``con.interrupt()`` stops kanon statements inside their kernels, not after them.

DuckDB checks its own interrupt flag only between chunks; kanon makes ``interrupt`` raise
the kernels' cancel flag too, which they poll in their long loops (a kernel stopped so
fails its UDF: ``duckdb.InvalidInputException`` "... cancelled (the statement was
interrupted)", where DuckDB raises ``duckdb.InterruptException``). No timing is
asserted: the forest test interrupts after the first of many blocks has finished and
checks that the others never ran, and that the next statement runs normally.
"""

from __future__ import annotations

import json
import threading
import time

import duckdb
import pyarrow as pa
import pytest

import kanon
from kanon import _core
from kanon.datagen import census
from kanon.exceptions import InvalidInputError

QI = "['age', 'sex', 'race', 'marital_status', 'education', 'zip', 'birth_date', 'native_country']"


def _tiny_hkp() -> dict[str, object]:
    out = _core.hkp(
        pa.array([[[0, 1], [0, 1]]], pa.list_(pa.list_(pa.uint32()))),
        pa.array([2], pa.uint64()),
        pa.array([2], pa.uint64()),
        pa.array([[]], pa.list_(pa.uint32())),
        pa.array([json.dumps({"h": 1.0, "k": 1, "p": 2, "method": "mmil"})]),
    )
    row: dict[str, object] = out.to_pylist()[0]
    return row


def test_interrupt_raises_the_kernels_cancel_flag_and_a_statement_clears_it() -> None:
    con = kanon.install(duckdb.connect())
    assert _tiny_hkp()["suppressed"] == []
    con.interrupt()  # nothing runs: DuckDB ignores it, the kernels' flag stays raised
    try:
        with pytest.raises(InvalidInputError, match="cancelled"):
            _tiny_hkp()
        # A kanon statement starting afterwards forgets it.
        con.execute("CREATE TABLE t AS SELECT i % 5 AS a, i % 3 AS b FROM range(30) r(i)")
        rows = con.execute("SELECT * FROM kanon('t', k := 3, qi := ['a', 'b'])").fetchall()
        assert len(rows) == 30
        assert _tiny_hkp()["suppressed"] == []
        duckdb.interrupt(connection=con)  # the module-level function too
        with pytest.raises(InvalidInputError, match="cancelled"):
            _tiny_hkp()
    finally:
        _core.progress_uncancel()


def test_interrupt_stops_the_blocked_forest_between_its_blocks() -> None:
    con = kanon.install(duckdb.connect())
    rows = 60_000
    census(con, "people", rows=rows, seed=3)
    sql = (
        f"SELECT count(*) FROM kanon('people', k := 5, qi := {QI}, block_size := 1000, "
        "method := 'forest', keep_undeclared := true)"
    )
    done_before, _ = _core.progress()
    fired = threading.Event()
    finished = threading.Event()

    def interrupt_after_the_first_block() -> None:
        # The kernel counts the rows of every finished block.
        while not finished.is_set():
            if _core.progress()[0] > done_before:
                con.interrupt()
                fired.set()
                return
            time.sleep(0.005)

    watcher = threading.Thread(target=interrupt_after_the_first_block)
    watcher.start()
    try:
        # DuckDB's own InterruptException when it sees the interrupt first, else the
        # kernel's cancellation, raised by the UDF as an error naming the interrupt.
        with pytest.raises((duckdb.InterruptException, duckdb.InvalidInputException)) as info:
            con.execute(sql).fetchall()
        if info.type is duckdb.InvalidInputException:
            assert info.match(r"cancelled \(the statement was interrupted\)")
    finally:
        finished.set()
        watcher.join()
    assert fired.is_set()
    # Most blocks never ran: the kernel stopped inside, not at its end.
    assert _core.progress()[0] - done_before < rows
    # The connection and the kernels work again, and give a k-anonymous release.
    con.execute(
        f"CREATE TEMP TABLE rel AS SELECT * FROM kanon('people', k := 5, qi := {QI}, "
        "block_size := 1000, keep_undeclared := true)"
    )
    ((n, smallest),) = con.execute(
        "SELECT sum(c), min(c) FROM (SELECT count(*) AS c FROM rel GROUP BY age, sex, race, "
        "marital_status, education, zip, birth_date, native_country)"
    ).fetchall()
    assert (n, smallest >= 5) == (rows, True)


@pytest.mark.slow
def test_interrupt_stops_the_forest_inside_its_regroup_pools() -> None:
    # k = 1000 on 40,000 rows of a suppressed text QI: groups of 2,000 rows, whose regroup
    # pools of 8,000 rows take seconds each. The regroup pass read the cancel flag only
    # between batches of 64 pools (35-40 s after an interrupt, issue 43); a pool's solve
    # now reads it too.
    con = kanon.install(duckdb.connect())
    con.execute(
        "CREATE TABLE t AS SELECT md5(CAST(hash(i, 1) % 5000 AS VARCHAR)) AS x, "
        "CAST(hash(i, 3) % 5 AS INTEGER) AS a, CAST(hash(i, 5) % 2 AS INTEGER) AS s "
        "FROM range(40000) r(i)"
    )
    sql = "SELECT count(*) FROM kanon('t', k := 1000, qi := ['x', 'a', 's'])"
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(con.execute(sql).fetchall())
        except duckdb.Error as error:
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(6)  # into the improvement passes (the forest itself takes a second)
    con.interrupt()
    asked = time.monotonic()
    worker.join(60)
    stopped = time.monotonic() - asked
    assert not worker.is_alive()
    # Generous (it stops within a tenth of a second here): the statement may also have
    # finished before the interrupt on a fast machine.
    assert stopped < 5, f"the forest ran {stopped:.1f} s past the interrupt"
    (result,) = outcome
    if isinstance(result, duckdb.InvalidInputException):
        assert "cancelled (the statement was interrupted)" in str(result)
    elif not isinstance(result, duckdb.InterruptException):
        assert result == [(40000,)]
    # The connection works again.
    again = "SELECT count(*) FROM kanon('t', k := 5, qi := ['x', 'a', 's'])"
    assert con.execute(again).fetchall() == [(40000,)]
