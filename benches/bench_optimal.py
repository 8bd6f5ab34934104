"""Benchmark of the optimal full-domain search (``method := 'optimal'``) against anjana.

Usage::

    python benches/bench_optimal.py [--rows 1200000] [--skip-peers] [--timeout S]

Data (the folder is $KANON_DATA, else ``shared/data`` beside the repository), k = 5, with
0 % and 5 % suppression, metric ``loss`` (GCP):

* Adult with ARX's 8 benchmark QIs (occupation left out) and with all 9, ARX hierarchies;
* CUP (63,441 rows) with ARX's 7 QIs (AGE, GENDER, INCOME, MINRAMNT, NGIFTALL, STATE, ZIP);
* FARS ``fars_int`` (100,937 rows) with ARX's 7 QIs (iage, ideathday, ideathmon,
  ihispanic, iinjury, irace, isex). ``fars_int_hierarchy_iage.csv`` lists the value 99
  twice with different parents; the first row is kept (the file is not a valid
  hierarchy as it is);
* the seeded census-like table of ``kanon.datagen`` (default 1.2M rows, 8 QIs with the
  demo's hierarchies).

Per run, in a fresh worker process: the search time in the kernel (``kanon_search``:
the process's first search, then, after the end-to-end runs, the median of three), the
end-to-end time of ``SELECT * FROM kanon(..., method := 'optimal')`` fetched to Arrow
(planning included; one warm-up, then the median of three), the lattice nodes and
how many were grouped, the optimum (levels, suppressed rows, GCP) and peak memory. anjana
(global recoding with the same hierarchies; it treats its suppression limit as a target)
runs on Adult in the same script; its release is measured with ``kanon.metrics``, the
rows it drops counting as fully lost (as suppressed rows do in kanon's loss).

Targets (issue 4): Adult search <= 0.03 s and <= 0.5 s end to end; 1.2M rows <= 2 s
without suppression and <= 10 s with 5 %.
"""

from __future__ import annotations

import argparse
import csv
import gc
import statistics
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

import duckdb
from measure import (
    ADULT_QI,
    data_dir,
    ident,
    mib,
    parse_or_serve,
    print_table,
    proc_status,
    reset_peak_rss,
    run_worker,
)

import kanon
from kanon.cli.demo import build_census_hierarchies
from kanon.datagen import CENSUS_ROLES, census

if TYPE_CHECKING:
    from pathlib import Path

ADULT9 = ADULT_QI
ADULT8 = [c for c in ADULT9 if c != "occupation"]
CUP = ["AGE", "GENDER", "INCOME", "MINRAMNT", "NGIFTALL", "STATE", "ZIP"]
FARS = ["iage", "ideathday", "ideathmon", "ihispanic", "iinjury", "irace", "isex"]
K = 5
RUNS = 3
SUPPRESSION = [0.0, 0.05]


def _hierarchy_from_csv(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> None:
    """An ARX hierarchy file as a table, keeping the first row of a value listed twice."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f, delimiter=";") if r]
    seen: set[str] = set()
    kept = []
    for r in rows:
        if r[0] not in seen:
            seen.add(r[0])
            kept.append(r)
    width = len(kept[0])
    cols = ", ".join(f"level_{i} VARCHAR" for i in range(width))
    con.execute(f"CREATE TABLE {ident(name)} ({cols})")
    con.executemany(f"INSERT INTO {ident(name)} VALUES ({', '.join('?' * width)})", kept)


def _load_csv_dataset(
    con: duckdb.DuckDBPyConnection, folder: str, file: str, qi: list[str], *, lenient: bool
) -> None:
    base = data_dir() / folder
    path = base / file
    if not path.is_file():
        sys.exit(f"benchmark data missing: {path} (set KANON_DATA)")
    con.execute(
        "CREATE TABLE data AS SELECT * FROM read_csv(?, delim = ';', header = true, "
        "all_varchar = true)",
        [str(path)],
    )
    prefix = file.removesuffix(".csv")
    for c in qi:
        hierarchy = base / f"{prefix}_hierarchy_{c}.csv"
        if lenient:
            _hierarchy_from_csv(con, hierarchy, f"h_{c}")
        else:
            kanon.hierarchy.from_csv(con, hierarchy, f"h_{c}")


def load(con: duckdb.DuckDBPyConnection, dataset: str, rows: int) -> list[str]:
    """Create table ``data`` and its hierarchies; configure; return the QIs."""
    if dataset.startswith("adult"):
        qi = ADULT8 if dataset == "adult8" else ADULT9
        _load_csv_dataset(con, "adult", "adult.csv", qi, lenient=False)
    elif dataset == "cup":
        qi = CUP
        _load_csv_dataset(con, "cup", "cup.csv", qi, lenient=False)
    elif dataset == "fars":
        qi = FARS
        _load_csv_dataset(con, "fars", "fars_int.csv", qi, lenient=True)
    else:
        census(con, "data", rows=rows, seed=42)
        hierarchies = build_census_hierarchies(con, "data")
        qi = [c for c, r in CENSUS_ROLES.items() if r == "qi"]
        roles = {
            role: [c for c, r in CENSUS_ROLES.items() if r == role]
            for role in ("identifier", "sensitive", "insensitive")
        }
        kanon.configure(
            con,
            "data",
            qi={c: hierarchies[c] for c in qi},
            identifiers=roles["identifier"],
            sensitive=roles["sensitive"],
            insensitive=roles["insensitive"],
        )
        return qi
    kanon.configure(con, "data", qi={c: f"h_{c}" for c in qi})
    return qi


def _anjana(con: duckdb.DuckDBPyConnection, qi: list[str], suppression: float) -> Any:
    from anjana.anonymity import k_anonymity

    df = con.sql("SELECT * FROM data").df()
    hierarchies = {}
    for c in qi:
        h = con.sql(f"SELECT * FROM {ident('h_' + c)}").df()
        hierarchies[c] = {i: h.iloc[:, i].astype(str).to_numpy() for i in range(h.shape[1])}
        df[c] = df[c].astype(str)

    def run() -> Any:
        return k_anonymity(df, [], qi, K, 100 * suppression, hierarchies)

    return run


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    con = kanon.install(duckdb.connect())
    qi = load(con, spec["dataset"], spec["rows"])
    rows = con.execute("SELECT count(*) FROM data").fetchall()[0][0]
    suppression = spec["suppression"]
    gc.collect()
    reset_peak_rss()
    before = proc_status("VmRSS")
    if spec["method"] == "anjana":
        run = _anjana(con, qi, suppression)
        start = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - start
        result = result.drop(columns=[c for c in result.columns if c not in qi])
        con.register("release_frame", result)
        con.execute("CREATE TABLE release AS SELECT * FROM release_frame")
        m = kanon.metrics("data", "release", con=con, k=K)
        stars = con.execute(
            "SELECT count(*) FROM release WHERE " + " AND ".join(f"{ident(c)} = '*'" for c in qi)
        ).fetchall()[0][0]
        peak = proc_status("VmHWM")
        # anjana drops the rows it suppresses: they lose everything (1 per cell), as
        # suppressed rows do in kanon's loss.
        dropped = rows - m.rows
        return {
            "rows": rows,
            "first": None,
            "search": None,
            "e2e": seconds,
            "nodes": None,
            "checked": None,
            "levels": "-",
            "suppressed": stars + dropped,
            "gcp": (m.gcp * m.rows + dropped) / rows,
            "min_class": m.min_class,
            "peak": None if peak is None or before is None else peak - before,
        }
    found = kanon.search("data", K, con=con, max_suppression=suppression)
    sql = (
        f"SELECT * FROM kanon('data', k := {K}, method := 'optimal', "
        f"max_suppression := {suppression})"
    )
    con.sql(sql).to_arrow_table()  # warm-up
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        release = con.sql(sql).to_arrow_table()
        times.append(time.perf_counter() - start)
    searches = [
        kanon.search("data", K, con=con, max_suppression=suppression).seconds for _ in range(RUNS)
    ]
    peak = proc_status("VmHWM")
    con.register("release_arrow", release)
    con.execute("CREATE TABLE release AS SELECT * FROM release_arrow")
    m = kanon.metrics("data", "release", con=con, k=K)
    return {
        "rows": rows,
        "first": found.seconds,
        "search": statistics.median(searches),
        "e2e": statistics.median(times),
        "nodes": found.nodes,
        "checked": found.checked,
        "levels": ",".join(str(found.levels[c]) for c in qi),
        "suppressed": found.suppressed,
        "gcp": m.gcp,
        "min_class": m.min_class,
        "peak": None if peak is None or before is None else peak - before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_200_000, help="generated census rows")
    parser.add_argument("--skip-peers", action="store_true", help="kanon only")
    parser.add_argument(
        "--datasets", default="adult8,adult9,cup,fars,census", help="comma-separated subset"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per worker")
    args = parse_or_serve(parser, worker)
    if args is None:
        return
    datasets = args.datasets.split(",")
    runs = [(d, "kanon") for d in datasets]
    if not args.skip_peers and "adult8" in datasets:
        runs.insert(1, ("adult8", "anjana"))
    lines = []
    outcomes: dict[tuple[str, str, float], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory():
        for dataset, method in runs:
            for suppression in SUPPRESSION:
                spec = {
                    "dataset": dataset,
                    "method": method,
                    "suppression": suppression,
                    "rows": args.rows,
                }
                out = run_worker(__file__, spec, args.timeout)
                outcomes[dataset, method, suppression] = out
                print(f"  done {dataset} {method} {suppression:.0%}", file=sys.stderr, flush=True)

                def fmt(key: str, spec_: str, out: dict[str, Any] = out) -> str:
                    value = out.get(key)
                    return "-" if value is None else format(value, spec_)

                lines.append(
                    (
                        dataset,
                        "kanon optimal" if method == "kanon" else "anjana",
                        f"{suppression:.0%}",
                        fmt("rows", ",d"),
                        fmt("first", ".4f"),
                        fmt("search", ".4f"),
                        out["note"] if "e2e" not in out else f"{out['e2e']:.3f}",
                        fmt("nodes", ",d"),
                        fmt("checked", ",d"),
                        str(out.get("levels", "")),
                        fmt("suppressed", ",d"),
                        "-" if out.get("gcp") is None else f"{100 * out['gcp']:.2f}",
                        fmt("min_class", "d"),
                        mib(out.get("peak")) if "e2e" in out else "",
                    )
                )
    header = (
        "dataset",
        "method",
        "supp",
        "rows",
        "1st search s",
        "search s",
        "e2e s",
        "nodes",
        "checked",
        "levels",
        "suppressed",
        "GCP %",
        "min class",
        "peak+ MiB",
    )
    print_table(header, lines, left={0, 1, 9})
    print()
    for (dataset, method, suppression), limit_search, limit_e2e in (
        (("adult8", "kanon", 0.0), 0.03, 0.5),
        (("adult8", "kanon", 0.05), 0.03, 0.5),
        (("adult9", "kanon", 0.0), 0.03, 0.5),
        (("adult9", "kanon", 0.05), 0.03, 0.5),
        # ARX's 2.5 s / 67 s (4 cores) are search times; kanon's end to end also codes
        # the rows in DuckDB and writes the release.
        (("census", "kanon", 0.0), 2.0, 2.0),
        (("census", "kanon", 0.05), 10.0, 10.0),
    ):
        out = outcomes.get((dataset, method, suppression), {})
        if "e2e" not in out:
            continue
        checks = []
        if limit_search is not None:
            ok = out["search"] <= limit_search
            checks.append(
                f"search {out['search']:.4f} s (<= {limit_search}: {'PASS' if ok else 'FAIL'})"
            )
        ok = out["e2e"] <= limit_e2e
        checks.append(f"end to end {out['e2e']:.3f} s (<= {limit_e2e}: {'PASS' if ok else 'FAIL'})")
        print(f"{dataset} {suppression:.0%}: " + "; ".join(checks))


if __name__ == "__main__":
    main()
