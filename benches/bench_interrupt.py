"""How fast ``con.interrupt()`` stops a running kanon statement, per method.

Usage::

    python benches/bench_interrupt.py [--rows 1000000] [--after 1.0]
        [--methods forest,forest_range,mondrian,optimal,datafly,mu_argus,hkp]

Data: ``kanon.datagen.census`` (seeded) at ``--rows`` rows with its 8 quasi-identifiers
and their default generalizers, k = 5; hkp runs on the FIMI chess transactions (3,196
rows, 75 items, dense) at h = 1, k = 2, p = 4 (about 2 million candidate sets).

Each statement runs in the main thread (DuckDB interrupts a statement safely there). The
kernel entry point of the method (``kanon._core.forest``, ...) is wrapped to
note when the kernel starts; ``--after`` seconds later a timer thread calls
``con.interrupt()``. The table prints the seconds from that call to the exception and
the exception's class (or the statement's time when it ended before the interrupt).
Run it on an older checkout (with the identifiers and insensitive arguments removed) to compare.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

import duckdb

import kanon
from kanon import _core
from kanon.datagen import census

OTHERS = "['occupation', 'income', 'hours_per_week']"
QI = "['age', 'sex', 'race', 'marital_status', 'education', 'zip', 'birth_date', 'native_country']"
# The shared data folder next to the checkout, or $KANON_DATA.
DATA = Path(os.environ.get("KANON_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CHESS = DATA / "transactions" / "chess.dat"


KERNELS = {
    "forest": "forest",
    "forest_range": "forest",
    "mondrian": "mondrian",
    "optimal": "optimal",
    "datafly": "historic",
    "mu_argus": "historic",
    "hkp": "hkp",
}


def _statement(method: str) -> str:
    if method == "hkp":
        return "SELECT count(*) FROM kanon_hkp('chess', h := 1.0, k := 2, p := 4, private := [])"
    extra = ", labels := 'range'" if method == "forest_range" else ""
    name = "forest" if method == "forest_range" else method
    return (
        f"SELECT count(*) FROM kanon('census', k := 5, qi := {QI}, method := '{name}'"
        f", identifiers := ['person_id', 'name'], insensitive := {OTHERS}{extra})"
    )


def _measure(con: duckdb.DuckDBPyConnection, method: str, after: float) -> tuple[str, str]:
    """(seconds from the interrupt to the exception, exception class) of one run."""
    entered = threading.Event()
    name = KERNELS[method]
    original = getattr(_core, name)

    def noted(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        return original(*args, **kwargs)

    fired: list[float] = []
    finished = threading.Event()

    def fire() -> None:
        entered.wait()
        if not finished.wait(after):
            fired.append(time.perf_counter())
            con.interrupt()

    setattr(_core, name, noted)
    timer = threading.Thread(target=fire, daemon=True)
    start = time.perf_counter()
    timer.start()
    try:
        con.execute(_statement(method)).fetchall()
    except Exception as exc:  # the interrupt's exception, whatever its class
        end = time.perf_counter()
        if not fired:
            return "-", f"{type(exc).__name__}: {exc}"[:80]
        return f"{end - fired[0]:.2f}", type(exc).__name__
    else:
        end = time.perf_counter()
        return f"ended first ({end - start:.1f} s)", "-"
    finally:
        finished.set()
        entered.set()
        timer.join()
        setattr(_core, name, original)


def main() -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--after", type=float, default=1.0)
    parser.add_argument(
        "--methods", default="forest,forest_range,mondrian,optimal,datafly,mu_argus,hkp"
    )
    args = parser.parse_args()
    con = kanon.install(duckdb.connect())
    census(con, "census", rows=args.rows, seed=1)
    con.execute(
        "CREATE TABLE chess AS SELECT list_transform(string_split(trim(line), ' '), "
        "lambda x: CAST(x AS INTEGER)) AS items FROM read_csv(?, columns = {'line': 'VARCHAR'}, "
        "header = false, delim = '\\t')",
        [str(CHESS)],
    )
    print("| method | rows | interrupt (s into the kernel) | stop (s) | exception |")
    print("|---|---:|---:|---:|---|")
    for method in args.methods.split(","):
        rows = 3196 if method == "hkp" else args.rows
        stop, exc = _measure(con, method, args.after)
        print(f"| {method} | {rows:,} | {args.after:g} | {stop} | {exc} |", flush=True)


if __name__ == "__main__":
    main()
