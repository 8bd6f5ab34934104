"""Default interval hierarchies built by the splits kernels, and their planning.

The kernel path (``kanon_int_splits`` / ``kanon_float_splits`` and the labels of its
nodes) must give exactly the labels of the recursive-CTE path it replaced, with dense
codes per level, nested and in value order; the planner reads the data once for every
default of a statement.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from kanon import _core
from kanon.exceptions import InvalidInputError
from kanon.hierarchy.base import CODE_PREFIX, _dates_sql, leaves_from
from kanon.hierarchy.numbers import (
    _binary_float_sql,
    _binary_int_sql,
    _float_splits_sql,
    _int_splits_sql,
    default_spec,
    default_specs,
)
from kanon.plan.catalog import resolve_table
from kanon.plan.coding import coded_hierarchy
from kanon.plan.hierarchies import hierarchy_cte, resolve_qis
from kanon.plan.measures import exact_positions
from kanon.sql.types import position

if TYPE_CHECKING:
    import duckdb

# (SQL type, values): each column is checked over its own [min, max].
INTS: list[tuple[str, list[str]]] = [
    ("BIGINT", ["-5", "-3", "0", "1", "7", "8", "1000", "NULL"]),
    ("BIGINT", ["42"]),
    ("INTEGER", ["-2147483648", "2147483647", "0", "-1"]),
    ("BIGINT", ["-9223372036854775808", "9223372036854775807", "-1", "0", "12345678901234"]),
    ("UBIGINT", ["0", "18446744073709551615", "9223372036854775808"]),
    (
        "HUGEINT",
        ["170141183460469231731687303715884105727", "170141183460469231731687303715884105000"],
    ),
    (
        "UHUGEINT",
        ["340282366920938463463374607431768211455", "340282366920938463463374607431768211400"],
    ),
    ("SMALLINT", [str(v) for v in range(-40, 60, 3)]),
]
DECIMALS: list[tuple[str, list[str]]] = [
    ("DECIMAL(10,2)", ["-1.50", "-0.01", "0.00", "0.37", "2.25", "99999.99", "NULL"]),
    ("DECIMAL(5,0)", ["-99999", "3", "99999"]),
    ("DECIMAL(38,10)", ["1234567.0000000001", "1234567.0000000002", "1234568.5"]),
    ("DECIMAL(4,3)", ["1.250"]),
]
FLOATS: list[tuple[str, list[str]]] = [
    ("DOUBLE", ["-1.5", "0.1", "0.2", "0.30000000000000004", "1e3", "NULL", "-0.0"]),
    ("DOUBLE", ["1.0", "1.000001", "1.0000019"]),  # narrower than the tolerance
    ("DOUBLE", ["1e-300", "2e-300"]),
    ("DOUBLE", ["7.25"]),
    ("FLOAT", ["-3.5", "0.125", "1e10", "NULL"]),
    ("DOUBLE", ["-1e15", "3.3333333333333335", "1e15"]),
]


def _table(con: duckdb.DuckDBPyConnection, typ: str, values: list[str]) -> str:
    rows = ", ".join(f"(CAST({v} AS {typ}))" for v in values)
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT * FROM (VALUES {rows}) v(x)")
    return leaves_from('"t"', "x", typ)


def _check_codes(con: duckdb.DuckDBPyConnection, select: str) -> None:
    """Codes are dense per level, in value order, and one per label."""
    rows = sorted(con.execute(select).fetchall())
    cols = [d[0] for d in con.execute(f"DESCRIBE {select}").fetchall()]
    levels = [i for i, c in enumerate(cols) if c.startswith("level_")]
    codes = [i for i, c in enumerate(cols) if c.startswith(CODE_PREFIX)]
    assert len(levels) == len(codes)
    assert [r[codes[0]] for r in rows] == list(range(len(rows)))
    for lv, cd in zip(levels[1:], codes[1:], strict=True):
        seen: dict[Any, int] = {}
        last = -1
        for r in rows:
            code = r[cd]
            assert code in (last, last + 1)  # dense, in value order
            last = code
            assert seen.setdefault(r[lv], code) == code  # one code per label
        assert len(set(seen.values())) == len(seen)


@pytest.mark.parametrize(("typ", "values"), INTS + DECIMALS)
def test_int_and_decimal_labels_are_the_recursive_ones(
    con: duckdb.DuckDBPyConnection, typ: str, values: list[str]
) -> None:
    leaves = _table(con, typ, values)
    spec = default_spec(con, '"t"', "x", typ)
    assert spec["kind"] in ("int", "decimal")
    scale = int(spec.get("scale", 0))
    lo, hi = int(spec["lo"]), int(spec["hi"])
    old = con.execute(_binary_int_sql(leaves, lo, hi, scale)).fetchall()
    assert sorted(con.execute(_int_splits_sql(leaves, lo, hi, scale)).fetchall()) == old
    _check_codes(con, _int_splits_sql(leaves, lo, hi, scale, codes=True))


@pytest.mark.parametrize(("typ", "values"), FLOATS)
def test_float_labels_are_the_recursive_ones(
    con: duckdb.DuckDBPyConnection, typ: str, values: list[str]
) -> None:
    leaves = _table(con, typ, values)
    spec = default_spec(con, '"t"', "x", typ)
    assert spec["kind"] == "float"
    lo, hi = float(spec["lo"]), float(spec["hi"])
    old = con.execute(_binary_float_sql(leaves, lo, hi, exact=True)).fetchall()
    assert sorted(con.execute(_float_splits_sql(leaves, lo, hi)).fetchall()) == old
    _check_codes(con, _float_splits_sql(leaves, lo, hi, codes=True))


# Calendar defaults: across years, decades and the era, with fractions of seconds.
DATES: list[tuple[str, list[str]]] = [
    ("DATE", ["'2019-12-31'", "'2020-01-01'", "'2020-01-31'", "'1999-02-03'", "NULL"]),
    ("DATE", ["'0044-03-15 (BC)'", "'0001-01-01'", "'0009-12-31'", "'0010-01-01'"]),
    ("TIMESTAMP", ["'2020-01-05 10:00:00'", "'2020-01-05 10:00:00.5'", "'2029-12-31 23:59:59'"]),
    (
        "TIMESTAMP WITH TIME ZONE",
        ["'2020-01-31 23:30:00+00'", "'2020-02-01 00:30:00+05'", "'1969-12-31 23:59:59+00'"],
    ),
    ("TIMESTAMP_MS", ["'2024-06-01 00:00:00.001'"]),
]


@pytest.mark.parametrize(("typ", "values"), DATES)
def test_calendar_codes_follow_the_labels(
    con: duckdb.DuckDBPyConnection, typ: str, values: list[str]
) -> None:
    """The calendar default's codes: dense, in value order, one per label; same labels."""
    con.execute("SET TimeZone = 'America/Los_Angeles'")  # labels read instants in UTC
    leaves = _table(con, typ, values)
    assert default_spec(con, '"t"', "x", typ)["kind"] == "dates"
    plain = _dates_sql(leaves, typ)
    coded = _dates_sql(leaves, typ, codes=True)
    labels = ", ".join(f"level_{i}" for i in range(5))
    # Compared in SQL: Python has no dates before year 1.
    for a, b in ((plain, coded), (coded, plain)):
        rest = f"SELECT {labels} FROM ({a}) EXCEPT ALL SELECT {labels} FROM ({b})"
        assert con.execute(f"SELECT count(*) FROM ({rest})").fetchall() == [(0,)]
    codes = ", ".join(f"{CODE_PREFIX}{i}" for i in range(5))
    rows = con.execute(
        f"SELECT {labels.replace('level_0', 'NULL')}, {codes} FROM ({coded}) ORDER BY level_0"
    ).fetchall()
    assert [r[5] for r in rows] == list(range(len(rows)))  # leaves in value order
    for level in range(1, 5):
        seen: dict[Any, int] = {}
        last = -1
        for r in rows:
            code = r[5 + level]
            assert code in (last, last + 1)  # dense, in value order
            last = code
            assert seen.setdefault(r[level], code) == code  # one code per label
        assert len(set(seen.values())) == len(seen)


def test_many_values_match_the_recursive_labels(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE t AS SELECT (i * 7919) % 100003 - 50000 AS x FROM range(5000) r(i)")
    leaves = leaves_from('"t"', "x", "BIGINT")
    lo, hi = con.execute("SELECT min(x), max(x) FROM t").fetchone() or (0, 0)
    old = con.execute(_binary_int_sql(leaves, lo, hi)).fetchall()
    assert sorted(con.execute(_int_splits_sql(leaves, lo, hi)).fetchall()) == old
    con.execute("CREATE TABLE f AS SELECT sin(i) * 1000 AS x FROM range(3000) r(i)")
    leaves = leaves_from('"f"', "x", "DOUBLE")
    lo, hi = con.execute("SELECT min(x), max(x) FROM f").fetchone() or (0.0, 0.0)
    old = con.execute(_binary_float_sql(leaves, lo, hi, exact=True)).fetchall()
    assert sorted(con.execute(_float_splits_sql(leaves, lo, hi)).fetchall()) == old


def test_values_outside_the_planned_range_get_no_leaf(con: duckdb.DuckDBPyConnection) -> None:
    leaves = _table(con, "BIGINT", ["-1", "0", "5", "9"])
    assert sorted(r[0] for r in con.execute(_int_splits_sql(leaves, 0, 5)).fetchall()) == [0, 5]


class _Counting:
    """A connection that records the statements run through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.statements: list[str] = []

    def execute(self, sql: str, *args: Any) -> Any:
        self.statements.append(sql)
        return self.con.execute(sql, *args)


@pytest.mark.parametrize("population", [False, True])
def test_the_planner_reads_the_data_once_for_every_default(
    con: duckdb.DuckDBPyConnection, population: bool
) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT i AS a, CAST(i AS DOUBLE) / 2 AS b, "
        "CAST(i % 7 AS DECIMAL(6,2)) AS c, "
        "DATE '2020-01-01' + CAST(i AS INTEGER) AS d, 'x' || i AS e FROM range(100) r(i)"
    )
    con.execute("CREATE TABLE p AS SELECT * FROM t")
    counting = _Counting(con)
    pop = resolve_table(con, "p") if population else None
    qis = resolve_qis(counting, resolve_table(con, "t"), ("a", "b", "c", "d", "e"), [], pop)  # type: ignore[arg-type]
    reads = [s for s in counting.statements if not s.startswith("DESCRIBE")]
    assert len(reads) == 1, reads
    assert [q.default["kind"] for q in qis if q.default] == [
        "int",
        "float",
        "decimal",
        "dates",
        "suppress",
    ]


def test_default_specs_are_those_of_default_spec(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES (1, 2.5::DOUBLE, NULL::DOUBLE, 'inf'::DOUBLE, "
        "-170141183460469231731687303715884105727::HUGEINT), "
        "(5, -0.0, NULL, 1.0, 170141183460469231731687303715884105727::HUGEINT)) v(a, b, c, d, e)"
    )
    cols = [(str(r[0]), str(r[1])) for r in con.execute("DESCRIBE t").fetchall()]
    one_by_one = [default_spec(con, '"t"', c, typ) for c, typ in cols]
    assert default_specs(con, '"t"', cols) == one_by_one
    assert [s["kind"] for s in one_by_one] == ["int", "float", "suppress", "ranks", "ranks"]


def test_interval_defaults_name_their_columns_as_described(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(
        "CREATE TABLE t AS SELECT i AS a, CAST(i AS DOUBLE) / 3 AS b, "
        "CAST(i AS DECIMAL(9,3)) AS c, CAST(i AS UTINYINT) AS d, 7 AS e, CAST(i AS FLOAT) AS f "
        "FROM range(50) r(i)"
    )
    qis = resolve_qis(con, resolve_table(con, "t"), ("a", "b", "c", "d", "e", "f"), [])
    for q in qis:
        assert q.codes
        described = con.execute(f"DESCRIBE {q.select}").fetchall()
        levels = [(str(r[0]), str(r[1])) for r in described if str(r[0]).startswith("level_")]
        assert q.labels == tuple(name for name, _ in levels)
        assert q.level0_type == levels[0][1]


def test_splits_kernels_on_arrow() -> None:
    u64s, f64s = pa.list_(pa.uint64()), pa.list_(pa.float64())
    opts = pa.array(
        [json.dumps({"span": 3, "splits": 2}), None, json.dumps({"span": 0, "splits": 0})]
    )
    out = _core.int_splits(pa.array([[3, 0], [1], []], u64s), opts).to_pylist()
    assert out[0] == {"codes": [[1, 0], [1, 0], [0, 0]], "lo": [[0, 2], [0]], "hi": [[1, 3], [3]]}
    assert out[1] is None
    assert out[2] == {"codes": [[], []], "lo": [[]], "hi": [[]]}
    floats = _core.float_splits(
        pa.array([[0.75, 0.5]], f64s), pa.array([json.dumps({"lo": 0.0, "hi": 1.0, "splits": 2})])
    ).to_pylist()
    assert floats[0]["codes"] == [[1, 0], [1, 0], [0, 0]]
    assert floats[0]["lo"] == [[0.0, 0.5], [0.0]]
    with pytest.raises(InvalidInputError, match="distinct"):
        _core.int_splits(pa.array([[1, 1]], u64s), opts[:1])
    with pytest.raises(InvalidInputError, match="outside"):
        _core.int_splits(pa.array([[4]], u64s), opts[:1])
    with pytest.raises(InvalidInputError, match="unknown field"):
        _core.int_splits(pa.array([[1]], u64s), pa.array(['{"span": 3, "splits": 2, "x": 1}']))
    with pytest.raises(InvalidInputError, match="outside"):
        _core.float_splits(
            pa.array([[math.nan]], f64s), pa.array(['{"lo": 0.0, "hi": 1.0, "splits": 2}'])
        )


@pytest.mark.parametrize(
    ("typ", "values"),
    [
        ("BIGINT", ["-5", "3", "7", "NULL"]),
        # Beyond doubles' integers: positions collide, so both give ranks.
        ("BIGINT", ["1152921504606846977", "1152921504606846978", "1152921504606846980"]),
        ("DATE", ["'2020-01-01'", "'0044-03-15 (BC)'", "NULL"]),
    ],
)
def test_positions_ranked_by_leaf_code_are_the_sorted_ranks(
    con: duckdb.DuckDBPyConnection, typ: str, values: list[str]
) -> None:
    """Ranks from a coded default's leaf codes equal the ranks of a sort of the values."""
    _table(con, typ, values)
    q = resolve_qis(con, resolve_table(con, "t"), ("x",), [])[0]
    assert q.codes
    h = hierarchy_cte(0, q)
    coded = coded_hierarchy(h, q, '"t"')
    points = (
        f"WITH {h.ref} AS ({h.sql}), p0 AS (SELECT a0, {position('vk', q.column.type)} AS x, "
        f"vk AS val FROM ({coded}))"
    )
    plain = f"{points} {exact_positions('p0')} ORDER BY a0"
    ranked = f"{points} {exact_positions('p0', ranked=True)} ORDER BY a0"
    assert con.execute(ranked).fetchall() == con.execute(plain).fetchall()
