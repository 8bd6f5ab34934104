"""``kanon demo``: a census-like table in an in-memory DuckDB, its hierarchies, its privacy.

Everything runs locally on generated data (no download): the seeded generator in
:mod:`kanon.datagen` creates the table, :mod:`kanon.hierarchy` builds a lookup table per
quasi-identifier, :func:`kanon.configure` records the roles, and the report shows how
identifiable the raw table is and how far a coarse generalization through the
hierarchy tables moves k, l, t and the risks.
"""

from __future__ import annotations

import duckdb

from kanon import hierarchy
from kanon._check import check
from kanon._config import configure
from kanon._install import install
from kanon._sql import ident
from kanon.datagen import CENSUS_ROLES, census

__all__ = ["build_census_hierarchies", "generalized_view", "run_demo"]

#: Demo generalizations, finer to coarser: QI -> level of its hierarchy (0 = the value).
DEMO_LEVELS: list[dict[str, int]] = [
    {
        "age": 1,
        "sex": 0,
        "race": 0,
        "marital_status": 0,
        "education": 1,
        "zip": 2,
        "birth_date": 2,
        "native_country": 1,
    },
    {
        "age": 2,
        "sex": 0,
        "race": 1,
        "marital_status": 1,
        "education": 2,
        "zip": 3,
        "birth_date": 3,
        "native_country": 2,
    },
    {
        "age": 3,
        "sex": 0,
        "race": 1,
        "marital_status": 1,
        "education": 3,
        "zip": 4,
        "birth_date": 4,
        "native_country": 2,
    },
    {
        "age": 3,
        "sex": 1,
        "race": 2,
        "marital_status": 2,
        "education": 3,
        "zip": 5,
        "birth_date": 4,
        "native_country": 3,
    },
]


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


def generalized_view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    table: str,
    hierarchies: dict[str, str],
    levels: dict[str, int],
) -> str:
    """Create view ``name``: ``table`` with each QI replaced by its label at ``levels``."""
    columns = [r[0] for r in con.execute(f"DESCRIBE {ident(table)}").fetchall()]
    joins, select = [], []
    for i, col in enumerate(columns):
        if col not in levels:
            select.append(f"t.{ident(col)}")
            continue
        h = hierarchies[col]
        h_cols = [r[0] for r in con.execute(f"DESCRIBE {ident(h)}").fetchall()]
        level = min(levels[col], len(h_cols) - 1)
        joins.append(f"LEFT JOIN {ident(h)} AS h{i} ON h{i}.{ident(h_cols[0])} = t.{ident(col)}")
        select.append(f"CAST(h{i}.{ident(h_cols[level])} AS VARCHAR) AS {ident(col)}")
    con.execute(
        f"CREATE OR REPLACE VIEW {ident(name)} AS SELECT {', '.join(select)} "
        f"FROM {ident(table)} AS t {' '.join(joins)}"
    )
    return name


def run_demo(rows: int = 50_000, seed: int = 42) -> None:
    """Generate, configure and report; prints to standard output."""
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
        print("== generalized through the hierarchy tables (level per QI) ==")
        header = "  " + " ".join(f"{c[:8]:>8}" for c in qis)
        print(f"{header}  {'k':>5} {'classes':>8} {'at risk':>8} {'l':>3} {'t':>6}")
        for preset in DEMO_LEVELS:
            view = generalized_view(con, "census_generalized", table, hierarchies, preset)
            r = check(view, qi=qis, sensitive="occupation", con=con)
            levels = "  " + " ".join(f"{preset[c]:>8}" for c in qis)
            print(
                f"{levels}  {r.k:>5,} {r.classes:>8,} {r.prosecutor_at_risk:>8.2%} "
                f"{r.l_distinct:>3} {r.t or 0:>6.3f}"
            )
        print()
        print("SQL:  SELECT * FROM kanon_check('census');")
        print("      SELECT * FROM kanon_classes('census_generalized', qi := [...]);")
    finally:
        con.close()
