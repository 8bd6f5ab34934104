"""``kanon_verify`` / ``kanon.verify`` / ``kanon verify``: a policy's verdict on a release.

Every rule is checked against an oracle in plain Python over the release's rows as
fetched (classes by grouping the released QI values, NULL a value of its own, the EMD by
its definition), on generated tables and hand-made releases (NULLs, duplicates, unicode,
rows suppressed and left out, identifying columns kept) and on releases kanon made.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon
from kanon.cli import main as cli
from kanon.exceptions import ConfigError, InvalidInputError, PolicyError
from kanon.plan.policy import RULES, rules_table
from tests.strategies import tables
from tests.test_anonymize import _load

QI = ["q0", "q1", "q2"]
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture],
}


def _emd(values: list[Any], table: Counter[Any], ordered: bool) -> float:
    """The EMD of a class's values to the table's distribution, by its definition."""
    domain = sorted(v for v in table if v is not None) + ([None] if None in table else [])
    n, total = len(values), sum(table.values())
    mine = Counter(values)
    p = [mine[v] / n for v in domain]
    q = [table[v] / total for v in domain]
    if not ordered:
        return 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))
    if len(domain) < 2:
        return 0.0
    acc, out = 0.0, 0.0
    for a, b in zip(p[:-1], q[:-1], strict=True):
        acc += a - b
        out += abs(acc)
    return out / (len(domain) - 1)


def _oracle(
    con: duckdb.DuckDBPyConnection,
    source_rows: int,
    release: str,
    thresholds: dict[str, float],
    sensitive: list[str],
    accepted: set[str],
    qi: list[str] = QI,
) -> dict[str, tuple[Any, ...]]:
    """Per rule: (value, passed, rows, classes, columns), from the release's rows."""
    names = [r[0] for r in con.execute(f'DESCRIBE "{release}"').fetchall()]
    rows = [
        dict(zip(names, r, strict=True))
        for r in con.execute(f'SELECT * FROM "{release}"').fetchall()
    ]
    classes: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        classes.setdefault(tuple(r[q] for q in qi), []).append(r)
    out: dict[str, tuple[Any, ...]] = {}
    if "k" in thresholds:
        k = thresholds["k"]
        small = [c for c in classes.values() if len(c) < k]
        out["k"] = (
            min((len(c) for c in classes.values()), default=None),
            not small,
            sum(map(len, small)),
            len(small),
            qi if small else [],
        )
    if "l" in thresholds:
        lv = thresholds["l"]
        distinct = {key: [len({r[s] for r in c}) for s in sensitive] for key, c in classes.items()}
        low = [key for key, d in distinct.items() if min(d) < lv]
        cols = [s for i, s in enumerate(sensitive) if any(d[i] < lv for d in distinct.values())]
        out["l"] = (
            min((min(d) for d in distinct.values()), default=None),
            not low,
            sum(len(classes[key]) for key in low),
            len(low),
            cols,
        )
    if "t" in thresholds:
        tv = thresholds["t"]
        types = dict(
            con.execute(f'SELECT column_name, column_type FROM (DESCRIBE "{release}")').fetchall()
        )
        emds = {}
        for key, c in classes.items():
            emds[key] = [
                _emd(
                    [r[s] for r in c],
                    Counter(r[s] for r in rows),
                    types[s] in ("BIGINT", "INTEGER", "DOUBLE"),
                )
                for s in sensitive
            ]
        far = [key for key, e in emds.items() if max(e) > tv + 1e-12]
        cols = [s for i, s in enumerate(sensitive) if any(e[i] > tv + 1e-12 for e in emds.values())]
        out["t"] = (
            max((max(e) for e in emds.values()), default=None),
            not far,
            sum(len(classes[key]) for key in far),
            len(far),
            cols,
        )
    if "identifying_columns" in thresholds:
        k = int(thresholds.get("k", 2))
        tv = thresholds["identifying_columns"]
        shares, singled = {}, set()
        offending = []
        for col in names:
            if col in qi or col in accepted:
                continue
            held = Counter(r[col] for r in rows if r[col] is not None)
            if all(str(v) == "*" for v in held):
                continue
            rare = [i for i, r in enumerate(rows) if r[col] is not None and held[r[col]] < k]
            shares[col] = len(rare) / len(rows) if rows else 0.0
            if shares[col] > tv:
                offending.append(col)
                singled |= set(rare)
        out["identifying_columns"] = (
            max(shares.values(), default=0.0),
            not offending,
            len(singled),
            len({tuple(rows[i][q] for q in qi) for i in singled}),
            offending,
        )
    starred = sum(all(r[q] == "*" for q in qi) for r in rows)
    missing = max(source_rows - len(rows), 0)
    if "suppressed" in thresholds:
        share = starred / len(rows) if rows else 0.0
        out["suppressed"] = (
            share,
            share <= thresholds["suppressed"],
            starred,
            int(starred > 0),
            [],
        )
    share = missing / source_rows if source_rows else 0.0
    out["rows"] = (share, share <= thresholds.get("rows", 0.0), missing, None, [])
    return out


def _agrees(verdict: kanon.Verdict, expected: dict[str, tuple[Any, ...]]) -> None:
    assert [r.rule for r in verdict.rules] == [r for r in RULES if r in expected]
    for r in verdict.rules:
        value, passed, rows, classes, columns = expected[r.rule]
        got = (r.value, r.passed, r.rows, r.classes, r.columns)
        if value is None:
            assert r.value is None, (r.rule, got, expected[r.rule])
        else:
            assert r.value == pytest.approx(value, abs=1e-9), (r.rule, got, expected[r.rule])
        assert (r.passed, r.rows, r.classes, r.columns) == (passed, rows, classes, columns), (
            r.rule,
            got,
            expected[r.rule],
        )
    assert verdict.passed == all(e[1] for e in expected.values())


@st.composite
def _releases(draw: st.DrawFn) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """A source and a hand-made release of it: QIs kept, coarsened or '*', rows left out."""
    data = draw(tables(max_rows=30))
    n = len(data["q0"])
    fate = draw(
        st.lists(
            st.sampled_from(["keep", "keep", "coarse", "star", "drop"]), min_size=n, max_size=n
        )
    )
    keep_name, keep_rid = draw(st.booleans()), draw(st.booleans())
    release: dict[str, list[Any]] = {c: [] for c in ("rid", "name", *QI, "s", "v")}
    for i in range(n):
        if fate[i] == "drop":
            continue
        release["rid"].append(i if keep_rid else None)
        release["name"].append(f"person {i}" if keep_name else "*")
        for q in QI:
            value = data[q][i]
            if fate[i] == "star":
                label = "*"
            elif fate[i] == "coarse" and value is not None:
                label = "even" if hash(str(value)) % 2 == 0 else "odd"
            else:
                label = None if value is None else str(value)
            release[q].append(label)
        release["s"].append(data["s"][i])
        release["v"].append(data["v"][i])
    return data, release


def _load_release(con: duckdb.DuckDBPyConnection, name: str, release: dict[str, list[Any]]) -> None:
    table = pa.table(
        {
            "rid": pa.array(release["rid"], pa.int64()),
            "name": pa.array(release["name"], pa.string()),
            **{q: pa.array(release[q], pa.string()) for q in QI},
            "s": pa.array(release["s"], pa.string()),
            "v": pa.array(release["v"], pa.int64()),
        }
    )
    con.register("__arrow_release", table)
    con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM __arrow_release')
    con.unregister("__arrow_release")


POLICIES = st.fixed_dictionaries(
    {},
    optional={
        "k": st.integers(1, 6),
        "l": st.sampled_from([1, 2, 3, 1.5]),
        "t": st.sampled_from([0.0, 0.2, 0.5, 1.0]),
        "identifying_columns": st.sampled_from([0.0, 0.1, 0.5, 1.0]),
        "suppressed": st.sampled_from([0.0, 0.1, 0.3]),
        "rows": st.sampled_from([0.0, 0.2]),
    },
)


@settings(max_examples=60, **SETTINGS)
@given(pair=_releases(), rules=POLICIES, sensitive=st.sampled_from([["s"], ["v"], ["s", "v"]]))
def test_every_rule_agrees_with_the_oracle_on_hand_made_releases(
    con: duckdb.DuckDBPyConnection,
    pair: tuple[dict[str, list[Any]], dict[str, list[Any]]],
    rules: dict[str, float],
    sensitive: list[str],
) -> None:
    data, release = pair
    _load(con, "t", data)
    con.execute("ALTER TABLE t ADD COLUMN v BIGINT")
    con.executemany("UPDATE t SET v = ? WHERE rid = ?", [(v, i) for i, v in enumerate(data["v"])])
    _load_release(con, "r", release)
    verdict = kanon.verify("t", "r", rules, qi=QI, con=con, sensitive=sensitive)
    n = len(data["q0"])
    _agrees(verdict, _oracle(con, n, "r", {"rows": 0.0, **rules}, sensitive, set()))
    # SQL gives the same rows.
    literal = (
        "{" + ", ".join(f"'{k}': {v!r}" for k, v in rules.items()) + "}"
        if rules
        else "{'rows': 0.0}"
    )
    listed = ", ".join(f"'{s}'" for s in sensitive)
    sql = con.execute(
        f"SELECT * FROM kanon_verify('t', 'r', qi := {QI!r}, policy := {literal}, "
        f"sensitive := [{listed}])"
    ).fetchall()
    assert [tuple(row[:4]) for row in sql] == [
        (r.rule, r.threshold, r.value, r.passed) for r in verdict.rules
    ]


def _defects(con: duckdb.DuckDBPyConnection) -> None:
    """A source of 100 rows and releases with known defects (and a clean one).

    ``clean``: 20 classes of 5 rows, 3 diagnoses each, income in 10-row bands.
    ``small``: 10 rows in 4 classes below k = 5. ``homogeneous``: 4 classes of 5 rows
    with one diagnosis. ``income``: 7 rows with an income no other row has, 4 in pairs
    (11 rows below k = 5, but only 7 below the k of 2 a policy without k uses).
    ``suppressed``: 10 rows with every QI '*'. ``dropped``: 10 rows left out.
    """
    con.execute(
        "CREATE TABLE src AS SELECT i AS id, 20 + i // 5 AS age, ['m', 'f'][1 + i % 2] AS sex, "
        "['flu', 'cold', 'ok'][1 + i % 3] AS dx, 1000 * (i // 10) AS income "
        "FROM range(100) r(i)"
    )
    clean = "SELECT '*' AS id, CAST(age AS VARCHAR) AS age, '*' AS sex, dx, income FROM src"
    con.execute(f"CREATE TABLE clean AS {clean}")
    # Rows 0..5 in classes of 2 ('a0', 'a1', 'a2'); the rest of their class (rows 6..9)
    # keep class 'x', which so holds 4 rows too: 10 rows in 4 classes below k.
    con.execute(
        "CREATE TABLE small AS SELECT '*' AS id, CASE WHEN id < 6 THEN 'a' || (id // 2) "
        "WHEN id < 10 THEN 'x' ELSE CAST(age AS VARCHAR) END AS age, '*' AS sex, dx, income "
        "FROM src"
    )
    con.execute(
        "CREATE TABLE homogeneous AS SELECT '*' AS id, CAST(age AS VARCHAR) AS age, '*' AS sex, "
        "CASE WHEN id < 20 THEN 'flu' ELSE dx END AS dx, income FROM src"
    )
    con.execute(
        "CREATE TABLE income AS SELECT '*' AS id, CAST(age AS VARCHAR) AS age, '*' AS sex, dx, "
        "CASE WHEN id < 7 THEN 50000 + id WHEN id < 11 THEN 60000 + id // 9 ELSE income END "
        "AS income FROM src"
    )
    con.execute(
        "CREATE TABLE suppressed AS SELECT '*' AS id, CASE WHEN id < 10 THEN '*' ELSE "
        "CAST(age AS VARCHAR) END AS age, '*' AS sex, dx, income FROM src"
    )
    con.execute(f"CREATE TABLE dropped AS {clean} WHERE id >= 10")
    kanon.configure(
        con, "src", qi=["age", "sex"], sensitive=["dx"], identifiers=["id"], insensitive=["income"]
    )


POLICY = {"k": 5, "l": 2, "identifying_columns": 0, "suppressed": 0.05}


def test_each_rule_catches_its_defect_with_exact_counts(con: duckdb.DuckDBPyConnection) -> None:
    _defects(con)
    clean = kanon.verify("src", "clean", POLICY, con=con)
    assert clean.passed, str(clean)
    assert [r.rule for r in clean.rules] == ["k", "l", "identifying_columns", "suppressed", "rows"]
    failed = {
        name: [
            (r.rule, r.rows, r.classes, r.columns)
            for r in kanon.verify("src", name, POLICY, con=con).failed
        ]
        for name in ("small", "homogeneous", "income", "suppressed", "dropped")
    }
    assert failed == {
        "small": [("k", 10, 4, ["age", "sex"])],
        "homogeneous": [("l", 20, 4, ["dx"])],
        "income": [("identifying_columns", 11, 3, ["income"])],
        "suppressed": [("suppressed", 10, 1, [])],
        "dropped": [("rows", 10, None, [])],
    }
    homogeneous = kanon.verify("src", "homogeneous", POLICY, con=con)["l"]
    assert homogeneous.value == 1
    assert homogeneous.detail == "20 rows in 4 classes hold fewer than 2 distinct values of dx"
    income = kanon.verify("src", "income", POLICY, con=con)["identifying_columns"]
    assert income.value == pytest.approx(0.11)
    # Accepting the column with a reason passes the rule and keeps the reason.
    accepted = {**POLICY, "accept": {"income": "the study needs it"}}
    verdict = kanon.verify("src", "income", accepted, con=con)
    assert verdict.passed
    assert "the study needs it" in verdict["identifying_columns"].detail
    assert verdict.to_dict()["accepted"] == {"income": "the study needs it"}
    # The identifying rule counts with the policy's k: a value held by exactly k rows is
    # not rare, one held by fewer is.
    assert kanon.verify("src", "clean", {"k": 10, "identifying_columns": 0}, con=con)[
        "identifying_columns"
    ].passed
    assert (
        kanon.verify("src", "clean", {"k": 11, "identifying_columns": 0}, con=con)[
            "identifying_columns"
        ].rows
        == 100
    )
    # A policy that allows the dropped rows passes them.
    assert kanon.verify("src", "dropped", {**POLICY, "rows": 0.1}, con=con).passed


def test_stored_policies_are_rows_of_kanon_policies(con: duckdb.DuckDBPyConnection) -> None:
    _defects(con)
    stored = kanon.policy(con, "study", k=5, l=2, accept={"income": "the study needs it"})
    assert stored.thresholds == {"k": 5, "l": 2.0, "rows": 0.0}
    assert con.execute(
        "SELECT rule, threshold, column_name, reason FROM kanon_policies WHERE policy = 'study' "
        "ORDER BY rowid"
    ).fetchall() == [
        ("k", 5.0, None, None),
        ("l", 2.0, None, None),
        ("rows", 0.0, None, None),
        ("accept", None, "income", "the study needs it"),
    ]
    sql = "SELECT rule, passed, rows FROM kanon_verify('src', 'homogeneous', policy := 'study')"
    assert con.execute(sql).fetchall() == [("k", True, 0), ("l", False, 20), ("rows", True, 0)]
    # Edited with SQL, read as edited; written again, replaced whole.
    con.execute("UPDATE kanon_policies SET threshold = 1 WHERE policy = 'study' AND rule = 'l'")
    assert kanon.verify("src", "homogeneous", "study", con=con).passed
    kanon.policy(con, "study", k=6)
    assert con.execute(
        "SELECT rule FROM kanon_policies WHERE policy = 'study' ORDER BY rowid"
    ).fetchall() == [("k",), ("rows",)]
    # The verdict of an inline struct equals that of the stored policy.
    inline = con.execute(
        "SELECT * FROM kanon_verify('src', 'small', policy := {'k': 6})"
    ).fetchall()
    assert (
        inline
        == con.execute("SELECT * FROM kanon_verify('src', 'small', policy := 'study')").fetchall()
    )


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"k": 5, "z": 1}, "unknown rule 'z'; the rules are k, l, t, identifying_columns"),
        ({"k": 0}, "rule 'k' (the smallest class"),
        ({"k": 2.5}, "needs a whole number >= 1, got 2.5"),
        ({"k": True}, "needs a whole number >= 1, got True"),
        ({"k": "5"}, "needs a whole number >= 1, got '5'"),
        ({"l": 0.5}, "rule 'l'"),
        ({"t": 1.5}, "needs a number in [0, 1], got 1.5"),
        ({"loss": float("nan")}, "rule 'loss'"),
        ({"suppressed": -0.1}, "rule 'suppressed'"),
        ({"accept": ["income"]}, "'accept' must map each column released unchanged"),
        ({"accept": {"income": " "}}, "'accept' must map each column"),
        ("nope", "there is no policy 'nope' in kanon_policies"),
        (5, "policy must be the name of a stored policy or its rules"),
        (None, "policy must be the name of a stored policy or its rules"),
    ],
)
def test_bad_policies_are_named(con: duckdb.DuckDBPyConnection, policy: Any, message: str) -> None:
    _defects(con)
    with pytest.raises((InvalidInputError, ConfigError), match=_escaped(message)):
        kanon.verify("src", "clean", policy, con=con)


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


def test_bad_calls_are_named_in_sql(con: duckdb.DuckDBPyConnection) -> None:
    _defects(con)
    con.execute("INSERT INTO kanon_policies VALUES ('twice', 'k', 5, NULL, NULL)")
    con.execute("INSERT INTO kanon_policies VALUES ('twice', 'k', 6, NULL, NULL)")
    con.execute("INSERT INTO kanon_policies VALUES ('typo', 'kk', 5, NULL, NULL)")
    con.execute("INSERT INTO kanon_policies VALUES ('empty', 'k', NULL, NULL, NULL)")
    con.execute("CREATE TABLE bare AS SELECT age FROM clean")
    cases = {
        "kanon_verify('src', 'clean', policy := 'twice')": "gives rule 'k' twice",
        "kanon_verify('src', 'clean', policy := 'typo')": "policy 'typo': unknown rule 'kk'",
        "kanon_verify('src', 'clean', policy := 'empty')": "gives rule 'k' no threshold",
        "kanon_verify('src', 'clean')": "policy must be the name of a stored policy",
        "kanon_verify('src', 'clean', policy := 7)": "policy must be a stored policy's name",
        "kanon_verify('src', 'clean', policy := {'k': 'x'})": "needs a whole number",
        "kanon_verify('src', 'nowhere', policy := {'k': 2})": "nowhere",
        "kanon_verify('src', 'src', policy := {'k': 2})": "is the source table",
        "kanon_verify('src', 'bare', policy := {'k': 2})": "has no column 'sex' (a quasi",
        "kanon_verify('src', 'clean', qi := ['age'], sensitive := 'nope', "
        "policy := {'l': 2})": "nope",
        "kanon_verify('src', 'clean', qi := ['age'], sensitive := 'age', "
        "policy := {'l': 2})": "both a quasi-identifier and sensitive",
    }
    for call, message in cases.items():
        with pytest.raises(duckdb.InvalidInputException, match=_escaped(message)):
            con.execute(f"SELECT * FROM {call}").fetchall()
    kanon.configure(con, "src", qi=["age", "sex"], identifiers=["id"], insensitive=["income", "dx"])
    with pytest.raises(duckdb.InvalidInputException, match="needs a sensitive column"):
        con.execute("SELECT * FROM kanon_verify('src', 'clean', policy := {'l': 2})").fetchall()


def test_a_user_table_named_kanon_policies_is_refused(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "user.duckdb"))
    con.execute("CREATE TABLE kanon_policies (name VARCHAR, body VARCHAR)")
    with pytest.raises(ConfigError, match="not kanon's policy table"):
        kanon.install(con)
    assert con.execute("SELECT count(*) FROM kanon_policies").fetchall() == [(0,)]


@pytest.mark.parametrize(
    "method",
    [
        "forest",
        "forest_paper",
        "mondrian",
        "priority",
        "iterated",
        "optimal",
        "datafly",
        "mu_argus",
    ],
)
def test_releases_kanon_makes_pass_their_own_policy(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    con.execute(
        "CREATE TABLE p AS SELECT i AS id, 20 + (i * 7) % 45 AS age, ['m', 'f'][1 + i % 2] AS "
        "sex, (i * 13) % 90 AS zip, ['flu', 'cold', 'hiv', 'ok'][1 + (i * 5 + i // 7) % 4] AS dx "
        "FROM range(400) r(i)"
    )
    kanon.configure(con, "p", qi=["age", "sex", "zip"], sensitive=["dx"], identifiers=["id"])
    extra = ", max_suppression := 0.05" if method in ("optimal", "datafly") else ""
    con.execute(f"CREATE TABLE r AS SELECT * FROM kanon('p', k := 5, method := '{method}'{extra})")
    # The methods given a suppression limit keep it; mu_argus' finishing suppression has none.
    policy = {"k": 5, "identifying_columns": 0, **({"suppressed": 0.05} if extra else {})}
    verdict = kanon.verify("p", "r", policy, con=con)
    assert verdict.passed, str(verdict)
    # The oracle agrees on the release.
    expected = _oracle(con, 400, "r", {"k": 5, "rows": 0.0}, ["dx"], set(), ["age", "sex", "zip"])
    _agrees(kanon.verify("p", "r", {"k": 5}, con=con, qi=["age", "sex", "zip"]), expected)


def test_the_command_line_exits_0_on_pass_1_on_fail_2_on_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    con = kanon.install(duckdb.connect(str(tmp_path / "p.duckdb")))
    _defects(con)
    kanon.policy(con, "strict", k=5, l=2)
    for name in ("src", "clean", "homogeneous"):
        con.execute(f"COPY {name} TO '{tmp_path / name}.csv'")
    con.close()
    (tmp_path / "ok.json").write_text(json.dumps({"k": 5}))
    (tmp_path / "bad.json").write_text(json.dumps({"k": 5, "kk": 1}))
    src, clean, hom = (str(tmp_path / f"{n}.csv") for n in ("src", "clean", "homogeneous"))
    common = ["--qi", "age,sex", "--sensitive", "dx"]
    assert cli(["verify", src, clean, "--policy", str(tmp_path / "ok.json"), *common]) == 0
    assert "PASS: policy 'ok'" in capsys.readouterr().out
    db = ["--db", str(tmp_path / "p.duckdb")]
    assert cli(["verify", src, hom, "--policy", "strict", *db, *common]) == 1
    out = capsys.readouterr().out
    assert "FAIL: policy 'strict'" in out
    assert "20 rows in 4 classes hold fewer than 2 distinct values of dx" in out
    assert cli(["verify", src, hom, "--policy", "strict", *db, *common, "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["passed"] is False
    assert [r["rule"] for r in verdict["rules"] if not r["passed"]] == ["l"]
    assert cli(["verify", src, clean, "--policy", str(tmp_path / "bad.json"), *common]) == 2
    assert "unknown rule 'kk'" in capsys.readouterr().err
    assert cli(["verify", src, clean, "--policy", "strict", *common]) == 2
    assert "needs --db" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        cli(["verify", src, "--policy", "strict"])
    assert usage.value.code == 2


def _catalog(con: duckdb.DuckDBPyConnection) -> list[Any]:
    """Every object and every row of kanon's tables: what a refused publication keeps."""
    objects = con.execute(
        "SELECT 'table', schema_name, table_name, temporary FROM duckdb_tables() UNION ALL "
        "SELECT 'view', schema_name, view_name, temporary FROM duckdb_views() WHERE NOT internal "
        "ORDER BY ALL"
    ).fetchall()
    config = con.execute("SELECT * FROM kanon_columns ORDER BY ALL").fetchall()
    policies = con.execute("SELECT * FROM kanon_policies ORDER BY ALL").fetchall()
    return [objects, config, policies]


@pytest.mark.parametrize("method", ["forest", "mondrian", "optimal"])
def test_materialize_publishes_only_what_passes_its_policy(
    con: duckdb.DuckDBPyConnection, method: str
) -> None:
    _defects(con)
    # Every release at k = 5 has a class below 11 (20 ages of 5 rows, two sexes).
    kanon.policy(con, "strict", k=11)
    # A release of that name exists: a refused one must not touch it either.
    kanon.materialize(con, "src", 5, "rel", method=method, policy={"k": 5})
    before, view = _catalog(con), con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    with pytest.raises(
        PolicyError,
        match=r"fails policy 'strict', so nothing was changed: k >= 11 failed: \d+ rows in "
        r"\d+ classes hold fewer than 11 rows",
    ) as err:
        kanon.materialize(con, "src", 5, "rel", method=method, policy="strict")
    assert not err.value.verdict.passed
    assert _catalog(con) == before
    assert con.execute("SELECT * FROM rel ORDER BY ALL").fetchall() == view
    with pytest.raises(PolicyError):
        kanon.materialize(con, "src", 5, "other", method=method, policy="strict")
    assert _catalog(con) == before
    # Forced with a reason: published, the verdict and the reason kept in the meta table.
    kanon.materialize(
        con, "src", 5, "forced", method=method, policy="strict", force="approved by the DPO"
    )
    (meta,) = con.execute("SELECT meta FROM forced__kanon_meta").fetchall()[0]
    stored = json.loads(meta)
    assert stored["forced"] == "approved by the DPO"
    assert stored["verdict"]["passed"] is False
    assert stored["policy"]["name"] == "strict"
    # Accepted with a reason: passes, no force recorded.
    accepted = {"k": 5, "identifying_columns": 0, "accept": {"income": "banded already"}}
    kanon.materialize(con, "src", 5, "fine", method=method, policy=accepted)
    stored = json.loads(con.execute("SELECT meta FROM fine__kanon_meta").fetchall()[0][0])
    assert stored["verdict"]["passed"] is True
    assert stored["forced"] is None
    assert stored["policy"]["accepted"] == {"income": "banded already"}


def test_force_needs_a_reason_and_a_policy(con: duckdb.DuckDBPyConnection) -> None:
    _defects(con)
    before = _catalog(con)
    for force, policy, message in (
        ("", {"k": 5}, "force must be the reason"),
        (True, {"k": 5}, "force must be the reason"),
        ("why", None, "give policy= too"),
        (None, {"k": "5"}, "needs a whole number"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            kanon.materialize(con, "src", 5, "rel", policy=policy, force=force)
    assert _catalog(con) == before


def test_refresh_verifies_again_and_changes_nothing_on_fail(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _defects(con)
    policy = {"k": 5, "identifying_columns": 0, "accept": {"income": "banded already"}}
    kanon.materialize(con, "src", 5, "rel", policy=policy)
    con.execute("INSERT INTO src SELECT 100 + i, 20 + i, 'm', 'flu', 0 FROM range(10) r(i)")
    assert kanon.refresh(con, "rel").added == 10
    # A diagnosis no other row has: dx would single out its row.
    con.execute("INSERT INTO src VALUES (200, 30, 'f', 'a rare disease', 0)")
    before, view = _catalog(con), con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    meta = con.execute("SELECT meta FROM rel__kanon_meta").fetchall()
    with pytest.raises(PolicyError, match="identifying_columns <= 0 failed: dx: 1 rows"):
        kanon.refresh(con, "rel")
    assert _catalog(con) == before
    assert con.execute("SELECT * FROM rel ORDER BY ALL").fetchall() == view
    assert con.execute("SELECT meta FROM rel__kanon_meta").fetchall() == meta
    kanon.refresh(con, "rel", force="the diagnosis is public")
    stored = json.loads(con.execute("SELECT meta FROM rel__kanon_meta").fetchall()[0][0])
    assert stored["forced"] == "the diagnosis is public"
    assert stored["verdict"]["rules"][1]["columns"] == ["dx"]


def test_the_docs_rules_table_is_the_declaration() -> None:
    text = (Path(__file__).resolve().parent.parent / "docs" / "policy.md").read_text()
    (table,) = re.findall(r"<!-- rules -->\n(.*?)\n<!-- /rules -->", text, re.S)
    assert table == rules_table(), "docs/policy.md: paste kanon.plan.policy.rules_table()"


def test_the_gate_runs_inside_the_transaction_beside_another_connection(tmp_path: Path) -> None:
    """Verifying registers no function: beside another connection that installed kanon
    (which holds the UDFs), a refused release is a PolicyError, not an aborted transaction."""
    path = str(tmp_path / "shared.duckdb")
    con = kanon.install(duckdb.connect(path))
    _defects(con)
    other = kanon.install(duckdb.connect(path))
    try:
        with pytest.raises(PolicyError, match="k >= 11 failed"):
            kanon.materialize(con, "src", 5, "rel", policy={"k": 11})
        kanon.materialize(con, "src", 5, "rel", policy={"k": 5})
        assert other.execute("SELECT count(*) FROM rel").fetchall() == [(100,)]
    finally:
        other.close()
        con.close()


def test_a_release_that_drops_rows_needs_a_policy_that_allows_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    _defects(con)
    # Three outliers, cheaper to suppress than to generalize everyone for.
    con.execute("INSERT INTO src VALUES (100, 90, 'm', 'flu', 0), (101, 95, 'f', 'ok', 0)")
    con.execute("INSERT INTO src VALUES (102, 99, 'm', 'cold', 0)")
    sql = (
        "CREATE TABLE r AS SELECT * FROM kanon('src', k := 5, method := 'optimal', "
        "max_suppression := 0.05, drop_suppressed := true)"
    )
    con.execute(sql)
    assert con.execute("SELECT count(*) FROM r").fetchall() == [(100,)]
    verdict = kanon.verify("src", "r", {"k": 5}, con=con)
    assert [(r.rule, r.rows) for r in verdict.failed] == [("rows", 3)]
    assert kanon.verify("src", "r", {"k": 5, "rows": 0.05}, con=con).passed


def test_a_read_only_database_stores_nothing_and_says_so(tmp_path: Path) -> None:
    path = str(tmp_path / "ro.duckdb")
    writable = duckdb.connect(path)
    writable.execute("CREATE TABLE t AS SELECT i % 4 AS a FROM range(20) r(i)")
    writable.execute("CREATE TABLE r AS SELECT * FROM t")
    writable.close()
    con = kanon.install(duckdb.connect(path, read_only=True))
    with pytest.raises(ConfigError, match="opened read-only, so policy 'p' cannot be stored"):
        kanon.policy(con, "p", k=2)
    with pytest.raises(ConfigError, match="opened read-only, so the configuration of table"):
        kanon.configure(con, "t", qi=["a"])
    # Inline rules still verify; a name finds no stored policy.
    assert kanon.verify("t", "r", {"k": 5}, qi=["a"], con=con).passed
    with pytest.raises(ConfigError, match="there is no policy 'p' in kanon_policies"):
        kanon.verify("t", "r", "p", qi=["a"], con=con)
    con.close()
