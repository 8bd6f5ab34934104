"""Internal names cannot be captured: user names drawn from kanon's own generated SQL.

The vocabulary is collected, not written by hand: every identifier in the SQL that
``kanon.explain`` (every method), the check, metrics and hkp planners emit, and every
helper object ``kanon.materialize`` creates. A table, column, hierarchy or release
named with any of those words gives the release it gives under ordinary names, or a
clear refusal (a KanonError naming the word); never another release or a DuckDB error.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

import kanon
from kanon.exceptions import ConfigError, KanonError
from kanon.plan.check import CheckOptions, plan_check
from kanon.plan.hkp import HkpOptions, plan_hkp
from kanon.plan.metrics import plan_metrics
from kanon.plan.verify import plan_verify
from kanon.sql.quote import ident, literal, string_list

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow],
}
# rid, age, zz (hierarchy h_zz), d, dx: a small table every method can release at k = 4.
BASE = (
    "SELECT i AS rid, i % 7 AS age, (i % 3)::VARCHAR AS zz, "
    "DATE '2020-01-01' + (i % 11)::INT AS d, (i % 5)::VARCHAR AS dx FROM range(60) r(i)"
)
HIERARCHY = (
    "SELECT * FROM (VALUES ('0', 'a', '*'), ('1', 'a', '*'), ('2', 'b', '*')) h(hv, hl1, hl2)"
)
USER = {"src", "rid", "age", "zz", "d", "dx", "h_zz", "hv", "hl1", "hl2", "t_items", "basket"}
QI = ["age", "zz", "d"]
CASES: list[tuple[str, dict[str, Any]]] = [
    ("forest", {}),
    ("forest_paper", {}),
    ("forest", {"labels": "range", "block_size": 10}),
    ("mondrian", {}),
    ("mondrian", {"labels": "range", "l": 2, "sensitive": "dx"}),
    ("priority", {}),
    ("iterated", {}),
    ("optimal", {}),
    ("optimal", {"l": 2, "sensitive": "dx", "max_suppression": 0.1}),
    ("datafly", {}),
    ("mu_argus", {}),
]


#: The local methods, and the constants that make a 60-row table go through the SQL
#: cutting rounds into packs (on a sample of the tuples) and the packs' parts.
PACKED_CASES = [i for i, (method, _) in enumerate(CASES) if method in ("forest", "mondrian")]
SMALL_PACKS = (
    ("kanon.plan.release.forest", "PACK_ROWS"),
    ("kanon.plan.release.mondrian", "MONDRIAN_PACK_ROWS"),
    ("kanon.plan.release.priority", "PRIORITY_PACK_ROWS"),
    ("kanon.plan.release.priority", "ITERATED_PACK_ROWS"),
    ("kanon.plan.release.packs", "SAMPLE_TUPLES"),
)


@contextmanager
def _small_packs() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for module, name in SMALL_PACKS:
            patch.setattr(f"{module}.{name}", 1 if name == "SAMPLE_TUPLES" else 16)
        yield


def _identifiers(sql: str) -> set[str]:
    return {
        node.name
        for stmt in sqlglot.parse(sql, read="duckdb")
        if stmt is not None
        for node in stmt.walk()
        if isinstance(node, exp.Identifier)
    }


def _renamed(column: str, word: str) -> str:
    """``BASE`` with its column ``column`` named ``word``."""
    return BASE.replace(f"AS {column},", f"AS {ident(word)},").replace(
        f"AS {column} FROM", f"AS {ident(word)} FROM"
    )


def _setup(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE TABLE src AS {BASE}")
    con.execute(f"CREATE TABLE h_zz AS {HIERARCHY}")
    con.execute(
        "CREATE TABLE t_items AS SELECT i AS rid, "
        "[i % 4, (i + 1) % 4, 4 + i % 3]::INT[] AS basket FROM range(40) r(i)"
    )


#: A policy with every rule, so that the verdict's SQL shows all its words.
VERIFY_POLICY = {"k": 4, "l": 2, "t": 0.5, "identifying_columns": 0.2, "suppressed": 0.1}
VERIFY_POLICY |= {"loss": 0.9, "rows": 0.0}


def _vocabulary() -> list[str]:
    con = kanon.install(duckdb.connect())
    _setup(con)
    words: set[str] = set()
    for method, extra in CASES:
        words |= _identifiers(
            kanon.explain(con, "src", 4, QI, method=method, **extra, keep_undeclared=True)
        )
    with _small_packs():
        for method in ("forest", "mondrian", "priority", "iterated"):
            words |= _identifiers(
                kanon.explain(con, "src", 4, QI, method=method, keep_undeclared=True)
            )
    kanon.configure(con, "src", qi={"age": None, "zz": "h_zz", "d": None})
    for method, _ in CASES:
        words |= _identifiers(kanon.explain(con, "src", 4, method=method, keep_undeclared=True))
    check = CheckOptions(qi=("age", "zz"), sensitive="dx", t_distance="ordered")
    words |= _identifiers(plan_check(con, "src", check).sql)
    before = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    kanon.materialize(con, "src", 4, "rel", keep_undeclared=True)
    kanon.materialize(con, "src", 4, "rel_o", method="optimal", keep_undeclared=True)
    words |= _identifiers(plan_metrics(con, "src", "rel"))
    words |= _identifiers(plan_verify(con, "src", "rel", VERIFY_POLICY, QI, ("dx",)).sql)
    after = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    for helper in after - before:
        words.add(helper)
        words.add(helper.removeprefix("rel_o").removeprefix("rel"))
    hkp = HkpOptions(h=0.5, k=3, p=2, private=("5", "6"))
    planned = plan_hkp(con, "t_items", hkp)
    words |= _identifiers(planned.release_sql) | _identifiers(planned.report_sql)
    con.close()
    return sorted(w for w in words if w and w.lower() not in USER)


VOCABULARY = _vocabulary()


def test_the_vocabulary_is_collected_from_the_generated_sql() -> None:
    """The words come from the SQL itself: internal CTEs, helper columns and tables."""
    assert len(VOCABULARY) > 50
    assert any(w.startswith("__kanon_") for w in VOCABULARY)
    assert any(not w.startswith("__kanon") for w in VOCABULARY)  # short CTE / alias names
    assert any(w.endswith("__kanon_rows") for w in VOCABULARY)


@pytest.fixture(scope="module")
def db() -> Any:
    con = kanon.install(duckdb.connect())
    _setup(con)
    yield con
    con.close()


def _rows(rel: duckdb.DuckDBPyRelation, back: dict[str, str]) -> list[tuple[Any, ...]]:
    """Rows as sorted (original column name, text) pairs: comparable across renames."""
    cols = [back.get(c, c) for c in rel.columns]
    return sorted(tuple(sorted(zip(cols, map(str, row), strict=True))) for row in rel.fetchall())


def _release(
    con: duckdb.DuckDBPyConnection,
    table: str,
    case: int,
    rename: dict[str, str],
    hierarchy: str | None = None,
) -> list[tuple[Any, ...]]:
    method, extra = CASES[case]
    args = {**extra}
    if "sensitive" in args:
        args["sensitive"] = rename.get("dx", "dx")
    named = ", ".join(f"{key} := {literal(value)}" for key, value in args.items())
    qi = string_list([rename.get(q, q) for q in QI])
    if hierarchy is not None:
        kanon.configure(
            con,
            table,
            qi={
                rename.get("age", "age"): None,
                rename.get("zz", "zz"): hierarchy,
                rename.get("d", "d"): None,
            },
        )
        qi = "[]::VARCHAR[]"
    sql = (
        f"SELECT * FROM kanon({literal(table)}, 4, qi := {qi}, method := {literal(method)}"
        + (f", {named}" if named else "")
        # rid and its copies are pass-through columns: released as they are.
        + ", keep_undeclared := true)"
    )
    return _rows(con.sql(sql), {v: k for k, v in rename.items()})


_BASELINE: dict[tuple[int, bool], list[tuple[Any, ...]]] = {}


def _baseline(con: duckdb.DuckDBPyConnection, case: int, hierarchy: bool) -> list[Any]:
    if (case, hierarchy) not in _BASELINE:
        con.execute(f"CREATE OR REPLACE TABLE base_src AS {BASE}")
        _BASELINE[case, hierarchy] = _release(
            con, "base_src", case, {}, "h_zz" if hierarchy else None
        )
    return _BASELINE[case, hierarchy]


def _same_or_refused(run: Callable[[], Any], expected: Any, word: str) -> None:
    """``run()`` gives ``expected``, or refuses with a kanon error that names ``word``.

    Errors of the planner UDF reach SQL inside DuckDB's exception, as ``ClassName: ...``.
    """
    try:
        got = run()
    except (KanonError, duckdb.Error) as err:
        error = err
    else:
        assert got == expected
        return
    text = str(error)
    assert word in text, text
    kanon_error = isinstance(error, KanonError) or any(
        f"{cls}: " in text for cls in ("ConfigError", "InvalidInputError", "HierarchyError")
    )
    assert kanon_error, text


PLACES = ("qi", "pass", "sensitive", "table", "hierarchy")


@pytest.mark.slow
@settings(max_examples=150, **SETTINGS)
@given(
    word=st.sampled_from(VOCABULARY),
    place=st.sampled_from(PLACES),
    case=st.integers(0, len(CASES) - 1),
)
def test_a_release_under_internal_names_is_the_release_or_a_refusal(
    db: duckdb.DuckDBPyConnection, word: str, place: str, case: int
) -> None:
    hierarchy = place == "hierarchy"
    expected = _baseline(db, case, hierarchy)
    rename: dict[str, str] = {}
    table, h_name = "hostile", "h_zz"
    select = BASE
    if place == "table":
        table = word
    elif place == "hierarchy":
        h_name = word
    else:
        column = {"qi": "zz", "pass": "rid", "sensitive": "dx"}[place]
        rename = {column: word}
        select = _renamed(column, word)
    db.execute("DELETE FROM kanon_columns")
    db.execute(f"DROP TABLE IF EXISTS {ident(table)}")
    db.execute(f"CREATE TABLE {ident(table)} AS {select}")
    if hierarchy:
        db.execute(f"DROP TABLE IF EXISTS {ident(h_name)}")
        db.execute(f"CREATE TABLE {ident(h_name)} AS {HIERARCHY}")
    try:
        _same_or_refused(
            lambda: _release(db, table, case, rename, h_name if hierarchy else None),
            expected,
            word,
        )
    finally:
        db.execute(f"DROP TABLE IF EXISTS {ident(table)}")
        if hierarchy:
            db.execute(f"DROP TABLE IF EXISTS {ident(h_name)}")
        db.execute("DELETE FROM kanon_columns")


def _unprefixed() -> list[str]:
    words = [w for w in VOCABULARY if not w.lower().startswith("__kanon")]
    return list({w.lower(): w for w in words}.values())  # DuckDB folds case


def _as_quasi_identifiers() -> Iterator[tuple[list[str], dict[str, str], str]]:
    """Each unprefixed word as a QI, three at a time: the names, the renaming of ``QI``
    and ``BASE``'s SELECT under it."""
    words = _unprefixed()
    for start in range(0, len(words), 3):
        names = [*words[start : start + 3], "age", "zz", "d"][:3]
        rename = dict(zip(QI, names, strict=True))
        select = BASE
        for q, name in rename.items():
            select = select.replace(f"AS {q},", f"AS {ident(name)},")
        yield names, rename, select


def _as_columns(db: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Tables ``wide_plain`` (``BASE`` with one more column ``x{i}`` per unprefixed word)
    and ``wide`` (the same, those columns named by the words); returns the renaming."""
    plain = {f"x{i}": w for i, w in enumerate(_unprefixed())}
    extra = ", ".join(f"rid + {i} AS {ident(x)}" for i, x in enumerate(plain))
    wide_plain = BASE.replace(" FROM range", f", {extra} FROM range")
    db.execute(f"CREATE OR REPLACE TABLE wide_plain AS {wide_plain}")
    wide = ", ".join(
        f"{ident(c)} AS {ident(plain.get(c, c))}" for c in db.table("wide_plain").columns
    )
    db.execute(f"CREATE OR REPLACE TABLE wide AS SELECT {wide} FROM wide_plain")
    return plain


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_unprefixed_word_as_a_quasi_identifier(
    db: duckdb.DuckDBPyConnection, case: int
) -> None:
    """Each word kanon's SQL uses without the reserved prefix names a QI, three at a time."""
    for names, rename, select in _as_quasi_identifiers():
        db.execute(f"CREATE OR REPLACE TABLE narrow AS {select}")
        got = _release(db, "narrow", case, rename)
        assert got == _baseline(db, case, False), names
    db.execute("DROP TABLE narrow")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_unprefixed_word_as_a_column_passed_through(
    db: duckdb.DuckDBPyConnection, case: int
) -> None:
    """All those words at once as columns released unchanged, against ordinary names."""
    plain = _as_columns(db)
    assert _release(db, "wide", case, plain) == _release(db, "wide_plain", case, {})


@pytest.mark.slow
@pytest.mark.parametrize("case", PACKED_CASES)
def test_packed_plans_under_every_unprefixed_word(db: duckdb.DuckDBPyConnection, case: int) -> None:
    """Cut into packs on a sample, the release is the same under those words as QIs and as
    columns passed through."""
    with _small_packs():
        db.execute(f"CREATE OR REPLACE TABLE packed_plain AS {BASE}")
        expected = _release(db, "packed_plain", case, {})
        for names, rename, select in _as_quasi_identifiers():
            db.execute(f"CREATE OR REPLACE TABLE packed AS {select}")
            assert _release(db, "packed", case, rename) == expected, names
        plain = _as_columns(db)
        assert _release(db, "wide", case, plain) == _release(db, "wide_plain", case, {})
    db.execute("DROP TABLE packed_plain")
    db.execute("DROP TABLE packed")


def _measures(con: duckdb.DuckDBPyConnection, table: str, rename: dict[str, str]) -> Any:
    qi = string_list([rename.get(q, q) for q in ("age", "zz")])
    dx = literal(rename.get("dx", "dx"))
    check = con.sql(
        f"SELECT * FROM kanon_check({literal(table)}, qi := {qi}, sensitive := {dx})"
    ).fetchall()
    classes = sorted(
        con.sql(f"SELECT * FROM kanon_classes({literal(table)}, qi := {qi})").fetchall()
    )
    search = con.sql(
        "SELECT * EXCLUDE (seconds, levels), map_values(levels) "
        f"FROM kanon_search({literal(table)}, 4, qi := {qi})"
    ).fetchall()
    return check, classes, search


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(word=st.sampled_from(VOCABULARY), place=st.sampled_from(("qi", "sensitive", "table")))
def test_check_classes_and_search_under_internal_names(
    db: duckdb.DuckDBPyConnection, word: str, place: str
) -> None:
    expected = _measures(db, "src", {})
    table, rename, select = "hostile", {}, BASE
    if place == "table":
        table = word
    else:
        column = {"qi": "zz", "sensitive": "dx"}[place]
        rename = {column: word}
        select = _renamed(column, word)
    db.execute(f"DROP TABLE IF EXISTS {ident(table)}")
    db.execute(f"CREATE TABLE {ident(table)} AS {select}")
    try:
        _same_or_refused(lambda: _measures(db, table, rename), expected, word)
    finally:
        db.execute(f"DROP TABLE IF EXISTS {ident(table)}")


@settings(max_examples=40, **SETTINGS)
@given(word=st.sampled_from(VOCABULARY), place=st.sampled_from(("items", "pass", "table")))
def test_hkp_under_internal_names(db: duckdb.DuckDBPyConnection, word: str, place: str) -> None:
    def run(table: str, items: str, rid: str) -> list[Any]:
        sql = (
            f"SELECT {ident(rid)}, {ident(items)} FROM kanon_hkp({literal(table)}, h := 0.5, "
            f"k := 3, p := 2, private := ['5', '6'], items := {literal(items)})"
        )
        return sorted(db.sql(sql).fetchall())

    expected = run("t_items", "basket", "rid")
    table, items, rid = "hostile", "basket", "rid"
    if place == "table":
        table = word
    elif place == "items":
        items = word
    else:
        rid = word
    db.execute(f"DROP TABLE IF EXISTS {ident(table)}")
    db.execute(
        f"CREATE TABLE {ident(table)} AS SELECT rid AS {ident(rid)}, basket AS {ident(items)} "
        "FROM t_items"
    )
    try:
        _same_or_refused(lambda: run(table, items, rid), expected, word)
    finally:
        db.execute(f"DROP TABLE IF EXISTS {ident(table)}")


@settings(max_examples=40, **SETTINGS)
@given(
    word=st.sampled_from(VOCABULARY),
    place=st.sampled_from(("source", "release", "qi", "sensitive", "pass")),
)
def test_verify_under_internal_names(db: duckdb.DuckDBPyConnection, word: str, place: str) -> None:
    """The verdict on a release is the same under any internal word, or a refusal."""

    def run(source: str, release: str, rename: dict[str, str]) -> list[Any]:
        back = {v: k for k, v in rename.items()}
        qi = string_list([rename.get(q, q) for q in QI])
        sensitive = literal(rename.get("dx", "dx"))
        rows = db.sql(
            f"SELECT * FROM kanon_verify({literal(source)}, {literal(release)}, qi := {qi}, "
            f"sensitive := {sensitive}, policy := {literal(json.dumps(VERIFY_POLICY))}::JSON)"
        ).fetchall()
        # Details name columns: compared where no column was renamed.
        return [
            (*row[:6], [back.get(c, c) for c in row[6]], row[7] if not rename else None)
            for row in rows
        ]

    def release_of(source: str, rename: dict[str, str]) -> str:
        c = {n: ident(rename.get(n, n)) for n in ("rid", "age", "zz", "d", "dx")}
        return (
            f"SELECT {c['rid']}, CAST({c['age']} // 2 AS VARCHAR) AS {c['age']}, {c['zz']}, "
            f"CASE WHEN {c['rid']} < 5 THEN '*' ELSE CAST({c['d']} AS VARCHAR) END AS {c['d']}, "
            f"{c['dx']} FROM {ident(source)}"
        )

    db.execute(f"CREATE OR REPLACE TABLE plain_src AS {BASE}")
    db.execute(f"CREATE OR REPLACE TABLE plain_rel AS {release_of('plain_src', {})}")
    expected = run("plain_src", "plain_rel", {})
    source, release, rename, select = "hostile", "hostile_rel", {}, BASE
    if place == "source":
        source = word
    elif place == "release":
        release = word
    else:
        column = {"qi": "zz", "sensitive": "dx", "pass": "rid"}[place]
        rename = {column: word}
        select = _renamed(column, word)
    if source == release:
        return
    for name in (source, release):
        db.execute(f"DROP TABLE IF EXISTS {ident(name)}")
    try:
        db.execute(f"CREATE TABLE {ident(source)} AS {select}")
        db.execute(f"CREATE TABLE {ident(release)} AS {release_of(source, rename)}")
        if rename:
            expected = [(*row[:7], None) for row in expected]
        _same_or_refused(lambda: run(source, release, rename), expected, word)
    finally:
        for name in (source, release):
            db.execute(f"DROP TABLE IF EXISTS {ident(name)}")


def _comparable(value: Any, back: dict[str, str]) -> Any:
    """A metric as compared across renames: maps keyed by the original names, floats
    rounded (DuckDB's parallel sums may differ in the last bits between runs)."""
    if isinstance(value, dict):
        return {back.get(c, c): _comparable(v, back) for c, v in value.items()}
    if isinstance(value, float):
        return round(value, 9)
    return value


def _view(con: duckdb.DuckDBPyConnection, name: str, back: dict[str, str]) -> list[Any]:
    return _rows(con.sql(f"SELECT * FROM {ident(name)}"), back)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(
    word=st.sampled_from(VOCABULARY),
    place=st.sampled_from(("release", "table", "qi", "pass")),
    method=st.sampled_from(("forest", "optimal")),
)
def test_materialize_refresh_and_metrics_under_internal_names(
    word: str, place: str, method: str
) -> None:
    con = kanon.install(duckdb.connect())
    _setup(con)

    def run(table: str, name: str, rename: dict[str, str]) -> list[Any]:
        back = {v: k for k, v in rename.items()}
        qi = [rename.get(q, q) for q in QI]
        kanon.materialize(con, table, 4, name, qi, method=method, keep_undeclared=True)
        out = [_view(con, name, back)]
        metrics = con.sql(
            f"SELECT * FROM kanon_metrics({literal(table)}, {literal(name)}, "
            f"qi := {string_list(qi)})"
        ).fetchall()
        out.append([tuple(_comparable(x, back) for x in row) for row in metrics])
        if method == "forest":
            con.execute(f"INSERT INTO {ident(table)} SELECT * FROM ({BASE}) ORDER BY rid LIMIT 9")
            kanon.refresh(con, name)
            out.append(_view(con, name, back))
        return out

    expected = run("src", "rel", {})
    table, name, rename, select = "hostile", "rel2", {}, BASE
    if place == "release":
        name = word
    elif place == "table":
        table = word
    else:
        column = {"qi": "zz", "pass": "rid"}[place]
        rename = {column: word}
        select = _renamed(column, word)
    try:
        con.execute(f"CREATE TABLE {ident(table)} AS {select}")
    except duckdb.CatalogException:
        return  # a name materializing "rel" already took: covered by the ownership tests
    try:
        _same_or_refused(lambda: run(table, name, rename), expected, word)
    finally:
        con.close()


# --- Materialize and refresh touch only what they created --------------------------------


def _snapshot(con: duckdb.DuckDBPyConnection, name: str) -> list[Any]:
    return sorted(con.sql(f"SELECT * FROM {ident(name)}").fetchall())


@pytest.mark.parametrize("method", ["forest", "optimal"])
@pytest.mark.parametrize("taken", ["rows", "groups", "meta", "h0", "view"])
def test_materialize_refuses_names_it_did_not_create(
    con: duckdb.DuckDBPyConnection, method: str, taken: str
) -> None:
    _setup(con)
    if method == "optimal" and taken in ("rows", "groups"):
        taken = "h1"
    name = "rel2" if taken == "view" else f"rel2__kanon_{taken}"
    if taken == "view":
        con.execute("CREATE VIEW rel2 AS SELECT 42 AS mine")
    else:
        con.execute(f"CREATE TABLE {ident(name)} AS SELECT 42 AS mine")
    with pytest.raises(ConfigError, match=r"not created by kanon\.materialize"):
        kanon.materialize(con, "src", 4, "rel2", QI, method=method, keep_undeclared=True)
    assert _snapshot(con, name) == [(42,)]


def test_materialize_refuses_a_temporary_object_that_would_shadow_its_tables(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _setup(con)
    kanon.materialize(con, "src", 4, "rel2", QI, keep_undeclared=True)
    con.execute("CREATE TEMP TABLE rel2__kanon_groups AS SELECT 42 AS mine")
    with pytest.raises(ConfigError, match="temporary"):
        kanon.materialize(con, "src", 4, "rel2", QI, keep_undeclared=True)
    assert _snapshot(con, "rel2__kanon_groups") == [(42,)]


def test_materialize_and_refresh_keep_the_users_temporary_tables(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _setup(con)
    for t in ("__kanon_assign", "__kanon_new", "__kanon_src", "__kanon_c0", "__kanon_placed"):
        con.execute(f"CREATE TEMP TABLE {t} AS SELECT 42 AS mine")
    kanon.materialize(con, "src", 4, "rel2", QI, keep_undeclared=True)
    con.execute(f"INSERT INTO src SELECT * FROM ({BASE}) ORDER BY rid LIMIT 7")
    report = kanon.refresh(con, "rel2")
    assert report.added == 7
    for t in ("__kanon_assign", "__kanon_new", "__kanon_src", "__kanon_c0", "__kanon_placed"):
        assert _snapshot(con, t) == [(42,)]
    sizes = con.sql(
        "SELECT min(n) FROM (SELECT count(*) AS n FROM rel2 GROUP BY age, zz, d)"
    ).fetchall()
    assert sizes[0][0] >= 4


def test_a_release_materialized_again_replaces_only_its_own_objects(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """forest → optimal → forest under one name: the old helpers go, the user's stay."""
    _setup(con)
    con.execute("CREATE TABLE rel2__kanon_extra AS SELECT 42 AS mine")
    kanon.materialize(con, "src", 4, "rel2", QI, keep_undeclared=True)
    kanon.materialize(con, "src", 4, "rel2", QI, method="optimal", keep_undeclared=True)
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "rel2__kanon_rows" not in tables
    assert "rel2__kanon_groups" not in tables
    assert "rel2__kanon_extra" in tables
    with pytest.raises(kanon.exceptions.InvalidInputError, match="method 'optimal'"):
        kanon.refresh(con, "rel2")
    kanon.materialize(con, "src", 4, "rel2", QI, keep_undeclared=True)
    assert kanon.refresh(con, "rel2").added == 0
    assert _snapshot(con, "rel2__kanon_extra") == [(42,)]


def test_refresh_of_something_that_is_not_a_release(con: duckdb.DuckDBPyConnection) -> None:
    _setup(con)
    con.execute("CREATE TABLE nope__kanon_meta AS SELECT 'not json' AS meta")
    with pytest.raises(ConfigError, match=r"not a release made by kanon\.materialize"):
        kanon.refresh(con, "nope")
    with pytest.raises(ConfigError, match=r"not a release made by kanon\.materialize"):
        kanon.refresh(con, "src")


@pytest.mark.parametrize(
    ("column", "role"),
    [("__kanon_b", "qi"), ("__kanon_c", "qi"), ("__kanon_l0", "pass"), ("__KANON_rl0", "pass")],
)
@pytest.mark.parametrize(
    "method", ["forest", "mondrian", "priority", "iterated", "optimal", "datafly"]
)
def test_the_issues_captured_columns_are_refused(
    con: duckdb.DuckDBPyConnection, column: str, role: str, method: str
) -> None:
    """The reproductions of issue 18: each changed the release silently."""
    con.execute(
        f"CREATE TABLE t AS SELECT i AS rid, i % 7 AS {ident(column)}, (i % 3)::VARCHAR AS zz "
        "FROM range(60) r(i)"
    )
    qi = [column, "zz"] if role == "qi" else ["rid", "zz"]
    with pytest.raises(duckdb.Error, match=r"ConfigError: .*reserved"):
        con.sql(
            f"SELECT * FROM kanon('t', k := 4, qi := {string_list(qi)}, "
            f"method := {literal(method)})"
        ).fetchall()
    with pytest.raises(ConfigError, match="reserved"):
        kanon.anonymize("t", 4, qi, con=con, method=method)
