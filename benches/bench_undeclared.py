"""What the undeclared-column check costs a release (issue 43, point 2).

Usage::

    python benches/bench_undeclared.py [--rows 1000000] [--methods forest,mondrian,optimal]
        [--k 5] [--repeat 3]

On ``kanon.datagen.census`` (8 QIs), each method's ``CREATE TABLE rel AS SELECT * FROM
kanon(...)`` four ways, with two columns added (``dataset``, one value, and ``note``,
NULL): every other column declared (no check); ``dataset`` and ``note`` undeclared (the
release is checked, one ``GROUP BY`` of the released QIs and each column, and passes);
``occupation`` undeclared (refused by the check on the release); ``income`` undeclared
(a value fewer than k rows hold: refused before the release). Prints the best of
``--repeat`` runs, in seconds, and the passing check's share of the release.
"""

from __future__ import annotations

import argparse
import time

import duckdb

import kanon
from kanon.datagen import census

QI = ["age", "sex", "race", "marital_status", "education", "zip", "birth_date", "native_country"]
OTHERS = ["occupation", "income", "hours_per_week", "dataset", "note"]
CASES = {
    "declared": [],
    "2 undeclared, passing": ["dataset", "note"],
    "occupation undeclared": ["occupation"],
    "income undeclared": ["income"],
}


def release(con: duckdb.DuckDBPyConnection, method: str, k: int, undeclared: list[str]) -> str:
    """Time one release; return its seconds or the start of its error."""
    qi = ", ".join(f"'{q}'" for q in QI)
    ins = ", ".join(f"'{c}'" for c in OTHERS if c not in undeclared)
    sql = (
        f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('t', k := {k}, qi := [{qi}], "
        f"method := '{method}', identifiers := ['person_id', 'name'], "
        f"insensitive := [{ins}])"
    )
    start = time.perf_counter()
    try:
        con.execute(sql)
    except duckdb.Error:
        return f"refused after {time.perf_counter() - start:.2f} s"
    return f"{time.perf_counter() - start:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--methods", default="forest,mondrian,optimal")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    con = kanon.install(duckdb.connect())
    con.execute("SET enable_progress_bar = false")
    census(con, "source", rows=args.rows, seed=1)
    con.execute(
        "CREATE TABLE t AS SELECT *, 'census' AS dataset, NULL::VARCHAR AS note FROM source"
    )
    print(f"census, {args.rows:,} rows, k = {args.k}; seconds, best of {args.repeat}")
    print("| method | " + " | ".join(CASES) + " | check's share |")
    print("|---|" + "---:|" * (len(CASES) + 1))
    for method in args.methods.split(","):
        cells = []
        for undeclared in CASES.values():
            runs = [release(con, method, args.k, undeclared) for _ in range(args.repeat)]
            timed = [float(r) for r in runs if not r.startswith("refused")]
            cells.append(f"{min(timed):.2f}" if timed else runs[-1])
        base, checked = cells[0], cells[1]
        share = (
            f"{float(checked) / float(base) - 1:+.0%}"
            if not base.startswith("refused") and not checked.startswith("refused")
            else ""
        )
        print(f"| {method} | " + " | ".join(cells) + f" | {share} |", flush=True)


if __name__ == "__main__":
    main()
