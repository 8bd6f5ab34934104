"""Benchmark of ``SELECT * FROM kanon('adult', k := k)`` against anonypy and anjana.

Usage::

    python benches/bench_forest.py [--ks 2,5,10,25,50,100] [--skip-peers] [--timeout S]

Data: UCI Adult (``adult/adult.csv`` in the data folder: $KANON_DATA, else ``shared/data``
beside the repository), all 9 columns as quasi-identifiers with the ARX hierarchies
``adult_hierarchy_<column>.csv``; 30,162 rows.

Methods, each in a fresh worker process on the same data:

* ``kanon forest``: the default (NCP pair costs, FOREST, DECOMPOSE, repair, improvement
  passes); ``kanon forest_paper``: Aggarwal et al. as published (level / height pair
  costs, no improvement). Time: the whole SQL statement, planning included, fetched to
  Arrow; one warm-up run, then the median of three.
* ``anonypy`` (Mondrian, multidimensional partitioning; numbers as ranges, categories as
  value sets): one run.
* ``anjana`` (global recoding with the same hierarchies, no suppression): one run.

Utility, computed the same way for every method (``kanon.metrics`` on the release
against the original, except anonypy whose value sets are not hierarchy labels; its GCP
uses the same formulas on its sets and ranges):

* cost: Σ over cells of level / height (anonypy: not defined);
* GCP: mean NCP over cells — numbers ``(hi - lo) / (max - min)``, categories
  ``(values covered - 1) / (distinct values - 1)``, ``*`` = 1;
* DM: Σ |class|²; C_AVG: (rows / classes) / k; min class: the smallest class (≥ k).

Targets (issue 3): kanon at k = 5 in ≤ 1 s end to end; GCP below 2.5 % / 5.8 % / 8.5 %
at k = 2 / 5 / 10.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
from measure import (
    ADULT_QI,
    data_dir,
    ident,
    literal,
    mib,
    parse_or_serve,
    print_table,
    proc_status,
    process_peak,
    reset_peak_rss,
    run_worker,
)

import kanon

QI = ADULT_QI
KS = [2, 5, 10, 25, 50, 100]
RUNS = 3
TIME_TARGET = (5, 1.0)
GCP_TARGETS = {2: 0.025, 5: 0.058, 10: 0.085}
METHODS = ["forest", "forest_paper", "anonypy", "anjana"]
LABELS = {
    "forest": "kanon forest (default)",
    "forest_paper": "kanon forest_paper",
    "anonypy": "anonypy (Mondrian)",
    "anjana": "anjana (global recoding)",
}


def load(con: duckdb.DuckDBPyConnection, db: str) -> None:
    """Copy Adult and its hierarchies into ``con`` and configure the QIs."""
    con.execute(f"ATTACH {literal(db)} AS src (READ_ONLY)")
    con.execute("CREATE TABLE adult AS SELECT * FROM src.adult")
    for c in QI:
        con.execute(f"CREATE TABLE {ident('h_' + c)} AS SELECT * FROM src.{ident('h_' + c)}")
    con.execute("DETACH src")
    kanon.configure(con, "adult", qi={c: f"h_{c}" for c in QI})


def _kanon(con: duckdb.DuckDBPyConnection, k: int, method: str) -> Any:
    sql = f"SELECT * FROM kanon('adult', k := {k}, method := {literal(method)})"

    def run() -> Any:
        return con.sql(sql).to_arrow_table()

    return run


def _anonypy(con: duckdb.DuckDBPyConnection, k: int) -> Any:
    from anonypy import mondrian  # only the workers that need it pay for the import

    df = con.sql("SELECT * FROM adult").df()
    for c in QI:
        if c != "age":
            df[c] = df[c].astype("category")

    def run() -> Any:
        return mondrian.Mondrian(df, QI).partition(k)

    return df, run


def _anjana(con: duckdb.DuckDBPyConnection, k: int) -> Any:
    from anjana.anonymity import k_anonymity

    df = con.sql("SELECT * FROM adult").df()
    hierarchies = {}
    for c in QI:
        h = con.sql(f"SELECT * FROM {ident('h_' + c)}").df()
        hierarchies[c] = {i: h.iloc[:, i].to_numpy() for i in range(h.shape[1])}
    df["age"] = df["age"].astype(str)  # the hierarchy's level 0 is text

    def run() -> Any:
        return k_anonymity(df, [], QI, k, 0, hierarchies)

    return run


def _mondrian_metrics(df: Any, parts: list[Any], k: int) -> dict[str, Any]:
    """GCP, DM, C_AVG of Mondrian partitions (ranges for age, value sets otherwise)."""
    n = len(df)
    total = 0.0
    for c in QI:
        col = df[c]
        if c == "age":
            span = float(col.max() - col.min())
            total += sum(
                len(p) * (float(col[p].max() - col[p].min()) / span if span else 0.0) for p in parts
            )
        else:
            distinct = col.nunique()
            total += sum(
                len(p) * ((col[p].nunique() - 1) / (distinct - 1) if distinct > 1 else 0.0)
                for p in parts
            )
    sizes = [len(p) for p in parts]
    return {
        "cost": None,
        "gcp": total / (n * len(QI)),
        "dm": sum(s * s for s in sizes),
        "c_avg": n / len(sizes) / k,
        "min_class": min(sizes),
        "rows": n,
    }


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    con = kanon.install(duckdb.connect())
    load(con, spec["db"])
    k, method = spec["k"], spec["method"]
    fast = method.startswith("forest")
    if method == "anonypy":
        df, run = _anonypy(con, k)
    elif method == "anjana":
        run = _anjana(con, k)
    else:
        run = _kanon(con, k, method)
    if fast:
        run()  # warm-up: first-use costs are not per query
    gc.collect()
    load_peak = proc_status("VmHWM")
    tracked = reset_peak_rss()
    before = proc_status("VmRSS")
    times = []
    for _ in range(RUNS if fast else 1):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    peak = proc_status("VmHWM")
    grown = peak - before if tracked and peak is not None and before is not None else None
    if method == "anonypy":
        metrics = _mondrian_metrics(df, result, k)
    else:
        if method == "anjana":
            result = result.drop(columns=[c for c in result.columns if c not in QI])
        con.register("release_frame", result)
        con.execute("CREATE TABLE release AS SELECT * FROM release_frame")
        m = kanon.metrics("adult", "release", con=con, k=k)
        metrics = {
            "cost": m.cost,
            "gcp": m.gcp,
            "dm": m.dm,
            "c_avg": m.c_avg,
            "min_class": m.min_class,
            "rows": m.rows,
        }
    return {
        "time": statistics.median(times),
        "peak_grown": grown,
        "proc_peak": process_peak(load_peak, peak),
        "metrics": metrics,
    }


def build_data(db: Path) -> None:
    folder = data_dir() / "adult"
    if not (folder / "adult.csv").is_file():
        sys.exit(f"benchmark data missing: {folder / 'adult.csv'} (set KANON_DATA)")
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
            [str(folder / "adult.csv")],
        )
        for c in QI:
            kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--skip-peers", action="store_true", help="kanon only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per worker")
    args = parse_or_serve(parser, worker)
    if args is None:
        return
    ks = [int(k) for k in args.ks.split(",")]
    methods = METHODS[:2] if args.skip_peers else METHODS
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        build_data(db)
        lines = []
        outcomes: dict[tuple[int, str], dict[str, Any]] = {}
        for k in ks:
            for method in methods:
                spec = {"db": str(db), "k": k, "method": method}
                out = run_worker(__file__, spec, args.timeout)
                outcomes[k, method] = out
                m = out.get("metrics") or {}

                def show(key: str, fmt: str, m: dict[str, Any] = m) -> str:
                    value = m.get(key)
                    return "-" if value is None else format(value, fmt)

                lines.append(
                    (
                        str(k),
                        LABELS[method],
                        out["note"] if "time" not in out else f"{out['time']:.3f}",
                        mib(out.get("peak_grown")) if "time" in out else "",
                        mib(out.get("proc_peak")) if "time" in out else "",
                        show("cost", ",.1f"),
                        "-" if m.get("gcp") is None else f"{100 * m['gcp']:.2f}",
                        show("dm", ",d"),
                        show("c_avg", ".3f"),
                        show("min_class", "d"),
                    )
                )
                print(f"  done k={k} {method}", file=sys.stderr, flush=True)
    header = (
        "k",
        "method",
        "time s",
        "peak+ MiB",
        "proc MiB",
        "cost",
        "GCP %",
        "DM",
        "C_AVG",
        "min class",
    )
    print_table(header, lines, left={1})
    print()
    k_time, limit = TIME_TARGET
    out = outcomes.get((k_time, "forest"), {})
    if "time" in out:
        verdict = "PASS" if out["time"] <= limit else "FAIL"
        print(
            f"kanon at k = {k_time}: {out['time']:.3f} s end to end   target <= {limit} s: "
            f"{verdict}"
        )
    for k, target in GCP_TARGETS.items():
        m = outcomes.get((k, "forest"), {}).get("metrics")
        if m:
            verdict = "PASS" if m["gcp"] < target else "FAIL"
            print(
                f"kanon GCP at k = {k}: {100 * m['gcp']:.2f} %   target < {100 * target:.1f} %: "
                f"{verdict}"
            )


if __name__ == "__main__":
    main()
