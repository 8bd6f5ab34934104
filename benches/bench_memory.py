"""Memory floors against kanon's estimate of them (issue 43: ``memory_limit`` checks).

Usage::

    python benches/bench_memory.py [--rows 250000] [--shapes census,uniform]
        [--methods forest,mondrian,optimal] [--threads 1] [--k 10] [--precision 0.08]

Per shape (``bench_shapes.py``'s, built once into a DuckDB file), method (any of
``kanon``'s, with their defaults) and thread
count: kanon's estimate of the plan's floor (``kanon.plan.release.memory``, read from its
error under a limit of 1 byte per estimated MB's millionth), the floor itself (the
smallest ``memory_limit`` at which ``SELECT count(*) FROM kanon(...)`` finishes, with
the check switched off, bisected to ``--precision``), the estimate over the floor, the
time without a limit, and what a run at the estimate does (it should finish). Each
run is a fresh worker process, so no cache carries over.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import re
import sys
import tempfile
import time
from pathlib import Path

import duckdb

import kanon
import kanon.plan.release.memory as memory

sys.path.insert(0, str(Path(__file__).parent))
from bench_shapes import SHAPES, TABLE, build

#: The estimate read back in millionths of a MB: COVER scaled by this much.
SCALE = 1e6


def _run(
    db: str, sql: str, threads: int, limit_mb: float | None, cover: float, out: mp.Queue
) -> None:
    """Run ``sql`` in this process; put ("ok" | "oom" | "error", text, seconds)."""
    memory.COVER = cover
    con = kanon.install(duckdb.connect(db))
    con.execute(f"SET threads = {threads}")
    con.execute("SET enable_progress_bar = false")
    if limit_mb is not None:
        con.execute(f"SET memory_limit = '{math.ceil(limit_mb)}MB'")
    start = time.perf_counter()
    try:
        con.execute(f"SELECT count(*) FROM ({sql})").fetchall()
        out.put(("ok", "", time.perf_counter() - start))
    except duckdb.OutOfMemoryException as error:
        out.put(("oom", str(error), time.perf_counter() - start))
    except duckdb.Error as error:
        out.put(("error", str(error), time.perf_counter() - start))


def run(
    db: str, sql: str, threads: int, limit_mb: float | None, cover: float
) -> tuple[str, str, float]:
    """:func:`_run` in a fresh process."""
    spawn = mp.get_context("spawn")
    out: mp.Queue = spawn.Queue()
    worker = spawn.Process(target=_run, args=(db, sql, threads, limit_mb, cover, out))
    worker.start()
    result = out.get()
    worker.join()
    return result


def estimate(db: str, sql: str, threads: int) -> float | None:
    """kanon's estimate in MB: the check scaled to always fire, its number read back."""
    status, text, _ = run(db, sql, threads, None, memory.COVER * SCALE)
    found = re.search(r"needs about (\d+) MB", text)
    return None if status != "error" or found is None else int(found.group(1)) / SCALE


def floor(db: str, sql: str, threads: int, start: float, precision: float) -> tuple[float, float]:
    """The smallest limit (MB) at which ``sql`` finishes with the check off: (fails, fits)."""
    lo, hi = 0.0, max(start, 16.0)
    while run(db, sql, threads, hi, 0.0)[0] != "ok":
        lo, hi = hi, hi * 2
    if lo == 0.0:
        lo = hi / 2
        while lo > 8 and run(db, sql, threads, lo, 0.0)[0] == "ok":
            lo, hi = lo / 2, lo
    while hi - lo > precision * hi:
        mid = (lo + hi) / 2
        if run(db, sql, threads, mid, 0.0)[0] == "ok":
            hi = mid
        else:
            lo = mid
    return lo, hi


def statement(method: str, k: int) -> str:
    """The release of ``method`` (the table's roles configured by ``build``)."""
    return f"SELECT * FROM kanon('{TABLE}', k := {k}, method := '{method}')"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--shapes", default="census,uniform")
    parser.add_argument("--methods", default="forest,mondrian,optimal")
    parser.add_argument("--threads", default="1")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--precision", type=float, default=0.08)
    args = parser.parse_args()
    shapes = args.shapes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            parser.error(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    print(f"rows {args.rows:,}, k = {args.k}; MB; floor bisected to {args.precision:.0%}")
    print("| shape | method | threads | estimate | floor | estimate / floor | time | at estimate |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="kanon-memory-") as tmp:
        for shape in shapes:
            db = str(Path(tmp) / f"{shape}.duckdb")
            build(Path(db), shape, args.rows)
            for method in args.methods.split(","):
                sql = statement(method, args.k)
                for threads in (int(t) for t in args.threads.split(",")):
                    status, text, seconds = run(db, sql, threads, None, 0.0)
                    if status != "ok":
                        print(f"| {shape} | {method} | {threads} | | | | | {text[:80]} |")
                        continue
                    guess = estimate(db, sql, threads)
                    lo, hi = floor(db, sql, threads, guess or 64.0, args.precision)
                    at = run(db, sql, threads, guess + 1, memory.COVER)[0] if guess else ""
                    ratio = f"{guess / hi:.2f}" if guess else ""
                    shown = f"{guess:,.0f}" if guess else "none"
                    print(
                        f"| {shape} | {method} | {threads} | {shown} | {lo:,.0f}-{hi:,.0f} | "
                        f"{ratio} | {seconds:.1f} s | {at} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
