"""(h,k,p)-coherence: ``kanon_hkp`` / ``kanon_hkp_report`` in SQL and ``kanon.hkp``.

Releases are checked by an independent brute force written here: every set of at most p
public items that some released transaction contains is enumerated and its cohort
counted (support >= k, no private item in more than a fraction h of it), the minimal
moles reported are recomputed from the input, every released transaction must be its
input transaction minus the suppressed items, and no transaction may be lost.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.sql.quote import ident
from tests.conftest import data_dir

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

METHODS = ("mmil", "1il", "mm", "rmall")
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
REPORT = [[0, 2, 6], [0, 2, 5], [1, 2], [0, 1, 5], [0, 1, 2], [0, 1, 2, 3, 4, 5]]
TEXT = ["a", "b", "Ünïcødé", "x y", "日本", "O'Brien", '"q"', "ß", ""]

# --- The brute-force oracle -------------------------------------------------------------


def _cohort(data: Sequence[frozenset[Any]], beta: tuple[Any, ...]) -> list[frozenset[Any]]:
    return [t for t in data if t.issuperset(beta)]


def _is_mole(
    data: Sequence[frozenset[Any]], beta: tuple[Any, ...], private: set[Any], h: float, k: int
) -> bool:
    cohort = _cohort(data, beta)
    if not cohort:
        return False
    if len(cohort) < k:
        return True
    counts = Counter(e for t in cohort for e in t if e in private)
    return any(c / len(cohort) > h for c in counts.values())


def _sets_held(data: Iterable[frozenset[Any]], private: set[Any], p: int) -> set[tuple[Any, ...]]:
    """Every set of 1..p public items that some transaction holds (the only candidates:
    a set no transaction holds is no mole)."""
    out: set[tuple[Any, ...]] = set()
    for t in data:
        public = sorted(e for e in t if e not in private)
        for size in range(1, min(p, len(public)) + 1):
            out.update(itertools.combinations(public, size))
    return out


def _moles(data: Sequence[frozenset[Any]], private: set[Any], h: float, k: int, p: int) -> list:
    return sorted(b for b in _sets_held(data, private, p) if _is_mole(data, b, private, h, k))


def _minimal_moles(
    data: Sequence[frozenset[Any]], private: set[Any], h: float, k: int, p: int
) -> list[tuple[Any, ...]]:
    moles = set(_moles(data, private, h, k, p))
    return sorted(
        (
            m
            for m in moles
            if not any(
                s in moles for size in range(1, len(m)) for s in itertools.combinations(m, size)
            )
        ),
        key=lambda m: (len(m), m),
    )


def _check_release(
    original: Sequence[Sequence[Any] | None],
    released: Sequence[Sequence[Any] | None],
    report: dict[str, Any],
    h: float,
    k: int,
    p: int,
) -> None:
    """The release is the input minus the suppressed and dropped items, every transaction
    kept, and (h,k,p)-coherent; the reported moles are the input's minimal moles."""
    assert len(released) == len(original), "a transaction was lost"
    gone = set(report["suppressed"]) | set(report["dropped"])
    private = set(report["private"])
    assert not (set(report["suppressed"]) & private), "a private item was suppressed"
    for before, after in zip(original, released, strict=True):
        if before is None:
            assert after is None
            continue
        assert after is not None
        assert set(after) <= set(before), "an item appeared"
        assert sorted(after, key=repr) == sorted((e for e in before if e not in gone), key=repr), (
            "an item that was not suppressed went missing"
        )
    data = [frozenset(e for e in t if e not in set(report["dropped"])) for t in original if t]
    minimal = _minimal_moles(data, private, h, k, p)
    assert report["size1_moles"] == [m[0] for m in minimal if len(m) == 1]
    assert [tuple(m) for m in report["moles"]] == [m for m in minimal if len(m) > 1]
    left = [frozenset(t) for t in released if t]
    assert _moles(left, private, h, k, p) == [], "the release has moles"
    occurrences = sum(len(t) for t in data)
    assert report["occurrences"] == occurrences
    support = Counter(e for t in data for e in t)
    assert report["suppressed_occurrences"] == sum(support[e] for e in report["suppressed"])
    expected_loss = report["suppressed_occurrences"] / occurrences if occurrences else 0.0
    assert report["information_loss"] == pytest.approx(expected_loss)


# --- Helpers ------------------------------------------------------------------------------

REPORT_COLUMNS = (
    "suppressed",
    "size1_moles",
    "moles",
    "information_loss",
    "suppressed_occurrences",
    "occurrences",
    "dropped",
    "dropped_occurrences",
    "private",
    "transactions",
    "items",
    "public_items",
    "candidates",
    "method",
    "seconds",
)


def _args(**kw: Any) -> str:
    """SQL named arguments; lists and strings as literals."""
    parts = []
    for name, value in kw.items():
        if value is None:
            continue
        parts.append(f"{name} := {_lit(value)}")
    return ", ".join(parts)


def _lit(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return repr(value)


def _sql_report(con: duckdb.DuckDBPyConnection, table: str, **kw: Any) -> dict[str, Any]:
    (row,) = con.execute(f"SELECT * FROM kanon_hkp_report({_lit(table)}, {_args(**kw)})").fetchall()
    return dict(zip(REPORT_COLUMNS, row, strict=True))


def _report_of(result: kanon.HkpResult) -> dict[str, Any]:
    return {
        "suppressed": result.suppressed,
        "size1_moles": result.size1_moles,
        "moles": [list(m) for m in result.moles],
        "information_loss": result.information_loss,
        "suppressed_occurrences": result.suppressed_occurrences,
        "occurrences": result.occurrences,
        "dropped": result.dropped,
        "dropped_occurrences": result.dropped_occurrences,
        "private": result.private,
    }


def _store(con: duckdb.DuckDBPyConnection, name: str, data: pa.Table) -> None:
    """Store ``data`` as the persistent table ``name`` (replacing it)."""
    con.register("__hkp_test_source", data)
    con.execute(f"CREATE OR REPLACE TABLE {ident(name)} AS SELECT * FROM __hkp_test_source")
    con.unregister("__hkp_test_source")


def _list_table(con: duckdb.DuckDBPyConnection, name: str, rows: list[list[Any] | None]) -> None:
    """A persistent table (id, basket) with one list per transaction."""
    typ = pa.string() if any(isinstance(e, str) for r in rows if r for e in r) else pa.int64()
    data = pa.table({"id": list(range(len(rows))), "basket": pa.array(rows, pa.list_(typ))})
    _store(con, name, data)


def _long_table(con: duckdb.DuckDBPyConnection, name: str, rows: list[list[Any] | None]) -> None:
    """A persistent long table (tid, item): an empty transaction is one row, item NULL."""
    typ = pa.string() if any(isinstance(e, str) for r in rows if r for e in r) else pa.int64()
    tids: list[int] = []
    items: list[Any] = []
    for t, row in enumerate(rows):
        for e in row or [None]:
            tids.append(t)
            items.append(e)
    data = pa.table({"tid": pa.array(tids, pa.int64()), "item": pa.array(items, typ)})
    _store(con, name, data)


def _long_release(rows: list[tuple[int, Any]], n: int) -> list[list[Any]]:
    out: list[list[Any]] = [[] for _ in range(n)]
    seen: set[int] = set()
    for tid, item in rows:
        seen.add(tid)
        if item is not None:
            out[tid].append(item)
    assert seen == set(range(n)), "a transaction was lost"
    return out


# --- The worked example -----------------------------------------------------------------


def test_the_reports_worked_example_in_sql(con: duckdb.DuckDBPyConnection) -> None:
    _list_table(con, "baskets", REPORT)
    report = _sql_report(con, "baskets", h=0.5, k=3, p=3, private=[3, 4])
    assert report["size1_moles"] == [6]
    assert report["moles"] == [[1, 5], [2, 5], [0, 1, 2]]
    assert report["suppressed"] == [6, 5, 1]  # MM/IL removes 5, then 1
    assert report["information_loss"] == pytest.approx(8 / 20)
    assert report["private"] == [3, 4]
    assert (report["transactions"], report["items"], report["public_items"]) == (6, 7, 5)
    assert report["method"] == "mmil"
    rows = con.execute(
        "SELECT id, basket FROM kanon_hkp('baskets', h := 0.5, k := 3, p := 3, private := [3, 4])"
    ).fetchall()
    assert rows == [
        (0, [0, 2]),
        (1, [0, 2]),
        (2, [2]),
        (3, [0]),
        (4, [0, 2]),
        (5, [0, 2, 3, 4]),
    ]


def test_the_reports_worked_example_long_and_in_python(con: duckdb.DuckDBPyConnection) -> None:
    _long_table(con, "clicks", REPORT)
    rows = con.execute(
        "SELECT tid, item FROM kanon_hkp('clicks', h := 0.5, k := 3, p := 3, private := [3, 4], "
        "tid := 'tid', item := 'item')"
    ).fetchall()
    assert _long_release(rows, 6) == [[0, 2], [0, 2], [2], [0], [0, 2], [0, 2, 3, 4]]
    result = kanon.hkp(pa.table({"basket": REPORT}), 0.5, 3, 3, private=[3, 4])
    assert result.suppressed == [6, 5, 1]
    assert result.moles == [(1, 5), (2, 5), (0, 1, 2)]
    assert result.release.column("basket").to_pylist() == [
        [0, 2],
        [0, 2],
        [2],
        [0],
        [0, 2],
        [0, 2, 3, 4],
    ]
    by_name = kanon.hkp("clicks", 0.5, 3, 3, private=[3, 4], tid="tid", item="item", con=con)
    assert by_name.suppressed == [6, 5, 1]
    assert isinstance(by_name.release, duckdb.DuckDBPyRelation)
    assert _long_release(by_name.release.fetchall(), 6) == _long_release(rows, 6)


@pytest.mark.parametrize(
    ("method", "suppressed"),
    [("mmil", [6, 5, 1]), ("1il", [6, 5, 1]), ("mm", [6, 5, 1]), ("rmall", [6, 0, 1, 2, 5])],
)
def test_the_worked_example_with_every_method(method: str, suppressed: list[int]) -> None:
    result = kanon.hkp(pa.table({"b": REPORT}), 0.5, 3, 3, private=[3, 4], method=method)
    assert result.suppressed == suppressed
    assert result.method == method
    _check_release(REPORT, result.release.column("b").to_pylist(), _report_of(result), 0.5, 3, 3)


# --- Brute force on generated instances --------------------------------------------------


@st.composite
def instances(draw: st.DrawFn, text: bool) -> dict[str, Any]:
    universe = TEXT if text else list(range(-2, 7))
    width = draw(st.integers(min_value=2, max_value=len(universe)))
    alphabet = universe[:width]
    n = draw(st.integers(min_value=0, max_value=14))
    rows = draw(
        st.lists(
            st.one_of(
                st.lists(st.sampled_from(alphabet), max_size=6),
                st.none() if not text else st.lists(st.sampled_from(alphabet), max_size=6),
            ),
            min_size=n,
            max_size=n,
        )
    )
    present = sorted({e for r in rows if r for e in r}, key=repr)
    roles = draw(st.sampled_from(["private", "fraction"]))
    out: dict[str, Any] = {
        "rows": rows,
        "h": draw(st.sampled_from([0.4, 0.5, 1.0, 0.25, 0.7])),
        "k": draw(st.integers(min_value=1, max_value=4)),
        "p": draw(st.integers(min_value=1, max_value=4)),
        "min_support": draw(st.sampled_from([0.0, 0.0, 0.1, 0.2])),
    }
    if roles == "private" or not present:
        out["private"] = draw(st.lists(st.sampled_from(present), max_size=3)) if present else []
    else:
        out["public_fraction"] = draw(st.sampled_from([0.0, 0.4, 0.6, 1.0]))
        out["seed"] = draw(st.integers(min_value=0, max_value=2**64 - 1))
    return out


def _kw(case: dict[str, Any], method: str) -> dict[str, Any]:
    keys = ("h", "k", "p", "private", "public_fraction", "seed", "min_support")
    return {key: case[key] for key in keys if key in case} | {"method": method}


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=40, **SETTINGS)
@given(case=instances(text=False))
def test_sql_list_releases_are_coherent(
    con: duckdb.DuckDBPyConnection, method: str, case: dict[str, Any]
) -> None:
    _list_table(con, "t", case["rows"])
    kw = _kw(case, method)
    report = _sql_report(con, "t", **kw)
    released = con.execute(f"SELECT id, basket FROM kanon_hkp('t', {_args(**kw)})").fetchall()
    assert [i for i, _ in released] == list(range(len(case["rows"])))
    _check_release(case["rows"], [b for _, b in released], report, case["h"], case["k"], case["p"])


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=30, **SETTINGS)
@given(case=instances(text=True))
def test_sql_long_text_releases_are_coherent(
    con: duckdb.DuckDBPyConnection, method: str, case: dict[str, Any]
) -> None:
    _long_table(con, "long t", case["rows"])
    kw = _kw(case, method) | {"tid": "tid", "item": "item"}
    report = _sql_report(con, "long t", **kw)
    rows = con.execute(f"SELECT tid, item FROM kanon_hkp('long t', {_args(**kw)})").fetchall()
    released = _long_release(rows, len(case["rows"]))
    original = [r or [] for r in case["rows"]]
    _check_release(original, released, report, case["h"], case["k"], case["p"])


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=25, **SETTINGS)
@given(case=instances(text=True))
def test_python_api_releases_are_coherent(method: str, case: dict[str, Any]) -> None:
    rows = [r or [] for r in case["rows"]]
    frame = pa.table({"items": pa.array(rows, pa.list_(pa.string()))})
    result = kanon.hkp(frame, **_kw(case, method))
    released = result.release.column("items").to_pylist()
    _check_release(rows, released, _report_of(result), case["h"], case["k"], case["p"])
    assert result.transactions == len(rows)


# --- Shapes, types, rules ----------------------------------------------------------------


def test_null_lists_are_empty_transactions_and_null_items_in_long_tables_mark_them(
    con: duckdb.DuckDBPyConnection,
) -> None:
    rows = [*REPORT, None, []]
    _list_table(con, "b", rows)
    out = con.execute(
        "SELECT basket FROM kanon_hkp('b', h := 0.5, k := 3, p := 3, private := [3, 4])"
    ).fetchall()
    assert [r for (r,) in out][-2:] == [None, []]
    report = _sql_report(con, "b", h=0.5, k=3, p=3, private=[3, 4])
    assert report["transactions"] == 8
    assert report["suppressed"] == [6, 5, 1]
    # Long: transaction 2 is {1, 2}; with k = 6 every public item goes and the
    # transactions without private items keep one row with a NULL item.
    _long_table(con, "l", [*REPORT, []])
    rows_out = con.execute(
        "SELECT tid, item FROM kanon_hkp('l', h := 1.0, k := 7, p := 1, private := [3, 4], "
        "tid := 'tid', item := 'item') ORDER BY tid, item"
    ).fetchall()
    assert rows_out == [
        (0, None),
        (1, None),
        (2, None),
        (3, None),
        (4, None),
        (5, 3),
        (5, 4),
        (6, None),
    ]


def test_text_items_with_quotes_and_unicode_and_a_strange_table_name(
    con: duckdb.DuckDBPyConnection,
) -> None:
    names = ["a'b", '"c"', "日本", "ß", "x; DROP TABLE t; --", "e", "f"]
    rows = [[names[i] for i in t] for t in REPORT]
    _list_table(con, 'we"ird; name', rows)
    report = _sql_report(con, 'we"ird; name', h=0.5, k=3, p=3, private=[names[3], names[4]])
    assert report["suppressed"] == [names[6], names[5], names[1]]
    # Items are coded in value order: each mole lists its items sorted.
    expected = [[names[1], names[5]], [names[2], names[5]], [names[0], names[1], names[2]]]
    assert {tuple(m) for m in report["moles"]} == {tuple(sorted(m)) for m in expected}
    result = kanon.hkp('we"ird; name', 0.5, 3, 3, private=[names[3], names[4]], con=con)
    released = [r[1] for r in result.release.fetchall()]
    _check_release(rows, released, _report_of(result), 0.5, 3, 3)


def test_roles_table(con: duckdb.DuckDBPyConnection) -> None:
    _list_table(con, "baskets", REPORT)
    con.execute(
        "CREATE TABLE roles AS SELECT * FROM (VALUES (3, 'private'), (4, 'PRIVATE'), "
        "(0, 'public')) r(item, role)"
    )
    report = _sql_report(con, "baskets", h=0.5, k=3, p=3, roles="roles")
    assert report["private"] == [3, 4]
    assert report["suppressed"] == [6, 5, 1]
    con.execute("CREATE TABLE bad_roles AS SELECT * FROM (VALUES (3, 'secret')) r(item, role)")
    with pytest.raises(ConfigError, match="gives role 'secret'"):
        kanon.hkp("baskets", 0.5, 3, 3, roles="bad_roles", con=con)
    con.execute(
        "CREATE TABLE both_roles AS SELECT * FROM (VALUES (3, 'private'), (3, 'public')) "
        "r(item, role)"
    )
    with pytest.raises(ConfigError, match="gives item '3' both roles"):
        kanon.hkp("baskets", 0.5, 3, 3, roles="both_roles", con=con)
    con.execute("CREATE TABLE ghost_roles AS SELECT * FROM (VALUES (9, 'private')) r(item, role)")
    with pytest.raises(InvalidInputError, match="never occur in table 'baskets': '9'"):
        kanon.hkp("baskets", 0.5, 3, 3, roles="ghost_roles", con=con)


def test_public_fraction_is_seeded_and_private_empty_means_all_public() -> None:
    frame = pa.table({"b": REPORT})
    a = kanon.hkp(frame, 0.5, 2, 2, public_fraction=0.4, seed=3)
    assert a.private == kanon.hkp(frame, 0.5, 2, 2, public_fraction=0.4, seed=3).private
    assert a.public_items == round(0.4 * 7)
    everyone = kanon.hkp(frame, 0.5, 2, 2, private=[])
    assert everyone.private == []
    assert everyone.public_items == 7


def test_inputs_from_pandas_polars_and_relations(con: duckdb.DuckDBPyConnection) -> None:
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    df = pd.DataFrame({"id": range(6), "b": REPORT})
    out = kanon.hkp(df, 0.5, 3, 3, private=[3, 4])
    assert isinstance(out.release, pd.DataFrame)
    assert [list(x) for x in out.release["b"]] == [[0, 2], [0, 2], [2], [0], [0, 2], [0, 2, 3, 4]]
    out_pl = kanon.hkp(pl.DataFrame({"b": REPORT}), 0.5, 3, 3, private=[3, 4])
    assert isinstance(out_pl.release, pl.DataFrame)
    rel = con.sql("SELECT * FROM (VALUES ([1, 2]), ([1, 2]), ([1]), ([2])) t(b)")
    out_rel = kanon.hkp(rel, 1.0, 2, 2, private=[], con=con)
    assert isinstance(out_rel.release, duckdb.DuckDBPyRelation)
    assert out_rel.suppressed == []


def test_preprocessing_reproduces_the_papers_retail_figures() -> None:
    path = data_dir() / "transactions" / "retail.dat"
    con = kanon.install(duckdb.connect())
    con.execute(
        "CREATE TABLE retail AS SELECT list_transform(string_split(trim(line), ' '), "
        "lambda x: CAST(x AS INTEGER)) AS items FROM read_csv(?, columns = {'line': 'VARCHAR'}, "
        "header = false, delim = '\t', quote = '', escape = '')",
        [str(path)],
    )
    report = _sql_report(con, "retail", h=0.4, k=10, p=2, public_fraction=0.4, min_support=0.001)
    assert report["transactions"] == 88_162
    assert report["items"] == 2_117
    assert round(report["occurrences"] / report["transactions"], 2) == 7.53
    assert report["public_items"] == round(0.4 * 2_117)
    con.close()


# --- Errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"h": 0.0}, InvalidInputError, r"h must lie in \(0, 1\]"),
        ({"h": 1.5}, InvalidInputError, r"h must lie in \(0, 1\]"),
        ({"h": float("nan")}, InvalidInputError, r"h must lie in \(0, 1\]"),
        ({"k": 0}, InvalidInputError, "k must be at least 1"),
        ({"p": 0}, InvalidInputError, "p must be at least 1"),
        ({"private": [3, 9]}, InvalidInputError, r"1 item\(s\) listed in private never occur.*'9'"),
        ({"private": None}, ConfigError, "the private items are needed"),
        ({"public_fraction": 0.4}, ConfigError, "give only one of private, roles and public"),
        ({"private": None, "public_fraction": 1.5}, InvalidInputError, "public_fraction must lie"),
        ({"method": "best"}, InvalidInputError, "method must be one of 'mmil', '1il'"),
        ({"min_support": -0.1}, InvalidInputError, r"min_support must lie in \[0, 1\]"),
        ({"max_itemsets": 0}, InvalidInputError, "max_itemsets must be a whole number of at"),
        ({"private": [3, None]}, InvalidInputError, "private lists a NULL item"),
        ({"items": "nope"}, ConfigError, "has no column 'nope'"),
        ({"items": "id"}, ConfigError, "is BIGINT, not a LIST"),
        ({"tid": "id"}, ConfigError, "needs both tid := '...' and item := '...'"),
    ],
)
def test_errors_name_the_problem(
    con: duckdb.DuckDBPyConnection, kw: dict[str, Any], error: type[Exception], message: str
) -> None:
    _list_table(con, "baskets", REPORT)
    args: dict[str, Any] = {"h": 0.5, "k": 3, "p": 3, "private": [3, 4]} | kw
    with pytest.raises(error, match=message):
        kanon.hkp("baskets", con=con, **args)
    sql_args = {key: v for key, v in args.items() if not (isinstance(v, float) and v != v)}
    if len(sql_args) == len(args) and args.get("private") != [3, None]:
        with pytest.raises(duckdb.InvalidInputException, match=error.__name__) as info:
            con.execute(f"SELECT * FROM kanon_hkp('baskets', {_args(**sql_args)})").fetchall()
        assert info.match(message)


_DENSE = """
import duckdb, pyarrow as pa, kanon
from kanon.exceptions import InvalidInputError
# 50 transactions holding all of 40 items: every set of at most p items is a non-mole,
# C(40, 10) ~ 8.5e8 of them at p = 10.
t = pa.table({"basket": [list(range(40)) for _ in range(50)]})
try:
    kanon.hkp(t, h=1.0, k=2, p=10, private=[])
except InvalidInputError as err:
    print("InvalidInputError:", err)
"""


@pytest.mark.slow
def test_a_dense_table_at_p_10_is_an_error_naming_p_not_an_abort() -> None:
    # This aborted the whole process ("memory allocation of 671088640 bytes failed",
    # rc -6): run in a child so that pytest survives a regression.
    done = subprocess.run(
        [sys.executable, "-c", _DENSE], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "InvalidInputError: hkp: p = 10 is too large for this data" in out, out
    assert "max_itemsets = 10000000" in out
    assert "lower p (sets of up to 6 items fit: p = 6)" in out, out


def test_max_itemsets_bounds_the_search_in_sql_and_python(con: duckdb.DuckDBPyConnection) -> None:
    # A few very frequent items among rare ones: 12 items in every transaction.
    _list_table(con, "dense", [[*range(12), 100 + t] for t in range(40)])
    sql = "SELECT * FROM kanon_hkp_report('dense', h := 1.0, k := 2, p := 6, private := []"
    # C(12, 2) + C(12, 3) = 286 candidates fit in 300; the 495 sets of 4 do not.
    with pytest.raises(duckdb.InvalidInputException, match="InvalidInputError") as info:
        con.execute(sql + ", max_itemsets := 300)").fetchall()
    assert info.match("p = 6 is too large")
    assert info.match(r"fit: p = 3\)")
    with pytest.raises(InvalidInputError, match=r"max_itemsets = 300 .*fit: p = 3\)"):
        kanon.hkp("dense", 1.0, 2, 6, private=[], max_itemsets=300, con=con)
    r = kanon.hkp("dense", 1.0, 2, 3, private=[], max_itemsets=300, con=con)
    assert (r.candidates, r.moles) == (286, [])
    ((candidates,),) = con.execute(
        "SELECT candidates FROM kanon_hkp_report('dense', h := 1.0, k := 2, p := 6, private := [])"
    ).fetchall()
    assert candidates == sum(math.comb(12, i) for i in range(2, 7))


def test_null_items_and_null_ids_are_errors(con: duckdb.DuckDBPyConnection) -> None:
    _list_table(con, "b", [[1, 2], [1, None]])
    with pytest.raises(InvalidInputError, match="column 'basket' of table 'b' holds NULL items"):
        kanon.hkp("b", 0.5, 1, 2, private=[], con=con)
    with pytest.raises(duckdb.InvalidInputException, match=r"InvalidInputError: .*NULL items"):
        con.execute(
            "SELECT * FROM kanon_hkp('b', h := 0.5, k := 1, p := 2, private := [])"
        ).fetchall()
    con.execute("CREATE TABLE l AS SELECT * FROM (VALUES (1, 'a'), (NULL, 'b')) t(tid, item)")
    with pytest.raises(
        InvalidInputError, match="holds NULL transaction ids; rows with a NULL id: 1"
    ):
        kanon.hkp("l", 0.5, 1, 2, private=[], tid="tid", item="item", con=con)


def test_shape_and_type_errors(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE two AS SELECT [1] AS a, [2] AS b")
    with pytest.raises(ConfigError, match="exactly one LIST column of items \\(found 'a', 'b'\\)"):
        kanon.hkp("two", 0.5, 1, 1, private=[], con=con)
    assert kanon.hkp("two", 0.5, 1, 1, private=[], items="b", con=con).suppressed == []
    con.execute("CREATE TABLE none_ AS SELECT 1 AS a")
    with pytest.raises(ConfigError, match="found none"):
        kanon.hkp("none_", 0.5, 1, 1, private=[], con=con)
    con.execute("CREATE TABLE dbl AS SELECT [1.5] AS a")
    with pytest.raises(ConfigError, match="items must be integers or text"):
        kanon.hkp("dbl", 0.5, 1, 1, private=[], con=con)
    with pytest.raises(ConfigError, match="unknown table 'missing'"):
        kanon.hkp("missing", 0.5, 1, 1, private=[], con=con)
    with pytest.raises(duckdb.InvalidInputException, match="needs h, k and p"):
        con.execute("SELECT * FROM kanon_hkp('two', NULL, 1, 1, private := [])").fetchall()


def test_the_release_and_the_report_agree_and_the_input_is_only_read(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _list_table(con, "baskets", REPORT)
    before = con.execute("SELECT * FROM baskets ORDER BY id").fetchall()
    tables = con.execute("SELECT count(*) FROM duckdb_tables()").fetchall()
    kanon.hkp("baskets", 0.5, 3, 3, private=[3, 4], con=con).release.fetchall()
    con.execute("SELECT * FROM kanon_hkp('baskets', h := 0.5, k := 3, p := 3, private := [3, 4])")
    assert con.execute("SELECT * FROM baskets ORDER BY id").fetchall() == before
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == tables
