"""``kanon demo``: a census-like table in a DuckDB file, anonymized to k = 5 and explained.

Everything runs locally on generated data (no download): the seeded generator in
:mod:`kanon.datagen` creates the table, :mod:`kanon.hierarchy` builds a lookup table per
quasi-identifier, :func:`kanon.configure` records the roles, the check shows how
identifiable the raw table is, and a policy (:func:`kanon.policy`) says what a release
must meet. :func:`kanon.materialize` under that policy first refuses a release that keeps
``income`` and ``hours_per_week`` unchanged (the verdict says how many people they single
out), then stores the release with both generalized as quasi-identifiers: a plain SQL
view, verified, checked and measured.
"""

from __future__ import annotations

import time
from pathlib import Path

import duckdb

from kanon import hierarchy
from kanon.api.check import check
from kanon.api.configure import configure
from kanon.api.release import metrics
from kanon.api.verify import policy, verify
from kanon.datagen import CENSUS_ROLES, census
from kanon.engine.install import install
from kanon.exceptions import ConfigError, PolicyError
from kanon.plan.release.local import label_column
from kanon.sql.quote import ident
from kanon.store.materialize import materialize
from kanon.store.owned import helper

__all__ = ["DEMO_DB", "build_census_hierarchies", "demo_hints", "run_demo"]


def build_census_hierarchies(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """Build one hierarchy table per census QI; return ``{column: hierarchy table}``."""
    built = {
        "age": hierarchy.intervals(con, "h_age", table=table, column="age", width=5, fanout=2),
        "sex": hierarchy.suppress(con, "h_sex", table=table, column="sex"),
        "race": hierarchy.auto(con, "h_race", table=table, column="race", fanout=3),
        "marital_status": hierarchy.auto(
            con, "h_marital_status", table=table, column="marital_status", fanout=3
        ),
        "education": hierarchy.auto(con, "h_education", table=table, column="education"),
        "zip": hierarchy.mask(con, "h_zip", table=table, column="zip"),
        "birth_date": hierarchy.dates(con, "h_birth_date", table=table, column="birth_date"),
        "native_country": hierarchy.auto(
            con, "h_native_country", table=table, column="native_country", fanout=4
        ),
    }
    return {column: h.name for column, h in built.items()}


#: The file ``kanon demo`` writes, and the marker table telling it the file is its own.
DEMO_DB = "kanon-demo.duckdb"
MARKER = "kanon_demo"


def run_demo(
    rows: int = 20_000,
    seed: int = 42,
    k: int = 5,
    db: str | Path = DEMO_DB,
    report: str | Path | None = "kanon-demo.html",
) -> None:
    """Generate, configure, anonymize and explain; prints to standard output.

    Writes the database ``db`` (refusing a file that an earlier demo did not write) and,
    unless ``report`` is None, the HTML report of the release.
    """
    path = Path(db)
    con = _open(path)
    try:
        table = census(con, "census", rows=rows, seed=seed)
        hierarchies = build_census_hierarchies(con, table)
        roles = CENSUS_ROLES
        qis = [c for c, r in roles.items() if r == "qi"]
        identifiers = [c for c, r in roles.items() if r == "identifier"]
        configure(
            con,
            table,
            qi={c: hierarchies[c] for c in qis},
            identifiers=identifiers,
            sensitive=["occupation"],
            insensitive=["income", "hours_per_week"],
        )
        print(f"kanon demo: {rows:,} generated people (seed {seed}), written to {path}")
        print(f"quasi-identifiers (what an attacker may know): {', '.join(qis)}")
        print("sensitive (what must not be learned): occupation; identifiers: person_id, name")
        print()
        before = check(table, con=con)
        unique = con.execute(
            f"SELECT count(*) FROM (SELECT count(*) AS n FROM census GROUP BY "
            f"{', '.join(ident(q) for q in qis)}) WHERE n = 1"
        ).fetchall()[0][0]
        print("== 1. The risk before ==")
        print(
            f"{unique:,} of {rows:,} people are alone on their quasi-identifiers: whoever knows "
            "them finds that person's row, and their occupation."
        )
        print(before)
        print()
        print("== 2. The policy the release must meet ==")
        policy(con, "demo", k=k, identifying_columns=0, suppressed=0.05)
        print(
            f"kanon.policy(con, 'demo', k={k}, identifying_columns=0, suppressed=0.05): every "
            f"class at least {k} rows, no column released beside the QIs that singles out a "
            "row, at most 5 % of rows suppressed, no row lost (stored in kanon_policies)."
        )
        print()
        release = f"census_k{k}"
        print("== 3. A first release, income and hours kept as they are: FAIL ==")
        try:
            materialize(con, table, k=k, name=release, policy="demo")
        except PolicyError as refused:
            print(refused.verdict)
            print(
                "income and hours_per_week are released unchanged, and a person whose value "
                f"fewer than {k} rows hold is found by it, whatever the QIs say: nothing was "
                "published. The fix: generalize both as quasi-identifiers (income in bands "
                "of 5,000, hours in bands of 5)."
            )
        print()
        bands = {
            "income": hierarchy.intervals(
                con, "h_income", table=table, column="income", width=5000, fanout=4
            ).name,
            "hours_per_week": hierarchy.intervals(
                con, "h_hours_per_week", table=table, column="hours_per_week", width=5, fanout=2
            ).name,
        }
        configure(
            con,
            table,
            qi={**{c: hierarchies[c] for c in qis}, **bands},
            identifiers=identifiers,
            sensitive=["occupation"],
        )
        qis = [*qis, *bands]
        start = time.perf_counter()
        materialize(con, table, k=k, name=release, report=report, policy="demo")
        seconds = time.perf_counter() - start
        print(f"== 4. The release, both generalized: SELECT * FROM kanon('census', k := {k}) ==")
        print(f"anonymized in {seconds:.2f} s and stored as the plain SQL view {release}.")
        print(verify(table, release, "demo", con=con))
        print("Three people before and after:")
        for line in _people(con, release, qis):
            print(line)
        print(_homogeneous(con, release))
        print()
        print("== 5. The risk after, and what it cost ==")
        print(check(release, qi=qis, sensitive="occupation", con=con))
        gcp = metrics(table, release, con=con, k=k).gcp
        print(
            f"information lost: GCP {gcp:.2%} (the mean share of each released cell's domain "
            "that its label covers: 0 % every value as it was, 100 % every QI '*'; the "
            "report lists the other measures, each with its scale)"
        )
        print()
        print("== 6. Next ==")
        if report is not None:
            print(f"The report, with the verdict and plots: open {report} in a browser.")
        print("In Python (these lines run as printed, from this directory):")
        for line in demo_hints(path, release, qis, k):
            print(f"    {line}")
    finally:
        con.close()


def _homogeneous(con: duckdb.DuckDBPyConnection, release: str) -> str:
    """How representative the people shown are: the classes holding one occupation."""
    rows_t = ident(helper(release, "rows"))
    ((single, classes, rows, total),) = con.execute(
        f"SELECT count(*) FILTER (WHERE o = 1), count(*), coalesce(sum(n) FILTER (WHERE o = 1), "
        f'0), sum(n) FROM (SELECT "__kanon_grp", count(*) AS n, count(DISTINCT occupation) AS o '
        f"FROM {rows_t} GROUP BY 1)"
    ).fetchall()
    return (
        f"Of all {classes:,} classes, {single:,} ({rows:,} of {total:,} rows) hold a single "
        "occupation, which finding the class reveals; l-diversity (method := 'mondrian', "
        "l := 2) would prevent it."
    )


def demo_hints(path: Path, release: str, qis: list[str], k: int) -> list[str]:
    """The Python lines the demo suggests: read the view, check it, measure it."""
    listed = ", ".join(repr(q) for q in qis)
    return [
        "import duckdb, kanon",
        f"con = kanon.install(duckdb.connect({str(path)!r}))",
        f'print(con.sql("SELECT * FROM {release} LIMIT 5"))',
        f'print(kanon.check("{release}", qi=[{listed}], sensitive="occupation", con=con))',
        f'print(kanon.metrics("census", "{release}", con=con, k={k}))',
        f'print(kanon.verify("census", "{release}", "demo", con=con))',
    ]


def _open(path: Path) -> duckdb.DuckDBPyConnection:
    """The demo's database: new, or one an earlier demo wrote (it holds the marker)."""
    fresh = not path.exists()
    con = install(duckdb.connect(str(path)))
    listed = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if not fresh and MARKER not in listed:
        con.close()
        msg = (
            f"{path} exists and was not written by kanon demo: remove it or pass "
            "--db with another file"
        )
        raise ConfigError(msg)
    con.execute(f"CREATE OR REPLACE TABLE {MARKER} AS SELECT 'written by kanon demo' AS note")
    return con


def _people(con: duckdb.DuckDBPyConnection, release: str, qis: list[str]) -> list[str]:
    """Three people from different classes, original beside released, in a sentence each."""
    rows_t, labels_t = ident(helper(release, "rows")), ident(helper(release, "labels"))
    originals = ", ".join(f"CAST(s.{ident(q)} AS VARCHAR)" for q in qis)
    released = ", ".join(f"l.{label_column(j)}" for j in range(len(qis)))
    picked = con.execute(
        f'WITH g AS (SELECT "__kanon_grp", count(*) AS n, '
        f"count(DISTINCT occupation) AS occupations FROM {rows_t} GROUP BY 1) "
        f"SELECT [{originals}], [{released}], s.occupation, g.n, g.occupations "
        f"FROM census s JOIN {rows_t} r USING (person_id) JOIN {labels_t} l USING "
        f'("__kanon_grp") JOIN g USING ("__kanon_grp") '
        f'QUALIFY row_number() OVER (PARTITION BY "__kanon_grp" ORDER BY person_id) = 1 '
        "ORDER BY row_number() OVER (PARTITION BY g.occupations = 1 ORDER BY hash(person_id)), "
        "g.occupations = 1 DESC LIMIT 3"
    ).fetchall()
    width = max(len(q) for q in qis)
    wide = max(len(str(v)) for row in picked for v in row[0]) + 1
    lines = []
    for i, (before, after, occupation, n, occupations) in enumerate(picked, start=1):
        lines.append(f"  person {i}: {'':<{width - 8}}{'original':<{wide}} released")
        changed = []
        for q, b, a in zip(qis, before, after, strict=True):
            lines.append(f"    {q:<{width}}  {b:<{wide}} {a}")
            if a != b:
                changed.append(q)
        kept = f"{', '.join(changed)} coarsened" if changed else "nothing coarsened"
        shared = (
            f"all {n} have occupation {occupation}: finding the class reveals it "
            "(l-diversity would prevent that)"
            if occupations == 1
            else f"they hold {occupations} occupations, so it is not revealed"
        )
        lines.append(
            f"    -> {kept}; {n} people share these values, so a known person's row is one "
            f"of {n} (a {1 / n:.0%} chance); {shared}."
        )
    return lines
