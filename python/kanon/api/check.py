"""``kanon.check`` and ``kanon.classes``: privacy measurements from Python."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kanon._options import column_names
from kanon.engine.inputs import Data, as_table
from kanon.plan.check import CheckOptions, plan_check, plan_classes
from kanon.plan.models import BASE_MEASURES, CHECK_MEASURES, THRESHOLD_MODELS

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["CheckReport", "check", "classes", "report"]


@dataclass(frozen=True)
class CheckReport:
    """One privacy check: the row ``kanon_check`` returns, with what was checked.

    The fields after ``sensitive`` are the measures :data:`kanon.plan.models.BASE_MEASURES`,
    in order (a test keeps them in step); ``thresholds`` holds the worst measure of each
    threshold model (:data:`kanon.plan.models.THRESHOLD_MODELS`) by name, also read as an
    attribute of that name.
    """

    qi: tuple[str, ...]
    sensitive: str | None
    k: int
    classes: int
    rows: int
    l_distinct: int | None
    l_entropy: float | None
    recursive_l: int | None
    recursive_c: float | None
    recursive_ok: bool | None
    t: float | None
    prosecutor_max: float
    prosecutor_avg: float
    prosecutor_at_risk: float
    marketer: float
    journalist_max: float | None
    journalist_avg: float | None
    journalist_at_risk: float | None
    delta_min: float | None
    delta_max: float | None
    #: Columns with no declared role whose values single out rows (a release refuses them).
    identifying_columns: tuple[str, ...] = ()
    thresholds: dict[str, float | None] = field(default_factory=dict)

    def __getattr__(self, name: str) -> float | None:
        thresholds = self.__dict__.get("thresholds", {})
        if name in thresholds:
            return thresholds[name]  # type: ignore[no-any-return]
        msg = f"{type(self).__name__!r} object has no attribute {name!r}"
        raise AttributeError(msg)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as a plain dict (threshold models' measures by name)."""
        out = asdict(self)
        out.update(out.pop("thresholds"))
        return out

    def __str__(self) -> str:
        lines = [f"quasi-identifiers: {', '.join(self.qi)}"]
        if self.sensitive is not None:
            lines.append(f"sensitive: {self.sensitive}")
        l = self.recursive_l  # noqa: E741 (the model's name)
        shown = [
            (m.label.format(l=l), m.shown(value), m.legend.format(l=l))
            for m in CHECK_MEASURES
            if m.label and (value := getattr(self, m.name)) is not None
        ]
        width = max(len(label) for label, _, _ in shown)
        digits = max(len(text) for _, text, _ in shown)
        lines += [f"  {a:<{width}}  {b:>{digits}}   {c}" for a, b, c in shown]
        if self.identifying_columns:
            lines.append(
                "identifying columns without a declared role (a release refuses them): "
                + ", ".join(self.identifying_columns)
            )
        return "\n".join(lines)


def check(
    data: Data,
    qi: list[str] | None = None,
    sensitive: str | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    population: Data | None = None,
    t_distance: str | None = None,
    recursive_l: int | None = None,
    recursive_c: float | None = None,
    risk_threshold: float = 0.2,
    identifiers: list[str] | None = None,
    insensitive: list[str] | None = None,
) -> CheckReport:
    """Measure how anonymous ``data`` is over its quasi-identifiers.

    Runs the same query as SQL ``kanon_check(...)``.

    Args:
        data: a table name (with ``con``), a DuckDB relation, a pandas or polars
            DataFrame or a pyarrow Table.
        qi: quasi-identifier columns (default: those configured for the table).
        sensitive: sensitive column for l-diversity and t-closeness.
        con: connection holding ``data`` when it is a table name.
        population: population table (same input kinds) the data was drawn from, for
            journalist risk and δ-presence (``delta_min`` / ``delta_max``: the smallest /
            largest share of a class's population rows that are in ``data``).
        t_distance: ``"equal"``, ``"ordered"`` (default: ordered for numbers/dates) or
            ``"hierarchical"`` (the hierarchy configured for the sensitive column, with
            ``kanon.configure`` or ``kanon_columns.hierarchy``).
        recursive_l: l of recursive (c,l)-diversity (default: the distinct l).
        recursive_c: c of recursive (c,l)-diversity to test.
        risk_threshold: records whose re-identification risk exceeds it are "at risk".
        identifiers: identifier columns (besides the configured ones): not reported as
            identifying (``CheckReport.identifying_columns`` lists the columns with no
            role whose values single out rows, which a release refuses).
        insensitive: columns released unchanged (besides the configured ones).

    Returns:
        A :class:`CheckReport`.

    Raises:
        ConfigError: unknown table or column, no quasi-identifiers, no hierarchy
            configured for the sensitive column with ``t_distance="hierarchical"``.
        HierarchyError: the sensitive column's hierarchy misses a value of the column
            (or is not nested, or has several roots).
        InvalidInputError: an argument out of range, a population class smaller than
            the table's.

    Examples:
        >>> import pyarrow as pa, kanon
        >>> t = pa.table({"zip": ["537", "537", "538"], "dx": ["flu", "hiv", "flu"]})
        >>> kanon.check(t, qi=["zip"], sensitive="dx").k
        1
    """
    with ExitStack() as stack:
        con_, name = stack.enter_context(as_table(data, con))
        pop_name = None
        if population is not None:
            _, pop_name = stack.enter_context(as_table(population, con_, "population"))
        options = CheckOptions(
            qi=column_names("qi", qi),
            sensitive=sensitive,
            population=pop_name,
            t_distance=t_distance,
            recursive_l=recursive_l,
            recursive_c=recursive_c,
            risk_threshold=risk_threshold,
            identifiers=tuple(identifiers or ()),
            insensitive=tuple(insensitive or ()),
        )
        return report(con_, name, options)


def report(
    con: duckdb.DuckDBPyConnection, name: str, options: CheckOptions, weight: str | None = None
) -> CheckReport:
    """Run the check of table ``name`` (see :func:`kanon.plan.check.plan_check` for ``weight``)."""
    plan = plan_check(con, name, options, weight)
    rel = con.execute(plan.sql)
    names = [d[0] for d in rel.description]
    (row,) = rel.fetchall()  # exactly one row, fetched whole to free the connection
    values = dict(zip(names, row, strict=True))
    return CheckReport(
        qi=plan.qi,
        sensitive=plan.sensitive,
        **{m.name: values[m.name] for m in BASE_MEASURES},
        identifying_columns=tuple(values.get("identifying_columns") or ()),
        thresholds={m.options[0]: values[m.options[0]] for m in THRESHOLD_MODELS},
    )


def classes(
    data: Data, qi: list[str] | None = None, *, con: duckdb.DuckDBPyConnection | None = None
) -> pa.Table:
    """Return the class-size histogram of ``data`` as a pyarrow Table (SQL ``kanon_classes``).

    Args:
        data: as for :func:`check`.
        qi: quasi-identifier columns (default: those configured for the table).
        con: connection holding ``data`` when it is a table name.

    Returns:
        Columns ``class_size``, ``classes``, ``rows``, ``share``, ``cumulative_share``.
    """
    with as_table(data, con) as (con_, name):
        return con_.sql(plan_classes(con_, name, column_names("qi", qi))).to_arrow_table()
