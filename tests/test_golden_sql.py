"""Golden SQL: the query every planner emits on a tiny table, snapshotted under tests/golden.

A change to the generated SQL shows here as a diff to review. ``KANON_UPDATE_GOLDEN=1``
rewrites the snapshots. Every snapshot must parse with sqlglot (dialect duckdb).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

import kanon
from kanon.plan.check import CheckOptions, plan_check, plan_classes
from kanon.plan.hkp import HkpOptions, plan_hkp
from kanon.plan.metrics import plan_metrics
from kanon.plan.release.registry import METHODS
from kanon.plan.release.resolve import AnonymizeOptions, plan_anonymize
from kanon.plan.release.search import search_sql

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("KANON_UPDATE_GOLDEN") == "1"
# rid (identifier), age, zz (hierarchy h_zz), d, x (float), dx (sensitive).
BASE = (
    "SELECT i AS rid, i % 7 AS age, (i % 3)::VARCHAR AS zz, "
    "DATE '2020-01-01' + (i % 11)::INT AS d, (i % 4) / 2.0 AS x, (i % 5)::VARCHAR AS dx "
    "FROM range(40) r(i)"
)
HIERARCHY = "SELECT * FROM (VALUES ('0', 'a', '*'), ('1', 'a', '*'), ('2', 'b', '*')) h(v, l1, l2)"
QI = ["age", "zz", "d", "x"]
#: name -> (method, extra arguments) of the ``kanon.explain`` snapshots.
EXPLAINED: dict[str, tuple[str, dict[str, Any]]] = {
    "forest": ("forest", {}),
    "forest_paper": ("forest_paper", {}),
    "forest_range": ("forest", {"labels": "range"}),
    "mondrian": ("mondrian", {}),
    "mondrian_hierarchy_l": ("mondrian", {"labels": "hierarchy", "l": 2, "sensitive": "dx"}),
    "optimal": ("optimal", {}),
    "optimal_l": ("optimal", {"l": 2, "sensitive": "dx", "max_suppression": 0.1}),
    "optimal_t": ("optimal", {"t": 0.5, "sensitive": "dx", "drop_suppressed": True}),
    "optimal_population": ("optimal", {"population": "pop", "metric": "height"}),
    "datafly": ("datafly", {}),
    "mu_argus": ("mu_argus", {"drop_suppressed": True}),
}


@pytest.fixture(scope="module")
def db() -> Iterator[duckdb.DuckDBPyConnection]:
    con = kanon.install(duckdb.connect())
    con.execute(f"CREATE TABLE src AS {BASE}")
    con.execute(f"CREATE TABLE pop AS {BASE.replace('range(40)', 'range(80)')}")
    con.execute(f"CREATE TABLE h_zz AS {HIERARCHY}")
    con.execute(
        "CREATE TABLE t_items AS SELECT i AS rid, "
        "[i % 4, (i + 1) % 4, 4 + i % 3]::INT[] AS basket FROM range(40) r(i)"
    )
    kanon.configure(
        con,
        "src",
        qi={"age": None, "zz": "h_zz", "d": None, "x": None},
        identifiers=["rid"],
        sensitive=["dx"],
    )
    con.execute("CREATE TABLE rel AS SELECT * FROM kanon('src', k := 4)")
    yield con
    con.close()


def _explained(name: str) -> Callable[[duckdb.DuckDBPyConnection], str]:
    method, extra = EXPLAINED[name]
    return lambda con: kanon.explain(con, "src", 4, QI, method=method, **extra)


def _search(method: str) -> Callable[[duckdb.DuckDBPyConnection], str]:
    def plan(con: duckdb.DuckDBPyConnection) -> str:
        options = AnonymizeOptions.of(4, QI, {"method": method})
        planned = plan_anonymize(con, "src", options, check_undeclared=False)
        return search_sql(planned, options)

    return plan


def _hkp(part: str) -> Callable[[duckdb.DuckDBPyConnection], str]:
    def plan(con: duckdb.DuckDBPyConnection) -> str:
        planned = plan_hkp(con, "t_items", HkpOptions(h=0.5, k=3, p=2, private=("5", "6")))
        return planned.release_sql if part == "release" else planned.report_sql

    return plan


PLANNERS: dict[str, Callable[[duckdb.DuckDBPyConnection], str]] = {
    **{f"explain_{name}": _explained(name) for name in EXPLAINED},
    "search_optimal": _search("optimal"),
    "search_datafly": _search("datafly"),
    "check": lambda con: plan_check(con, "src", CheckOptions(qi=("age", "zz"))).sql,
    "check_sensitive": lambda con: (
        plan_check(con, "src", CheckOptions(qi=("age", "zz"), sensitive="dx", population="pop")).sql
    ),
    "check_hierarchical": lambda con: (
        plan_check(
            con, "src", CheckOptions(qi=("age", "d"), sensitive="zz", t_distance="hierarchical")
        ).sql
    ),
    "classes": lambda con: plan_classes(con, "src", ("age", "zz")),
    "metrics": lambda con: plan_metrics(con, "src", "rel", k=4),
    "hkp_release": _hkp("release"),
    "hkp_report": _hkp("report"),
}


@pytest.mark.parametrize("name", sorted(EXPLAINED))
def test_each_method_calls_its_kernel(db: duckdb.DuckDBPyConnection, name: str) -> None:
    """The registry's kernel of a method is the UDF its SQL calls."""
    method = EXPLAINED[name][0]
    assert f"{METHODS[method].kernel.name}(" in _explained(name)(db)


@pytest.mark.parametrize("name", sorted(PLANNERS))
def test_golden_sql(db: duckdb.DuckDBPyConnection, name: str) -> None:
    """The planner's SQL equals its snapshot, parses with sqlglot, and runs."""
    sql = PLANNERS[name](db).strip() + "\n"
    (tree,) = sqlglot.parse(sql, read="duckdb")
    assert tree is not None
    # Every CTE of the statement is kanon's and defined once.
    top = tree.find(exp.With)
    names = [cte.alias for cte in top.expressions] if top is not None else []
    assert len(names) == len(set(names)), names
    assert all(n.lower().startswith("__kanon") for n in names), names
    db.execute(sql).fetchall()
    path = GOLDEN / f"{name}.sql"
    if UPDATE:
        path.write_text(sql)
        return
    if not path.exists():
        pytest.fail(f"no snapshot tests/golden/{name}.sql: run with KANON_UPDATE_GOLDEN=1")
    expected = path.read_text()
    if sql != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                sql.splitlines(keepends=True),
                f"golden/{name}.sql",
                "generated",
            )
        )
        pytest.fail(
            f"the SQL of {name} differs from tests/golden/{name}.sql "
            f"(KANON_UPDATE_GOLDEN=1 rewrites it):\n{diff}"
        )
