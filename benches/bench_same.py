"""Same releases, same speed: one set of calls under two versions of kanon, side by side.

Usage::

    python benches/bench_same.py --before OLD/python --after NEW/python [--rows 100000]
        [--runs 3] [--repeat 2] [--cases adult_forest_k5,...]

``--before`` and ``--after`` are ``python/`` folders of two checkouts, each with its
compiled ``kanon/_core*.so`` (for example a ``git worktree`` of the older commit). Every
case runs in fresh worker processes, ``--repeat`` per version, the versions alternating
in ABBA order: load the data, one warm-up run, then the median of ``--runs`` timed runs
of the SQL statement, fetched to Arrow; the time shown is each version's fastest median.
The table prints, per case and version, that time, a hash of the release (sha256 of its
rows as text, sorted; "varies" if two runs of one version differ) and a utility number
of the release itself (GCP by ``kanon_metrics`` where it reads the labels, else the
number of distinct released rows), then whether the releases are identical and the
time ratio.

The cases cover every method and privacy model, ``kanon_check``, ``kanon_search``,
``kanon_metrics``, (h,k,p)-coherence, and stored releases: the rows of a view after
``kanon.materialize`` and ``kanon.refresh``, and the text and rows of ``kanon.to_sql`` of
a global and a local view. The hash leaves out a search's ``seconds`` and rounds floats
to nine digits (DuckDB's parallel sums vary in their last bits).

Data: UCI Adult with ARX's hierarchies (30,162 rows, 9 QIs), the generated census table
(``kanon.datagen.census``, default generalizers) and BMS-WebView-1 transactions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import ADULT_QI, data_dir, ident, print_table

ADULT = "SELECT * FROM kanon('adult', k := {k}, method := '{m}')"
CENSUS_QI = "['age', 'sex', 'race', 'marital_status', 'education', 'zip', 'birth_date']"
CENSUS_QIS = ["age", "sex", "race", "marital_status", "education", "zip", "birth_date"]
CENSUS_ROLES: dict[str, Any] = {
    "identifiers": ["person_id", "name"],
    "sensitive": ["occupation", "income"],
    "insensitive": ["native_country", "hours_per_week"],
}
CENSUS = "SELECT * FROM kanon('census', k := {k}, qi := " + CENSUS_QI + "{extra})"
HKP = (
    "SELECT * FROM kanon_hkp('bms1', h := 0.4, k := 5, p := 2, public_fraction := 0.4, "
    "min_support := 0.001, method := '{m}')"
)
#: case -> (data, SQL of the release)
CASES: dict[str, tuple[str, str]] = {
    "adult_forest_k5": ("adult", ADULT.format(k=5, m="forest")),
    "adult_forest_k50": ("adult", ADULT.format(k=50, m="forest")),
    "adult_forest_paper_k5": ("adult", ADULT.format(k=5, m="forest_paper")),
    "adult_mondrian_k10": ("adult", ADULT.format(k=10, m="mondrian")),
    "adult_optimal_k5": ("adult", ADULT.format(k=5, m="optimal")),
    "adult_datafly_k5": ("adult", ADULT.format(k=5, m="datafly")),
    "adult_mu_argus_k5": ("adult", ADULT.format(k=5, m="mu_argus")),
    "census_forest_k5": ("census", CENSUS.format(k=5, extra="")),
    "census_forest_seed7_k10": ("census", CENSUS.format(k=10, extra=", seed := 7")),
    "census_forest_range_k5": ("census", CENSUS.format(k=5, extra=", labels := 'range'")),
    "census_mondrian_k5": ("census", CENSUS.format(k=5, extra=", method := 'mondrian'")),
    "census_optimal_l2_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'optimal', sensitive := 'occupation', l := 2"),
    ),
    "census_optimal_t_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'optimal', sensitive := 'income', t := 0.3"),
    ),
    "census_check": (
        "census",
        "SELECT * FROM kanon_check('census', qi := " + CENSUS_QI + ", sensitive := 'occupation')",
    ),
    "census_priority_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'priority', priorities := {'age': 3, 'zip': 2}"),
    ),
    "census_iterated_k5": ("census", CENSUS.format(k=5, extra=", method := 'iterated'")),
    "census_forest_paper_k5": ("census", CENSUS.format(k=5, extra=", method := 'forest_paper'")),
    "census_datafly_k5": ("census", CENSUS.format(k=5, extra=", method := 'datafly'")),
    "census_mu_argus_k5": ("census", CENSUS.format(k=5, extra=", method := 'mu_argus'")),
    "census_optimal_entropy_k5": (
        "census",
        CENSUS.format(
            k=5,
            extra=", method := 'optimal', sensitive := 'occupation', l := 1.5, "
            "l_diversity := 'entropy'",
        ),
    ),
    "census_optimal_recursive_k5": (
        "census",
        CENSUS.format(
            k=5,
            extra=", method := 'optimal', sensitive := 'occupation', l := 2, "
            "l_diversity := 'recursive', c := 3",
        ),
    ),
    "census_optimal_delta_k5": (
        "census",
        CENSUS.format(
            k=5,
            extra=", method := 'optimal', population := 'census_population', delta_max := 0.6",
        ),
    ),
    "census_mondrian_l2_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'mondrian', sensitive := 'occupation', l := 2"),
    ),
    "census_mondrian_t_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'mondrian', sensitive := 'income', t := 0.4"),
    ),
    "census_optimal_dm_k5": (
        "census",
        CENSUS.format(k=5, extra=", method := 'optimal', metric := 'dm', max_suppression := 0.02"),
    ),
    "adult_check": (
        "adult",
        "SELECT * FROM kanon_check('adult', qi := ['sex', 'age', 'race', 'education'], "
        "sensitive := 'occupation')",
    ),
    "census_search_k5": (
        "census",
        "SELECT * FROM kanon_search('census', k := 5, qi := " + CENSUS_QI + ")",
    ),
    "census_search_datafly_k5": (
        "census",
        "SELECT * FROM kanon_search('census', k := 5, qi := " + CENSUS_QI + ", "
        "method := 'datafly')",
    ),
    "census_metrics_k5": ("census", "metrics"),
    "bms1_hkp_mmil": ("bms1", HKP.format(m="mmil")),
    "bms1_hkp_rmall": ("bms1", HKP.format(m="rmall")),
    # Stored releases (Python verbs, see ACTIONS): the view's rows after materialize and
    # refresh, and the text of to_sql of a global and a local view.
    "census_materialize_refresh": ("census", "materialize_refresh"),
    "census_to_sql_optimal": ("census", "to_sql_optimal"),
    "census_to_sql_forest": ("census", "to_sql_forest"),
}


def _load(con: duckdb.DuckDBPyConnection, data: str, rows: int) -> None:
    import kanon
    import kanon.datagen

    if data == "adult":
        folder = data_dir() / "adult"
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
            [str(folder / "adult.csv")],
        )
        for c in ADULT_QI:
            kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
        kanon.configure(con, "adult", qi={c: f"h_{c}" for c in ADULT_QI})
    elif data == "census":
        kanon.datagen.census(con, "census", rows=rows, seed=42)
        kanon.configure(con, "census", **CENSUS_ROLES)
        kanon.datagen.census(con, "census_more", rows=rows, seed=43)
        con.execute(
            "CREATE TABLE census_population AS SELECT * FROM census UNION ALL "
            "SELECT * FROM census_more"
        )
    else:
        path = data_dir() / "transactions" / "BMS-WebView-1.dat"
        con.execute(
            f"CREATE TABLE {ident(data)} AS SELECT row_number() OVER () AS tid, "
            "list_transform(string_split(trim(line), ' '), lambda x: CAST(x AS INTEGER)) "
            "AS items FROM read_csv(?, columns = {'line': 'VARCHAR'}, header = false, "
            "delim = '\t', quote = '', escape = '')",
            [str(path)],
        )
    con.execute("CHECKPOINT")


def _utility(con: duckdb.DuckDBPyConnection, data: str) -> str:
    """GCP of the release where ``kanon_metrics`` reads its labels, else its classes."""
    qi = {"adult": "NULL", "census": CENSUS_QI}.get(data)
    if qi is not None:
        try:
            row = con.execute(
                f"SELECT gcp FROM kanon_metrics('{data}', 'released', qi := {qi})"
            ).fetchone()
            return f"GCP {row[0]:.6f}" if row else "?"
        except duckdb.Error:
            pass
    row = con.execute("SELECT count(*) FROM (SELECT DISTINCT * FROM released)").fetchone()
    return f"{row[0] if row else '?'} distinct rows"


def _metrics(con: duckdb.DuckDBPyConnection) -> Any:
    con.execute("CREATE OR REPLACE TABLE m_release AS " + CENSUS.format(k=5, extra=""))
    return con.sql(f"SELECT * FROM kanon_metrics('census', 'm_release', qi := {CENSUS_QI})")


def _materialize_refresh(con: duckdb.DuckDBPyConnection) -> Any:
    """Materialize 95 % of the census, add the other 5 % and refresh: the view's rows."""
    import kanon

    tables = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    source = f"src{sum(t.startswith('src') for (t,) in tables)}"
    view = "stored_" + source
    con.execute(f"CREATE TABLE {source} AS SELECT * FROM census WHERE person_id % 20 <> 0")
    kanon.configure(con, source, **CENSUS_ROLES)
    kanon.materialize(con, source, 5, view, qi=CENSUS_QIS)
    con.execute(f"INSERT INTO {source} SELECT * FROM census WHERE person_id % 20 = 0")
    kanon.refresh(con, view)
    return con.sql(f"SELECT * FROM {view}").to_arrow_table()


def _to_sql(method: str) -> Any:
    def action(con: duckdb.DuckDBPyConnection) -> Any:
        import kanon

        name = f"view_{method}"
        views = con.execute("SELECT view_name FROM duckdb_views()").fetchall()
        if (name,) not in views:
            kanon.materialize(con, "census", 5, name, qi=CENSUS_QIS, method=method)
        text = kanon.to_sql(con, name, dialect="postgres")
        return text, con.sql(f"SELECT * FROM {name}").to_arrow_table()

    return action


#: Cases whose "SQL" names a Python action: it returns the release (or its text and rows).
ACTIONS = {
    "metrics": _metrics,
    "materialize_refresh": _materialize_refresh,
    "to_sql_optimal": _to_sql("optimal"),
    "to_sql_forest": _to_sql("forest"),
}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{round(value, 9):.9g}")
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _digest(result: Any) -> tuple[str, int]:
    text = ""
    if isinstance(result, tuple):
        text, result = result
    release = result if hasattr(result, "to_pylist") else result.to_arrow_table()
    # A search's own running time is not part of its result, nor the last bits of a float
    # sum that DuckDB's parallel aggregates add in varying order.
    rows = [{c: _rounded(v) for c, v in r.items() if c != "seconds"} for r in release.to_pylist()]
    lines = sorted(json.dumps(r, default=str, ensure_ascii=False, sort_keys=True) for r in rows)
    digest = hashlib.sha256((text + "\n".join(lines)).encode()).hexdigest()[:16]
    return digest, release.num_rows


def worker(case: str, rows: int, runs: int, db: str) -> dict[str, Any]:
    import kanon

    data, sql = CASES[case]
    con = kanon.install(duckdb.connect(db))
    _load(con, data, rows)

    def once() -> Any:
        if sql in ACTIONS:
            return ACTIONS[sql](con)
        return con.sql(sql).to_arrow_table()

    once()  # warm-up
    times = []
    result = None
    for _ in range(runs):
        started = time.perf_counter()
        result = once()
        times.append(time.perf_counter() - started)
    assert result is not None
    digest, count = _digest(result)
    release = result[1] if isinstance(result, tuple) else result
    if not hasattr(release, "to_pylist"):
        release = release.to_arrow_table()
    con.execute("CREATE TABLE released AS SELECT * FROM release")
    return {
        "seconds": statistics.median(times),
        "hash": digest,
        "rows": count,
        "utility": _utility(con, data),
    }


def _run(python: str, case: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    db = scratch / f"{case}.duckdb"
    db.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": python}
    spec = json.dumps({"case": case, "rows": args.rows, "runs": args.runs, "db": str(db)})
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", spec],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=args.timeout,
    )
    db.unlink(missing_ok=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["?"]
        return {"seconds": float("nan"), "hash": "failed", "rows": 0, "utility": tail[0][:60]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", help="python/ folder of the older checkout")
    parser.add_argument("--after", help="python/ folder of the newer checkout")
    parser.add_argument("--rows", type=int, default=100_000, help="census rows")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2, help="worker pairs per case")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--scratch", default="/tmp/kanon-bench-same")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(worker(spec["case"], spec["rows"], spec["runs"], spec["db"])))
        return
    if not args.before or not args.after:
        parser.error("--before and --after are required")
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    lines = []
    slower = 0
    for case in [c.strip() for c in args.cases.split(",") if c.strip()]:
        if case not in CASES:
            parser.error(f"unknown case {case!r}; known: {', '.join(CASES)}")
        # Alternating order (ABBA...), each version's fastest median kept.
        olds, news = [], []
        for i in range(args.repeat):
            order = [(args.before, olds), (args.after, news)]
            for python, results in order if i % 2 == 0 else order[::-1]:
                results.append(_run(python, case, args, scratch))
        old = min(olds, key=lambda r: r["seconds"])
        new = min(news, key=lambda r: r["seconds"])
        if len({r["hash"] for r in olds}) > 1 or len({r["hash"] for r in news}) > 1:
            old = new = {**new, "hash": "varies"}
        ratio = new["seconds"] / old["seconds"] if old["seconds"] else float("nan")
        slower += ratio > 1.05
        same = (
            "yes"
            if old["hash"] == new["hash"] and old["hash"] not in ("failed", "varies")
            else "NO"
        )
        lines.append(
            (
                case,
                f"{old['seconds']:.3f}",
                f"{new['seconds']:.3f}",
                f"{ratio:.3f}",
                str(new["rows"]),
                old["hash"],
                new["hash"],
                same,
                old["utility"],
                new["utility"],
            )
        )
        print(f"{case}: done", file=sys.stderr)
    header = (
        "case",
        "before s",
        "after s",
        "after/before",
        "rows",
        "hash before",
        "hash after",
        "same",
        "utility before",
        "utility after",
    )
    print_table(header, lines, left={0, 5, 6, 7, 8, 9})
    print(
        f"\n{sum(line[7] == 'yes' for line in lines)}/{len(lines)} releases identical; "
        f"{slower} case(s) more than 5 % slower"
    )


if __name__ == "__main__":
    main()
