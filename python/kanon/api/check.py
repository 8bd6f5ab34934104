"""``kanon.check`` and ``kanon.classes``: privacy measurements from Python."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from kanon._options import column_names
from kanon.engine.inputs import Data, as_table
from kanon.plan.check import CheckOptions, plan_check, plan_classes

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["CheckReport", "check", "classes", "report"]

#: Report fields shown with four decimals (the others: risks as percentages, counts).
_DECIMALS = ("l_entropy", "recursive_c", "t", "delta_min", "delta_max")


@dataclass(frozen=True)
class CheckReport:
    """One privacy check: the row ``kanon_check`` returns, with what was checked."""

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

    def to_dict(self) -> dict[str, Any]:
        """Return the report as a plain dict."""
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"quasi-identifiers: {', '.join(self.qi)}"]
        if self.sensitive is not None:
            lines.append(f"sensitive: {self.sensitive}")
        shown = []
        for key, label, legend in _LEGENDS:
            value = getattr(self, key)
            if value is None:
                continue
            if isinstance(value, float) and key not in _DECIMALS:
                text = f"{value:.2%}" if "risk" in label or key == "marketer" else f"{value:g}"
            elif isinstance(value, float):
                text = f"{value:.4f}"
            else:
                text = f"{value:,}" if isinstance(value, int) else str(value)
            label = label.format(l=self.recursive_l)
            shown.append((label, text, legend.format(l=self.recursive_l)))
        width = max(len(label) for label, _, _ in shown)
        digits = max(len(text) for _, text, _ in shown)
        lines += [f"  {a:<{width}}  {b:>{digits}}   {c}" for a, b, c in shown]
        if self.identifying_columns:
            lines.append(
                "identifying columns without a declared role (a release refuses them): "
                + ", ".join(self.identifying_columns)
            )
        return "\n".join(lines)


#: The printed report's lines: field, label, one-line legend ({l}: recursive_l).
_LEGENDS = (
    ("k", "k (smallest class)", "every row shares its quasi-identifiers with k - 1 others"),
    ("classes", "equivalence classes", "groups of rows equal on all quasi-identifiers"),
    ("rows", "rows", "rows checked"),
    ("l_distinct", "l-diversity (distinct)", "fewest sensitive values in a class; 1 reveals it"),
    ("l_entropy", "l-diversity (entropy)", "exp of the lowest sensitive entropy of a class"),
    ("recursive_c", "recursive (c,l): smallest c for l={l}", "most common value < c x the rest"),
    ("recursive_ok", "recursive (c,l) holds", "for the c asked"),
    ("t", "t-closeness (max EMD)", "farthest a class's sensitive values lie from the table's"),
    ("prosecutor_max", "prosecutor risk, max", "1 / k: the best odds of finding a known person"),
    ("prosecutor_avg", "prosecutor risk, average", "1 / class size, averaged over rows"),
    ("prosecutor_at_risk", "records at risk (prosecutor)", "rows whose risk exceeds the threshold"),
    ("marketer", "marketer risk", "share of rows re-identified matching everyone"),
    ("journalist_max", "journalist risk, max", "the same, class sizes in the population"),
    ("journalist_avg", "journalist risk, average", "1 / population class size, over rows"),
    ("journalist_at_risk", "records at risk (journalist)", "rows above the threshold"),
    ("delta_min", "δ-presence, smallest share", "least share of a class's population in the data"),
    ("delta_max", "δ-presence, largest share", "largest share: how sure membership is"),
)


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
    report_fields = {f.name for f in fields(CheckReport)}
    return CheckReport(
        qi=plan.qi,
        sensitive=plan.sensitive,
        **{k: v for k, v in values.items() if k in report_fields - {"identifying_columns"}},
        identifying_columns=tuple(values.get("identifying_columns") or ()),
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
