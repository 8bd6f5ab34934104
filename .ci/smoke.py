"""Smoke test of an installed wheel (run by .ci/run in a fresh virtual environment).

Anonymizes a small generated table with each local method and the optimal search and
checks every release with a plain GROUP BY: no row lost, every class at least k rows.
"""

from __future__ import annotations

import sys

import duckdb

import kanon

K = 5
QI = ["age", "zip", "sex"]


def main() -> None:
    """Run the smoke test; exit non-zero on the first failure."""
    con = kanon.install(duckdb.connect())
    con.execute(
        "CREATE TABLE people AS SELECT i AS id, 20 + (i * 7) % 50 AS age, "
        "10000 + (i * 13) % 40 AS zip, ['f', 'm'][1 + i % 2] AS sex, "
        "['flu', 'cold', NULL][1 + i % 3] AS diagnosis FROM range(2000) r(i)"
    )
    kanon.configure(con, "people", qi=QI, identifiers=["id"], sensitive=["diagnosis"])
    cols = ", ".join(QI)
    for method in ("forest", "mondrian", "priority", "iterated", "optimal"):
        con.execute(
            f"CREATE OR REPLACE TABLE rel AS SELECT * FROM kanon('people', k := {K}, "
            f"method := '{method}')"
        )
        ((rows, smallest),) = con.execute(
            f"SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY {cols})"
        ).fetchall()
        if rows != 2000 or smallest < K:
            sys.exit(f"{method}: {rows} rows, smallest class {smallest}")
        print(f"{method}: 2000 rows, smallest class {smallest}")
    print(f"kanon {kanon.__version__} on Python {sys.version.split()[0]}: smoke test passed")


if __name__ == "__main__":
    main()
