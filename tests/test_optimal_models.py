"""``kanon(..., method := 'optimal')`` under l-diversity, t-closeness, δ-presence and (α,k).

Releases are checked independently of the kernel: the classes of every level vector
are formed in plain Python from the hierarchy tables (``tests.lattice_oracle``), each
class is judged by a Python implementation of the model's definition (and the release
itself by a plain ``GROUP BY`` and by pycanon), and the optimum is compared with brute
force over the whole lattice, with and without suppression.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pycanon import anonymity

import kanon
from kanon.exceptions import InvalidInputError
from tests.lattice_oracle import Lattice
from tests.test_anonymize import _load
from tests.test_optimal import (
    SETTINGS,
    _assert_release,
    _configure,
    _has_values,
    _release_gcp,
    _wide_tables,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

Model = dict[str, Any]


def _emd(hist: Counter[Any], order: list[Any], q: dict[Any, float], distance: str) -> float:
    n = sum(hist.values())
    p = {v: hist.get(v, 0) / n for v in order}
    if distance == "equal":
        return 0.5 * sum(abs(p[v] - q[v]) for v in order)
    acc, total = 0.0, 0.0
    for v in order:
        acc += p[v] - q[v]
        total += abs(acc)
    return total / (len(order) - 1) if len(order) > 1 else 0.0


def _class_ok(
    model: Model, hist: Counter[Any], size: int, pop: int, order: list[Any], q: dict[Any, float]
) -> bool:
    """The model's definition, straight (no shared code with the kernel)."""
    if "l" in model:
        variant = model.get("l_diversity", "distinct")
        counts = sorted(hist.values(), reverse=True)
        if variant == "distinct" and len(counts) < model["l"]:
            return False
        if variant == "entropy":
            entropy = -sum(c / size * math.log(c / size) for c in counts)
            if entropy < math.log(model["l"]) - 1e-12:
                return False
        if variant == "recursive":
            tail = sum(counts[int(model["l"]) - 1 :])
            if tail == 0 or counts[0] >= model["c"] * tail:
                return False
    if "t" in model and _emd(hist, order, q, model["t_distance"]) > model["t"] + 1e-12:
        return False
    if "alpha" in model and max(hist.values()) > model["alpha"] * size + 1e-9:
        return False
    if "population" in model:
        lo, hi = model.get("delta_min", 0.0), model.get("delta_max", 1.0)
        if pop == 0 or not lo - 1e-12 <= size / pop <= hi + 1e-12:
            return False
    return True


def _brute_force(
    con: duckdb.DuckDBPyConnection,
    hierarchies: dict[str, str],
    k: int,
    limit: int,
    model: Model,
) -> tuple[float, tuple[int, ...]] | None:
    """The smallest GCP of any level vector whose failing classes (below k or violating
    the model) hold at most ``limit`` rows and, kept as one class of '*', satisfy k and
    the model themselves; with its levels."""
    values = [r[0] for r in con.execute("SELECT v FROM t").fetchall()]
    order = sorted({v for v in values if v is not None}) + ([None] if None in values else [])
    q = {v: c / len(values) for v, c in Counter(values).items()}
    lattice = Lattice.load(con, "t", hierarchies, extra=("rid", "v"))
    population = Lattice.load(con, "pop", hierarchies) if "population" in model else None
    best: tuple[float, tuple[int, ...]] | None = None
    for levels in lattice.vectors():
        rows = lattice.generalized(levels)
        classes: dict[tuple[Any, ...], Counter[Any]] = {}
        for _, v, *labels in rows:
            classes.setdefault(tuple(labels), Counter())[v] += 1
        pops: Counter[tuple[Any, ...]] = Counter()
        if population is not None:
            pops = Counter(tuple(r[1:]) for r in population.generalized(levels))
        fails = {
            key
            for key, hist in classes.items()
            if sum(hist.values()) < k
            or not _class_ok(model, hist, sum(hist.values()), pops[key], order, q)
        }
        star: Counter[Any] = Counter()
        for key in fails:
            star += classes[key]
        s = sum(star.values())
        if s > limit or (
            s
            and (
                s < k
                or not _class_ok(
                    model, star, s, len(population.rows) if population else 0, order, q
                )
            )
        ):
            continue
        gcp = lattice.gcp(
            ("*",) * 3 if tuple(labels) in fails else tuple(labels) for _, _, *labels in rows
        )
        if best is None or gcp < best[0] - 1e-12:
            best = (gcp, levels)
    return best


def _sql_args(model: Model) -> str:
    return "".join(
        f", {key} := {value!r}" if not isinstance(value, str) else f", {key} := '{value}'"
        for key, value in model.items()
    )


def _assert_models_hold(
    con: duckdb.DuckDBPyConnection,
    rel: str,
    k: int,
    model: Model,
    hierarchies: dict[str, str],
    levels: Sequence[int],
) -> None:
    """The release's classes (the '*' class included) checked with plain SQL + Python;
    population classes by generalizing the population to the release's ``levels``."""
    values = [r[0] for r in con.execute("SELECT v FROM t").fetchall()]
    order = sorted({v for v in values if v is not None}) + ([None] if None in values else [])
    q = {v: c / len(values) for v, c in Counter(values).items()}
    classes = con.execute(
        f"SELECT q0, q1, q2, list(v), count(*) FROM {rel} GROUP BY ALL"
    ).fetchall()
    pops: Counter[tuple[Any, ...]] = Counter()
    if "population" in model:
        pops = Counter(r[1:] for r in Lattice.load(con, "pop", hierarchies).generalized(levels))
        pops[("*", "*", "*")] = con.execute("SELECT count(*) FROM pop").fetchall()[0][0]
    for q0, q1, q2, vs, size in classes:
        assert size >= k
        key = (q0, q1, q2)
        assert _class_ok(model, Counter(vs), size, pops[key], order, q), (key, vs)


MODELS = st.sampled_from(
    [
        {"l": 2},
        {"l": 3},
        {"l": 1.5, "l_diversity": "entropy"},
        {"l": 2.0, "l_diversity": "entropy"},
        {"l": 2, "l_diversity": "recursive", "c": 2.0},
        {"l": 2, "l_diversity": "recursive", "c": 1.0},
        {"t": 0.2, "t_distance": "equal"},
        {"t": 0.3, "t_distance": "ordered"},
        {"l": 2, "t": 0.4, "t_distance": "equal"},
        {"population": "pop", "delta_max": 0.7},
        {"population": "pop", "delta_min": 0.4, "delta_max": 1.0},
        {"alpha": 0.5},
        {"alpha": 0.7, "l": 2},
    ]
)


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(
    data=_wide_tables(),
    k_seed=st.integers(1, 1000),
    suppression=st.sampled_from([0.0, 0.2, 0.4]),
    model=MODELS,
    extra=st.lists(st.integers(0, 1000), max_size=12),
)
def test_release_satisfies_the_models_and_is_the_brute_force_optimum(
    con: duckdb.DuckDBPyConnection,
    data: dict[str, list[Any]],
    k_seed: int,
    suppression: float,
    model: Model,
    extra: list[int],
) -> None:
    assume(_has_values(data))
    _load(con, "t", data)
    con.execute("ALTER TABLE t ADD COLUMN v BIGINT")
    con.executemany("UPDATE t SET v = ? WHERE rid = ?", [(v, i) for i, v in enumerate(data["v"])])
    hierarchies = _configure(con, "t")
    n = len(data["q0"])
    # The population: every row of the table, plus copies of some of its rows.
    con.execute("CREATE OR REPLACE TABLE pop AS SELECT * FROM t")
    for i in extra:
        con.execute(f"INSERT INTO pop SELECT * FROM t WHERE rid = {i % n}")
    k = 1 + k_seed % min(n, 4)
    limit = int(suppression * n)
    # v is the sensitive column of l and t, and declared sensitive for the others.
    args = {"sensitive": "v", **model}
    sql = (
        f"SELECT * FROM kanon('t', k := {k}, method := 'optimal', "
        f"max_suppression := {suppression}{_sql_args(args)})"
    )
    best = _brute_force(con, hierarchies, k, limit, model)
    if best is None:
        with pytest.raises(duckdb.InvalidInputException, match="no generalization satisfies"):
            con.execute(sql).fetchall()
        return
    con.execute(f"CREATE OR REPLACE TABLE rel AS {sql}")
    assert con.execute("SELECT count(*) FROM rel").fetchall() == [(n,)]
    _assert_release(con, "t", "rel", k, hierarchies)
    gcp = _release_gcp(con, Lattice.load(con, "t", hierarchies), "rel")
    assert gcp == pytest.approx(best[0], abs=1e-12), (gcp, best)
    found = kanon.search("t", k, con=con, max_suppression=suppression, **args)
    assert found.cost == pytest.approx(best[0], abs=1e-12)
    _assert_models_hold(con, "rel", k, model, hierarchies, [found.levels[c] for c in hierarchies])
    if "l" in model and model.get("l_diversity", "distinct") == "distinct":
        # pycanon, an independent implementation, agrees (NULLs as a value of their own).
        frame = con.execute(
            "SELECT q0, q1, q2, coalesce(CAST(v AS VARCHAR), 'NULL') AS v FROM rel"
        ).df()
        frame = frame.fillna("NULL")
        assert anonymity.l_diversity(frame, ["q0", "q1", "q2"], ["v"]) >= model["l"]


def test_sql_and_python_spell_the_models_alike(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT 20 + i % 30 AS age, ['m', 'f'][1 + i % 2] AS sex, "
        "['flu', 'cold', 'hiv', 'ok'][1 + (i * 7 + i // 3) % 4] AS dx, i AS id FROM range(300) r(i)"
    )
    kanon.configure(con, "p", qi=["age", "sex"], sensitive=["dx"], identifiers=["id"])
    sql = con.execute(
        "SELECT levels, suppressed, cost FROM kanon_search('p', k := 5, l := 3, "
        "l_diversity := 'entropy', max_suppression := 0.05)"
    ).fetchall()
    found = kanon.search("p", 5, con=con, l=3, l_diversity="entropy", max_suppression=0.05)
    assert sql == [(found.levels, found.suppressed, pytest.approx(found.cost))]
    # The release holds entropy 3-diversity in every class (the '*' class too).
    classes = con.execute(
        "SELECT list(dx) FROM kanon('p', k := 5, method := 'optimal', l := 3, "
        "l_diversity := 'entropy', max_suppression := 0.05) GROUP BY age, sex"
    ).fetchall()
    for (dx,) in classes:
        counts = Counter(dx).values()
        total = sum(counts)
        assert -sum(c / total * math.log(c / total) for c in counts) >= math.log(3) - 1e-12
    # A stricter model never costs less.
    plain = kanon.search("p", 5, con=con)
    assert found.cost >= plain.cost


def test_hierarchical_t_closeness_uses_the_sensitive_hierarchy(
    con: duckdb.DuckDBPyConnection,
) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT 20 + i % 30 AS age, ['m', 'f'][1 + i % 2] AS sex, "
        "['flu', 'cold', 'hiv', 'cancer'][1 + (i * 7 + i // 5) % 4] AS dx, i AS id "
        "FROM range(200) r(i)"
    )
    con.execute(
        "CREATE TABLE dx_h AS SELECT * FROM (VALUES ('flu', 'respiratory', '*'), "
        "('cold', 'respiratory', '*'), ('hiv', 'severe', '*'), ('cancer', 'severe', '*')) "
        "v(dx, grp, top)"
    )
    kanon.configure(con, "p", qi=["age", "sex"], sensitive=["dx"], identifiers=["id"])
    with pytest.raises(duckdb.Error, match="needs a hierarchy for the sensitive column 'dx'"):
        con.execute(
            "SELECT * FROM kanon_search('p', k := 2, t := 0.1, t_distance := 'hierarchical')"
        ).fetchall()
    con.execute("UPDATE kanon_columns SET hierarchy = 'dx_h' WHERE column_name = 'dx'")
    hier = kanon.search("p", 2, con=con, t=0.1, t_distance="hierarchical")
    equal = kanon.search("p", 2, con=con, t=0.1, t_distance="equal")
    # The hierarchical distance is at most the equal one (leaves in one group are closer).
    assert hier.cost <= equal.cost
    rel = con.execute(
        "SELECT age, sex, list(dx) FROM kanon('p', k := 2, method := 'optimal', t := 0.1, "
        "t_distance := 'hierarchical') GROUP BY ALL"
    ).fetchall()
    group = {"flu": "respiratory", "cold": "respiratory", "hiv": "severe", "cancer": "severe"}
    q = Counter(con.execute("SELECT list(dx) FROM p").fetchall()[0][0])
    n = sum(q.values())
    for _, _, dx in rel:
        p = Counter(dx)
        size = len(dx)
        # Tree EMD (two levels): within-group moves cost 1/2, across groups 1.
        extra = {v: p[v] / size - q[v] / n for v in group}
        cost = 0.0
        for g in ("respiratory", "severe"):
            pos = sum(x for v, x in extra.items() if group[v] == g and x > 0)
            neg = -sum(x for v, x in extra.items() if group[v] == g and x < 0)
            cost += 0.5 * min(pos, neg)
        totals = [
            sum(x for v, x in extra.items() if group[v] == g) for g in ("respiratory", "severe")
        ]
        cost += 1.0 * min(sum(x for x in totals if x > 0), -sum(x for x in totals if x < 0))
        assert cost <= 0.1 + 1e-12


def test_model_errors_name_the_problem(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE p AS SELECT i % 10 AS age, i % 3 AS dx FROM range(50) r(i)")
    cases = [
        ("l := 0", "l must be a positive integer"),
        ("l := 2.5", "l must be a positive integer"),
        ("l := 2, l_diversity := 'fancy'", "l_diversity must be one of"),
        ("l := 2, l_diversity := 'recursive'", "c is needed by"),
        ("t := 1.5", r"t must lie in \[0, 1\]"),
        ("t_distance := 'equal'", "t_distance needs t"),
        ("delta_max := 0.5", "delta_min and delta_max need population"),
        ("population := 'nope'", "nope"),
        ("l := 2", "need a sensitive column"),
        ("l := 2, sensitive := 'age'", "'age' is given two roles in this call: qi and sensitive"),
        ("population := 'p'", "another table"),
    ]
    for args, message in cases:
        with pytest.raises(duckdb.Error, match=message):
            con.execute(
                f"SELECT * FROM kanon('p', k := 2, qi := ['age'], method := 'optimal', {args})"
            ).fetchall()
    with pytest.raises(duckdb.Error, match="not apply to method 'forest'"):
        con.execute("SELECT * FROM kanon('p', k := 2, qi := ['age'], l := 2)").fetchall()
    # A population that misses rows of the table.
    con.execute("CREATE TABLE few AS SELECT * FROM p LIMIT 10")
    with pytest.raises(duckdb.Error, match="no matching row in the population"):
        con.execute(
            "SELECT * FROM kanon('p', k := 2, qi := ['age'], method := 'optimal', "
            "population := 'few')"
        ).fetchall()
    with pytest.raises(
        duckdb.Error, match="no generalization satisfies k = 2, distinct 4-diversity"
    ):
        con.execute(
            "SELECT * FROM kanon('p', k := 2, qi := ['age'], method := 'optimal', "
            "sensitive := 'dx', l := 4)"
        ).fetchall()
    with pytest.raises(InvalidInputError, match="not expressed in it"):
        kanon.materialize(con, "p", 2, "p_view", qi=["age"], method="optimal", sensitive="dx", l=2)
