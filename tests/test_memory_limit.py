"""A DuckDB ``memory_limit`` below a plan's floor stops it with kanon's error, at once.

Below its floor (what DuckDB cannot spill) a plan died with DuckDB's ``Out of Memory
Error`` after seconds of work (issue 43: the forest on a million rows under 200 MB).
Every method now checks an estimate of its floor as soon as it knows the
distinct tuples, and names the limit, a limit that fits and the methods that fit.
"""

from __future__ import annotations

import re

import duckdb
import pytest

from kanon.datagen import census
from kanon.plan.release.memory import FLOORS, LIMIT_BYTES, MB

QI = "['age', 'sex', 'race', 'marital_status', 'education', 'zip', 'birth_date', 'native_country']"
ROLES = (
    "identifiers := ['person_id', 'name'], "
    "insensitive := ['occupation', 'income', 'hours_per_week']"
)


@pytest.mark.parametrize(
    ("setting", "limit"),
    [("200MB", 200 * MB), ("1GB", 10**9), ("512KiB", 512 * 1024), ("-1", 2.0**64)],
)
def test_the_memory_limit_is_read_in_bytes(setting: str, limit: float) -> None:
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{setting}'")
    (read,) = con.execute(f"SELECT {LIMIT_BYTES}").fetchone() or (None,)
    # DuckDB shows the limit rounded to 4 digits (190.7 MiB); -1 is 16383.9 PiB.
    assert read == pytest.approx(limit, rel=1e-3 if setting != "-1" else 0.01)


def test_the_bounds_grow_with_rows_tuples_and_qis() -> None:
    con = duckdb.connect()

    def bound(sql: str) -> float:
        (value,) = con.execute(f"SELECT {sql}").fetchone() or (0.0,)
        return float(value)

    for floor in FLOORS.values():
        small = bound(floor.bytes_sql(2, 1000, 1, "10", "20"))
        assert small > 0
        assert small < bound(floor.bytes_sql(2, 10**6, 1, "10", "20"))
        assert small <= bound(floor.bytes_sql(2, 1000, 1, "1000", "20"))
        assert small < bound(floor.bytes_sql(8, 1000, 1, "10", "20"))
        assert small < bound(floor.bytes_sql(2, 1000, 1, "10", "20000"))
        assert small <= bound(floor.bytes_sql(2, 1000, 10**6, "10", "20"))


METHODS = ("forest", "forest_paper", "mondrian", "iterated", "priority", "datafly", "mu_argus")


def _call(method: str) -> str:
    return f"SELECT count(*) FROM kanon('t', k := 5, qi := {QI}, method := '{method}', {ROLES})"


@pytest.mark.slow
def test_a_memory_limit_below_the_floor_stops_every_method_before_its_kernel(
    con: duckdb.DuckDBPyConnection,
) -> None:
    census(con, "t", rows=1_000_000, seed=1)
    con.execute("SET memory_limit = '200MB'")
    con.execute("SET threads = 1")
    suggested = {}
    for method in METHODS:
        # Not DuckDB's OutOfMemoryException after seconds (priority: 43 s) of work:
        # kanon's error, naming the limit, a limit that fits, and the method that fits.
        with pytest.raises(duckdb.InvalidInputException) as info:
            con.execute(_call(method)).fetchall()
        message = str(info.value)
        assert f"method := '{method}' needs about" in message
        assert "at threads = 1, more than memory_limit = 190.7 MiB" in message
        assert "method := 'optimal' (which needs about" in message
        assert "SET threads = 1" not in message  # one thread already
        found = re.search(r"SET memory_limit = '(\d+)MB'", message)
        assert found is not None
        suggested[method] = int(found.group(1))
        assert suggested[method] > 200
    # The method it names fits.
    assert con.execute(_call("optimal")).fetchall() == [(1_000_000,)]
    # And so does the limit it names.
    con.execute(f"SET memory_limit = '{suggested['mondrian']}MB'")
    assert con.execute(_call("mondrian")).fetchall() == [(1_000_000,)]
    # More threads need more: the error names one thread, which fits.
    con.execute("SET memory_limit = '330MB'")
    con.execute("SET threads = 4")
    with pytest.raises(duckdb.InvalidInputException, match=r"or SET threads = 1 \(which needs"):
        con.execute(_call("mondrian")).fetchall()
    con.execute("SET threads = 1")
    assert con.execute(_call("mondrian")).fetchall() == [(1_000_000,)]
    con.execute("RESET memory_limit")
    con.execute("RESET threads")
