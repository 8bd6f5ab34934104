"""``install(con)``: register kanon's UDFs, TEMP macros and config tables on a connection."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import duckdb
from duckdb import func

from kanon import _core
from kanon._anonymize import AnonymizeOptions, plan_anonymize
from kanon._hkp import HKP_RUN_SQL_PARAMS, HKP_RUN_SQL_TYPE, HkpOptions, hkp_run, plan_hkp
from kanon._metrics import plan_metrics
from kanon._models import PrivacyModels
from kanon._optimal import search_sql
from kanon._plan import CheckOptions, plan_check, plan_classes
from kanon._udf import (
    CLASSES_SQL_TYPE,
    FOREST_SQL_PARAMS,
    FOREST_SQL_TYPE,
    HISTORIC_SQL_PARAMS,
    HISTORIC_SQL_TYPE,
    OPTIMAL_SQL_PARAMS,
    OPTIMAL_SQL_TYPE,
    STATS_SQL_TYPE,
    class_stats,
    forest,
    historic,
    optimal,
)
from kanon._udf_local import MONDRIAN_SQL_PARAMS, MONDRIAN_SQL_TYPE, mondrian
from kanon.exceptions import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["install", "install_kernels", "sql_bundle"]


def sql_bundle() -> list[tuple[str, str]]:
    """The SQL files shipped in the extension, in load order, as ``(name, text)``."""
    return list(_core.sql_bundle())


def _replace_function(
    con: duckdb.DuckDBPyConnection,
    name: str,
    function: Callable[..., Any],
    parameters: list[str],
    return_type: str,
    *,
    arrow: bool = False,
) -> None:
    """(Re-)register a side-effect-free UDF that receives NULLs itself."""
    with contextlib.suppress(duckdb.InvalidInputException):  # not registered yet
        con.remove_function(name)
    con.create_function(
        name,
        function,
        list(parameters),
        return_type,
        type=func.ARROW if arrow else func.NATIVE,
        null_handling=func.SPECIAL,
        side_effects=False,
    )


def install_kernels(con: duckdb.DuckDBPyConnection) -> None:
    """Register the kernel UDFs (no macros, no tables): what generated SQL needs to run."""
    _replace_function(
        con,
        "kanon_class_stats",
        class_stats,
        [CLASSES_SQL_TYPE, "VARCHAR"],
        STATS_SQL_TYPE,
        arrow=True,
    )
    _replace_function(con, "kanon_forest", forest, FOREST_SQL_PARAMS, FOREST_SQL_TYPE, arrow=True)
    _replace_function(
        con, "kanon_optimal", optimal, OPTIMAL_SQL_PARAMS, OPTIMAL_SQL_TYPE, arrow=True
    )
    _replace_function(
        con, "kanon_historic", historic, HISTORIC_SQL_PARAMS, HISTORIC_SQL_TYPE, arrow=True
    )
    _replace_function(
        con, "kanon_hkp_run", hkp_run, HKP_RUN_SQL_PARAMS, HKP_RUN_SQL_TYPE, arrow=True
    )
    _replace_function(
        con, "kanon_mondrian", mondrian, MONDRIAN_SQL_PARAMS, MONDRIAN_SQL_TYPE, arrow=True
    )


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Install kanon on ``con``; idempotent (re-running replaces everything).

    Registers the UDFs (``kanon_class_stats`` and the planners behind the macros), runs
    the shipped SQL (TEMP macros ``kanon_check`` and ``kanon_classes``) and creates the
    config table ``kanon_columns`` if it is absent.

    Args:
        con: the DuckDB connection to install into.

    Returns:
        The same connection.

    Examples:
        >>> import duckdb, kanon
        >>> con = kanon.install(duckdb.connect())
        >>> con.execute("SELECT count(*) FROM kanon_columns").fetchone()
        (0,)
    """
    install_kernels(con)
    # The planners read the catalog through their own cursor: the calling connection
    # is busy binding the query that invoked them.
    cursor = con.cursor()

    def plan_check_udf(
        tbl: str,
        qi: list[str] | None,
        sensitive: str | None,
        population: str | None,
        t_distance: str | None,
        recursive_l: int | None,
        recursive_c: float | None,
        risk_threshold: float | None,
        identifiers: list[str] | None,
        insensitive: list[str] | None,
    ) -> str:
        options = CheckOptions(
            qi=tuple(qi or ()),
            sensitive=sensitive,
            population=population,
            t_distance=t_distance,
            recursive_l=recursive_l,
            recursive_c=recursive_c,
            risk_threshold=0.2 if risk_threshold is None else risk_threshold,
            identifiers=tuple(identifiers or ()),
            insensitive=tuple(insensitive or ()),
        )
        return plan_check(cursor, tbl, options).sql

    def plan_anonymize_udf(
        tbl: str,
        k: int | None,
        qi: list[str] | None,
        seed: int | None,
        method: str | None,
        metric: str | None,
        max_suppression: float | None,
        drop_suppressed: bool | None,
        min_level: dict[str, int] | None,
        max_level: dict[str, int] | None,
        models: str | None,
        labels: str | None,
        block_size: int | None,
        effort: str | None,
        identifiers: list[str] | None,
        insensitive: list[str] | None,
        keep_undeclared: bool | None,
    ) -> str:
        if k is None:
            msg = "kanon(...) needs k, the smallest class size: kanon('table', k := 5)"
            raise InvalidInputError(msg)
        options = AnonymizeOptions.of(
            k,
            qi,
            seed=seed,
            method=method,
            metric=metric,
            max_suppression=max_suppression,
            drop_suppressed=drop_suppressed,
            min_level=min_level,
            max_level=max_level,
            models=PrivacyModels.from_json(models),
            labels=labels,
            block_size=block_size,
            effort=effort,
            identifiers=identifiers,
            insensitive=insensitive,
            keep_undeclared=keep_undeclared,
        )
        # The values are checked as the SQL runs: DuckDB binds this call twice.
        return plan_anonymize(cursor, tbl, options, check_values=False).sql

    def plan_search_udf(
        tbl: str,
        k: int | None,
        qi: list[str] | None,
        method: str | None,
        metric: str | None,
        max_suppression: float | None,
        drop_suppressed: bool | None,
        min_level: dict[str, int] | None,
        max_level: dict[str, int] | None,
        models: str | None,
    ) -> str:
        if k is None:
            msg = "kanon_search(...) needs k, the smallest class size"
            raise InvalidInputError(msg)
        options = AnonymizeOptions.of(
            k,
            qi,
            method=method or "optimal",
            metric=metric,
            max_suppression=max_suppression,
            drop_suppressed=drop_suppressed,
            min_level=min_level,
            max_level=max_level,
            models=PrivacyModels.from_json(models),
        )
        plan = plan_anonymize(cursor, tbl, options, check_values=False, check_undeclared=False)
        return search_sql(plan, options)

    def plan_metrics_udf(original: str, released: str, qi: list[str] | None, k: int | None) -> str:
        return plan_metrics(cursor, original, released, tuple(qi or ()), k)

    def plan_classes_udf(tbl: str, qi: list[str] | None) -> str:
        return plan_classes(cursor, tbl, tuple(qi or ()))

    _replace_function(
        con,
        "kanon_plan_check",
        plan_check_udf,
        [
            "VARCHAR",
            "VARCHAR[]",
            "VARCHAR",
            "VARCHAR",
            "VARCHAR",
            "BIGINT",
            "DOUBLE",
            "DOUBLE",
            "VARCHAR[]",
            "VARCHAR[]",
        ],
        "VARCHAR",
    )
    _replace_function(
        con,
        "kanon_plan_classes",
        plan_classes_udf,
        ["VARCHAR", "VARCHAR[]"],
        "VARCHAR",
    )
    _replace_function(
        con,
        "kanon_plan_anonymize",
        plan_anonymize_udf,
        [
            "VARCHAR",
            "BIGINT",
            "VARCHAR[]",
            "UBIGINT",
            "VARCHAR",
            "VARCHAR",
            "DOUBLE",
            "BOOLEAN",
            "MAP(VARCHAR, INTEGER)",
            "MAP(VARCHAR, INTEGER)",
            "VARCHAR",
            "VARCHAR",
            "BIGINT",
            "VARCHAR",
            "VARCHAR[]",
            "VARCHAR[]",
            "BOOLEAN",
        ],
        "VARCHAR",
    )
    _replace_function(
        con,
        "kanon_plan_search",
        plan_search_udf,
        [
            "VARCHAR",
            "BIGINT",
            "VARCHAR[]",
            "VARCHAR",
            "VARCHAR",
            "DOUBLE",
            "BOOLEAN",
            "MAP(VARCHAR, INTEGER)",
            "MAP(VARCHAR, INTEGER)",
            "VARCHAR",
        ],
        "VARCHAR",
    )
    _replace_function(
        con,
        "kanon_plan_metrics",
        plan_metrics_udf,
        ["VARCHAR", "VARCHAR", "VARCHAR[]", "BIGINT"],
        "VARCHAR",
    )

    def plan_hkp_udf(
        tbl: str,
        h: float | None,
        k: int | None,
        p: int | None,
        private: list[str] | None,
        roles: str | None,
        public_fraction: float | None,
        seed: int | None,
        method: str | None,
        min_support: float | None,
        items: str | None,
        tid: str | None,
        item: str | None,
        report: bool | None,
    ) -> str:
        if h is None or k is None or p is None:
            msg = "kanon_hkp(...) needs h, k and p: kanon_hkp('t', h := 0.4, k := 10, p := 3, ...)"
            raise InvalidInputError(msg)
        options = HkpOptions(
            h=h,
            k=k,
            p=p,
            private=None if private is None else tuple(private),
            roles=roles,
            public_fraction=public_fraction,
            seed=0 if seed is None else seed,
            method="mmil" if method is None else method,
            min_support=0.0 if min_support is None else min_support,
            items=items,
            tid=tid,
            item=item,
        )
        plan = plan_hkp(cursor, tbl, options)
        return plan.report_sql if report else plan.release_sql

    _replace_function(
        con,
        "kanon_plan_hkp",
        plan_hkp_udf,
        [
            "VARCHAR",
            "DOUBLE",
            "BIGINT",
            "BIGINT",
            "VARCHAR[]",
            "VARCHAR",
            "DOUBLE",
            "UBIGINT",
            "VARCHAR",
            "DOUBLE",
            "VARCHAR",
            "VARCHAR",
            "VARCHAR",
            "BOOLEAN",
        ],
        "VARCHAR",
    )
    for _name, text in sql_bundle():
        con.execute(text)
    return con
