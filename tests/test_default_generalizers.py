"""Default generalizers on numbers beyond doubles, NaN and ±inf, and time zones.

Every release is checked independently: a plain ``GROUP BY`` over the released
quasi-identifiers (each class ≥ k), a join back to the source on a row id (no row lost)
and every label parsed exactly (``int`` / ``Decimal``, never a float) and compared
with the row's original value: ``[lo..hi]`` and ``(lo..hi)`` must hold it, ``[v]`` and
a bare value must be it, ``'*'`` holds anything. Doubles compare in DuckDB's order
``-inf < numbers < inf < NaN``.
"""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon import hierarchy
from kanon.exceptions import InvalidInputError

if TYPE_CHECKING:
    import duckdb

#: (method, extra arguments): every method and label mode of ``kanon(...)``.
METHODS: list[tuple[str, dict[str, Any]]] = [
    ("forest", {}),
    ("forest", {"labels": "range"}),
    ("forest_paper", {}),
    ("mondrian", {}),
    ("mondrian", {"labels": "hierarchy"}),
    ("optimal", {}),
    ("datafly", {}),
    ("mu_argus", {}),
]

_BOUNDS = re.compile(r"^[\[(](.*?)(?:\.\.(.*))?[\])]$")


def _key(text: str) -> tuple[int, Decimal]:
    """An exact sort key of a number's text, in DuckDB's order (NaN last)."""
    t = text.strip().lower()
    if t == "nan":
        return (3, Decimal(0))
    if t in ("inf", "infinity"):
        return (2, Decimal(0))
    if t in ("-inf", "-infinity"):
        return (0, Decimal(0))
    return (1, Decimal(t))


def _holds(label: str | None, value: str | None) -> bool:
    """Whether a released label holds the original value (both as text)."""
    if value is None:
        return label is None or label == "*"
    if label is None:
        return False
    if label == "*":
        return True
    m = _BOUNDS.match(label)
    if m is None:
        return _key(label) == _key(value)
    lo, hi = m.group(1), m.group(2) if m.group(2) is not None else m.group(1)
    return _key(lo) <= _key(value) <= _key(hi)


def _table(con: duckdb.DuckDBPyConnection, typ: str, xs: list[str | None]) -> None:
    con.execute("DROP TABLE IF EXISTS src")
    con.execute(f"CREATE TABLE src (rid INTEGER, x {typ}, y INTEGER)")
    con.executemany(
        f"INSERT INTO src VALUES (?, CAST(? AS {typ}), ?)",
        [[i, x, i % 3] for i, x in enumerate(xs)],
    )


def _check_release(
    con: duckdb.DuckDBPyConnection, k: int, method: str, extra: dict[str, Any]
) -> None:
    """Release ``src`` with ``method`` and check it independently."""
    rel = kanon.anonymize(
        "src", k, con=con, qi=["x", "y"], method=method, insensitive=["rid"], **extra
    )
    rel.create("rel")
    try:
        n = con.execute("SELECT count(*) FROM src").fetchall()[0][0]
        rows = con.execute(
            "SELECT count(*), count(DISTINCT rid) FROM rel WHERE rid IN (SELECT rid FROM src)"
        ).fetchall()
        assert rows == [(n, n)], (method, extra)
        small = con.execute(
            "SELECT x, y, count(*) FROM rel GROUP BY x, y HAVING count(*) < ?", [k]
        ).fetchall()
        assert small == [], (method, extra, small)
        # -0.0 reads as 0.0 in the hierarchies; the text of the value the label covers.
        pairs = con.execute(
            "SELECT r.x, CASE WHEN typeof(s.x) IN ('DOUBLE', 'FLOAT') "
            "THEN CAST(s.x + 0 AS VARCHAR) ELSE CAST(s.x AS VARCHAR) END "
            "FROM rel r JOIN src s USING (rid)"
        ).fetchall()
        wrong = [(label, value) for label, value in pairs if not _holds(label, value)]
        assert wrong == [], (method, extra, wrong[:5])
    finally:
        con.execute("DROP TABLE rel")


def test_decimal_38_near_1e17_labels_hold_their_values(con: duckdb.DuckDBPyConnection) -> None:
    # The case: doubles cannot tell these values apart, so float splits gave 22
    # of 64 rows a label whose range missed the value.
    con.execute(
        "CREATE TABLE src AS SELECT i AS rid, CAST(100000000000000000 + i AS DECIMAL(38, 0)) "
        "AS x, i % 3 AS y FROM range(64) r(i)"
    )
    for method, extra in METHODS:
        _check_release(con, 5, method, extra)
    # The default hierarchy splits the decimal's own grid, exactly.
    top = kanon.anonymize(
        "src", 64, con=con, qi=["x"], method="optimal", insensitive=["rid", "y"]
    ).fetchall()
    assert {r[1] for r in top} <= {"[100000000000000000..100000000000000063]", "*"}


@pytest.mark.slow
def test_hugeint_and_wide_doubles_and_nan_are_released(con: duckdb.DuckDBPyConnection) -> None:
    # Spans beyond 64 binary splits and non-finite doubles used to stop every method.
    con.execute(
        "CREATE TABLE src AS SELECT i AS rid, "
        "CAST(170141183460469231731687303715884105727 AS HUGEINT) - "
        "CAST(i AS HUGEINT) * CAST(1000000000000000000000000000000000000 AS HUGEINT) AS x, "
        "i % 3 AS y FROM range(40) r(i)"
    )
    for method, extra in METHODS:
        _check_release(con, 4, method, extra)
    con.execute("DROP TABLE src")
    con.execute(
        "CREATE TABLE src AS SELECT i AS rid, ['nan', 'inf', '-inf', '1e308', '-1e308', "
        "'-0.0', '0.0', '1.5'][i % 8 + 1]::DOUBLE + CASE WHEN i % 8 = 7 THEN i ELSE 0 END AS x, "
        "i % 3 AS y FROM range(48) r(i)"
    )
    for method, extra in METHODS:
        _check_release(con, 4, method, extra)
    rel = kanon.anonymize("src", 1, con=con, qi=["x", "y"], method="mondrian", insensitive=["rid"])
    assert {"nan", "inf", "-inf"} <= {r[1] for r in rel.fetchall()}
    # 0 and ±1e308 with NULLs: the NULL leaf's key, a span beyond the largest, or the
    # span up to it overflowed.
    for xs in ([None, None, "1e308", "0.0"], [None, None, "-1e308", "0.0"]):
        _table(con, "DOUBLE", xs)
        for method, extra in METHODS:
            _check_release(con, 2, method, extra)
    # The loss of such a release is measured by ranks, not NaN.
    kanon.anonymize("src", 4, con=con, qi=["x", "y"], insensitive=["rid"]).create("rel")
    assert math.isfinite(kanon.metrics("src", "rel", ["x", "y"], con=con).gcp)


def _decimal(unscaled: int, scale: int) -> str:
    """The exact text of ``unscaled * 10**-scale``."""
    return format(Decimal(unscaled).scaleb(-scale, Context(prec=100)), "f")


def _decimal_values(scale: int) -> st.SearchStrategy[str]:
    limit = 10**38 - 1
    unscaled = st.one_of(
        st.integers(-limit, limit),
        st.integers(10**17, 10**17 + 64),
        st.integers(limit - 100, limit),
        st.integers(-5, 5),
    )
    return unscaled.map(lambda u: _decimal(u, scale))


def _int_values(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(lo, hi),
        st.integers(lo, lo + 40),
        st.integers(hi - 40, hi),
        st.integers(max(lo, -3), min(hi, 3)),
    ).map(str)


_SPECIAL = ["nan", "inf", "-inf", "1e308", "-1e308", "-1.7976931348623157e308", "0.0", "-0.0"]
_DOUBLES = st.one_of(
    st.sampled_from(_SPECIAL),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-100, 100).map(repr),
    st.integers(-5, 5).map(lambda i: repr(i / 8)),
)

#: Column types and the values they are drawn from (as text).
COLUMNS = {
    "DECIMAL(38,0)": _decimal_values(0),
    "DECIMAL(38,10)": _decimal_values(10),
    "DECIMAL(38,37)": _decimal_values(37),
    "DECIMAL(9,3)": st.integers(-(10**9) + 1, 10**9 - 1).map(lambda u: _decimal(u, 3)),
    "HUGEINT": _int_values(-(2**127), 2**127 - 1),
    "UHUGEINT": _int_values(0, 2**128 - 1),
    "BIGINT": _int_values(-(2**63), 2**63 - 1),
    "UBIGINT": _int_values(0, 2**64 - 1),
    "DOUBLE": _DOUBLES,
}


@pytest.mark.slow
@pytest.mark.parametrize("typ", list(COLUMNS))
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_method_is_exact_on_any_number(
    con: duckdb.DuckDBPyConnection, typ: str, data: st.DataObject
) -> None:
    values = st.one_of(st.none(), COLUMNS[typ])
    xs = data.draw(st.lists(values, min_size=4, max_size=24), label="x")
    k = data.draw(st.integers(2, 4), label="k")
    _table(con, typ, xs)
    for method, extra in METHODS:
        _check_release(con, k, method, extra)


TIMEZONES = ["UTC", "Asia/Kathmandu", "America/St_Johns"]


def _tz_source(con: duckdb.DuckDBPyConnection) -> None:
    # Instants around midnight UTC (and so around a new month and year elsewhere).
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        "CREATE TABLE src AS SELECT i AS rid, TIMESTAMPTZ '2019-12-31 20:00:00+00' "
        "+ to_minutes((i * 37) % 600) AS x, i % 3 AS y FROM range(60) r(i)"
    )


@pytest.mark.parametrize(("method", "extra"), METHODS)
def test_timestamptz_releases_do_not_depend_on_the_session_time_zone(
    con: duckdb.DuckDBPyConnection, method: str, extra: dict[str, Any]
) -> None:
    _tz_source(con)
    releases = []
    for tz in TIMEZONES:
        con.execute(f"SET TimeZone = '{tz}'")
        rel = kanon.anonymize(
            "src", 5, con=con, qi=["x", "y"], method=method, insensitive=["rid"], **extra
        )
        releases.append(sorted(rel.fetchall()))
        small = con.execute(
            "SELECT count(*) FROM (SELECT x, y FROM rel GROUP BY x, y HAVING count(*) < 5)"
        ).fetchall()
        assert small == [(0,)]
    assert releases[1] == releases[0]
    assert releases[2] == releases[0]


@pytest.mark.parametrize("method", ["forest", "optimal"])
def test_materialized_timestamptz_view_reads_the_same_in_any_time_zone(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    _tz_source(con)
    con.execute("SET TimeZone = 'Asia/Kathmandu'")
    kanon.materialize(con, "src", 5, "rel", qi=["x", "y"], method=method, insensitive=["rid"])
    made = sorted(con.execute("SELECT * FROM rel").fetchall())
    for tz in TIMEZONES:
        con.execute(f"SET TimeZone = '{tz}'")
        got = sorted(con.execute("SELECT * FROM rel").fetchall())
        assert got == made, tz
        assert con.execute("SELECT count(*) FROM rel WHERE x IS NULL").fetchall() == [(0,)]
        small = con.execute(
            "SELECT count(*) FROM (SELECT x, y FROM rel GROUP BY x, y HAVING count(*) < 5)"
        ).fetchall()
        assert small == [(0,)], tz
    # The same release as a UTC session makes.
    con.execute("SET TimeZone = 'UTC'")
    kanon.materialize(con, "src", 5, "rel_utc", qi=["x", "y"], method=method, insensitive=["rid"])
    con.execute("SET TimeZone = 'America/St_Johns'")
    assert sorted(con.execute("SELECT * FROM rel_utc").fetchall()) == made


def test_interval_builders_on_uhugeint_are_exact(con: duckdb.DuckDBPyConnection) -> None:
    # UHUGEINT is an integer type: exact splits, and no interval end beyond the type.
    top = 2**128 - 1
    con.execute(
        f"CREATE TABLE u AS SELECT CAST('{top}' AS UHUGEINT) - CAST(i AS UHUGEINT) AS x "
        "FROM range(10) r(i)"
    )
    hierarchy.intervals(con, "h", table="u", column="x")
    rows = con.execute("SELECT CAST(level_0 AS VARCHAR), level_1 FROM h ORDER BY 1").fetchall()
    assert rows[-1] == (str(top), f"[{top - 1}..{top}]")
    with pytest.raises(InvalidInputError, match="largest integer type"):
        hierarchy.intervals(con, "h", table="u", column="x", width=4)
    con.execute(f"UPDATE u SET x = x - CAST('{2**127}' AS UHUGEINT)")
    hierarchy.intervals(con, "h", table="u", column="x", width=4)
    assert con.execute("SELECT count(*) FROM h").fetchall() == [(10,)]
