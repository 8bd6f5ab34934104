"""``kanon(..., method := 'optimal')``: the exact optimum of full-domain generalization.

Releases are checked independently of the planner: a plain ``GROUP BY`` over the
released labels (the class of suppressed rows included), row accounting, truthfulness
against hierarchy tables built separately, one level per column for the whole table,
and optimality against brute force: every level vector of the lattice generalized and
priced in plain Python (``tests.lattice_oracle``), classes below k suppressed; the
oracle's GCP of the release is checked against ``kanon.metrics``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from psycopg import sql as psql
from pycanon import anonymity

import kanon
from kanon.exceptions import InvalidInputError
from tests import pg
from tests.conftest import data_dir
from tests.lattice_oracle import Lattice
from tests.strategies import tables
from tests.test_anonymize import ADULT_QI, _load, _min_class, _untruthful

if TYPE_CHECKING:
    from collections.abc import Sequence

QI = ("q0", "q1", "q2")


def _configure(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """Every QI with a hierarchy table of its own (so brute force can use them).

    Each column needs a value that is not NULL (callers ``assume`` it).
    """
    hierarchies = {}
    for column, build in (("q0", "intervals"), ("q1", "auto"), ("q2", "intervals")):
        name = f"{table}_h_{column}"
        if build == "auto":
            kanon.hierarchy.auto(con, name, table=table, column=column, fanout=2)
        else:
            kanon.hierarchy.intervals(con, name, table=table, column=column)
        hierarchies[column] = name
    kanon.configure(
        con,
        table,
        qi=hierarchies,
        identifiers=["name"],
        sensitive=["s"],
        insensitive=["rid"],
    )
    return hierarchies


def _height(con: duckdb.DuckDBPyConnection, hierarchy: str) -> int:
    return len(con.execute(f'DESCRIBE "{hierarchy}"').fetchall()) - 1


def _brute_force(lattice: Lattice, k: int, max_suppressed: int) -> float | None:
    """The smallest GCP of any feasible level vector (classes below k suppressed, their
    QIs '*'), or None."""
    best = None
    for levels in lattice.vectors():
        rows = [r[1:] for r in lattice.generalized(levels)]
        sizes = Counter(rows)
        suppressed = sum(n for n in sizes.values() if n < k)
        if suppressed > max_suppressed or 0 < suppressed < k:
            continue
        gcp = lattice.gcp(r if sizes[r] >= k else ("*",) * len(r) for r in rows)
        best = gcp if best is None else min(best, gcp)
    return best


def _release_gcp(con: duckdb.DuckDBPyConnection, lattice: Lattice, rel: str) -> float:
    """The release's GCP by the oracle's definition, asserted equal to ``kanon.metrics``'s."""
    gcp = lattice.gcp(con.execute(f"SELECT q0, q1, q2 FROM {rel}").fetchall())
    assert kanon.metrics("t", rel, con=con).gcp == pytest.approx(gcp, abs=1e-12)
    return gcp


def _assert_release(
    con: duckdb.DuckDBPyConnection,
    src: str,
    rel: str,
    k: int,
    hierarchies: dict[str, str],
) -> None:
    assert _min_class(con, rel, list(hierarchies)) >= k  # the '*' class too
    assert con.execute(f"SELECT DISTINCT name FROM {rel}").fetchall() == [("*",)]
    # Every released row is a source row, once, with its sensitive value.
    assert con.execute(
        f"SELECT count(*) FROM {rel} r LEFT JOIN {src} s USING (rid) "
        "WHERE s.rid IS NULL OR s.s IS DISTINCT FROM r.s"
    ).fetchall() == [(0,)]
    assert con.execute(f"SELECT count(*) = count(DISTINCT rid) FROM {rel}").fetchall() == [(True,)]
    for column, hierarchy in hierarchies.items():
        assert _untruthful(con, src, rel, column, hierarchy) == [], column
        # Full-domain: the labels other than '*' all sit at one level of the hierarchy.
        labels = [r[0] for r in con.execute(f'DESCRIBE "{hierarchy}"').fetchall()]
        released = {
            r[0]
            for r in con.execute(
                f'SELECT DISTINCT "{column}" FROM {rel} WHERE "{column}" IS NOT NULL '
                f"AND \"{column}\" <> '*'"
            ).fetchall()
        }
        levels_holding = [
            i
            for i, label in enumerate(labels)
            if released
            <= {
                r[0]
                for r in con.execute(
                    f'SELECT DISTINCT CAST("{label}" AS VARCHAR) FROM "{hierarchy}"'
                ).fetchall()
            }
        ]
        assert not released or levels_holding, (column, released)


SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture],
}


def _has_values(data: dict[str, list[Any]]) -> bool:
    return all(any(v is not None for v in data[c]) for c in QI)


@st.composite
def _wide_tables(draw: st.DrawFn) -> dict[str, list[Any]]:
    """Tables whose numeric columns span enough values for several interval levels."""
    n = draw(st.integers(min_value=1, max_value=25))

    def column(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(st.one_of(st.none(), values, values, values), min_size=n, max_size=n))

    return {
        "q0": column(st.integers(0, 40)),
        "q1": column(st.sampled_from(["a", "b", "Ünï", "日本", "O'B", "x y"])),
        "q2": column(st.sampled_from([0, 0, 0, 1, 2, 5, 9])),
        "s": column(st.sampled_from(["p", "q"])),
        "v": column(st.integers(0, 3)),
    }


@pytest.mark.slow
@settings(max_examples=25, **SETTINGS)
@given(
    data=_wide_tables(),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_optimal_release_is_k_anonymous_and_the_exact_optimum(
    con: duckdb.DuckDBPyConnection, data: dict[str, list[Any]], k_seed: int, suppression: float
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % min(n, 6)
    limit = int(suppression * n)
    before = con.execute("SELECT * FROM t ORDER BY rid").fetchall()
    best = _brute_force(Lattice.load(con, "t", hierarchies), k, limit)
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, method := 'optimal', max_suppression := {suppression})"
    )
    if best is None:
        with pytest.raises(duckdb.InvalidInputException, match="no generalization satisfies"):
            con.execute(sql).fetchall()
        return
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    assert con.execute("SELECT count(*) FROM rel").fetchall() == [(n,)]
    _assert_release(con, "t", "rel", k, hierarchies)
    assert con.execute("SELECT * FROM t ORDER BY rid").fetchall() == before
    gcp = _release_gcp(con, Lattice.load(con, "t", hierarchies), "rel")
    assert gcp == pytest.approx(best, abs=1e-12), (gcp, best)
    # Dropping the suppressed rows: at most the limit, and what is left is k-anonymous.
    con.execute(f"CREATE OR REPLACE TABLE dropped AS {sql[:-1]}, drop_suppressed := true)")
    left = con.execute("SELECT count(*) FROM dropped").fetchall()[0][0]
    assert n - limit <= left <= n
    if left:
        _assert_release(con, "t", "dropped", k, hierarchies)


@settings(max_examples=10, **SETTINGS)
@given(
    data=tables(max_rows=30),
    k_seed=st.integers(1, 1000),
    metric=st.sampled_from(["loss", "height", "nue", "nue_nonmonotonic", "dm", "dm_star", "aecs"]),
    suppression=st.sampled_from([0.0, 0.2]),
    drop=st.booleans(),
)
def test_every_metric_gives_a_k_anonymous_full_domain_release(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    k_seed: int,
    metric: str,
    suppression: float,
    drop: bool,
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, method := 'optimal', metric := '{metric}', "
        f"max_suppression := {suppression}, drop_suppressed := {str(drop).lower()})"
    )
    try:
        con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    except duckdb.InvalidInputException as err:
        if "no generalization satisfies" not in str(err):
            raise
        return
    rows = con.execute("SELECT count(*) FROM rel").fetchall()[0][0]
    assert rows == n or (drop and n - rows <= int(suppression * n))
    if rows:
        _assert_release(con, "t", "rel", k, hierarchies)


def test_level_bounds_and_weights(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS rid, 'person ' || i AS name, 20 + i % 40 AS q0, "
        "chr(CAST(97 + i % 6 AS INTEGER)) AS q1, i % 5 AS q2, 'x' AS s FROM range(120) r(i)"
    )
    hierarchies = _configure(con, "p")
    top = _height(con, hierarchies["q1"])
    sql = (
        "SELECT * FROM kanon('p', k := 6, method := 'optimal', "
        "min_level := MAP {'q0': 1}, max_level := MAP {'q1': 0})"
    )
    con.execute(f"CREATE TABLE r AS {sql}")
    _assert_release(con, "p", "r", 6, hierarchies)
    # q1 stays at its leaves: every value unchanged.
    assert con.execute(
        "SELECT count(*) FROM r JOIN p USING (rid) WHERE r.q1 <> p.q1"
    ).fetchall() == [(0,)]
    assert top >= 1
    with pytest.raises(duckdb.InvalidInputException, match="min_level names column 'nope'"):
        con.execute(
            "SELECT * FROM kanon('p', k := 6, method := 'optimal', min_level := MAP {'nope': 1})"
        ).fetchall()
    with pytest.raises(duckdb.InvalidInputException, match="between 0 and"):
        con.execute(
            "SELECT * FROM kanon('p', k := 6, method := 'optimal', max_level := MAP {'q2': 99})"
        ).fetchall()


def test_errors_name_the_problem(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE p AS SELECT i AS rid, i % 7 AS q0 FROM range(30) r(i)")
    with pytest.raises(InvalidInputError, match="not apply to method 'forest'"):
        kanon.explain(con, "p", 3, ["q0"], max_suppression=0.1)
    with pytest.raises(InvalidInputError, match="metric must be one of"):
        kanon.explain(con, "p", 3, ["q0"], method="optimal", metric="gcp")
    with pytest.raises(InvalidInputError, match=r"max_suppression must be a number in \[0, 1\)"):
        kanon.explain(con, "p", 3, ["q0"], method="optimal", max_suppression=1.5)
    with pytest.raises(duckdb.InvalidInputException, match="method must be one of"):
        con.execute("SELECT * FROM kanon('p', k := 3, qi := ['q0'], method := 'flash')").fetchall()
    # k above what any node reaches without suppression.
    con.execute("CREATE TABLE q AS SELECT i AS rid, i AS q0 FROM range(5) r(i)")
    out = con.execute(
        "SELECT count(DISTINCT q0) FROM kanon('q', k := 5, qi := ['q0'], method := 'optimal', "
        "insensitive := ['rid'])"
    ).fetchall()
    assert out == [(1,)]


def test_tuples_packed_beyond_64_bits(con: duckdb.DuckDBPyConnection) -> None:
    # Six columns of 8191 values take 13 bits each: the codes of the last ones lie in
    # the high word of the packed tuples the histogram sends. Each column identifies
    # the value v (8191 is prime); every v occurs 3 times but three, once each, which
    # the optimum (nothing generalized) suppresses (their '*' class holds 3 rows). A
    # wrongly packed or unpacked tuple would suppress other rows, or leave one alone.
    qi = [f"q{j}" for j in range(6)]
    cols = ", ".join(f"'v' || ((v * {j + 1}) % 8191) AS q{j}" for j in range(6))
    con.execute(
        f"CREATE TABLE w AS SELECT i AS rid, {cols} "
        "FROM (SELECT i, CASE WHEN i < 24564 THEN i % 8188 ELSE i - 16376 END AS v "
        "FROM range(24567) r(i))"
    )
    con.execute(
        "CREATE TABLE w_out AS SELECT * FROM kanon('w', k := 3, "
        "qi := ['q0', 'q1', 'q2', 'q3', 'q4', 'q5'], method := 'optimal', "
        "max_suppression := 0.0002, insensitive := ['rid'])"
    )
    assert _min_class(con, "w_out", qi) >= 3
    starred = con.execute(
        "SELECT rid FROM w_out WHERE " + " AND ".join(f"{c} = '*'" for c in qi)
    ).fetchall()
    assert sorted(starred) == [(24564,), (24565,), (24566,)]
    kept = " AND ".join(f"w.{c} = w_out.{c}" for c in qi)
    assert con.execute(
        f"SELECT count(*) FROM w JOIN w_out USING (rid) WHERE {kept}"
    ).fetchall() == [(24564,)]
    # Nine columns of 16385 values need 135 bits: more than the kernel packs.
    cols = ", ".join(f"'v' || (i + {j}) AS q{j}" for j in range(9))
    con.execute(f"CREATE TABLE z AS SELECT i AS rid, {cols} FROM range(16385) r(i)")
    names = ", ".join(f"'q{j}'" for j in range(9))
    with pytest.raises(duckdb.Error, match="too many distinct values to pack a tuple into 128"):
        con.execute(
            f"SELECT * FROM kanon('z', k := 2, qi := [{names}], method := 'optimal', "
            "insensitive := ['rid'])"
        ).fetchall()


def test_adult_optimal_with_arx_hierarchies(con: duckdb.DuckDBPyConnection) -> None:
    folder = data_dir() / "adult"
    con.execute(
        "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
        [str(folder / "adult.csv")],
    )
    qi = [c for c in ADULT_QI if c != "occupation"]  # ARX's benchmark: 8 QIs
    for c in qi:
        kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
    kanon.configure(con, "adult", qi={c: f"h_{c}" for c in qi}, insensitive=["occupation"])
    for suppression in (0.0, 0.05):
        released = con.sql(
            f"SELECT * FROM kanon('adult', k := 5, method := 'optimal', "
            f"max_suppression := {suppression})"
        ).df()
        assert len(released) == 30162
        assert anonymity.k_anonymity(released, qi) >= 5
        stars = (released[qi] == "*").all(axis=1).sum()
        assert stars <= int(suppression * 30162)


# --- Portable releases: materialize(method='optimal') and to_sql -------------------------

postgres = pg.postgres  # the session fixture: a throwaway PostgreSQL server

PG_TYPES = {"BIGINT": "bigint", "INTEGER": "integer", "VARCHAR": "text", "DOUBLE": "float8"}


def _copy_to_postgres(con: duckdb.DuckDBPyConnection, conn: Any, names: list[str]) -> None:
    """Create ``names`` in PostgreSQL with the same columns and rows as in DuckDB."""
    for name in names:
        columns = con.execute(f'DESCRIBE "{name}"').fetchall()
        spec = psql.SQL(", ").join(
            psql.SQL("{} {}").format(psql.Identifier(c[0]), psql.SQL(PG_TYPES[c[1]]))
            for c in columns
        )
        conn.execute(psql.SQL("CREATE TABLE {} ({})").format(psql.Identifier(name), spec))
        rows = con.execute(f'SELECT * FROM "{name}"').fetchall()
        if rows:
            insert = psql.SQL("INSERT INTO {} VALUES ({})").format(
                psql.Identifier(name), psql.SQL(", ").join(psql.Placeholder() * len(columns))
            )
            with conn.cursor() as cur:
                cur.executemany(insert, rows)


def _normalized(rows: Sequence[Sequence[Any]]) -> list[tuple[str | None, ...]]:
    out = [tuple(None if v is None else str(v) for v in row) for row in rows]
    return sorted(out, key=lambda row: [(v is None, v or "") for v in row])


@pytest.mark.slow
@settings(max_examples=15, **SETTINGS)
@given(
    data=tables(max_rows=30),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.2]),
    drop=st.booleans(),
)
def test_materialized_optimal_view_is_the_release_and_runs_in_postgres(
    con: duckdb.DuckDBPyConnection,
    postgres: pg.Postgres,
    data: dict[str, list[Any]],
    k_seed: int,
    suppression: float,
    drop: bool,
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    k = 1 + k_seed % n
    args = f"k := {k}, method := 'optimal', max_suppression := {suppression}"
    args += f", drop_suppressed := {str(drop).lower()}"
    try:
        release = con.execute(f"SELECT * FROM kanon('t', {args})").fetchall()
    except duckdb.InvalidInputException as err:
        if "no generalization satisfies" not in str(err):
            raise
        return
    kanon.materialize(
        con, "t", k, "t_k", method="optimal", max_suppression=suppression, drop_suppressed=drop
    )
    view = con.execute("SELECT * FROM t_k").fetchall()
    assert _normalized(view) == _normalized(release)
    # The same view, transpiled, on PostgreSQL over the same tables.
    lookups = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 't_k__kanon_h%'"
        ).fetchall()
    ]
    with postgres.connect() as conn, conn.transaction(force_rollback=True):
        _copy_to_postgres(con, conn, ["t", *lookups])
        conn.execute(kanon.to_sql(con, "t_k", "postgres"))
        rows = conn.execute('SELECT * FROM "t_k"').fetchall()
    assert _normalized(rows) == _normalized(view)
    # Rows added later, with values the lookups never saw: still k-anonymous.
    con.execute("INSERT INTO t SELECT 1000 + i, 'late', 99, 'nouveau', 77, 's' FROM range(2) r(i)")
    if con.execute("SELECT count(*) FROM t_k").fetchall()[0][0]:
        assert _min_class(con, "t_k", list(hierarchies)) >= k


def test_search_reports_the_transformation_of_the_release(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS rid, 'person ' || i AS name, 20 + (i * 7) % 45 AS q0, "
        "chr(CAST(97 + i % 9 AS INTEGER)) AS q1, i % 4 AS q2, 'x' AS s FROM range(150) r(i)"
    )
    _configure(con, "p")
    found = kanon.search("p", 8, con=con, max_suppression=0.1)
    assert set(found.levels) == set(QI)
    assert found.metric == "loss"
    assert 1 <= found.checked <= found.nodes
    con.execute(
        "CREATE TABLE r AS SELECT * FROM kanon('p', k := 8, method := 'optimal', "
        "max_suppression := 0.1)"
    )
    assert kanon.metrics("p", "r", con=con).gcp == pytest.approx(found.cost, abs=1e-12)
    stars = " AND ".join(f"{c} = '*'" for c in QI)
    if any(found.levels[c] < _height(con, f"p_h_{c}") for c in QI):
        assert con.execute(f"SELECT count(*) FROM r WHERE {stars}").fetchall() == [
            (found.suppressed,)
        ]
    row = con.execute(
        "SELECT levels, suppressed, cost, metric FROM kanon_search('p', k := 8, "
        "max_suppression := 0.1)"
    ).fetchall()[0]
    assert (dict(row[0]), row[1], row[3]) == (found.levels, found.suppressed, "loss")
    assert row[2] == pytest.approx(found.cost)
