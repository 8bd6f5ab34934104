"""Benchmark of ``kanon_check`` and ``kanon_verify`` against a plain GROUP BY and pycanon.

Usage::

    python benches/bench_check.py [--rows N] [--seed S] [--skip-pycanon]

Datasets: Adult (``adult/adult.csv`` in the data folder: $KANON_DATA, else ``shared/data``
beside the repository; 8 ARX QIs, sensitive ``occupation``) and ``--rows`` generated rows
(``kanon.datagen.census``; 8 QIs, sensitive ``occupation``), plus the first 100,000 and
20,000 generated rows (by ``person_id``) where pycanon is too slow for the whole table.

``kanon_verify`` judges the table as a release of a copy of itself against a policy of
every rule but ``loss`` (k, l, t, identifying_columns over the other columns, suppressed,
rows): the verdict's plain SQL over 1M rows, next to ``kanon_check`` on the same table.

Every measurement runs in a fresh worker process. The parent writes all tables once into a
temporary DuckDB file; a worker copies its table into an in-memory DuckDB (and, for
pycanon, into a pandas frame with a fresh index) before anything is timed, so loading is
never timed. DuckDB and kanon: one warm-up run, then the median of three; pycanon: one run.

Memory: "peak+ MiB" is how far the worker's resident set (RSS) rose above its level just
before the timed runs (the kernel's high-water mark, VmHWM, reset through
/proc/self/clear_refs after loading and the warm-up); "proc MiB" is the worker's whole-life peak RSS
(VmHWM before the reset and after the runs): interpreter, DuckDB, the loaded table (and
frame) included.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from measure import (
    data_dir,
    ident,
    literal,
    mib,
    parse_or_serve,
    proc_status,
    process_peak,
    reset_peak_rss,
    run_worker,
)
from measure import print_table as print_table_rows

import kanon
from kanon.datagen import CENSUS_ROLES

REPO = Path(__file__).resolve().parent.parent
ADULT_QI = [
    "age",
    "education",
    "marital-status",
    "native-country",
    "race",
    "salary-class",
    "sex",
    "workclass",
]
CENSUS_QI = [c for c, role in CENSUS_ROLES.items() if role == "qi"]
SENSITIVE = "occupation"
L_SAMPLE = 100_000
T_SAMPLE = 20_000
FAST_RUNS = 3
K_ALONE_TARGET = 2.0  # kanon k alone within 2x of the GROUP BY
FULL_TARGET_S = 3.0  # full check on 1M rows
VERIFY_TARGET = 3.0  # kanon_verify within 3x of the full kanon_check
VERIFY_POLICY = (
    "{'k': 5, 'l': 2, 't': 0.5, 'identifying_columns': 0.01, 'suppressed': 0.05, 'rows': 0}"
)


# ---------------------------------------------------------------------------------------------
# Worker: one measurement in its own process


def _kanon_sql(table: str, qi: list[str], sensitive: str | None) -> str:
    args = f"qi := [{', '.join(literal(q) for q in qi)}]"
    if sensitive is not None:
        args += f", sensitive := {literal(sensitive)}"
    return (
        f"SELECT k, l_distinct, l_entropy, t, prosecutor_max, marketer "
        f"FROM kanon_check({literal(table)}, {args})"
    )


def _prepare(con: duckdb.DuckDBPyConnection, method: str, qi: list[str]) -> Any:
    """A no-argument function running ``method`` once and returning its result values."""
    if method == "group_by":
        sql = (
            "SELECT min(n) FROM (SELECT count(*) AS n FROM t GROUP BY "
            f"{', '.join(ident(q) for q in qi)})"
        )
        return lambda: {"k": con.execute(sql).fetchall()[0][0]}
    if method == "kanon_verify":
        con.execute("CREATE TABLE s AS SELECT * FROM t")  # the source; t is the release
        sql = (
            f"SELECT rule, value FROM kanon_verify('s', 't', qi := "
            f"[{', '.join(literal(q) for q in qi)}], sensitive := {literal(SENSITIVE)}, "
            f"policy := {VERIFY_POLICY})"
        )
        names = {"k": "k", "l": "l_distinct", "t": "t"}

        def run_verify() -> dict[str, Any]:
            rows = con.execute(sql).fetchall()
            return {names[r]: v for r, v in rows if r in names}

        return run_verify
    if method in ("kanon_k", "kanon_full"):
        sql = _kanon_sql("t", qi, SENSITIVE if method == "kanon_full" else None)

        def run_kanon() -> dict[str, Any]:
            rel = con.execute(sql)
            names = [d[0] for d in rel.description]
            (row,) = rel.fetchall()
            return dict(zip(names, row, strict=True))

        return run_kanon
    from pycanon import anonymity  # only the workers that need it pay for the import

    df = con.sql("SELECT * FROM t").df().reset_index(drop=True)  # fresh 0..n-1 index
    calls = {
        "pycanon_k": lambda: {"k": anonymity.k_anonymity(df, qi)},
        "pycanon_l": lambda: {"l_distinct": anonymity.l_diversity(df, qi, [SENSITIVE])},
        "pycanon_l_entropy": lambda: {
            "l_entropy": anonymity.entropy_l_diversity(df, qi, [SENSITIVE])
        },
        "pycanon_t": lambda: {"t": anonymity.t_closeness(df, qi, [SENSITIVE])},
    }
    return calls[method]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    con = kanon.install(duckdb.connect())
    con.execute(f"ATTACH {literal(spec['db'])} AS src (READ_ONLY)")
    con.execute(f"CREATE TABLE t AS SELECT * FROM src.{ident(spec['table'])}")
    con.execute("DETACH src")
    run = _prepare(con, spec["method"], spec["qi"])
    pycanon = spec["method"].startswith("pycanon")
    if not pycanon:
        run()  # warm-up, before the memory baseline: first-use costs are not per query
    gc.collect()
    load_peak = proc_status("VmHWM")
    tracked = reset_peak_rss()
    before = proc_status("VmRSS")
    times = []
    for _ in range(1 if pycanon else FAST_RUNS):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    peak = proc_status("VmHWM")
    grown = peak - before if tracked and peak is not None and before is not None else None
    return {
        "time": statistics.median(times),
        "peak_grown": grown,
        "proc_peak": process_peak(load_peak, peak),
        "result": {k: (float(v) if v is not None else None) for k, v in result.items()},
    }


# ---------------------------------------------------------------------------------------------
# Parent: build the data once, run the workers, print the table


@dataclass
class Row:
    dataset: str
    rows: int
    method: str
    label: str
    time: float | None = None
    peak_grown: int | None = None
    proc_peak: int | None = None
    result: dict[str, float | None] | None = None
    note: str = ""


LABELS = {
    "group_by": "DuckDB GROUP BY k (floor)",
    "kanon_k": "kanon_check, k alone",
    "kanon_full": "kanon_check full (k,l,t,risk)",
    "kanon_verify": "kanon_verify (k,l,t,identifying,...)",
    "pycanon_k": "pycanon k_anonymity",
    "pycanon_l": "pycanon l_diversity",
    "pycanon_l_entropy": "pycanon entropy_l_diversity",
    "pycanon_t": "pycanon t_closeness",
}


def build_data(db: Path, rows: int, seed: int) -> dict[str, int]:
    """Write adult, census and the census samples into ``db``; return their row counts."""
    from kanon.datagen import census

    adult = data_dir() / "adult" / "adult.csv"
    if not adult.is_file():
        sys.exit(f"benchmark data missing: {adult} (set KANON_DATA to the data folder)")
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
            [str(adult)],
        )
        census(con, "census", rows=rows, seed=seed)
        for n in (L_SAMPLE, T_SAMPLE):
            con.execute(
                f"CREATE TABLE census_{n} AS SELECT * FROM census ORDER BY person_id LIMIT {n}"
            )
        counts = {}
        for table in ("adult", "census", f"census_{L_SAMPLE}", f"census_{T_SAMPLE}"):
            counts[table] = con.execute(f"SELECT count(*) FROM {ident(table)}").fetchall()[0][0]
    return counts


def plan(counts: dict[str, int], skip_pycanon: bool) -> list[tuple[str, str, list[str], str]]:
    """(table, method, qi, dataset label) for every measurement, in print order."""
    fast = ["group_by", "kanon_k", "kanon_full", "kanon_verify"]
    pycanon_all = ["pycanon_k", "pycanon_l", "pycanon_l_entropy", "pycanon_t"]
    jobs = [("adult", m, ADULT_QI, "adult") for m in fast]
    if not skip_pycanon:
        jobs += [("adult", m, ADULT_QI, "adult") for m in pycanon_all]
    jobs += [("census", m, CENSUS_QI, "census") for m in fast]
    if not skip_pycanon:
        jobs.append(("census", "pycanon_k", CENSUS_QI, "census"))
        for n, methods in (
            (L_SAMPLE, ["pycanon_l", "pycanon_l_entropy"]),
            (T_SAMPLE, ["pycanon_t"]),
        ):
            table = f"census_{n}"
            if counts[table] < counts["census"]:  # the agreement row, on the same sample
                jobs.append((table, "kanon_full", CENSUS_QI, "census sample"))
                jobs += [(table, m, CENSUS_QI, "census sample") for m in methods]
            else:  # the "sample" is the whole table
                jobs += [("census", m, CENSUS_QI, "census") for m in methods]
    return jobs


def run_job(db: Path, table: str, method: str, qi: list[str], timeout: float) -> dict[str, Any]:
    spec = {"db": str(db), "table": table, "method": method, "qi": qi}
    return run_worker(__file__, spec, timeout)


def _value(result: dict[str, float | None] | None, key: str, fmt: str) -> str:
    if not result or result.get(key) is None:
        return "-"
    return format(result[key], fmt)


def print_table(rows: list[Row]) -> None:
    header = (
        "dataset",
        "rows",
        "method",
        "time s",
        "peak+ MiB",
        "proc MiB",
        "k",
        "l",
        "l_entropy",
        "t",
    )
    lines = [
        (
            r.dataset,
            f"{r.rows:,}",
            r.label,
            r.note if r.time is None else f"{r.time:.3f}",
            mib(r.peak_grown) if r.time is not None else "",
            mib(r.proc_peak) if r.time is not None else "",
            _value(r.result, "k", ".0f"),
            _value(r.result, "l_distinct", ".0f"),
            _value(r.result, "l_entropy", ".4g"),
            _value(r.result, "t", ".6f"),
        )
        for r in rows
    ]
    print_table_rows(header, lines, left={0, 2})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="generated rows")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated rows")
    parser.add_argument("--skip-pycanon", action="store_true", help="quick run, no pycanon")
    parser.add_argument(
        "--pycanon-timeout", type=float, default=300, help="seconds before a pycanon run is cut"
    )
    args = parse_or_serve(parser, worker)
    if args is None:
        return

    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchall()[0][0]
    print(
        f"kanon_check benchmark: duckdb {duckdb.__version__}, {os.cpu_count()} CPUs, "
        f"DuckDB threads {threads}, python {sys.version.split()[0]}"
    )
    print(
        "time: median of 3 runs after one warm-up (DuckDB, kanon), one run (pycanon); load "
        "excluded.\npeak+ MiB: rise of the worker's peak RSS over its RSS just before the "
        "timed runs (VmHWM reset after loading and warm-up);\nproc MiB: the worker process's "
        "whole-life peak RSS (VmHWM: interpreter, DuckDB, loaded table / pandas frame).\n"
        "Each measurement runs in a fresh process. l = distinct l-diversity; t = max EMD, "
        "equal distance (occupation is text)."
    )
    with tempfile.TemporaryDirectory(prefix="kanon-bench-") as tmp:
        db = Path(tmp) / "bench.duckdb"
        start = time.perf_counter()
        counts = build_data(db, args.rows, args.seed)
        print(f"data written in {time.perf_counter() - start:.1f} s (not timed below)\n")
        rows: list[Row] = []
        for table, method, qi, dataset in plan(counts, args.skip_pycanon):
            timeout = args.pycanon_timeout if method.startswith("pycanon") else 600
            out = run_job(db, table, method, qi, timeout)
            rows.append(
                Row(
                    dataset=dataset,
                    rows=counts[table],
                    method=method,
                    label=LABELS[method],
                    time=out.get("time"),
                    peak_grown=out.get("peak_grown"),
                    proc_peak=out.get("proc_peak"),
                    result=out.get("result"),
                    note=out.get("note", ""),
                )
            )
            print(f"  measured {dataset} {counts[table]:,} {method}", file=sys.stderr)
    print_table(rows)
    print_targets(rows, counts["census"])


def print_targets(rows: list[Row], census_rows: int) -> None:
    def timing(dataset: str, method: str) -> float | None:
        for r in rows:
            if r.dataset == dataset and r.method == method:
                return r.time
        return None

    print()
    for dataset in ("adult", "census"):
        k_alone, floor = timing(dataset, "kanon_k"), timing(dataset, "group_by")
        if k_alone is None or floor is None:
            continue
        ratio = k_alone / floor
        verdict = "PASS" if ratio <= K_ALONE_TARGET else "FAIL"
        print(
            f"{dataset}: kanon k alone / GROUP BY = {k_alone:.3f} s / {floor:.3f} s = "
            f"{ratio:.2f}x   target <= {K_ALONE_TARGET:g}x: {verdict}"
        )
    for dataset in ("adult", "census"):
        verify, check_full = timing(dataset, "kanon_verify"), timing(dataset, "kanon_full")
        if verify is None or check_full is None:
            continue
        ratio = verify / check_full
        print(
            f"{dataset}: kanon_verify / kanon_check = {verify:.3f} s / {check_full:.3f} s = "
            f"{ratio:.2f}x   target <= {VERIFY_TARGET:g}x: "
            f"{'PASS' if ratio <= VERIFY_TARGET else 'FAIL'}"
        )
    full = timing("census", "kanon_full")
    if full is None:
        return
    target = f"full check on 1,000,000 rows <= {FULL_TARGET_S:g} s"
    if census_rows == 1_000_000:
        print(f"census: {target}: {full:.3f} s: {'PASS' if full <= FULL_TARGET_S else 'FAIL'}")
    else:
        print(f"census: {target}: not measured (ran on {census_rows:,} rows: {full:.3f} s)")


if __name__ == "__main__":
    main()
