"""Spark benchmark: ``kanon.spark.anonymize`` against the DuckDB path on the same data.

Usage::

    python benches/bench_spark.py [--sizes 1000000,10000000] [--k 5]
        [--methods mondrian,forest,optimal] [--partition-rows 1000000]
        [--max-suppression 0.05]

Data: ``kanon.datagen.census`` (seeded; 13 columns) at each size, generated once into a
DuckDB file and written to Parquet in a temporary folder, with the demo's hierarchies
(``kanon.cli.demo.build_census_hierarchies``) for its 8 QIs; ``person_id`` and ``name`` are
identifiers, ``occupation`` and ``income`` sensitive, ``hours_per_week`` insensitive.

Per size and method, in this process, one run each:

* ``duckdb``: ``CREATE TABLE rel AS SELECT * FROM kanon('census', k := k, method := m)``
  on the DuckDB file (the table configured with those hierarchies; ``optimal`` with
  ``max_suppression``);
* ``spark``: ``kanon.spark.anonymize(spark.read.parquet(...), k, QIs, method=m,
  hierarchies=...)`` in ``local[2]`` (one session for the whole run, started before the
  timings), written to Parquet; the hierarchies are the same tables, as pyarrow Tables.

Time: the call to the release written (DuckDB table / Parquet files), planning and the
Spark jobs' sampling and counting included. Peak MiB: the largest resident set summed
over this process and its children (the JVM, Spark's Python workers), sampled every
0.1 s during the run. GCP: ``bench_scale.release_gcp`` over the released labels (the
Spark release read back into DuckDB). Smallest class: a plain ``GROUP BY`` over the
released QIs.

Target (issue 22): at 10M rows the Spark path within 3x of the DuckDB path's time, its
GCP within 10 % of it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
from bench_scale import release_gcp
from measure import ident, print_table

import kanon
import kanon.spark
from kanon.cli.demo import build_census_hierarchies
from kanon.datagen import CENSUS_ROLES, census

QI = [c for c, r in CENSUS_ROLES.items() if r == "qi"]


def _tree_rss(root: int) -> int:
    """Resident bytes of process ``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            continue
        total += pages * os.sysconf("SC_PAGE_SIZE")
    return total


class PeakSampler:
    """The peak of :func:`_tree_rss` of this process while the ``with`` block runs."""

    def __enter__(self) -> PeakSampler:
        self.peak = _tree_rss(os.getpid())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, _tree_rss(os.getpid()))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _smallest(con: duckdb.DuckDBPyConnection, table: str) -> int:
    cols = ", ".join(ident(c) for c in QI)
    ((n,),) = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM {table} GROUP BY {cols})"
    ).fetchall()
    return int(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--methods", default="mondrian,forest,optimal")
    parser.add_argument("--max-suppression", type=float, default=0.05)
    parser.add_argument("--partition-rows", type=int, default=kanon.spark.PARTITION_ROWS)
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kanon-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lines: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in (int(s) for s in args.sizes.split(",")):
            db = Path(tmp) / f"census{rows}.duckdb"
            con = kanon.install(duckdb.connect(str(db)))
            census(con, "census", rows=rows, seed=1)
            trees = build_census_hierarchies(con, "census")
            roles = {
                r: [c for c, x in CENSUS_ROLES.items() if x == r]
                for r in set(CENSUS_ROLES.values())
            }
            kanon.configure(
                con,
                "census",
                qi=trees,
                identifiers=roles["identifier"],
                sensitive=roles["sensitive"],
                insensitive=roles["insensitive"],
            )
            parquet = Path(tmp) / f"census{rows}.parquet"
            con.execute(f"COPY census TO '{parquet}' (FORMAT parquet)")
            arrow_trees = {
                c: con.sql(f"SELECT * FROM {ident(h)}").to_arrow_table() for c, h in trees.items()
            }
            for method in args.methods.split(","):
                extra: dict[str, Any] = {}
                if method == "optimal":
                    extra["max_suppression"] = args.max_suppression
                sql_extra = "".join(f", {key} := {value}" for key, value in extra.items())
                results: dict[str, dict[str, Any]] = {}
                with PeakSampler() as peak:
                    start = time.perf_counter()
                    con.execute(
                        f"CREATE OR REPLACE TABLE rel_duckdb AS SELECT * FROM kanon('census', "
                        f"k := {args.k}, method := '{method}'{sql_extra})"
                    )
                    seconds = time.perf_counter() - start
                results["duckdb"] = {"seconds": seconds, "peak": peak.peak}
                out = Path(tmp) / f"rel_{rows}_{method}.parquet"
                with PeakSampler() as peak:
                    start = time.perf_counter()
                    released = kanon.spark.anonymize(
                        spark.read.parquet(str(parquet)),
                        args.k,
                        QI,
                        method=method,
                        hierarchies=arrow_trees,
                        identifiers=roles["identifier"],
                        sensitive=roles["sensitive"],
                        insensitive=roles["insensitive"],
                        partition_rows=args.partition_rows,
                        **extra,
                    )
                    released.write.mode("overwrite").parquet(str(out))
                    seconds = time.perf_counter() - start
                results["spark"] = {"seconds": seconds, "peak": peak.peak}
                con.execute(
                    "CREATE OR REPLACE TABLE rel_spark AS SELECT * FROM read_parquet(?)",
                    [f"{out}/*.parquet"],
                )
                for path, table in (("duckdb", "rel_duckdb"), ("spark", "rel_spark")):
                    gcp, _ = release_gcp(con, "census", table, dict(trees))
                    (n,) = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0]
                    r = results[path]
                    lines.append(
                        (
                            f"{rows:,}",
                            method,
                            path,
                            f"{r['seconds']:.1f}",
                            f"{r['peak'] / 2**20:,.0f}",
                            f"{100 * gcp:.2f}",
                            str(_smallest(con, table)),
                            f"{n:,}",
                            f"{r['seconds'] / results['duckdb']['seconds']:.2f}",
                        )
                    )
            con.close()
    spark.stop()
    print_table(
        (
            "rows",
            "method",
            "path",
            "time s",
            "peak MiB",
            "GCP %",
            "min class",
            "rows out",
            "x duckdb",
        ),
        lines,
        {1, 2},
    )


if __name__ == "__main__":
    main()
