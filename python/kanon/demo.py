"""``kanon demo``: a census-like table in an in-memory DuckDB, anonymized to k = 5.

Everything runs locally on generated data (no download): the seeded generator in
:mod:`kanon.datagen` creates the table, :mod:`kanon.hierarchy` builds a lookup table per
quasi-identifier, :func:`kanon.configure` records the roles, the report shows how
identifiable the raw table is, then :func:`kanon.materialize` stores a k-anonymous
release (the forest algorithm) as a plain SQL view, checked and measured.
"""

from __future__ import annotations

import time

import duckdb

from kanon import hierarchy
from kanon._check import check
from kanon._config import configure
from kanon._install import install
from kanon._materialize import materialize
from kanon._release import metrics
from kanon._sql import ident
from kanon.datagen import CENSUS_ROLES, census

__all__ = ["build_census_hierarchies", "run_demo"]


def build_census_hierarchies(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """Build one hierarchy table per census QI; return ``{column: hierarchy table}``."""
    built = {
        "age": hierarchy.intervals(con, "h_age", table=table, column="age", width=5, fanout=2),
        "sex": hierarchy.suppress(con, "h_sex", table=table, column="sex"),
        "race": hierarchy.auto(con, "h_race", table=table, column="race", fanout=3),
        "marital_status": hierarchy.auto(
            con, "h_marital_status", table=table, column="marital_status", fanout=3
        ),
        "education": hierarchy.auto(con, "h_education", table=table, column="education"),
        "zip": hierarchy.mask(con, "h_zip", table=table, column="zip"),
        "birth_date": hierarchy.dates(con, "h_birth_date", table=table, column="birth_date"),
        "native_country": hierarchy.auto(
            con, "h_native_country", table=table, column="native_country", fanout=4
        ),
    }
    return {column: h.name for column, h in built.items()}


def run_demo(rows: int = 20_000, seed: int = 42, k: int = 5) -> None:
    """Generate, configure, anonymize and report; prints to standard output."""
    con = install(duckdb.connect())
    try:
        table = census(con, "census", rows=rows, seed=seed)
        hierarchies = build_census_hierarchies(con, table)
        roles = CENSUS_ROLES
        configure(
            con,
            table,
            qi={c: hierarchies[c] for c, r in roles.items() if r == "qi"},
            identifiers=[c for c, r in roles.items() if r == "identifier"],
            sensitive=["occupation"],
            insensitive=[c for c, r in roles.items() if r in ("insensitive",) or c == "income"],
        )
        qis = [c for c, r in roles.items() if r == "qi"]
        print(f"kanon demo: {rows:,} generated census rows (seed {seed}) in DuckDB")
        print(f"hierarchies: {', '.join(f'{c} -> {h}' for c, h in hierarchies.items())}")
        print()
        print("== the table as it is ==")
        print(check(table, con=con))
        print()
        print(f"== SELECT * FROM kanon('census', k := {k}) ==")
        start = time.perf_counter()
        materialize(con, table, k=k, name=f"census_k{k}")
        seconds = time.perf_counter() - start
        release = f"census_k{k}"
        print(f"anonymized in {seconds:.2f} s, stored as the plain SQL view {release!r}")
        cols = ", ".join(ident(c) for c in ["person_id", *qis, "occupation"])
        print(con.sql(f"SELECT {cols} FROM {ident(release)} LIMIT 5"))
        # The release's own roles: income is insensitive (released as it is).
        print(check(release, qi=qis, sensitive="occupation", insensitive=["income"], con=con))
        print()
        print("== information kept ==")
        print(metrics(table, release, con=con, k=k))
        print()
        print(f"SQL:  SELECT * FROM kanon('census', k := {k});")
        print(f"      SELECT * FROM kanon_metrics('census', {release!r});")
        print(f"      SELECT * FROM kanon_check({release!r});")
    finally:
        con.close()
