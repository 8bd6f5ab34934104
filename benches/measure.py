"""Shared by the benchmarks: data folder, Adult with a numeric age, quoting, per-process
memory, workers, tables.

Memory: "peak+ MiB" is how far a worker's resident set (RSS) rose above its level just
before the timed runs (the kernel's high-water mark, VmHWM, reset through
/proc/self/clear_refs after loading and the warm-up); "proc MiB" is the worker's
whole-life peak RSS (VmHWM before the reset and after the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import duckdb

REPO = Path(__file__).resolve().parent.parent

#: UCI Adult's 9 columns in the file's order: all quasi-identifiers in ARX's tests, each
#: with an ARX hierarchy ``adult/adult_hierarchy_<column>.csv``.
ADULT_QI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]


def data_dir() -> Path:
    """Benchmark data: $KANON_DATA, else ``shared/data`` beside the repository."""
    return Path(os.environ.get("KANON_DATA", REPO.parent / "shared" / "data"))


def build_adult(db: Path) -> None:
    """UCI Adult (``age`` INTEGER, the other 8 columns text) as table ``adult`` and its
    9 ARX hierarchies as ``h_<column>`` in the DuckDB file ``db``; exits when missing.

    ``bench_range.py`` and ``bench_priority.py`` use it (ranges need a numeric age);
    ``bench_forest.py`` reads every column as text instead, as ARX does.
    """
    import duckdb  # here, not at the top: bench_same.py picks which kanon to import

    import kanon

    folder = data_dir() / "adult"
    if not (folder / "adult.csv").is_file():
        sys.exit(f"benchmark data missing: {folder / 'adult.csv'} (set KANON_DATA)")
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
            [str(folder / "adult.csv")],
        )
        for c in ADULT_QI:
            kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")


def load_adult(con: duckdb.DuckDBPyConnection, db: str) -> None:
    """Copy the tables of :func:`build_adult` from ``db`` into ``con``; configure the QIs."""
    copy_configured(con, db, "adult", ADULT_QI)


def copy_configured(con: duckdb.DuckDBPyConnection, db: str, table: str, qi: list[str]) -> None:
    """Copy ``table`` and the hierarchies ``h_<qi>`` from the DuckDB file ``db`` into
    ``con`` and configure the QIs with them."""
    import kanon

    con.execute(f"ATTACH {literal(db)} AS src (READ_ONLY)")
    con.execute(f"CREATE TABLE {ident(table)} AS SELECT * FROM src.{ident(table)}")
    for c in qi:
        con.execute(f"CREATE TABLE {ident('h_' + c)} AS SELECT * FROM src.{ident('h_' + c)}")
    con.execute("DETACH src")
    kanon.configure(con, table, qi={c: f"h_{c}" for c in qi})


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def proc_status(key: str) -> int | None:
    """A ``VmXXX`` line of /proc/self/status in bytes (None off Linux)."""
    try:
        with Path("/proc/self/status").open() as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def process_peak(*hwms: int | None) -> int:
    """Peak RSS of this process: the VmHWM readings, else ru_maxrss.

    ru_maxrss is only the fallback: on Linux it keeps the parent's RSS at fork across the
    exec, so a small worker of a big parent reports the parent's size.
    """
    known = [h for h in hwms if h is not None]
    if known:
        return max(known)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_worker(script: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run ``script --worker SPEC`` in a fresh process; its last stdout line is JSON."""
    try:
        proc = subprocess.run(
            [sys.executable, script, "--worker", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"note": f"did not finish in {timeout:.0f} s"}
    if proc.returncode < 0:  # a signal: SIGKILL is most often the out-of-memory killer
        return {"note": f"killed by signal {-proc.returncode} (out of memory?)"}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["?"]
        return {"note": f"failed: {tail[0][:60]}"}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def parse_or_serve(
    parser: argparse.ArgumentParser, worker: Callable[[dict[str, Any]], dict[str, Any]]
) -> argparse.Namespace | None:
    """Parse the command line; started by :func:`run_worker` (``--worker SPEC``), run
    ``worker(SPEC)``, print its result as JSON and return None instead."""
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return None
    return args


def chosen(parser: argparse.ArgumentParser, text: str, known: Sequence[str]) -> list[str]:
    """The comma-separated names of ``text``, each one of ``known`` (else a usage error)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = set(names) - set(known)
    if unknown:
        parser.error(f"unknown methods: {', '.join(sorted(unknown))}")
    return names


def mib(b: int | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:,.0f}"


def print_table(header: tuple[str, ...], lines: list[tuple[str, ...]], left: set[int]) -> None:
    """Print an aligned text table; columns in ``left`` are left-aligned."""
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]

    def fmt(cells: tuple[str, ...]) -> str:
        return " | ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(fmt(header))
    print("-+-".join("-" * w for w in widths))
    for line in lines:
        print(fmt(line))
