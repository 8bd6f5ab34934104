"""``kanon(..., method := 'datafly' | 'mu_argus')``: Sweeney's historic greedy algorithms.

Releases are checked independently of the planner and the kernel: a plain ``GROUP BY``
over the released labels (the class of suppressed rows included), row accounting,
truthfulness against the hierarchy tables, the same release for the same rows in another
order, and a re-implementation of both algorithms in plain Python over the hierarchy
tables (levels, μ-Argus's cells, the rows and classes they leave below k) that the
release and ``kanon_search``'s report must agree with.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

import kanon
from kanon import _core
from kanon.exceptions import InvalidInputError
from tests.conftest import data_dir
from tests.strategies import tables
from tests.test_anonymize import ADULT_QI, _load, _min_class, _untruthful
from tests.test_optimal import (
    QI,
    SETTINGS,
    _assert_release,
    _configure,
    _has_values,
    _height,
    _wide_tables,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

METHODS = ("datafly", "mu_argus")
#: A suppressed cell in a class key: equal to no label (the kernel's marker).
CELL = ("suppressed cell",)

Path = tuple[str | None, ...]  # the labels of one value, level 0 to the top


# --- A plain Python re-implementation over the hierarchy tables ---------------------------


def _paths(
    con: duckdb.DuckDBPyConnection, table: str, hierarchies: dict[str, str]
) -> tuple[list[int], list[list[Path]], list[int]]:
    """Rids in order, per row and QI the label path of its value, and the heights.

    A NULL value sits right under the root: NULL labels below it.
    """
    by_value: list[dict[str, Path]] = []
    heights = []
    roots = []
    for h in hierarchies.values():
        labels = [r[0] for r in con.execute(f'DESCRIBE "{h}"').fetchall()]
        heights.append(len(labels) - 1)
        cast = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in labels)
        by_value.append(
            {r[0]: tuple(r) for r in con.execute(f'SELECT {cast} FROM "{h}"').fetchall()}
        )
        (root,) = {path[-1] for path in by_value[-1].values()}
        roots.append(root)
    cols = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in hierarchies)
    rows = con.execute(f'SELECT rid, {cols} FROM "{table}" ORDER BY rid').fetchall()
    paths = [
        [
            by_value[j][v] if v is not None else (None,) * heights[j] + (roots[j],)
            for j, v in enumerate(row[1:])
        ]
        for row in rows
    ]
    return [int(r[0]) for r in rows], paths, heights


def _labels(paths: list[list[Path]], levels: Sequence[int]) -> list[Path]:
    return [tuple(p[j][lvl] for j, lvl in enumerate(levels)) for p in paths]


def _small(keys: Sequence[Any], k: int) -> tuple[int, int]:
    """Rows and classes below k."""
    sizes = Counter(keys).values()
    return sum(n for n in sizes if n < k), sum(1 for n in sizes if n < k)


def _datafly(
    paths: list[list[Path]], heights: list[int], k: int, limit: int
) -> tuple[list[int], list[int]]:
    """Datafly's levels (most distinct labels first, ties to the first QI) and cells."""
    m = len(heights)
    levels = [0] * m
    while _small(_labels(paths, levels), k)[0] > limit:
        distinct = [
            (len({p[j][levels[j]] for p in paths}), -j) for j in range(m) if levels[j] < heights[j]
        ]
        if not distinct:
            break
        levels[-max(distinct)[1]] += 1
    return levels, [0] * len(paths)


def _mu_argus(paths: list[list[Path]], heights: list[int], k: int) -> tuple[list[int], list[int]]:
    """μ-Argus's levels and, per row, the mask of the cells it suppresses."""
    m = len(heights)
    levels = []
    for j in range(m):
        for level in range(heights[j] + 1):
            sizes = Counter(p[j][level] for p in paths).values()
            if level == heights[j] or min(sizes) >= k:
                levels.append(level)
                break
    labels = _labels(paths, levels)
    combos = [c for r in (2, 3) for c in itertools.combinations(range(m), r)]
    freq = {c: Counter(tuple(row[j] for j in c) for row in labels) for c in combos}
    cells = []
    for row in labels:
        left = [c for c in combos if freq[c][tuple(row[j] for j in c)] < k]
        mask = 0
        while left:
            score = [sum(j in c for c in left) for j in range(m)]
            j = score.index(max(score))
            mask |= 1 << j
            left = [c for c in left if j not in c]
        cells.append(mask)
    return levels, cells


def _keys(labels: list[Path], cells: list[int]) -> list[tuple[Any, ...]]:
    """Class keys of the algorithm's own output (suppressed cells as the marker)."""
    return [
        tuple(CELL if mask >> j & 1 else x for j, x in enumerate(row))
        for row, mask in zip(labels, cells, strict=True)
    ]


def _shown(
    labels: list[Path], cells: list[int], levels: Sequence[int], heights: list[int]
) -> list[Path]:
    """What the release shows of a row that is not suppressed."""
    return [
        tuple("*" if mask >> j & 1 or levels[j] == heights[j] else x for j, x in enumerate(row))
        for row, mask in zip(labels, cells, strict=True)
    ]


# --- Helpers -------------------------------------------------------------------------------


def _args(method: str, suppression: float, drop: bool) -> str:
    args = f"method := '{method}', drop_suppressed := {str(drop).lower()}"
    if suppression:
        args += f", max_suppression := {suppression}"
    return args


def _search(con: duckdb.DuckDBPyConnection, table: str, k: int, args: str) -> dict[str, Any]:
    cur = con.execute(f"SELECT * FROM kanon_search('{table}', k := {k}, {args})")
    names = [d[0] for d in cur.description]
    (row,) = cur.fetchall()
    return dict(zip(names, row, strict=True))


def _released(con: duckdb.DuckDBPyConnection, rel: str) -> dict[int, Path]:
    cols = ", ".join(f'"{c}"' for c in QI)
    return {
        int(r[0]): tuple(r[1:]) for r in con.execute(f"SELECT rid, {cols} FROM {rel}").fetchall()
    }


# --- Properties on random tables -------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(
    data=st.one_of(tables(max_rows=30), _wide_tables()),
    method=st.sampled_from(METHODS),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.0, 0.2]),
)
def test_historic_release_is_k_anonymous_and_follows_the_algorithm(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    method: str,
    k_seed: int,
    suppression: float,
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % min(n, 6)
    if method == "mu_argus":
        suppression = 0.0
    before = con.execute("SELECT * FROM t ORDER BY rid").fetchall()

    # The algorithm, re-implemented over the hierarchy tables.
    rids, paths, heights = _paths(con, "t", hierarchies)
    if method == "datafly":
        limit = int(suppression * n) if suppression else k  # Sweeney's rule: k rows
        levels, cells = _datafly(paths, heights, k, limit)
    else:
        levels, cells = _mu_argus(paths, heights, k)
    labels = _labels(paths, levels)
    keys = _keys(labels, cells)
    sizes = Counter(keys)
    small = {i for i, key in enumerate(keys) if sizes[key] < k}
    unprotected_rows, unprotected_classes = _small(keys, k)
    shown = dict(zip(rids, _shown(labels, cells, levels, heights), strict=True))
    star = ("*",) * len(QI)

    for drop in (False, True):
        args = _args(method, suppression, drop)
        con.execute(f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', k := {k}, {args})")
        released = _released(con, "rel")
        report = _search(con, "t", k, args)
        assert dict(report["levels"]) == dict(zip(QI, levels, strict=True)), report
        assert (report["unprotected_rows"], report["unprotected_classes"]) == (
            unprotected_rows,
            unprotected_classes,
        ), report
        assert report["method"] == method
        assert report["cost"] is report["nodes"] is report["checked"] is report["metric"] is None
        assert report["suppressed_cells"] == sum(bin(mask).count("1") for mask in cells)
        # The finishing suppresses the unprotected rows, then tops the kept '*' class up.
        assert report["suppressed"] == report["unprotected_rows"] + report["topped_up_rows"]
        if drop:
            assert report["topped_up_rows"] == 0
            # Exactly the rows of classes below k are left out; the others show the
            # algorithm's labels and cells.
            assert set(released) == {r for i, r in enumerate(rids) if i not in small}
            assert all(released[r] == shown[r] for r in released)
            assert len(released) == n - report["suppressed"]
        else:
            assert set(released) == set(rids)  # no row lost
            # A row shows the algorithm's labels and cells, or is suppressed entirely:
            # the classes below k, plus whole classes topping the '*' class up to k.
            members: dict[tuple[Any, ...], list[int]] = {}
            for i, key in enumerate(keys):
                members.setdefault(key, []).append(rids[i])
            changed = {r for r in rids if released[r] != shown[r]}
            assert all(released[r] == star for r in changed)
            assert {rids[i] for i in small} <= {r for r in rids if released[r] == star}
            topped = [
                key for key, rows in members.items() if sizes[key] >= k and changed & set(rows)
            ]
            assert all(set(members[key]) <= changed for key in topped)
            untouched = [
                sizes[key]
                for key, rows in members.items()
                if sizes[key] >= k and key not in topped and shown[rows[0]] != star
            ]
            if topped:  # the smallest classes, and no more than needed
                largest = max(sizes[key] for key in topped)
                assert largest <= min(untouched, default=n)
                assert report["suppressed"] - largest < k
            assert sum(sizes[key] for key in topped) <= report["topped_up_rows"]
        groups = con.execute("SELECT count(*) FROM (SELECT DISTINCT q0, q1, q2 FROM rel)")
        dropped_class = drop and report["suppressed"] > 0 and star not in released.values()
        assert report["classes"] == groups.fetchall()[0][0] + dropped_class
        if released:
            _assert_release(con, "t", "rel", k, hierarchies)
        for column, hierarchy in hierarchies.items():
            assert _untruthful(con, "t", "rel", column, hierarchy) == [], column
    assert con.execute("SELECT * FROM t ORDER BY rid").fetchall() == before

    # The same rows in another order: the same release.
    con.execute("CREATE OR REPLACE TABLE t2 AS SELECT * FROM t ORDER BY hash(rid), rid DESC")
    kanon.configure(
        con, "t2", qi=hierarchies, identifiers=["name"], sensitive=["s"], insensitive=["rid"]
    )
    args = _args(method, suppression, False)
    one = con.execute(f"SELECT * FROM kanon('t', k := {k}, {args}) ORDER BY rid").fetchall()
    two = con.execute(f"SELECT * FROM kanon('t2', k := {k}, {args}) ORDER BY rid").fetchall()
    assert one == two


# --- Hand-worked examples ------------------------------------------------------------------


def _people(con: duckdb.DuckDBPyConnection) -> None:
    """Ages 30, 31, 40, 41, 50 (decades below the root), sexes f, f, m, m, m."""
    con.execute(
        "CREATE TABLE h_age AS SELECT * FROM (VALUES (30, '3x', '*'), (31, '3x', '*'), "
        "(40, '4x', '*'), (41, '4x', '*'), (50, '5x', '*')) v(age, decade, top)"
    )
    con.execute("CREATE TABLE h_sex AS SELECT * FROM (VALUES ('f', '*'), ('m', '*')) v(sex, top)")
    con.execute(
        "CREATE TABLE p AS SELECT * FROM (VALUES (1, 30, 'f'), (2, 31, 'f'), (3, 40, 'm'), "
        "(4, 41, 'm'), (5, 50, 'm')) v(rid, age, sex)"
    )
    kanon.configure(con, "p", qi={"age": "h_age", "sex": "h_sex"}, insensitive=["rid"])


def test_datafly_generalizes_the_attribute_with_most_distinct_values_first(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _people(con)
    # Level 0: five unique rows, more than k = 2 → age (5 distinct values, sex 2) goes up.
    # Level (1, 0): only (5x, m) is below k: 1 row ≤ k (Sweeney's rule), so Datafly stops
    # and suppresses it; the kept '*' class is then topped up with the smallest class,
    # (3x, f) (ties between classes of 2 go to the lower labels).
    found = kanon.search("p", 2, con=con, method="datafly")
    assert found.levels == {"age": 1, "sex": 0}
    assert (found.suppressed, found.unprotected_rows, found.unprotected_classes) == (3, 1, 1)
    assert (found.topped_up_rows, found.suppressed_cells, found.classes) == (2, 0, 2)
    assert (found.metric, found.cost, found.nodes, found.checked) == (None, None, None, None)
    rel = con.execute(
        "SELECT rid, age, sex FROM kanon('p', k := 2, method := 'datafly') ORDER BY rid"
    ).fetchall()
    assert rel == [(1, "*", "*"), (2, "*", "*"), (3, "4x", "m"), (4, "4x", "m"), (5, "*", "*")]
    # Dropped instead of kept: no topping up.
    rel = con.execute(
        "SELECT rid, age, sex FROM kanon('p', k := 2, method := 'datafly', "
        "drop_suppressed := true) ORDER BY rid"
    ).fetchall()
    assert rel == [(1, "3x", "f"), (2, "3x", "f"), (3, "4x", "m"), (4, "4x", "m")]
    # No row may stay below k: age goes on to its top (3 decades still beat 2 sexes).
    strict = kanon.search("p", 2, con=con, method="datafly", max_suppression=1e-9)
    assert strict.levels == {"age": 2, "sex": 0}
    assert (strict.suppressed, strict.unprotected_rows) == (0, 0)


def test_mu_argus_suppresses_cells_and_reports_what_it_misses(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Four binary attributes, all 16 combinations once: every combination of 3 attributes
    # occurs twice, so μ-Argus sees no outlier at k = 2, yet every row is unique on all
    # four: all of them are left unprotected.
    con.execute(
        "CREATE TABLE b AS SELECT i AS rid, i % 2 AS a, (i // 2) % 2 AS b, (i // 4) % 2 AS c, "
        "(i // 8) % 2 AS d FROM range(16) r(i)"
    )
    kanon.configure(con, "b", qi=["a", "b", "c", "d"], insensitive=["rid"])
    found = kanon.search("b", 2, con=con, method="mu_argus")
    assert found.levels == {"a": 0, "b": 0, "c": 0, "d": 0}
    assert (found.unprotected_rows, found.unprotected_classes) == (16, 16)
    assert (found.suppressed, found.suppressed_cells, found.topped_up_rows) == (16, 0, 0)
    assert found.method == "mu_argus"
    rel = con.execute("SELECT DISTINCT a, b, c, d FROM kanon('b', k := 2, method := 'mu_argus')")
    assert rel.fetchall() == [("*", "*", "*", "*")]
    assert con.execute(
        "SELECT count(*) FROM kanon('b', k := 2, method := 'mu_argus', drop_suppressed := true)"
    ).fetchall() == [(0,)]
    # One rare pair: (a, b) = (1, 1) in one row of 9; μ-Argus suppresses one of its cells.
    con.execute(
        "CREATE TABLE c AS SELECT i AS rid, CASE WHEN i < 4 OR i = 8 THEN 1 ELSE 0 END AS a, "
        "CASE WHEN i >= 4 THEN 1 ELSE 0 END AS b FROM range(9) r(i)"
    )
    kanon.configure(con, "c", qi=["a", "b"], insensitive=["rid"])
    found = kanon.search("c", 2, con=con, method="mu_argus")
    assert found.levels == {"a": 0, "b": 0}
    # Its cell of a (the first of the tied attributes) is suppressed: ('*', 1) is still
    # alone, so the row is suppressed, and the '*' class is topped up with the smallest
    # class, (0, 1) (tied with (1, 0) at 4 rows; lower labels first).
    assert (found.suppressed_cells, found.unprotected_rows, found.unprotected_classes) == (1, 1, 1)
    assert (found.suppressed, found.topped_up_rows, found.classes) == (5, 4, 2)
    rel = con.execute(
        "SELECT a, b, count(*) FROM kanon('c', k := 2, method := 'mu_argus') GROUP BY ALL "
        "ORDER BY ALL"
    ).fetchall()
    assert rel == [("*", "*", 5), ("1", "0", 4)]
    rel = con.execute(
        "SELECT a, b, count(*) FROM kanon('c', k := 2, method := 'mu_argus', "
        "drop_suppressed := true) GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rel == [("0", "1", 4), ("1", "0", 4)]


def test_optimal_search_reports_its_method_and_no_historic_counts(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _people(con)
    row = _search(con, "p", 2, "max_suppression := 0.2")
    assert row["method"] == "optimal"
    assert row["metric"] == "loss"
    assert all(row[c] is None for c in ("unprotected_rows", "unprotected_classes"))
    assert all(row[c] is None for c in ("suppressed_cells", "topped_up_rows"))
    found = kanon.search("p", 2, con=con)
    assert found.method == "optimal"
    assert found.unprotected_rows is None
    assert found.cost is not None


def test_errors_name_the_problem(con: duckdb.DuckDBPyConnection) -> None:
    _people(con)
    for method in METHODS:
        with pytest.raises(InvalidInputError, match=f"metric does not apply to method '{method}'"):
            kanon.explain(con, "p", 2, method=method, metric="dm")
        with pytest.raises(InvalidInputError, match="min_level, max_level do not apply"):
            kanon.explain(con, "p", 2, method=method, min_level={"age": 1}, max_level={"age": 1})
        with pytest.raises(InvalidInputError, match="l does not apply"):
            kanon.explain(con, "p", 2, method=method, sensitive="sex", l=2)
        with pytest.raises(duckdb.InvalidInputException, match="metric does not apply"):
            con.execute(
                f"SELECT * FROM kanon_search('p', k := 2, method := '{method}', metric := 'dm')"
            )
    with pytest.raises(InvalidInputError, match="max_suppression does not apply to method 'mu_a"):
        kanon.explain(con, "p", 2, method="mu_argus", max_suppression=0.1)
    with pytest.raises(duckdb.InvalidInputException, match="max_suppression does not apply"):
        con.execute(
            "SELECT * FROM kanon('p', k := 2, method := 'mu_argus', max_suppression := 0.1)"
        )
    with pytest.raises(InvalidInputError, match=r"max_suppression must be a number in \[0, 1\)"):
        kanon.explain(con, "p", 2, method="datafly", max_suppression=1.0)
    with pytest.raises(duckdb.InvalidInputException, match="supports the full-domain methods"):
        con.execute("SELECT * FROM kanon_search('p', k := 2, method := 'forest')")
    with pytest.raises(InvalidInputError, match="supports the full-domain methods"):
        kanon.search("p", 2, con=con, method="forest_paper")
    with pytest.raises(duckdb.InvalidInputException, match="method must be one of"):
        con.execute("SELECT * FROM kanon('p', k := 2, method := 'datafly2')")

    # The binding itself.
    def historic(method: str, k: int, limit: int | None) -> dict[str, Any]:
        options = {"m": 1, "method": method, "max_suppressed": limit, "keep_suppressed": True}
        out = _core.historic(
            pa.array([[0]], pa.list_(pa.uint32())),
            pa.array([[2]], pa.list_(pa.uint64())),
            pa.array([[[[0]]]], pa.list_(pa.list_(pa.list_(pa.uint32())))),
            pa.array([k], pa.uint64()),
            pa.array([json.dumps(options)]),
        )
        row: dict[str, Any] = out.to_pylist()[0]
        return row

    with pytest.raises(InvalidInputError, match="max_suppressed applies to method 'datafly'"):
        historic("mu_argus", 2, 0)
    with pytest.raises(InvalidInputError, match=r'unknown method "optimal", expected one of \['):
        historic("optimal", 2, None)
    with pytest.raises(InvalidInputError, match="fewer than k"):
        historic("datafly", 3, None)
    released = historic("datafly", 2, None)
    assert (released["levels"], released["cells"]) == ([0], [0])
    assert released["stats"]["classes"] == 1


# --- Adult ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_adult_datafly_and_mu_argus_with_arx_hierarchies(con: duckdb.DuckDBPyConnection) -> None:
    folder = data_dir() / "adult"
    con.execute(
        "CREATE TABLE adult AS SELECT row_number() OVER () AS rid, * "
        "FROM read_csv(?, delim = ';', header = true)",
        [str(folder / "adult.csv")],
    )
    qi = [c for c in ADULT_QI if c != "occupation"]  # ARX's benchmark: 8 QIs
    for c in qi:
        kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
    hierarchies = {c: f"h_{c}" for c in qi}
    kanon.configure(con, "adult", qi=hierarchies, insensitive=["rid", "occupation"])
    heights = {c: _height(con, h) for c, h in hierarchies.items()}
    _, paths, _ = _paths(con, "adult", hierarchies)
    for method in METHODS:
        found = kanon.search("adult", 5, con=con, method=method)
        con.execute(
            f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('adult', k := 5, "
            f"method := '{method}')"
        )
        gcp = kanon.metrics("adult", "rel", con=con).gcp
        numbers = (method, found, gcp)
        assert con.execute("SELECT count(*), count(DISTINCT rid) FROM rel").fetchall() == [
            (30162, 30162)
        ], numbers
        assert _min_class(con, "rel", qi) >= 5, numbers
        assert anonymity.k_anonymity(con.sql("SELECT * FROM rel").df(), qi) >= 5, numbers
        for c in qi:
            assert _untruthful(con, "adult", "rel", c, f"h_{c}") == [], (c, numbers)
        assert found.suppressed == found.unprotected_rows + found.topped_up_rows, numbers
        stars = " AND ".join(f"\"{c}\" = '*'" for c in qi)
        held = con.execute(f"SELECT count(*) FROM rel WHERE {stars}").fetchall()[0][0]
        assert held >= found.suppressed, numbers
        assert 0.0 < gcp < 1.0, numbers
        # The unprotected counts, recounted from the algorithm re-implemented in Python.
        levels = [found.levels[c] for c in qi]
        if method == "datafly":
            assert found.suppressed_cells == 0, numbers
            assert found.unprotected_rows <= 5, numbers  # Sweeney's rule: at most k rows
            expected, cells = _datafly(paths, [heights[c] for c in qi], 5, 5)
        else:
            expected, cells = _mu_argus(paths, [heights[c] for c in qi], 5)
            assert found.suppressed_cells == sum(bin(x).count("1") for x in cells), numbers
        assert levels == expected, numbers
        unprotected = _small(_keys(_labels(paths, levels), cells), 5)
        assert (found.unprotected_rows, found.unprotected_classes) == unprotected, numbers
