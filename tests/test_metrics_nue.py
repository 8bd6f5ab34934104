"""``kanon_metrics``' NUE quality: ARX's non-uniform entropy, normalized, for every release.

ARX 3.7.1's ``QualityModelColumnOrientedNonUniformEntropy`` (as the PrioPrivacy paper
reports it) needs the release and the original table only: the published numbers of
PrioPrivacy's eight k = 10 releases are reproduced exactly, per column and pooled. A
brute force with the row correspondence (ARX's own definition, level by level) agrees
on hand-made releases (mixed levels, NULLs, a suppressed row kept and one dropped), on
random truthful local recodings and on kanon's own forest, Mondrian and optimal
releases; for a full-domain release the quality is 1 - the search's non-monotonic NUE /
its maximum.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kanon
from kanon.exceptions import ConfigError
from kanon.sql.quote import ident, literal
from tests.conftest import data_dir

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# ------------------------------------------------------------------ PrioPrivacy releases

#: The QIs of PrioPrivacy's releases, in their files' column order.
PRIO_QI = [
    "sex",
    "salary-class",
    "race",
    "workclass",
    "marital-status",
    "occupation",
    "education",
    "native-country",
    "age",
]
#: The published ``n.u. entropy`` at k = 10 (results_dataset_level.csv), exp1..exp4.
PUBLISHED = {
    "arx_nue": [0.680017, 0.679411, 0.671071, 0.665272],
    "prioprivacy": [0.681850, 0.725126, 0.709796, 0.702093],
}


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"benchmark data missing: {path} (set KANON_DATA to the data folder)")
    return path


@pytest.fixture(scope="module")
def adult() -> Iterator[duckdb.DuckDBPyConnection]:
    """Adult (as text) with the QIs configured with PrioPrivacy's ARX hierarchies."""
    folder = data_dir()
    con = kanon.install(duckdb.connect())
    con.execute(
        "CREATE TABLE adult AS SELECT * FROM "
        "read_csv(?, delim = ';', header = true, all_varchar = true)",
        [str(_need(folder / "adult" / "adult.csv"))],
    )
    for c in PRIO_QI:
        path = _need(folder / "prioprivacy" / "hierarchies" / f"adult_hierarchy_{c}.csv")
        kanon.hierarchy.from_csv(con, path, f"h_{c}")
    kanon.configure(con, "adult", qi={c: f"h_{c}" for c in PRIO_QI})
    yield con
    con.close()


def _published_by_column(method: str, case: int) -> dict[str, float]:
    path = _need(data_dir() / "prioprivacy" / "results_attribute_level.csv")
    with path.open(newline="") as f:
        return {
            r["attribute"]: float(r["n.u. entropy"])
            for r in csv.DictReader(f)
            if r["k"] == "10" and r["method"] == method and r["experiment"] == f"exp{case}"
        }


@pytest.mark.parametrize("case", [1, 2, 3, 4])
@pytest.mark.parametrize("method", sorted(PUBLISHED))
def test_prioprivacy_published_nue(
    adult: duckdb.DuckDBPyConnection, method: str, case: int
) -> None:
    path = _need(data_dir() / "prioprivacy" / f"case{case}_{method}_k10.csv.gz")
    adult.execute(
        "CREATE OR REPLACE TABLE rel AS SELECT * FROM "
        "read_csv(?, delim = ';', header = true, all_varchar = true)",
        [str(path)],
    )
    assert [d[0] for d in adult.execute("SELECT * FROM rel LIMIT 0").description] == PRIO_QI
    m = kanon.metrics("adult", "rel", con=adult)
    assert m.nue_quality == pytest.approx(PUBLISHED[method][case - 1], abs=1e-6)
    # The CSV prints the full double: it matches to rounding.
    published = _published_by_column(method, case)
    assert sorted(published) == sorted(PRIO_QI)
    assert list(m.nue_quality_by_column) == list(PRIO_QI)
    for c in PRIO_QI:
        assert m.nue_quality_by_column[c] == pytest.approx(published[c], abs=1e-9), c
    # The SQL macro gives the same row.
    (row,) = adult.execute(
        "SELECT nue_quality, nue_quality_by_column FROM kanon_metrics('adult', 'rel')"
    ).fetchall()
    assert row[0] == pytest.approx(m.nue_quality, abs=1e-12)
    assert dict(row[1]) == pytest.approx(m.nue_quality_by_column, abs=1e-12)


# ------------------------------------------------------------------ the brute force

#: Hierarchies of the small tables, leaf -> labels at levels 1..top (the last '*').
HIERARCHIES: dict[str, dict[str, list[str]]] = {
    # 0..11: pairs, then thirds, then '*'.
    "a": {str(v): [f"p{v // 2}", f"q{v // 4}", "*"] for v in range(12)},
    # b6 is its own node at level 1 (a label at two levels).
    "b": {
        **{f"b{i}": [f"B{i // 2}", f"G{i // 4}", "*"] for i in range(6)},
        "b6": ["b6", "G1", "*"],
    },
    "c": {"x": ["xy", "*"], "y": ["xy", "*"], "z": ["z", "*"]},
}
COLS = list(HIERARCHIES)


def _chain(hierarchy: dict[str, list[str]], value: str | None) -> list[str | None]:
    """The ancestors of ``value`` at every level (a NULL is NULL up to the root)."""
    top = len(next(iter(hierarchy.values())))
    if value is None:
        return [*([None] * top), "*"]
    return [value, *hierarchy[value]]


def _arx_nue(
    hierarchy: dict[str, list[str]],
    original: list[str | None],
    released: list[str | None],
) -> tuple[float, float]:
    """ARX's NUE of one column with the row correspondence, and its maximum.

    ``released[i]`` is row i's label, ``'*'`` for a dropped row. A label's level is the
    lowest one carrying it among the original's values; a NULL's is 0.
    """
    chains = {v: _chain(hierarchy, v) for v in set(original)}
    top = len(next(iter(chains.values()))) - 1
    level_of: dict[str | None, int] = {None: 0, "*": top}
    for chain in chains.values():
        for lv, lab in enumerate(chain):
            if lab is not None and lab not in level_of:
                level_of[lab] = lv
            elif lab is not None:
                level_of[lab] = min(level_of[lab], lv)
    levels = [level_of[lab] for lab in released]
    res = 0.0
    present = sorted(set(levels))
    for i, cur in enumerate(present):
        prev = present[i - 1] if i else 0
        rows = [r for r in range(len(original)) if levels[r] >= cur]
        cin = Counter(chains[original[r]][prev] for r in rows)
        cout = Counter(chains[original[r]][cur] for r in rows)
        res += sum(
            math.log2(cout[chains[original[r]][cur]] / cin[chains[original[r]][prev]]) for r in rows
        )
    n = len(original)
    counts = Counter(original)
    return res, sum(math.log2(n / counts[v]) for v in original)


def _expected(
    original: dict[str, list[str | None]], released: dict[str, list[str | None]]
) -> tuple[float, dict[str, float]]:
    """The pooled quality and the per-column qualities by the brute force."""
    parts = {c: _arx_nue(HIERARCHIES[c], original[c], released[c]) for c in COLS}
    by_column = {c: 1.0 if top == 0 else 1.0 - res / top for c, (res, top) in parts.items()}
    tops = sum(top for _, top in parts.values())
    pooled = 1.0 if tops == 0 else 1.0 - sum(res for res, _ in parts.values()) / tops
    return pooled, by_column


def _setup(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Table ``table`` (rid, a INTEGER, b, c) with hierarchy tables h_a, h_b, h_c."""
    con.execute(
        f"CREATE OR REPLACE TABLE {ident(table)} (rid INTEGER, a INTEGER, b VARCHAR, c VARCHAR)"
    )
    con.executemany(f"INSERT INTO {ident(table)} VALUES (?, ?, ?, ?)", rows)
    for col, hierarchy in HIERARCHIES.items():
        top = len(next(iter(hierarchy.values())))
        names = ", ".join(f"l{i} VARCHAR" for i in range(top + 1))
        con.execute(f"CREATE OR REPLACE TABLE h_{col} ({names})")
        con.executemany(
            f"INSERT INTO h_{col} VALUES ({', '.join('?' * (top + 1))})",
            [[leaf, *labels] for leaf, labels in hierarchy.items()],
        )
    kanon.configure(con, table, qi={c: f"h_{c}" for c in COLS}, insensitive=["rid"])


def _columns(rows: list[tuple[Any, ...]]) -> dict[str, list[str | None]]:
    return {
        c: [None if r[j + 1] is None else str(r[j + 1]) for r in rows] for j, c in enumerate(COLS)
    }


def _released(
    con: duckdb.DuckDBPyConnection, original: list[tuple[Any, ...]], table: str
) -> dict[str, list[str | None]]:
    """The release's labels by the original's row order (``'*'`` for a dropped row)."""
    got = {r[0]: r[1:] for r in con.execute(f"SELECT rid, a, b, c FROM {ident(table)}").fetchall()}
    star = ("*",) * len(COLS)
    return {
        c: [None if (x := got.get(r[0], star)[j]) is None else str(x) for r in original]
        for j, c in enumerate(COLS)
    }


def _check(
    con: duckdb.DuckDBPyConnection, table: str, original: list[tuple[Any, ...]], release: str
) -> kanon.Metrics:
    pooled, by_column = _expected(_columns(original), _released(con, original, release))
    m = kanon.metrics(table, release, con=con)
    assert m.nue_quality == pytest.approx(pooled, abs=1e-12)
    assert m.nue_quality_by_column == pytest.approx(by_column, abs=1e-12)
    assert list(m.nue_quality_by_column) == COLS
    assert 0.0 <= m.nue_quality <= 1.0
    assert all(0.0 <= q <= 1.0 for q in m.nue_quality_by_column.values())
    return m


#: (rid, a, b, c): skewed, with NULLs in c.
ROWS: list[tuple[Any, ...]] = [
    (i, (i * 7) % 12 if i % 5 else 3, f"b{i % 7}", [None, "x", "y", "z", "x"][i % 5])
    for i in range(40)
]


def _labels(row: tuple[Any, ...], levels: tuple[int, int, int]) -> tuple[Any, ...]:
    """``row`` with each QI replaced by its ancestor at the level given."""
    out: list[Any] = [row[0]]
    for j, c in enumerate(COLS):
        value = row[j + 1]
        out.append(_chain(HIERARCHIES[c], None if value is None else str(value))[levels[j]])
    return tuple(out)


def test_hand_made_release_with_mixed_levels(con: duckdb.DuckDBPyConnection) -> None:
    _setup(con, "t", ROWS)
    # Mixed levels in every column, row 0 kept as all '*' (suppressed), row 1 dropped.
    rel = [(0, "*", "*", "*")] + [_labels(r, (r[0] % 4, r[0] % 3, r[0] % 2)) for r in ROWS[2:]]
    con.execute("CREATE TABLE rel (rid INTEGER, a VARCHAR, b VARCHAR, c VARCHAR)")
    con.executemany("INSERT INTO rel VALUES (?, ?, ?, ?)", rel)
    m = _check(con, "t", ROWS, "rel")
    assert m.suppressed == 2
    assert m.nue is None  # no level per column: the search's NUE is unknown
    assert 0.0 < m.nue_quality < 1.0
    # The SQL macro gives the same, as a MAP in QI order.
    (row,) = con.execute(
        "SELECT nue_quality, nue_quality_by_column, typeof(nue_quality_by_column) "
        "FROM kanon_metrics('t', 'rel')"
    ).fetchall()
    assert row[0] == pytest.approx(m.nue_quality, abs=1e-15)
    assert list(row[1].items()) == list(m.nue_quality_by_column.items())
    assert row[2] == "MAP(VARCHAR, DOUBLE)"
    assert "NUE quality" in str(m)


def test_hand_worked_column() -> None:
    """One column by hand: x1 x1 x1 x2 y1 z1 released X X x1 * Y z1, as in ARX."""
    h = {"x1": ["X", "*"], "x2": ["X", "*"], "y1": ["Y", "*"], "z1": ["Z", "*"]}
    original: list[str | None] = ["x1", "x1", "x1", "x2", "y1", "z1"]
    released: list[str | None] = ["X", "X", "x1", "*", "Y", "z1"]
    res, top = _arx_nue(h, original, released)
    # Levels 0 < 1 < 2. Step 0 → 1 over the rows at level ≥ 1 (x1, x1, x2, y1):
    # X holds 3 of them (x1 twice, x2), Y one. Step 1 → 2 over the '*' row alone: 0.
    step1 = 2 * math.log2(3 / 2) + 1 * math.log2(3 / 1)
    assert res == pytest.approx(step1)
    assert top == pytest.approx(3 * math.log2(6 / 3) + 3 * math.log2(6))


def test_unchanged_and_all_stars(con: duckdb.DuckDBPyConnection) -> None:
    _setup(con, "t", ROWS)
    con.execute("CREATE TABLE same AS SELECT * FROM t")
    con.execute("CREATE TABLE k1 AS SELECT * FROM kanon('t', k := 1)")
    con.execute("CREATE TABLE stars AS SELECT rid, '*' AS a, '*' AS b, '*' AS c FROM t")
    # To rounding: the loss and its maximum are sums in DuckDB's (parallel) order.
    for name, expected in (("same", 1.0), ("k1", 1.0), ("stars", 0.0)):
        m = _check(con, "t", ROWS, name)
        assert m.nue_quality == pytest.approx(expected, abs=1e-12), name
        assert m.nue_quality_by_column == pytest.approx(dict.fromkeys(COLS, expected), abs=1e-12), (
            name
        )


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("forest", ""),
        ("forest_paper", ""),
        ("mu_argus", ", drop_suppressed := true"),
        ("datafly", ", max_suppression := 0.1"),
        ("mondrian", ", labels := 'hierarchy'"),
        ("optimal", ", max_suppression := 0.1"),
        ("optimal", ", max_suppression := 0.1, drop_suppressed := true"),
    ],
)
@pytest.mark.parametrize("k", [2, 5])
def test_kanon_releases(con: duckdb.DuckDBPyConnection, method: str, args: str, k: int) -> None:
    _setup(con, "t", ROWS)
    con.execute(
        f"CREATE TABLE rel AS SELECT * FROM kanon('t', k := {k}, method := '{method}'{args})"
    )
    m = _check(con, "t", ROWS, "rel")
    if method == "optimal":
        # Full-domain: the kept cells at the column's level, the suppressed at the top;
        # ARX's level-wise NUE is then the search's non-monotonic NUE (unit weights).
        assert m.nue_nonmonotonic is not None
        counts = [Counter(v) for v in _columns(ROWS).values()]
        top = sum(c * math.log2(len(ROWS) / c) for cnt in counts for c in cnt.values())
        assert m.nue_quality == pytest.approx(1.0 - m.nue_nonmonotonic / top, abs=1e-12)


def test_full_domain_column_is_the_raw_nue_over_its_maximum(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """One QI at one level: quality = 1 - Σ c_v log2(n_g / c_v) / Σ c_v log2(N / c_v)."""
    _setup(con, "t", ROWS)
    for lv in range(4):
        con.execute(
            "CREATE OR REPLACE TABLE rel AS SELECT rid, a, b, c FROM "
            f"(SELECT * REPLACE ([a::VARCHAR, h.l1, h.l2, '*'][{lv + 1}] AS a) "
            "FROM t JOIN h_a h ON t.a::VARCHAR = h.l0)"
        )
        m = kanon.metrics("t", "rel", qi=["a"], con=con)
        values = [str(r[1]) for r in ROWS]
        counts = Counter(values)
        under = Counter(_chain(HIERARCHIES["a"], v)[lv] for v in values)
        raw = sum(
            c * math.log2(under[_chain(HIERARCHIES["a"], v)[lv]] / c) for v, c in counts.items()
        )
        top = sum(c * math.log2(len(values) / c) for c in counts.values())
        assert m.nue == pytest.approx(raw, abs=1e-9)
        assert m.nue_quality_by_column["a"] == pytest.approx(1.0 - raw / top, abs=1e-12)
        assert m.nue_quality == m.nue_quality_by_column["a"]


@st.composite
def _recodings(draw: st.DrawFn) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A small table and a truthful local recoding of it, some rows dropped."""
    n = draw(st.integers(1, 25))
    a = st.integers(0, 11)
    b = st.sampled_from(sorted(HIERARCHIES["b"]))
    c = st.one_of(st.none(), st.sampled_from(sorted(HIERARCHIES["c"])))
    rows = [(i, draw(a), draw(b), draw(c)) for i in range(n)]
    released = []
    for r in rows:
        if draw(st.integers(0, 9)) == 0:
            continue  # dropped
        levels = (draw(st.integers(0, 3)), draw(st.integers(0, 3)), draw(st.integers(0, 2)))
        released.append(_labels(r, levels))
    return rows, released or [_labels(rows[0], (0, 0, 0))]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(case=_recodings())
def test_random_local_recodings(case: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]) -> None:
    rows, released = case
    con = kanon.install(duckdb.connect())
    try:
        _setup(con, "t", rows)
        con.execute("CREATE TABLE rel (rid INTEGER, a VARCHAR, b VARCHAR, c VARCHAR)")
        con.executemany("INSERT INTO rel VALUES (?, ?, ?, ?)", released)
        _check(con, "t", rows, "rel")
    finally:
        con.close()


# ------------------------------------------------------------------ hostile names


@pytest.mark.parametrize(
    ("table", "release", "names"),
    [
        ("label", "lvl", ("label", "lvl", "k")),
        ("paths", "quality", ("rep", "anc", "cur")),
        ("steps", "cells", ("prev", "res", "top")),
        ("n", "x", ("g", "a", "s")),
    ],
)
def test_hostile_names(
    con: duckdb.DuckDBPyConnection, table: str, release: str, names: tuple[str, str, str]
) -> None:
    """Tables and QIs named like the words of the generated SQL measure the same."""
    _setup(con, "t", ROWS)
    rel = [_labels(r, (r[0] % 4, r[0] % 3, r[0] % 2)) for r in ROWS[1:]]
    con.execute("CREATE TABLE rel (rid INTEGER, a VARCHAR, b VARCHAR, c VARCHAR)")
    con.executemany("INSERT INTO rel VALUES (?, ?, ?, ?)", rel)
    expected = kanon.metrics("t", "rel", con=con)
    renamed = ", ".join(f"{c} AS {ident(n)}" for c, n in zip(COLS, names, strict=True))
    con.execute(f"CREATE TABLE {ident(table)} AS SELECT rid, {renamed} FROM t")
    con.execute(f"CREATE TABLE {ident(release)} AS SELECT rid, {renamed} FROM rel")
    kanon.configure(
        con,
        table,
        qi={n: f"h_{c}" for c, n in zip(COLS, names, strict=True)},
        insensitive=["rid"],
    )
    (row,) = con.execute(
        "SELECT nue_quality, nue_quality_by_column FROM "
        f"kanon_metrics({literal(table)}, {literal(release)})"
    ).fetchall()
    assert row[0] == pytest.approx(expected.nue_quality, abs=1e-15)
    assert dict(row[1]) == pytest.approx(
        {n: expected.nue_quality_by_column[c] for c, n in zip(COLS, names, strict=True)},
        abs=1e-15,
    )


@pytest.mark.parametrize("name", ["__kanon_paths0", "__kanon_cells_by_level0", "__kanon_quality0"])
def test_internal_names_are_refused(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """The names of the CTEs themselves are in kanon's reserved namespace: a clear refusal."""
    _setup(con, "t", ROWS)
    con.execute("CREATE TABLE rel AS SELECT * FROM t")
    with pytest.raises(ConfigError, match="reserves"):
        kanon.metrics(name, "rel", qi=["a"], con=con)
    with pytest.raises(ConfigError, match="reserves"):
        kanon.metrics("t", name, qi=["a"], con=con)
    con.execute(f"CREATE TABLE u AS SELECT rid, a AS {ident(name)} FROM t")
    con.execute("CREATE TABLE u_rel AS SELECT * FROM u")
    with pytest.raises(duckdb.Error, match="reserved"):
        con.execute(f"SELECT * FROM kanon_metrics('u', 'u_rel', qi := [{literal(name)}])")
