"""Tests of kanon.hierarchy: ARX files, builders, validation."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kanon import hierarchy
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.hierarchy import (
    Hierarchy,
    auto,
    dates,
    from_csv,
    intervals,
    levels,
    mask,
    prefix_words,
    suppress,
    validate,
)
from kanon.sql.quote import ident

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

DATA = Path(os.environ.get("KANON_DATA", "/work/shared/data"))

# Heights (columns - 1) of the ARX adult hierarchies, from data/README.md §3.
ADULT_LEVELS = {
    "age": 4,
    "education": 3,
    "marital-status": 2,
    "native-country": 2,
    "occupation": 2,
    "race": 1,
    "salary-class": 1,
    "sex": 1,
    "workclass": 2,
}

EVIL = 'x"; DROP TABLE y; --'

SETTINGS = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


@contextlib.contextmanager
def fresh() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection per hypothesis example (function-scoped fixtures are shared)."""
    connection = duckdb.connect()
    try:
        yield connection
    finally:
        connection.close()


def make_table(
    con: duckdb.DuckDBPyConnection,
    values: Sequence[Any],
    sql_type: str,
    *,
    table: str = "t",
    column: str = "x",
) -> None:
    con.execute(
        f"CREATE OR REPLACE TABLE {ident(table)} AS "
        f"SELECT unnest(?::{sql_type}[]) AS {ident(column)}",
        [list(values)],
    )


def rows(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {ident(name)} ORDER BY 1").fetchall()


def check_hierarchy(
    con: duckdb.DuckDBPyConnection, h: Hierarchy, values: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """Independent (Python) check: leaves, nesting, single root, level count."""
    # The builder left no half-read result behind (DuckDB 2.0 would refuse con.sql).
    assert con.sql(f"SELECT count(*) FROM {ident(h.name)}").fetchall()[0][0] >= 1
    got = rows(con, h.name)
    assert all(len(r) == h.levels + 1 for r in got)
    assert h.levels == levels(con, h.name) >= 1
    leaves = [r[0] for r in got]
    assert len(leaves) == len(set(leaves)), "level-0 values must be unique"
    assert set(leaves) == {v for v in values if v is not None}
    for i in range(1, h.levels):
        parent: dict[Any, Any] = {}
        for r in got:
            assert parent.setdefault(r[i], r[i + 1]) == r[i + 1], (
                f"label {r[i]!r} at level {i} has two parents"
            )
    assert len({r[-1] for r in got}) == 1, "exactly one root"
    assert all(isinstance(x, str) for r in got for x in r[1:]), "labels are VARCHAR"
    return got


def column_types(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {ident(name)}").fetchall()]


# ------------------------------------------------------------------ reference models
# Straightforward Python versions of the Go library's generalizers (seed thesis §3.4,
# github.com/gar-r/k-anon), used to check the SQL builders value by value.


def go_int_path(lo: int, hi: int, x: int) -> list[tuple[int, int]]:
    """IntRange splits from the root down to the range of one value holding x."""
    path = [(lo, hi)]
    a, b = lo, hi
    while a < b:
        cut = (b - a + 1) // 2
        a, b = (a, a + cut - 1) if x <= a + cut - 1 else (a + cut, b)
        path.append((a, b))
    return path


def go_int_labels(lo: int, hi: int, x: int) -> list[str]:
    """RangeGeneralizer.Generalize(x, n) for n = 1 … MaxSplit (path padded at the leaf)."""
    splits = math.ceil(math.log2(hi - lo + 1)) if hi > lo else 0
    path = go_int_path(lo, hi, x)
    padded = [path[-1]] * (splits + 1 - len(path)) + path[::-1]  # index = level
    fmt = [f"[{a}]" if a == b else f"[{a}..{b}]" for a, b in padded]
    return fmt[1:] if splits else fmt[-1:]


def go_float_labels(lo: float, hi: float, x: float) -> list[str]:
    delta = 1e-5
    splits, a = 0, lo
    while abs(hi - a) > delta:
        a, splits = a + (hi - a) / 2, splits + 1
    path = [(lo, hi)]
    a, b = lo, hi
    while abs(b - a) > delta and len(path) <= splits:
        mid = a + (b - a) / 2
        a, b = (a, mid) if x <= mid else (mid, b)
        path.append((a, b))
    by_level = path[::-1][-(splits + 1) :]
    by_level = [path[-1]] * (splits + 1 - len(by_level)) + by_level
    fmt = [f"[{a:f}]" if abs(b - a) <= delta else f"[{a:f}..{b:f}]" for a, b in by_level]
    return fmt[1:] if splits else fmt[-1:]


def go_autobuild(items: list[Any], fanout: int) -> dict[Any, list[str]]:
    """AutoBuild chopping, down to singletons; labels per level (1 … D-1), then '*'."""
    n = len(items)
    depth = 1
    while fanout**depth < n:
        depth += 1
    paths: dict[Any, list[str]] = {v: [] for v in items}

    def chop(part: list[Any], level: int) -> None:
        if level == depth:
            return
        size = 1 if fanout >= len(part) else math.ceil(len(part) / fanout)
        for i in range(0, len(part), size):
            chunk = part[i : i + size]
            label = f"[{chunk[0]}]" if len(chunk) == 1 else f"[{chunk[0]}..{chunk[-1]}]"
            for v in chunk:
                paths[v].append(label)
            chop(chunk, level + 1)

    chop(items, 1)
    return {v: [*reversed(p), "*"] for v, p in paths.items()}


# Go's unicode.IsSpace: Latin-1 white space plus the White_Space property.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_GO_FIELDS = re.compile("[" + re.escape(_GO_SPACE) + "]+")


def go_prefix_labels(value: str, max_words: int) -> list[str]:
    words = [w for w in _GO_FIELDS.split(value) if w]
    out = ["*" if not words else " ".join(words[: max_words - i]) for i in range(1, max_words)]
    return [*out, "*"]


# ----------------------------------------------------------------------- ARX files


def test_adult_hierarchies_load_and_cover_adult(con: duckdb.DuckDBPyConnection) -> None:
    adult = DATA / "adult" / "adult.csv"
    assert adult.is_file(), f"missing data file {adult}"
    con.execute(
        "CREATE TABLE adult AS SELECT * FROM "
        f"read_csv('{adult}', delim=';', header=true, all_varchar=true)"
    )
    for column, height in ADULT_LEVELS.items():
        path = DATA / "adult" / f"adult_hierarchy_{column}.csv"
        assert path.is_file(), f"missing hierarchy file {path}"
        name = f"adult_h_{column}"
        h = from_csv(con, path, name)
        assert con.sql(f"SELECT count(*) FROM {ident(name)}").fetchall()[0][0] > 0
        assert h == Hierarchy(name, height)
        assert validate(con, name, table="adult", column=column) == h
        assert [c for c, _ in column_types(con, name)] == [f"level_{i}" for i in range(height + 1)]
        assert {t for _, t in column_types(con, name)} == {"VARCHAR"}
    assert rows(con, "adult_h_sex") == [("Female", "*"), ("Male", "*")]
    age = {r[0]: r[1:] for r in rows(con, "adult_h_age")}
    assert len(age) == 100
    assert age["1"] == ("0-4", "0-9", "0-19", "*")


def test_from_csv_formats(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(b'72;"[72;76]";*\r\n73;"[72;76]";*\r\n#77;"x ""y""";*')  # no final newline
    h = from_csv(con, crlf, "h")
    assert h == Hierarchy("h", 2)
    assert rows(con, "h") == [("#77", 'x "y"', "*"), ("72", "[72;76]", "*"), ("73", "[72;76]", "*")]
    lf = tmp_path / "lf.csv"
    lf.write_text("a;;*\nb; spaced ;*\n", encoding="utf-8")
    from_csv(con, lf, "h2")
    assert rows(con, "h2") == [("a", "", "*"), ("b", " spaced ", "*")]
    tabbed = tmp_path / "tab.csv"
    tabbed.write_text("a,x,*\nb,x,*\n", encoding="utf-8")
    assert from_csv(con, tabbed, "h3", delimiter=",").levels == 2


def test_from_csv_errors(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(HierarchyError, match=re.escape(str(missing))):
        from_csv(con, missing, "h")
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(HierarchyError, match="empty"):
        from_csv(con, empty, "h")
    for body in ("a;b;*\nc;d\n", "a;b;*\nc;d;*;e\n"):
        ragged = tmp_path / "ragged.csv"
        ragged.write_text(body, encoding="utf-8")
        with pytest.raises(HierarchyError, match=re.escape(str(ragged))):
            from_csv(con, ragged, "h")
    two_roots = tmp_path / "roots.csv"
    two_roots.write_text("a;x\nb;y\n", encoding="utf-8")
    with pytest.raises(HierarchyError, match="2 roots"):
        from_csv(con, two_roots, "h")
    with pytest.raises(InvalidInputError):
        from_csv(con, two_roots, "h", delimiter=";;")


def _snapshot(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list[Any], list[Any]]:
    """The table's columns with their types and its rows, in a canonical order."""
    return (
        con.execute(f"DESCRIBE {ident(name)}").fetchall(),
        con.execute(f"SELECT * FROM {ident(name)} ORDER BY ALL").fetchall(),
    )


def _no_build_tables(con: duckdb.DuckDBPyConnection) -> bool:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__kanon_hbuild%'"
    ).fetchall()
    return found[0][0] == 0


def test_failing_from_csv_keeps_the_existing_table(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    good = tmp_path / "good.csv"
    good.write_text("02134;021**;*\n02139;021**;*\n", encoding="utf-8")
    assert from_csv(con, good, "h_zip") == Hierarchy("h_zip", 2)
    before = _snapshot(con, "h_zip")
    bad = {
        "not_nested.csv": ("1;a;x;*\n2;a;y;*\n", "not nested"),
        "two_roots.csv": ("1;x\n2;y\n", "2 roots"),
        "ragged.csv": ("1;a;*\n2;a\n", "fields"),
        "null_label.csv": ("1;a;*\n2;;*\n2;b;*\n", "more than once"),
    }
    for file, (body, fragment) in bad.items():
        path = tmp_path / file
        path.write_text(body, encoding="utf-8")
        with pytest.raises(HierarchyError, match=fragment) as err:
            from_csv(con, path, "h_zip")
        assert "__kanon" not in str(err.value)
        assert _snapshot(con, "h_zip") == before, file
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(HierarchyError, match=re.escape(str(binary))):
        from_csv(con, binary, "h_zip")
    assert _snapshot(con, "h_zip") == before
    assert _no_build_tables(con)


@pytest.mark.parametrize("build", [suppress, mask, prefix_words, auto])
def test_failing_builder_keeps_the_existing_table(
    con: duckdb.DuckDBPyConnection, build: Any
) -> None:
    make_table(con, ["a b", "c d"], "VARCHAR", table="src", column="c")
    build(con, "h_c", table="src", column="c")
    con.execute("INSERT INTO h_c SELECT * FROM h_c LIMIT 0")  # a table of the user's own
    before = _snapshot(con, "h_c")
    # A source whose values change on every read: the hierarchy built from one read
    # cannot cover the next, so validation fails after the rows were built.
    con.execute("CREATE SEQUENCE s")
    con.execute("CREATE VIEW moving AS SELECT CAST(nextval('s') AS VARCHAR) AS c FROM range(3)")
    with pytest.raises(HierarchyError, match="'h_c' does not cover") as err:
        build(con, "h_c", table="moving", column="c")
    assert "__kanon" not in str(err.value)
    assert _snapshot(con, "h_c") == before
    assert _no_build_tables(con)
    # Refused before anything is built: a view of that name, or the source table itself.
    con.execute("CREATE VIEW h_v AS SELECT 1 AS one")
    with pytest.raises(ConfigError, match="'h_v' is a view"):
        build(con, "h_v", table="src", column="c")
    assert con.execute("SELECT * FROM h_v").fetchall() == [(1,)]
    with pytest.raises(InvalidInputError, match="source table"):
        build(con, "SRC", table="src", column="c")
    assert sorted(con.execute("SELECT c FROM src").fetchall()) == [("a b",), ("c d",)]
    assert _no_build_tables(con)


def test_builder_replaces_the_temp_table_its_name_resolves_to(
    con: duckdb.DuckDBPyConnection,
) -> None:
    make_table(con, ["x", "y"], "VARCHAR", table="src", column="c")
    con.execute("CREATE TEMP TABLE h AS SELECT 1 AS old, 2 AS older")
    assert suppress(con, "h", table="src", column="c") == Hierarchy("h", 1)
    assert rows(con, "h") == [("x", "*"), ("y", "*")]
    assert validate(con, "h", table="src", column="c") == Hierarchy("h", 1)


def test_builder_inside_an_open_transaction(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, ["x", "y"], "VARCHAR", table="src", column="c")
    con.execute("BEGIN")
    assert suppress(con, "h", table="src", column="c") == Hierarchy("h", 1)
    con.execute("COMMIT")
    assert rows(con, "h") == [("x", "*"), ("y", "*")]
    assert _no_build_tables(con)


# ------------------------------------------------------------------------ builders


def test_suppress(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [3, None, 1, 3], "INTEGER")
    assert suppress(con, "h", table="t", column="x") == Hierarchy("h", 1)
    assert rows(con, "h") == [(1, "*"), (3, "*")]
    assert column_types(con, "h") == [("level_0", "INTEGER"), ("level_1", "VARCHAR")]


def test_mask_zip(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, ["53711", None, "53711"], "VARCHAR")
    assert mask(con, "h", table="t", column="x") == Hierarchy("h", 5)
    assert list(rows(con, "h")[0]) == ["53711", "5371*", "537**", "53***", "5****", "*"]
    assert mask(con, "h", table="t", column="x", levels=2) == Hierarchy("h", 3)
    assert list(rows(con, "h")[0]) == ["53711", "5371*", "537**", "*"]
    assert mask(con, "h", table="t", column="x", levels=0) == Hierarchy("h", 1)
    assert mask(con, "h", table="t", column="x", char="#").levels == 5
    assert list(rows(con, "h")[0]) == ["53711", "5371#", "537##", "53###", "5####", "#"]


def test_mask_mixed_lengths_and_numbers(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, ["537", "53711", "5"], "VARCHAR")
    mask(con, "h", table="t", column="x")
    assert rows(con, "h") == [
        ("5", "5****", "5****", "5****", "5****", "*"),
        ("537", "537**", "537**", "53***", "5****", "*"),
        ("53711", "5371*", "537**", "53***", "5****", "*"),
    ]
    make_table(con, [53711, 53722], "INTEGER")
    mask(con, "h", table="t", column="x")
    assert rows(con, "h")[1] == (53722, "5372*", "537**", "53***", "5****", "*")
    assert column_types(con, "h")[0] == ("level_0", "INTEGER")
    for bad in ("", "**"):
        with pytest.raises(InvalidInputError):
            mask(con, "h", table="t", column="x", char=bad)
    with pytest.raises(InvalidInputError):
        mask(con, "h", table="t", column="x", levels=-1)


def test_prefix_words_like_go(con: duckdb.DuckDBPyConnection) -> None:
    values = ["this is a test string", "cats are wild", "", "  cats   are\tfun "]
    make_table(con, [*values, None], "VARCHAR")
    assert prefix_words(con, "h", table="t", column="x") == Hierarchy("h", 5)
    got = {r[0]: list(r[1:]) for r in rows(con, "h")}
    # Go: MaxWords = 5, "this is a test string" at levels 1 and 3 (thesis Fig. 3.6).
    assert got["this is a test string"] == ["this is a test", "this is a", "this is", "this", "*"]
    assert got["cats are wild"] == ["cats are wild", "cats are wild", "cats are", "cats", "*"]
    assert got["  cats   are\tfun "] == ["cats are fun", "cats are fun", "cats are", "cats", "*"]
    assert got[""] == ["*"] * 5


def test_dates(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [dt.date(1995, 3, 4), dt.date(2001, 12, 31), None], "DATE")
    assert dates(con, "h", table="t", column="x") == Hierarchy("h", 4)
    assert rows(con, "h") == [
        (dt.date(1995, 3, 4), "1995-03", "1995", "1990s", "*"),
        (dt.date(2001, 12, 31), "2001-12", "2001", "2000s", "*"),
    ]
    make_table(con, [dt.datetime(1989, 1, 1, 12, 30)], "TIMESTAMP")
    dates(con, "h", table="t", column="x")
    assert rows(con, "h") == [(dt.datetime(1989, 1, 1, 12, 30), "1989-01", "1989", "1980s", "*")]
    make_table(con, [1], "INTEGER")
    with pytest.raises(InvalidInputError, match="DATE"):
        dates(con, "h", table="t", column="x")


def test_auto_like_go(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, ["c", "a", "d", "b"], "VARCHAR")
    assert auto(con, "h", table="t", column="x") == Hierarchy("h", 2)
    assert rows(con, "h") == [
        ("a", "[a..b]", "*"),
        ("b", "[a..b]", "*"),
        ("c", "[c..d]", "*"),
        ("d", "[c..d]", "*"),
    ]
    # Go's "auto build test 2": {a,b,c} {d,e}; {a,b} {c} {d} {e}; singletons.
    make_table(con, ["a", "b", "c", "d", "e"], "VARCHAR")
    assert auto(con, "h", table="t", column="x").levels == 3
    assert rows(con, "h") == [
        ("a", "[a..b]", "[a..c]", "*"),
        ("b", "[a..b]", "[a..c]", "*"),
        ("c", "[c]", "[a..c]", "*"),
        ("d", "[d]", "[d..e]", "*"),
        ("e", "[e]", "[d..e]", "*"),
    ]
    # Listing 3.4: nine grades, three children each.
    make_table(con, list(range(1, 10)), "INTEGER")
    assert auto(con, "h", table="t", column="x", fanout=3).levels == 2
    assert [r[1] for r in rows(con, "h")] == ["[1..3]"] * 3 + ["[4..6]"] * 3 + ["[7..9]"] * 3
    make_table(con, [1, 2], "INTEGER")  # fewer values than fanout: no error
    assert auto(con, "h", table="t", column="x", fanout=3).levels == 1
    with pytest.raises(InvalidInputError):
        auto(con, "h", table="t", column="x", fanout=1)


def test_intervals_fixed_width(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [17, 20, 35, 90, None], "INTEGER")
    assert intervals(con, "h", table="t", column="x", width=10, min=10) == Hierarchy("h", 6)
    assert rows(con, "h") == [
        (17, "[10..19]", "[10..29]", "[10..49]", "[10..89]", "[10..169]", "*"),
        (20, "[20..29]", "[10..29]", "[10..49]", "[10..89]", "[10..169]", "*"),
        (35, "[30..39]", "[30..49]", "[10..49]", "[10..89]", "[10..169]", "*"),
        (90, "[90..99]", "[90..109]", "[90..129]", "[90..169]", "[10..169]", "*"),
    ]
    assert intervals(con, "h", table="t", column="x", width=20, fanout=5, min=0, max=99).levels == 3
    assert rows(con, "h")[0] == (17, "[0..19]", "[0..99]", "*")
    make_table(con, [0.5, 1.25, -0.75], "DOUBLE")
    assert intervals(con, "h", table="t", column="x", width=0.5).levels == 5
    assert rows(con, "h") == [
        (-0.75, "[-0.75..-0.25)", "[-0.75..0.25)", "[-0.75..1.25)", "[-0.75..3.25)", "*"),
        (0.5, "[0.25..0.75)", "[0.25..1.25)", "[-0.75..1.25)", "[-0.75..3.25)", "*"),
        (1.25, "[1.25..1.75)", "[1.25..2.25)", "[1.25..3.25)", "[-0.75..3.25)", "*"),
    ]
    assert column_types(con, "h")[0] == ("level_0", "DOUBLE")


def test_intervals_binary_like_go(con: duckdb.DuckDBPyConnection) -> None:
    # NewIntRangeGeneralizer(5, 10): [6..7] -> [5..7] (level 2) -> [5..10] (level 3).
    make_table(con, list(range(5, 11)), "INTEGER")
    assert intervals(con, "h", table="t", column="x") == Hierarchy("h", 3)
    got = {r[0]: list(r[1:]) for r in rows(con, "h")}
    assert got[6] == ["[6..7]", "[5..7]", "[5..10]"]
    assert got[5] == ["[5]", "[5..7]", "[5..10]"]
    # "tiny range": NewIntRangeGeneralizer(0, 2), value 0 at level 1 is [0].
    make_table(con, [0, 2], "INTEGER")
    intervals(con, "h", table="t", column="x")
    assert rows(con, "h") == [(0, "[0]", "[0..2]"), (2, "[1..2]", "[0..2]")]
    # Float range (0.379, 1.932): top level is the whole range.
    make_table(con, [0.45, 0.379, 1.932], "DOUBLE")
    h = intervals(con, "h", table="t", column="x")
    got = {r[0]: list(r[1:]) for r in rows(con, "h")}
    assert got[0.45] == go_float_labels(0.379, 1.932, 0.45)
    assert got[0.45][-1] == "[0.379000..1.932000]"
    assert h.levels == len(got[0.45]) == 18
    # BIGINT extremes: 64 levels.
    make_table(con, [-(2**63), 2**63 - 1, 0], "BIGINT")
    assert intervals(con, "h", table="t", column="x").levels == 64
    assert rows(con, "h")[1][1:] == tuple(go_int_labels(-(2**63), 2**63 - 1, 0))


def test_intervals_errors(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [1, 5], "INTEGER")
    with pytest.raises(InvalidInputError, match="min"):
        intervals(con, "h", table="t", column="x", width=2, min=2)
    with pytest.raises(InvalidInputError, match="max"):
        intervals(con, "h", table="t", column="x", max=4)
    for kwargs in ({"width": 0}, {"width": -1}, {"width": 1, "fanout": 1}, {"fanout": 3}):
        with pytest.raises(InvalidInputError):
            intervals(con, "h", table="t", column="x", **kwargs)
    make_table(con, [1.0, float("nan")], "DOUBLE")
    with pytest.raises(InvalidInputError, match="NaN"):
        intervals(con, "h", table="t", column="x")
    make_table(con, ["a"], "VARCHAR")
    with pytest.raises(InvalidInputError, match="numeric"):
        intervals(con, "h", table="t", column="x")


def test_one_value_and_all_null(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [7, None, 7], "INTEGER")
    for build, kwargs in (
        (suppress, {}),
        (mask, {}),
        (prefix_words, {}),
        (auto, {}),
        (intervals, {}),
        (intervals, {"width": 5}),
    ):
        h = build(con, "h", table="t", column="x", **kwargs)
        assert rows(con, "h")[0][0] == 7
        check_hierarchy(con, h, [7])
    assert rows(con, "h") == [(7, "[7..11]", "*")]
    make_table(con, [None, None], "INTEGER")
    with pytest.raises(InvalidInputError, match="no non-NULL"):
        suppress(con, "h", table="t", column="x")


def test_negative_zero_is_one_value(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, [0.0, -0.0, 1.5], "DOUBLE")
    for build in (suppress, auto, intervals):
        h = build(con, "h", table="t", column="x")
        assert len(rows(con, "h")) == 2
        assert validate(con, "h", table="t", column="x") == h


def test_hostile_names(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE y AS SELECT 1 AS a")
    table, column = "my table ü \"'", "a column ✓ ; --"
    make_table(con, ["53711", "53722 x"], "VARCHAR", table=table, column=column)
    con.execute(f"CREATE TABLE dt AS SELECT DATE '2020-01-02' AS {ident(column)}")
    con.execute(f"CREATE TABLE num AS SELECT 3.5 AS {ident(column)}")
    builds = [
        (suppress, table, {}),
        (mask, table, {"char": "'"}),
        (prefix_words, table, {}),
        (auto, table, {}),
        (dates, "dt", {}),
        (intervals, "num", {}),
        (intervals, "num", {"width": 0.5}),
    ]
    for build, source, kwargs in builds:
        h = build(con, EVIL, table=source, column=column, **kwargs)
        assert h.name == EVIL
        assert validate(con, EVIL, table=source, column=column) == h
        assert con.execute("SELECT a FROM y").fetchall() == [(1,)]
    path_like = "x'); DROP TABLE y; --.csv"
    with pytest.raises(HierarchyError, match="does not exist"):
        from_csv(con, path_like, EVIL)
    assert con.execute("SELECT a FROM y").fetchall() == [(1,)]


def test_from_csv_hostile_path(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    con.execute("CREATE TABLE y AS SELECT 1 AS a")
    path = tmp_path / "it's'); DROP TABLE y; -- ü.csv"
    path.write_text("a;*\nb;*\n", encoding="utf-8")
    assert from_csv(con, path, EVIL) == Hierarchy(EVIL, 1)
    assert rows(con, EVIL) == [("a", "*"), ("b", "*")]
    assert con.execute("SELECT a FROM y").fetchall() == [(1,)]


# ---------------------------------------------------------------------- validation


def test_validate_errors(con: duckdb.DuckDBPyConnection) -> None:
    make_table(con, ["53711", "53722"], "VARCHAR", table="src", column="zip")
    mask(con, "zips", table="src", column="zip")
    con.execute("INSERT INTO src VALUES ('99999'), ('12345')")
    with pytest.raises(HierarchyError) as err:
        validate(con, "zips", table="src", column="zip")
    for part in ("'zips'", "'12345'", "'99999'", "'zip'", "'src'", "2 value"):
        assert part in str(err.value)

    con.execute("CREATE TABLE nn AS SELECT * FROM (VALUES (1, 'a', 'x', '*'), (2, 'a', 'y', '*'))")
    with pytest.raises(HierarchyError, match=r"not nested: label 'a' at level 1"):
        validate(con, "nn")
    con.execute("CREATE TABLE roots AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'))")
    with pytest.raises(HierarchyError, match="'roots' has 2 roots"):
        validate(con, "roots")
    con.execute("CREATE TABLE dup AS SELECT * FROM (VALUES (1, 'a', '*'), (1, 'a', '*'))")
    with pytest.raises(HierarchyError, match=r"'dup' lists level-0 value.*'1' \(2 rows\)"):
        validate(con, "dup")
    con.execute("CREATE TABLE one AS SELECT 1 AS v")
    with pytest.raises(HierarchyError, match="at least 2"):
        validate(con, "one")
    con.execute("CREATE TABLE nul AS SELECT * FROM (VALUES (1, NULL, '*'))")
    with pytest.raises(HierarchyError, match="NULL label at level 1"):
        validate(con, "nul")
    con.execute("CREATE TABLE nothing (a INTEGER, b VARCHAR)")
    with pytest.raises(HierarchyError, match="no rows"):
        validate(con, "nothing")

    with pytest.raises(ConfigError, match="'nope'"):
        validate(con, "nope")
    with pytest.raises(ConfigError, match="'nope'"):
        validate(con, "zips", table="nope", column="zip")
    with pytest.raises(ConfigError, match="no column 'nope'"):
        validate(con, "zips", table="src", column="nope")
    with pytest.raises(InvalidInputError):
        validate(con, "zips", table="src")
    for build in (suppress, mask, prefix_words, auto, dates, intervals):
        with pytest.raises(ConfigError):
            build(con, "h", table="nope", column="zip")
        with pytest.raises(ConfigError):
            build(con, "h", table="src", column="nope")
    with pytest.raises(InvalidInputError, match="source table"):
        suppress(con, "src", table="src", column="zip")
    con.execute("CREATE VIEW v AS SELECT 1 AS a")
    with pytest.raises(ConfigError, match="view"):
        suppress(con, "v", table="src", column="zip")
    with pytest.raises(ConfigError):
        levels(con, "nope")


def test_validate_positional_read_csv_view(con: duckdb.DuckDBPyConnection) -> None:
    path = DATA / "adult" / "adult_hierarchy_age.csv"
    assert path.is_file(), f"missing hierarchy file {path}"
    con.execute(f"CREATE VIEW age AS SELECT * FROM read_csv('{path}', delim=';', header=false)")
    assert validate(con, "age") == Hierarchy("age", 4)
    assert con.sql("SELECT 1").fetchall() == [(1,)]  # no half-read result left behind
    assert levels(con, "age") == 4
    make_table(con, [17, 90], "INTEGER", table="people", column="age")
    assert validate(con, "age", table="people", column="age").levels == 4


def test_validate_is_fast_on_100k_rows(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE big AS SELECT lpad(i::VARCHAR, 6, '0') AS level_0, "
        "lpad((i // 10)::VARCHAR, 5, '0') AS level_1, lpad((i // 1000)::VARCHAR, 3, '0') "
        "AS level_2, '*' AS level_3 FROM range(100000) r(i)"
    )
    assert validate(con, "big") == Hierarchy("big", 3)


# ---------------------------------------------------------------------- properties

ints = st.lists(st.one_of(st.none(), st.integers(-(10**6), 10**6)), min_size=1, max_size=30)
small_ints = st.lists(st.one_of(st.none(), st.integers(-40, 40)), min_size=1, max_size=30)
floats = st.lists(
    st.one_of(st.none(), st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)),
    min_size=1,
    max_size=20,
)
alphabet = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
texts = st.lists(st.one_of(st.none(), st.text(alphabet, max_size=8)), min_size=1, max_size=20)
word = st.text(st.characters(exclude_categories=("Cs", "Z", "Cc")), min_size=1, max_size=4)
sentences = st.lists(
    st.one_of(
        st.none(),
        st.tuples(
            st.sampled_from(["", " ", "\t"]),
            st.lists(word, max_size=5),
            st.sampled_from([" ", "  ", "\t", "\u3000", "\xa0"]),
        ).map(lambda t: t[0] + t[2].join(t[1])),
    ),
    min_size=1,
    max_size=15,
)
day_list = st.lists(
    st.one_of(st.none(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    min_size=1,
    max_size=20,
)


def present(values: Sequence[Any]) -> bool:
    return any(v is not None for v in values)


@pytest.mark.slow
@SETTINGS
@given(values=ints.filter(present))
def test_prop_int_builders(values: list[int | None]) -> None:
    present_values = sorted({v for v in values if v is not None})
    lo, hi = present_values[0], present_values[-1]
    with fresh() as con:
        make_table(con, values, "BIGINT")
        got = check_hierarchy(con, intervals(con, "h", table="t", column="x"), values)
        for r in got:
            assert list(r[1:]) == go_int_labels(lo, hi, r[0])
        for fanout in (2, 3):
            got = check_hierarchy(con, auto(con, "h", table="t", column="x", fanout=fanout), values)
            expected = go_autobuild(present_values, fanout)
            assert {r[0]: list(r[1:]) for r in got} == expected
        h = intervals(con, "h", table="t", column="x", width=1000, fanout=3)
        got = check_hierarchy(con, h, values)
        for r in got:
            start = lo + (r[0] - lo) // 1000 * 1000
            assert r[1] == f"[{start}..{start + 999}]"
        check_hierarchy(con, suppress(con, "h", table="t", column="x"), values)
        check_hierarchy(con, mask(con, "h", table="t", column="x"), values)


@SETTINGS
@given(values=small_ints.filter(present), lo=st.integers(-60, -40), hi=st.integers(40, 60))
def test_prop_int_binary_with_bounds(values: list[int | None], lo: int, hi: int) -> None:
    with fresh() as con:
        make_table(con, values, "INTEGER")
        h = intervals(con, "h", table="t", column="x", min=lo, max=hi)
        for r in check_hierarchy(con, h, values):
            assert list(r[1:]) == go_int_labels(lo, hi, r[0])


@pytest.mark.slow
@SETTINGS
@given(values=floats.filter(present), width=st.floats(0.01, 5000.0))
@example(values=[-0.0], width=1.0)
def test_prop_float_builders(values: list[float | None], width: float) -> None:
    # The builders store -0.0 as 0.0 (DuckDB groups and joins them as one value).
    present_values = sorted({v + 0.0 for v in values if v is not None})
    with fresh() as con:
        make_table(con, values, "DOUBLE")
        got = check_hierarchy(con, intervals(con, "h", table="t", column="x"), values)
        for r in got:
            assert list(r[1:]) == go_float_labels(present_values[0], present_values[-1], r[0])
        h = intervals(con, "h", table="t", column="x", width=width)
        check_hierarchy(con, h, values)
        check_hierarchy(con, auto(con, "h", table="t", column="x", fanout=4), values)
        check_hierarchy(con, suppress(con, "h", table="t", column="x"), values)


@SETTINGS
@given(values=texts.filter(present), cap=st.one_of(st.none(), st.integers(0, 6)))
def test_prop_mask(values: list[str | None], cap: int | None) -> None:
    with fresh() as con:
        make_table(con, values, "VARCHAR")
        got = check_hierarchy(con, mask(con, "h", table="t", column="x", levels=cap), values)
        width = max(len(v) for v in values if v is not None)
        masked = max(width - 1, 0) if cap is None else min(cap, max(width - 1, 0))
        for r in got:
            padded = r[0].ljust(width, "*")
            expected = [padded[: width - i] + "*" * i for i in range(1, masked + 1)]
            assert list(r[1:]) == [*expected, "*"]
        expected_auto = go_autobuild(sorted({v for v in values if v is not None}), 2)
        got = check_hierarchy(con, auto(con, "h", table="t", column="x"), values)
        assert {r[0]: list(r[1:]) for r in got} == expected_auto


@SETTINGS
@given(values=sentences.filter(present))
def test_prop_prefix_words(values: list[str | None]) -> None:
    with fresh() as con:
        make_table(con, values, "VARCHAR")
        got = check_hierarchy(con, prefix_words(con, "h", table="t", column="x"), values)
        max_words = max(
            1, *(len([w for w in _GO_FIELDS.split(v) if w]) for v in values if v is not None)
        )
        for r in got:
            assert list(r[1:]) == go_prefix_labels(r[0], max_words)


@SETTINGS
@given(values=day_list.filter(present))
def test_prop_dates(values: list[dt.date | None]) -> None:
    with fresh() as con:
        make_table(con, values, "DATE")
        got = check_hierarchy(con, dates(con, "h", table="t", column="x"), values)
        for r in got:
            y = r[0].year
            assert list(r[1:]) == [
                f"{y:04d}-{r[0].month:02d}",
                f"{y:04d}",
                f"{y - y % 10:04d}s",
                "*",
            ]
        check_hierarchy(con, auto(con, "h", table="t", column="x", fanout=3), values)


def test_module_exports() -> None:
    assert set(hierarchy.__all__) >= {
        "Hierarchy",
        "auto",
        "dates",
        "from_csv",
        "intervals",
        "levels",
        "mask",
        "prefix_words",
        "suppress",
        "validate",
    }
