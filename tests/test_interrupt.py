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
