"""Benchmark of (h,k,p)-coherence (``kanon_hkp``) on the FIMI transaction datasets.

Usage::

    python benches/bench_hkp.py [--runs 3] [--seed 0] [--data retail,bms1,chess,t40]

Data (the folder is $KANON_DATA, else ``shared/data`` beside the repository, sub-folder
``transactions/``; a missing file is an error): retail, BMS-WebView-1, chess and the first
10,000 transactions of T40I10D100K, each loaded as one LIST column. Every run uses the
paper's preprocessing (``min_support := 0.001``: items in fewer than 0.1 % of the
transactions are dropped; on retail this leaves the paper's 2,117 items and average
length 7.53), h = 0.4 and 40 % public items drawn with ``seed`` (``public_fraction :=
0.4``), for k in {5, 10, 20} and p in {2, 3, 4}, with each removal method.

Per (data, k, p): the size-1 moles and minimal moles (the same for every method), then
per method the end-to-end time of ``SELECT * FROM kanon_hkp(...)`` fetched to Arrow
(planning included; one warm-up, then the median of ``--runs``) and the information loss
(occurrences of the suppressed items over all item occurrences after preprocessing), with
"forced" the loss of the size-1 moles alone, which every coherent suppression removes.

Targets (issue 6): retail at p = 3 in <= 2 s; information loss no worse than the paper's
MM/IL figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import duckdb
from measure import data_dir, ident, literal, print_table

import kanon

DATASETS = {
    "retail": "retail.dat",
    "bms1": "BMS-WebView-1.dat",
    "chess": "chess.dat",
    "t40": "T40I10D100K_first10k.dat",
}
METHODS = ("mmil", "1il", "mm", "rmall")
KS = (5, 10, 20)
PS = (2, 3, 4)
H = 0.4
PUBLIC = 0.4
MIN_SUPPORT = 0.001


def load(con: duckdb.DuckDBPyConnection, name: str, file: str) -> None:
    """Create table ``name`` (tid, items INTEGER[]) from a FIMI ``.dat`` file."""
    path = data_dir() / "transactions" / file
    if not path.is_file():
        sys.exit(f"benchmark data missing: {path} (set KANON_DATA)")
    con.execute(
        f"CREATE TABLE {ident(name)} AS SELECT row_number() OVER () AS tid, "
        "list_transform(string_split(trim(line), ' '), lambda x: CAST(x AS INTEGER)) AS items "
        "FROM read_csv(?, columns = {'line': 'VARCHAR'}, header = false, delim = '\t', "
        "quote = '', escape = '')",
        [str(path)],
    )


def args_sql(name: str, k: int, p: int, method: str, seed: int) -> str:
    return (
        f"{literal(name)}, h := {H}, k := {k}, p := {p}, public_fraction := {PUBLIC}, "
        f"seed := {seed}, min_support := {MIN_SUPPORT}, method := {literal(method)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default=",".join(DATASETS))
    opts = parser.parse_args()
    con = kanon.install(duckdb.connect())
    lines: list[tuple[str, ...]] = []
    for name in opts.data.split(","):
        load(con, name, DATASETS[name])
        for k in KS:
            for p in PS:
                times: dict[str, float] = {}
                losses: dict[str, float] = {}
                report: tuple = ()
                for method in METHODS:
                    sql = args_sql(name, k, p, method, opts.seed)
                    report = con.execute(f"SELECT * FROM kanon_hkp_report({sql})").fetchall()[0]
                    con.sql(f"SELECT * FROM kanon_hkp({sql})").to_arrow_table()  # warm-up
                    runs = []
                    for _ in range(opts.runs):
                        start = time.perf_counter()
                        con.sql(f"SELECT * FROM kanon_hkp({sql})").to_arrow_table()
                        runs.append(time.perf_counter() - start)
                    times[method] = statistics.median(runs)
                    losses[method] = report[3]
                size1, moles = report[1], report[2]
                # Occurrences of the size-1 moles: every coherent suppression removes them.
                support = con.execute(
                    f"SELECT count(*) FROM (SELECT unnest(items) AS i FROM {ident(name)}) "
                    "WHERE i IN (SELECT unnest(CAST(? AS INTEGER[])))",
                    [size1],
                ).fetchall()[0][0]
                forced = support / report[5] if report[5] else 0.0
                lines.append(
                    (
                        name,
                        str(k),
                        str(p),
                        f"{report[10]:,} / {report[11]:,}",
                        f"{len(size1):,}",
                        f"{len(moles):,}",
                        " / ".join(f"{times[m]:.2f}" for m in METHODS),
                        " / ".join(f"{100 * losses[m]:.2f}" for m in METHODS),
                        f"{100 * forced:.2f}",
                    )
                )
                print(".", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(
        f"h = {H}, {100 * PUBLIC:.0f} % public items (seed {opts.seed}), min_support "
        f"{MIN_SUPPORT}; times: end-to-end SQL, median of {opts.runs}; methods "
        + " / ".join(METHODS)
    )
    print_table(
        (
            "data",
            "k",
            "p",
            "items / public",
            "size-1 moles",
            "minimal moles",
            "time s",
            "IL %",
            "forced IL %",
        ),
        lines,
        {0},
    )


if __name__ == "__main__":
    main()
