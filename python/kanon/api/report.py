"""``kanon.report``: one self-contained HTML page that sets a table beside its release.

Before and after, side by side: the rows by class size and by re-identification risk, the
share of records at risk, the information lost per column, per quasi-identifier value the
records still at risk (PrioPrivacy's "safe / at risk" histogram), a sample of original
rows next to their released rows, the parameters and the kanon version. The plots are
plotly's, with plotly.js inlined, so the page works offline.

Every value and column name is shown as plain text, through :func:`user_text`: escaped for
HTML where it lands in HTML, and for plotly's label markup (``<a href>``, ``<b>``, ``<br>``,
``<span style>`` ...) where it lands in a figure. Bidirectional controls are replaced by
visible escapes such as ``[U+202E]``, and each string is isolated (``<bdi>`` in HTML,
FSI ... PDI in a figure), so no value can restyle, link or reorder the text around it.
"""

from __future__ import annotations

import html
import re
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from kanon._core import __version__
from kanon.api.check import CheckReport, check
from kanon.api.release import metrics
from kanon.api.verify import RuleResult, Verdict, run_verdict
from kanon.engine.inputs import as_table
from kanon.exceptions import InvalidInputError
from kanon.plan.catalog import Table, resolve_table
from kanon.plan.metrics import METRICS, number, percent
from kanon.plan.policy import Policy, policy_of
from kanon.plan.verify import plan_verify
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import duckdb

    from kanon.engine.inputs import Data
    from kanon.plan.metrics import Metrics

__all__ = ["report", "user_text"]

#: Class-size buckets (smallest size of each) and their labels.
SIZES = ((1, "1"), (2, "2"), (3, "3-4"), (5, "5-9"), (10, "10-19"), (20, "20-49"), (50, "50+"))
#: Values shown per quasi-identifier in the safe / at-risk plot; the rest are summed.
TOP_VALUES = 12
COLORS = {"original": "#d62728", "release": "#1f77b4", "safe": "#2ca02c", "at risk": "#d62728"}

#: Characters shown as ``[U+XXXX]``: the bidirectional embeddings, overrides and isolates
#: (U+202A-U+202E, U+2066-U+2069), the marks (U+200E, U+200F, U+061C), and the paragraph
#: separators (U+001C-U+001E, U+0085, U+2029), which would end an isolate early.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u001c-\u001e\u0085\u2029]")
#: First strong isolate and pop directional isolate: the isolation of a string in a figure.
_FSI, _PDI = "\u2068", "\u2069"


def user_text(value: object, into: Literal["html", "attribute", "plotly"]) -> str:
    r"""Render a value or name from the data as inert text for one place of the page.

    Bidirectional controls become visible escapes (``"\u202e"`` -> ``[U+202E]``), so
    none reaches the page. Then, for ``"html"``: HTML-escaped and isolated in ``<bdi>``;
    ``"attribute"``: HTML-escaped for a quoted attribute value; ``"plotly"``: ``&``, ``<``
    and ``>`` as entities and isolated in FSI ... PDI (U+2068 ... U+2069). Plotly.js splits a
    label into its pseudo-HTML tags first and decodes entities in the text between them,
    so ``&lt;b&gt;`` shows a literal ``<b>`` and never makes bold text or a link.

    Examples:
        >>> user_text('<a href="https://x">x</a>', "plotly")
        '\u2068&lt;a href="https://x"&gt;x&lt;/a&gt;\u2069'
        >>> user_text("\u202eevil", "html")
        '<bdi>[U+202E]evil</bdi>'
    """
    text = _BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", str(value))
    if into == "plotly":
        return _FSI + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + _PDI
    if into == "attribute":
        return html.escape(text)
    return f"<bdi>{html.escape(text)}</bdi>"


@dataclass(frozen=True)
class _Side:
    """What the page shows of one table: its check, rows by class size, values at risk."""

    report: CheckReport
    sizes: list[tuple[int, int]]  # (class size, rows)
    values: dict[str, list[tuple[str, int, int]]]  # QI -> (value, safe rows, rows at risk)


def report(
    source: Data,
    release: Data,
    qi: Sequence[str] | None = None,
    *,
    out: str | Path,
    con: duckdb.DuckDBPyConnection | None = None,
    sensitive: str | None = None,
    k: int | None = None,
    risk_threshold: float = 0.2,
    parameters: Mapping[str, object] | None = None,
    sample: int = 6,
    policy: str | dict[str, Any] | Policy | None = None,
) -> Path:
    """Write an HTML report comparing ``source`` with its ``release``; return its path.

    The page leads with the verdict of ``policy`` on the release (:func:`kanon.verify`):
    PASS or FAIL per rule with its threshold and counts, warnings weighted by the share
    of rows they concern, the information lost, and every column released besides the
    QIs with the share of rows it singles out.

    Args:
        source: the original data: a table name (with ``con``), a DuckDB relation, a
            pandas or polars DataFrame or a pyarrow Table. Its configured (or given) QIs
            and hierarchies define the metrics, as for :func:`kanon.metrics`.
        release: the release, same kinds of input.
        qi: quasi-identifier columns (default: those configured for ``source``).
        out: the HTML file to write (replaced if it exists).
        con: connection holding the tables given by name.
        sensitive: sensitive column for l-diversity and t-closeness.
        k: the k the release was made for (C_AVG); default: its smallest class.
        risk_threshold: a record whose re-identification risk 1 / class size exceeds
            it is "at risk" (as in :func:`kanon.check`).
        parameters: how the release was made, listed on the page.
        sample: original rows shown next to their released rows, at most.
        policy: the policy of the verdict (a stored policy's name or its rules); default:
            ``k`` (2 if not given), ``identifying_columns`` 0 and, with a sensitive
            column, ``l`` 2.

    Raises:
        InvalidInputError: a bad ``out``, ``risk_threshold`` or ``sample``.
        ConfigError: unknown table or column, no quasi-identifiers.
    """
    if not isinstance(out, (str, Path)) or str(out) == "":
        msg = f"report(): out must be a file path, got {out!r}"
        raise InvalidInputError(msg)
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        msg = f"report(): sample must be a whole number >= 0, got {sample!r}"
        raise InvalidInputError(msg)
    with ExitStack() as stack:
        c, src = stack.enter_context(as_table(source, con, "source"))
        _, rel = stack.enter_context(as_table(release, c, "release"))
        before = check(src, list(qi or ()) or None, sensitive, con=c, risk_threshold=risk_threshold)
        qis = list(before.qi)
        after = check(rel, qis, before.sensitive, con=c, risk_threshold=risk_threshold)
        m = metrics(src, rel, qis, con=c, k=k)
        s_table, r_table = resolve_table(c, src), resolve_table(c, rel)
        sides = (
            _side(c, s_table, qis, before, risk_threshold),
            _side(c, r_table, qis, after, risk_threshold),
        )
        rows = _sample(c, s_table, r_table, qis, sample)
        default = {"k": k or 2, "identifying_columns": 0.0}
        if before.sensitive is not None:
            default["l"] = 2
        checked = policy_of(c, default if policy is None else policy)
        sens = [before.sensitive] if before.sensitive is not None else []
        plan = plan_verify(c, src, rel, checked, qis, sens)
        verdict = run_verdict(c, plan)
        columns = c.execute(plan.columns_sql).fetchall()
    params = {"k": k, "risk threshold": risk_threshold, **(parameters or {})}
    lead = _lead(verdict, columns, m, after, policy is None)
    page = _page(sides, m, rows, qis, params, lead, risk_threshold)
    path = Path(out)
    path.write_text(page, encoding="utf-8")
    return path


def _side(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qis: list[str],
    checked: CheckReport,
    threshold: float,
) -> _Side:
    cols = ", ".join(ident(table.column(q).name) for q in qis)
    sizes = con.execute(
        f"SELECT size, sum(size)::BIGINT FROM (SELECT count(*) AS size FROM {table.sql} "
        f"GROUP BY {cols}) GROUP BY size ORDER BY size"
    ).fetchall()
    # Every QI's values in one pass: the rows unpivoted to (column, value, class size).
    names = {table.column(q).name: q for q in qis}
    texts = ", ".join(f"CAST({ident(n)} AS VARCHAR) AS {ident(n)}" for n in names)
    listed = ", ".join(ident(n) for n in names)
    at_risk = f'1.0 / "__kanon_n" > {literal(threshold)}'
    values: dict[str, list[tuple[str, int, int]]] = {q: [] for q in qis}
    for name, value, safe, risk in con.execute(
        f'SELECT "__kanon_q", coalesce("__kanon_v", \'NULL\'), count(*) FILTER (NOT {at_risk}), '
        f"count(*) FILTER ({at_risk}) FROM (SELECT {texts}, count(*) OVER (PARTITION BY "
        f'{cols}) AS "__kanon_n" FROM {table.sql}) UNPIVOT INCLUDE NULLS '
        f'("__kanon_v" FOR "__kanon_q" IN ({listed})) GROUP BY 1, 2 ORDER BY 1, count(*) DESC, 2'
    ).fetchall():
        values[names[name]].append((str(value), int(safe), int(risk)))
    return _Side(checked, [(int(s), int(r)) for s, r in sizes], values)


def _sample(
    con: duckdb.DuckDBPyConnection, source: Table, release: Table, qis: list[str], n: int
) -> list[tuple[Any, ...]]:
    """Original rows next to their released rows, from different released classes.

    A row is matched by the columns released unchanged: where exactly one original row
    and exactly one released row hold those values, they are the same record.
    """
    qi_names = {source.column(q).name.lower() for q in qis}
    kept = [
        col.name
        for col in source.columns
        if col.name.lower() not in qi_names
        and any(r.name == col.name and r.type == col.type for r in release.columns)
    ]
    # A column the release shows as '*' everywhere is an identifier: it matches nothing.
    masked = (
        con.execute(
            "SELECT "
            + ", ".join(
                f"coalesce(bool_and(CAST({ident(c)} AS VARCHAR) = '*'), true)" for c in kept
            )
            + f" FROM {release.sql}"
        ).fetchall()[0]
        if kept
        else ()
    )
    keys = [ident(c) for c, m in zip(kept, masked, strict=True) if not m]
    q_cols = [ident(source.column(q).name) for q in qis]
    if not keys or n == 0:
        return []
    part = ", ".join(keys)

    def unique(t: Table) -> str:
        return f"SELECT * FROM {t.sql} QUALIFY count(*) OVER (PARTITION BY {part}) = 1"

    on = " AND ".join(f"s.{k} IS NOT DISTINCT FROM r.{k}" for k in keys)
    shown = ", ".join([*(f"s.{c}" for c in q_cols), *(f"r.{c}" for c in q_cols)])
    labels = ", ".join(f"r.{c}" for c in q_cols)
    order = ", ".join(f"s.{k}" for k in keys)
    return con.execute(
        f"SELECT {shown} FROM ({unique(source)}) s JOIN ({unique(release)}) r ON {on} "
        f"QUALIFY row_number() OVER (PARTITION BY {labels} ORDER BY {order}) = 1 "
        f"ORDER BY hash({labels}), {labels} LIMIT {n}"
    ).fetchall()


def _bucket(size: int) -> str:
    return next(label for low, label in reversed(SIZES) if size >= low)


def _risk_bucket(size: int) -> str:
    risk = 1 / size
    for bound, label in ((0.5, "over 50 %"), (0.2, "20-50 %"), (0.1, "10-20 %"), (0.05, "5-10 %")):
        if risk > bound:
            return label
    return "5 % or less"


def _bars(sides: tuple[_Side, _Side], bucket: Any, order: list[str], title: str) -> go.Figure:
    fig = go.Figure()
    for name, side in zip(("original", "release"), sides, strict=True):
        rows = dict.fromkeys(order, 0)
        for size, n in side.sizes:
            rows[bucket(size)] += n
        fig.add_bar(name=name, x=order, y=list(rows.values()), marker_color=COLORS[name])
    fig.update_layout(title=title, barmode="group", yaxis_title="rows", height=360)
    return fig


def _values_figure(sides: tuple[_Side, _Side], qis: list[str]) -> go.Figure:
    titles = [f"{user_text(q, 'plotly')}: {name}" for q in qis for name in ("original", "release")]
    fig = make_subplots(rows=len(qis), cols=2, subplot_titles=titles, horizontal_spacing=0.18)
    for i, q in enumerate(qis, start=1):
        for j, side in enumerate(sides, start=1):
            values = side.values[q]
            top = [(user_text(v, "plotly"), safe, risk) for v, safe, risk in values[:TOP_VALUES]]
            rest = values[TOP_VALUES:]
            if rest:
                others = (f"{len(rest)} other values", sum(v[1] for v in rest))
                top.append((*others, sum(v[2] for v in rest)))
            names = [v[0] for v in top][::-1]
            for k, label in ((1, "safe"), (2, "at risk")):
                fig.add_bar(
                    row=i,
                    col=j,
                    orientation="h",
                    y=names,
                    x=[v[k] for v in top][::-1],
                    name=label,
                    marker_color=COLORS[label],
                    legendgroup=label,
                    showlegend=i == 1 and j == 1,
                )
    fig.update_layout(barmode="stack", height=330 * len(qis), title="Records per value")
    # Values are categories even where they read as numbers or dates.
    fig.update_yaxes(type="category")
    return fig


_pct = percent


def _num(x: float | None) -> str:
    return number(x, 4)


#: The summary's rows: key, label, one-line legend, formatter.
PRIVACY = (
    ("k", "k", "the smallest class: every record hides among at least k", _num),
    ("classes", "classes", "groups of records equal on all quasi-identifiers", _num),
    ("rows", "rows", "records in the table", _num),
    (
        "prosecutor_at_risk",
        "records at risk",
        "share of records whose risk 1 / class size exceeds the threshold",
        _pct,
    ),
    (
        "prosecutor_max",
        "highest risk",
        "1 / k: the chance to re-identify the most exposed record",
        _pct,
    ),
    (
        "prosecutor_avg",
        "average risk",
        "mean of 1 / class size over records (= classes / rows)",
        _pct,
    ),
    (
        "l_distinct",
        "l (distinct)",
        "fewest distinct sensitive values in a class; 1 reveals them",
        _num,
    ),
    ("t", "t (EMD)", "largest distance of a class's sensitive values from the table's", _num),
)


def _summary(sides: tuple[_Side, _Side], m: Metrics, risk_threshold: float) -> str:
    rows = []
    for key, label, legend, fmt in PRIVACY:
        a, b = (getattr(s.report, key) for s in sides)
        if a is None and b is None:
            continue
        if key == "prosecutor_at_risk":  # the threshold it counts against, beside it
            label = f"{label} (risk above {risk_threshold:.0%})"
        rows.append(
            f"<tr><th>{html.escape(label)}</th><td data-metric='before.{key}'>{fmt(a)}</td>"
            f"<td data-metric='after.{key}'>{fmt(b)}</td><td>{html.escape(legend)}</td></tr>"
        )
    # (data-metric key, label, legend, value): key, label and legend are HTML.
    utility = []
    for metric in METRICS:
        if not metric.report:
            continue
        value = getattr(m, metric.name)
        if metric.kind is dict:
            utility += [
                (
                    f"{metric.name}.{user_text(c, 'attribute')}",
                    html.escape(metric.label).format(column=user_text(c, "html")),
                    html.escape(metric.legend).format(column=user_text(c, "html")),
                    metric.shown(v, 4),
                )
                for c, v in value.items()
            ]
        else:
            legend = html.escape(metric.legend.format(k=m.k))
            utility.append((metric.name, html.escape(metric.label), legend, metric.shown(value, 4)))
    for key, label, legend, text in utility:
        rows.append(
            f"<tr><th>{label}</th><td></td><td data-metric='metrics.{key}'>{text}</td>"
            f"<td>{legend}</td></tr>"
        )
    return (
        "<table><tr><th></th><th>original</th><th>release</th><th>what it means</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _weight(share: float) -> str:
    """The CSS class of a finding by the share of rows it concerns."""
    return "severe" if share >= 0.1 else "warning" if share >= 0.01 else "note"


def _finding(r: RuleResult, total: int) -> str:
    """A failed rule in plain words, with its counts and their share of the release."""
    text = user_text(r.detail, "html")
    if r.rows is None or total == 0:
        return f"<p class='warning'>{html.escape(r.bound)} fails: {text}.</p>"
    share = r.rows / total
    classes = "" if r.classes is None else f" in {r.classes:,} classes"
    return (
        f"<p class='{_weight(share)}' data-finding='{r.rule}'>{html.escape(r.bound)} fails "
        f"for {r.rows:,} of {total:,} rows ({share:.2%}){classes}: {text}.</p>"
    )


def _lead(
    verdict: Verdict,
    columns: Sequence[tuple[Any, ...]],
    m: Metrics,
    after: CheckReport,
    default: bool,
) -> str:
    """The page's lead: the verdict, its findings, what was lost, the columns kept."""
    policy = verdict.policy
    name = (
        "the default policy (the report's k, no column that singles out rows released "
        "unchanged, l = 2 where a sensitive column is declared, no row lost)"
        if default
        else "the inline policy"
        if policy.name is None
        else f"policy {user_text(policy.name, 'html')}"
    )
    result = "PASS" if verdict.passed else "FAIL"
    head = (
        f"<h2>Verdict: <strong class='{result.lower()}' data-verdict='passed'>{result}</strong>"
        f"</h2><p>Judged against {name}, on the release as published.</p>"
    )
    rows = []
    for r in verdict.rules:
        value = (
            "n/a"
            if r.value is None
            else f"{int(r.value):,}"
            if float(r.value).is_integer() and r.rule in ("k", "l")
            else number(r.value, 4)
        )
        cells = [
            f"<td>{html.escape(r.bound)}</td>",
            f"<td data-verdict='{r.rule}.value'>{value}</td>",
            f"<td data-verdict='{r.rule}.passed' class='{'pass' if r.passed else 'fail'}'>"
            f"{'PASS' if r.passed else 'FAIL'}</td>",
            f"<td data-verdict='{r.rule}.rows'>{'' if r.rows is None else f'{r.rows:,}'}</td>",
            f"<td data-verdict='{r.rule}.classes'>"
            f"{'' if r.classes is None else f'{r.classes:,}'}</td>",
            f"<td>{user_text(', '.join(r.columns), 'html')}</td>",
            f"<td>{user_text(r.detail, 'html')}</td>",
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    table = (
        "<table><tr><th>rule</th><th>measured</th><th>result</th><th>rows breaking it</th>"
        "<th>classes</th><th>columns</th><th>detail</th></tr>" + "".join(rows) + "</table>"
    )
    findings = "".join(_finding(r, after.rows) for r in verdict.failed)
    accepted = "".join(
        f"<p class='note'>{user_text(c, 'html')} is released unchanged, accepted: "
        f"{user_text(why, 'html')}.</p>"
        for c, why in policy.accepted.items()
    )
    lost = (
        f"<p class='lost'>Information lost: <strong data-verdict='gcp'>{percent(m.gcp)}</strong> "
        "(GCP: the mean share of each released cell's domain that its label covers; 0 % "
        "every value as it was, 100 % every QI '*').</p>"
    )
    kept = [
        (
            name_,
            "every value '*'" if starred else "unchanged",
            "" if starred else f"{share:.2%}",
            "" if reason is None else f"accepted: {reason}",
        )
        for name_, reason, starred, _rows, share in columns
    ]
    kept_html = (
        "<h3>Columns released besides the quasi-identifiers</h3>"
        f"<p>Share of rows holding a value fewer than {verdict.policy.k} rows hold: such a "
        "value finds its row, whatever the quasi-identifiers say.</p>"
        + _table(["column", "released", "rows singled out", "policy"], kept)
        if kept
        else ""
    )
    return head + table + findings + accepted + lost + kept_html


def _table(header: list[str], rows: Sequence[Sequence[Any]]) -> str:
    """An HTML table: ``header`` holds HTML, ``rows`` values shown as text."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{user_text(v, 'html')}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _page(
    sides: tuple[_Side, _Side],
    m: Metrics,
    rows: list[tuple[Any, ...]],
    qis: list[str],
    params: Mapping[str, object],
    lead: str,
    risk_threshold: float,
) -> str:
    figures = [
        _bars(sides, _bucket, [label for _, label in SIZES], "Rows by the size of their class"),
        _bars(
            sides,
            _risk_bucket,
            ["over 50 %", "20-50 %", "10-20 %", "5-10 %", "5 % or less"],
            "Rows by re-identification risk (1 / class size)",
        ),
        go.Figure(
            go.Bar(
                x=[user_text(c, "plotly") for c in m.gcp_by_column],
                y=[v * 100 for v in m.gcp_by_column.values()],
                marker_color=COLORS["release"],
            ),
            layout={
                "title": "Information lost per column (GCP, %)",
                "height": 360,
                "xaxis": {"type": "category"},
            },
        ),
        _values_figure(sides, qis),
    ]
    plots = "".join(
        f"<div class='plot'>{pio.to_html(f, full_html=False, include_plotlyjs=False)}</div>"
        for f in figures
    )
    names = [user_text(q, "html") for q in qis]
    header = [*(f"{q} (original)" for q in names), *(f"{q} (release)" for q in names)]
    sample_html = (
        _table(header, rows)
        if rows
        else "<p>No sample: no column released unchanged tells which original row a "
        "released row is.</p>"
    )
    settings = _table(
        ["parameter", "value"],
        [*((k, "n/a" if v is None else v) for k, v in params.items()), ("kanon", __version__)],
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kanon report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }}
td[data-metric] {{ text-align: right; font-variant-numeric: tabular-nums; }}
.plot {{ max-width: 1100px; }}
.severe {{ color: #a00; font-weight: bold; }}
.warning {{ color: #b35900; font-weight: bold; }}
.note {{ color: #555; }}
.pass {{ color: #1a7f37; font-weight: bold; }}
.fail {{ color: #a00; font-weight: bold; }}
</style>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>kanon report</h1>
<p>Quasi-identifiers: {", ".join(names)}. A record is <em>at risk</em> when an
attacker who knows its quasi-identifiers would pick it out with a chance above
{risk_threshold:.0%}.</p>
{lead}
<h2>Details</h2>
{_summary(sides, m, risk_threshold)}
<h2>Plots</h2>
{plots}
<h2>Sample: original rows and their released rows</h2>
{sample_html}
<h2>Parameters</h2>
{settings}
</body></html>
"""
