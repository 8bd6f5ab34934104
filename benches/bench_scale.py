"""Scale benchmark: Mondrian and the blocked forest on a census-like table of 100k-10M rows.

Usage::

    python benches/bench_scale.py [--sizes 100000,1000000,10000000] [--k 5]
        [--methods groupby,mondrian,forest,anonypy] [--skip-peers] [--labels default|range]
        [--block-size N] [--seed 1] [--timeout 600] [--kanon-timeout 1800]

Data: ``kanon.datagen.census`` (seeded, skewed, correlated; 13 columns) at each size,
generated once per size into a DuckDB file in a temporary folder, with the demo's
hierarchies (``kanon.cli.demo.build_census_hierarchies``) configured for its 8
quasi-identifiers: ``age`` INTEGER (5-year intervals), ``sex``, ``race``,
``marital_status``, ``education``, ``native_country`` (categories), ``zip`` (5-digit
text, masked digit by digit), ``birth_date`` DATE (day, month, year, decade);
``person_id`` and ``name`` are identifiers.

Methods, each in a fresh worker process that opens the size's DuckDB file (the table
stays in DuckDB's storage, nothing is copied into Python):

* ``groupby``, the floor: ``CREATE TABLE rel AS SELECT <8 QIs>, count(*) FROM census
  GROUP BY ALL``;
* ``mondrian``: ``CREATE TABLE rel AS SELECT * FROM kanon('census', k := k,
  method := 'mondrian')`` (ranges ``[lo..hi]`` for numbers and dates, hierarchy labels
  for the rest);
* ``forest``: the same with ``method := 'forest'``, blocked (the table is cut into blocks
  by Mondrian cuts; ``block_size`` is kanon's default unless ``--block-size``), hierarchy
  labels, kanon's default effort (the full improvement passes up to ``FULL_EFFORT_ROWS``,
  262,144 rows, the fast ones above);
* ``forest_fast``: the same with ``effort := 'fast'``, at the sizes where that is not
  already the default;
* ``anonypy`` (Mondrian on a pandas frame: numbers and dates, as days, by value, the other
  columns as ``category``; 100k and 1M rows only, capped by ``--timeout``). Its partitions
  are turned into the labels kanon's ``labels := 'range'`` publishes (``[lo..hi]``, the
  value itself, ``{a, b}`` sets, ``'*'`` for NULLs mixed with values) in SQL, untimed.

``--labels range`` runs both kanon methods with ``labels := 'range'``.

Time: the whole statement (planning included) written to a table of the size's DuckDB
file (a 10M-row release lands on disk, as a user's would), the median of 3 runs below 1M
rows, 1 run from 1M on (no warm-up; anonypy: the
``partition`` call, 1 run). Peak MiB: the worker's whole-life peak resident set (VmHWM:
opening the file, the runs; the metrics are computed after it is read). x GROUP BY: the
time over the ``groupby`` time at the same size.

GCP, computed in SQL by :func:`release_gcp` for every method from the released labels and
the original table: the mean over cells of the NCP of the cell's label: numbers and dates
``(hi - lo) / (max - min)`` of the column (a ``[lo..hi]`` label by its bounds, a hierarchy
label by the original values under it), other types ``(values - 1) / (distinct values -
1)`` (a hierarchy label: its leaves among the original values; a set ``{a, b}``: its
size); an original value 0, ``'*'`` 1, NULL 0. A label none of these explains stops the
benchmark. ``min class``: the smallest class of the released labels (≥ k).

Targets (issue): at 1M rows Mondrian ≤ 5 s and the forest ≤ 30 s, the forest's GCP at
least 10 % below Mondrian's; at 10M rows both ≤ 5 minutes and ≤ 8 GB (8·10⁹ bytes) peak,
and within 20 times the ``GROUP BY``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from measure import (
    chosen,
    ident,
    literal,
    mib,
    parse_or_serve,
    print_table,
    proc_status,
    process_peak,
    run_worker,
)

import kanon
from kanon.cli.demo import build_census_hierarchies
from kanon.datagen import CENSUS_ROLES, census
from kanon.plan.release.forest import FULL_EFFORT_ROWS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pandas as pd

TABLE = "census"
QI = [c for c, r in CENSUS_ROLES.items() if r == "qi"]
IDENTIFIERS = [c for c, r in CENSUS_ROLES.items() if r == "identifier"]
SIZES = [100_000, 1_000_000, 10_000_000]
METHODS = ["groupby", "mondrian", "forest", "forest_fast", "anonypy"]
PEERS = {"anonypy"}
PEER_MAX_ROWS = 1_000_000
LABELS = {
    "groupby": "DuckDB GROUP BY (floor)",
    "mondrian": "kanon mondrian",
    "forest": "kanon forest (blocked)",
    "forest_fast": "kanon forest (blocked), effort := 'fast'",
    "anonypy": "anonypy (Mondrian)",
}
RUNS_BELOW_1M = 3
SEED = 1
# Targets of the issue.
T1M_MONDRIAN_S = 5.0
T1M_FOREST_S = 30.0
T1M_GCP_GAIN = 0.10
T10M_S = 300.0
T10M_PEAK_B = 8 * 10**9
T10M_RATIO = 20.0

_INT = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT"}
_INT |= {"U" + t for t in _INT}
_ORDERED = _INT | {"FLOAT", "DOUBLE", "REAL", "DECIMAL"}


# --------------------------------------------------------------------------------------
# Scoring: one GCP for every release (hierarchy labels, [lo..hi] ranges, {a, b} sets)
# --------------------------------------------------------------------------------------


def _is_date(typ: str) -> bool:
    return typ.startswith(("DATE", "TIMESTAMP"))


def is_ordered(typ: str) -> bool:
    """Numbers, dates and timestamps: NCP by value range; anything else by value count."""
    return typ.split("(")[0] in _ORDERED or _is_date(typ)


def _position(expr: str, typ: str) -> str:
    """A value's place on its column's axis as DOUBLE (dates: seconds since the epoch)."""
    if _is_date(typ):
        return f"CAST(epoch({expr}) AS DOUBLE)"
    return f"CAST({expr} AS DOUBLE)"


def column_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in con.execute(f"DESCRIBE {ident(table)}").fetchall()}


def _column_loss_sql(
    con: duckdb.DuckDBPyConnection,
    source: str,
    release: str,
    column: str,
    typ: str,
    hierarchy: str | None,
) -> str:
    """SQL of one row: Σ NCP over the column's released cells, rows, unexplained labels."""
    c = ident(column)
    ordered = is_ordered(typ)
    x = _position(c, typ) if ordered else "CAST(NULL AS DOUBLE)"
    ctes = [
        f"lab AS (SELECT CAST({c} AS VARCHAR) AS label, count(*) AS n FROM {ident(release)} "
        "GROUP BY 1)",
        f"v AS (SELECT DISTINCT CAST({c} AS VARCHAR) AS key, {x} AS x FROM {ident(source)} "
        f"WHERE {c} IS NOT NULL)",
        "d AS (SELECT count(*) AS card, min(x) AS lo, max(x) AS hi FROM v)",
    ]
    if hierarchy is not None:
        levels = [r[0] for r in con.execute(f"DESCRIBE {ident(hierarchy)}").fetchall()]
        leaf = ident(levels[0])
        per_level = " UNION ALL ".join(
            f"SELECT CAST(h.{ident(name)} AS VARCHAR) AS label, {i} AS lvl, count(*) AS leaves, "
            f"min(v.x) AS lo, max(v.x) AS hi FROM {ident(hierarchy)} h "
            f"JOIN v ON CAST(h.{leaf} AS VARCHAR) = v.key GROUP BY 1"
            for i, name in enumerate(levels)
            if i > 0
        )
        ctes.append(
            "node AS (SELECT label, arg_min(leaves, lvl) AS leaves, arg_min(lo, lvl) AS lo, "
            f"arg_min(hi, lvl) AS hi FROM ({per_level}) GROUP BY label)"
        )
    else:
        ctes.append(
            "node AS (SELECT NULL::VARCHAR AS label, NULL::BIGINT AS leaves, "
            "NULL::DOUBLE AS lo, NULL::DOUBLE AS hi WHERE false)"
        )
    inner = "substr(lab.label, 2, length(lab.label) - 2)"
    if ordered:
        bound = [
            _position(f"TRY_CAST(split_part({inner}, '..', {i}) AS {typ})", typ) for i in (1, 2)
        ]
        node_ncp = "CASE WHEN d.hi > d.lo THEN (node.hi - node.lo) / (d.hi - d.lo) ELSE 0.0 END"
        # '[a..b]' / '(a..b)' ranges (the default interval hierarchies' labels too), and
        # their one-value forms '[a]' / '(a)'.
        shaped = (
            f"WHEN lab.label LIKE '[%..%]' OR lab.label LIKE '(%..%)' THEN "
            f"CASE WHEN d.hi > d.lo THEN ({bound[1]} - {bound[0]}) / (d.hi - d.lo) ELSE 0.0 END "
            f"WHEN (lab.label LIKE '[%]' OR lab.label LIKE '(%)') "
            f"AND {_position(f'TRY_CAST({inner} AS {typ})', typ)} IS NOT NULL THEN 0.0"
        )
    else:
        node_ncp = "CASE WHEN d.card > 1 THEN (node.leaves - 1) / (d.card - 1) ELSE 0.0 END"
        shaped = (
            "WHEN lab.label LIKE '{%}' THEN CASE WHEN d.card > 1 THEN "
            f"(len(string_split({inner}, ', ')) - 1) / (d.card - 1) ELSE 0.0 END"
        )
    ncp = (
        "CASE WHEN lab.label IS NULL THEN 0.0 WHEN lab.label = '*' THEN 1.0 "
        f"WHEN v.key IS NOT NULL THEN 0.0 WHEN node.label IS NOT NULL THEN {node_ncp} "
        f"{shaped} END"
    )
    return (
        f"WITH {', '.join(ctes)}, "
        f"s AS (SELECT lab.label, lab.n, {ncp} AS ncp FROM lab CROSS JOIN d "
        "LEFT JOIN v ON lab.label = v.key LEFT JOIN node ON lab.label = node.label) "
        "SELECT coalesce(sum(n * ncp), 0.0), coalesce(sum(n), 0), "
        "count(*) FILTER (WHERE ncp IS NULL), any_value(label) FILTER (WHERE ncp IS NULL) "
        "FROM s"
    )


def release_gcp(
    con: duckdb.DuckDBPyConnection,
    source: str,
    release: str,
    hierarchies: dict[str, str | None],
) -> tuple[float, dict[str, float]]:
    """GCP of ``release`` (QI label columns) against ``source``, and the NCP of each column.

    ``hierarchies`` maps every QI to its hierarchy table (or None): a label of the
    hierarchy is scored by the original values under it.
    """
    types = column_types(con, source)
    rows = con.execute(f"SELECT count(*) FROM {ident(source)}").fetchone()
    assert rows is not None
    per_column: dict[str, float] = {}
    for column, hierarchy in hierarchies.items():
        sql = _column_loss_sql(con, source, release, column, types[column], hierarchy)
        out = con.execute(sql).fetchone()
        assert out is not None
        loss, released, unknown, example = out
        if unknown:
            raise RuntimeError(
                f"{release}.{column}: {unknown} labels not understood, e.g. {example!r}"
            )
        if released != rows[0]:
            raise RuntimeError(f"{release} has {released} rows, {source} {rows[0]}")
        per_column[column] = loss / released if released else 0.0
    gcp = sum(per_column.values()) / len(per_column) if per_column else 0.0
    return gcp, per_column


def min_class(con: duckdb.DuckDBPyConnection, release: str, qis: Sequence[str]) -> int:
    cols = ", ".join(ident(c) for c in qis)
    out = con.execute(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM {ident(release)} GROUP BY {cols})"
    ).fetchone()
    assert out is not None
    return int(out[0])


# --------------------------------------------------------------------------------------
# anonypy: a frame for it, and its partitions as the labels of labels := 'range'
# --------------------------------------------------------------------------------------


def anonypy_frame(con: duckdb.DuckDBPyConnection, table: str, qis: Sequence[str]) -> pd.DataFrame:
    """The QIs of ``table`` for anonypy, with ``__rid`` (the row's ``rowid``).

    Numbers stay numbers, dates become days since 1970-01-01 (anonypy cuts both at the
    median), every other column becomes a pandas ``category`` (cut into value sets).
    """
    types = column_types(con, table)
    cols = ["rowid AS __rid"]
    for q in qis:
        if _is_date(types[q]):
            cols.append(f"date_diff('day', DATE '1970-01-01', {ident(q)}) AS {ident(q)}")
        else:
            cols.append(ident(q))
    df = con.sql(f"SELECT {', '.join(cols)} FROM {ident(table)} ORDER BY rowid").df()
    for q in qis:
        if not is_ordered(types[q]):
            df[q] = df[q].astype("category")
    return df


def anonypy_run(df: pd.DataFrame, qis: Sequence[str], k: int) -> Callable[[], list[Any]]:
    from anonypy import mondrian  # only the workers that need it pay for the import

    def run() -> list[Any]:
        return list(mondrian.Mondrian(df, list(qis)).partition(k))

    return run


def anonypy_release(
    con: duckdb.DuckDBPyConnection,
    table: str,
    df: pd.DataFrame,
    parts: Sequence[Any],
    qis: Sequence[str],
    release: str = "rel",
) -> None:
    """Store anonypy's partitions of ``df`` as temp table ``release`` of labels.

    One row per source row, the QI columns as VARCHAR labels exactly as kanon's
    ``labels := 'range'`` writes them: ``[lo..hi]`` for numbers and dates, ``{a, b}`` (the
    distinct values sorted as text) for other types, the value itself for a group of one
    value, NULL for a group of NULLs, ``'*'`` for NULLs mixed with values.
    """
    import numpy as np
    import pyarrow as pa

    types = column_types(con, table)
    part = np.empty(len(df), dtype=np.int64)
    part.fill(-1)
    for i, p in enumerate(parts):
        part[df.index.get_indexer(p)] = i
    if (part < 0).any():
        raise RuntimeError("anonypy's partitions do not cover every row")
    con.register("__parts", pa.table({"rid": df["__rid"].to_numpy(), "part": part}))
    labels = []
    for q in qis:
        c = ident(q)
        text = f"CAST({c} AS VARCHAR)"
        if is_ordered(types[q]):
            many = f"'[' || CAST(min({c}) AS VARCHAR) || '..' || CAST(max({c}) AS VARCHAR) || ']'"
            one = f"min({c}) = max({c})"
        else:
            many = f"'{{' || array_to_string(list_sort(list(DISTINCT {text})), ', ') || '}}'"
            one = f"count(DISTINCT {c}) = 1"
        labels.append(
            f"CASE WHEN count({c}) = 0 THEN NULL WHEN count({c}) < count(*) THEN '*' "
            f"WHEN {one} THEN CAST(min({c}) AS VARCHAR) ELSE {many} END AS {c}"
        )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {ident(release)} AS "
        f"WITH j AS (SELECT p.part, s.* FROM __parts p JOIN {ident(table)} s ON s.rowid = p.rid), "
        f"g AS (SELECT part, {', '.join(labels)} FROM j GROUP BY part) "
        f"SELECT {', '.join(ident(q) for q in qis)} FROM __parts p JOIN g USING (part)"
    )
    con.unregister("__parts")


# --------------------------------------------------------------------------------------
# Workers
# --------------------------------------------------------------------------------------


def kanon_sql(spec: dict[str, Any]) -> str:
    if spec["method"] == "groupby":
        cols = ", ".join(ident(c) for c in QI)
        return f"SELECT {cols}, count(*) AS n FROM {ident(TABLE)} GROUP BY ALL"
    args = [literal(TABLE), f"k := {int(spec['k'])}", f"method := {literal(spec['method'])}"]
    if spec.get("labels") == "range":
        args.append("labels := 'range'")
    if spec["method"] == "forest_fast":
        args[2] = "method := 'forest'"
        args.append("effort := 'fast'")
    if spec["method"].startswith("forest") and spec.get("block_size"):
        args.append(f"block_size := {int(spec['block_size'])}")
    return f"SELECT * FROM kanon({', '.join(args)})"


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    con = kanon.install(duckdb.connect(spec["db"]))
    if spec.get("memory_limit"):
        con.execute(f"SET memory_limit = {literal(spec['memory_limit'])}")
    method, k = spec["method"], int(spec["k"])
    if method == "anonypy":
        df = anonypy_frame(con, TABLE, QI)
        partition = anonypy_run(df, QI, k)
        result: list[Any] = []

        def run() -> None:
            result[:] = partition()

    else:
        sql = f"CREATE OR REPLACE TABLE rel AS {kanon_sql(spec)}"

        def run() -> None:
            con.execute(sql)

    gc.collect()
    times = []
    for _ in range(int(spec["runs"])):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    peak = process_peak(proc_status("VmHWM"))
    out: dict[str, Any] = {"time": statistics.median(times), "peak": peak}
    if method == "groupby":
        return out
    if method == "anonypy":
        anonypy_release(con, TABLE, df, result, QI)
        hierarchies: dict[str, str | None] = dict.fromkeys(QI)
    else:
        hierarchies = dict(spec["hierarchies"])
    gcp, by_column = release_gcp(con, TABLE, "rel", hierarchies)
    out |= {"gcp": gcp, "gcp_by_column": by_column, "min_class": min_class(con, "rel", QI)}
    return out


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------


def build_data(db: Path, rows: int, seed: int) -> dict[str, str]:
    """Generate the census table and its hierarchies into ``db``; configure the QIs."""
    with duckdb.connect(str(db)) as con:
        kanon.install(con)
        census(con, TABLE, rows=rows, seed=seed)
        hierarchies = build_census_hierarchies(con, TABLE)
        kanon.configure(
            con,
            TABLE,
            qi={c: hierarchies[c] for c in QI},
            identifiers=IDENTIFIERS,
            sensitive=[c for c, r in CENSUS_ROLES.items() if r == "sensitive"],
            insensitive=[c for c, r in CENSUS_ROLES.items() if r == "insensitive"],
        )
        con.execute("CHECKPOINT")
    return hierarchies


def _method_label(method: str, size: int) -> str:
    if method != "forest":
        return LABELS[method]
    return LABELS[method] + (", effort full" if size <= FULL_EFFORT_ROWS else ", effort fast")


def _size_label(n: int) -> str:
    for unit, name in ((10**6, "M"), (10**3, "k")):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{name}"
    return f"{n:,}"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report_targets(results: dict[tuple[int, str], dict[str, Any]]) -> None:
    def time_of(size: int, method: str) -> float | None:
        t = results.get((size, method), {}).get("time")
        return None if t is None else float(t)

    def missing(size: int, method: str) -> str:
        out = results.get((size, method))
        if out is None:
            return f"SKIP ({_size_label(size)} {method} not run)"
        return f"FAIL ({out.get('note', 'no result')})"

    big, huge = 1_000_000, 10_000_000
    for method, limit in (("mondrian", T1M_MONDRIAN_S), ("forest", T1M_FOREST_S)):
        t = time_of(big, method)
        line = f"1M {method}: time <= {limit:.0f} s: "
        print(line + (missing(big, method) if t is None else f"{t:.2f} s {_verdict(t <= limit)}"))
    g_m = results.get((big, "mondrian"), {}).get("gcp")
    g_f = results.get((big, "forest"), {}).get("gcp")
    line = f"1M forest GCP at least {100 * T1M_GCP_GAIN:.0f} % below mondrian's: "
    if g_m is None or g_f is None:
        print(line + (missing(big, "mondrian") if g_m is None else missing(big, "forest")))
    else:
        gain = 1 - g_f / g_m if g_m else 0.0
        print(
            line + f"{100 * g_f:.2f} % vs {100 * g_m:.2f} % ({100 * abs(gain):.1f} % "
            f"{'below' if gain >= 0 else 'above'}) "
            f"{_verdict(gain >= T1M_GCP_GAIN)}"
        )
    floor = time_of(huge, "groupby")
    for method in ("mondrian", "forest"):
        out = results.get((huge, method), {})
        t = time_of(huge, method)
        if t is None:
            print(f"10M {method}: {missing(huge, method)}")
            continue
        print(f"10M {method}: time <= {T10M_S:.0f} s: {t:.1f} s {_verdict(t <= T10M_S)}")
        peak = out.get("peak")
        print(
            f"10M {method}: peak <= {T10M_PEAK_B / 2**20:,.0f} MiB (8 GB): {mib(peak)} MiB "
            f"{_verdict(peak is not None and peak <= T10M_PEAK_B)}"
        )
        if floor is None:
            print(f"10M {method}: within {T10M_RATIO:.0f}x GROUP BY: {missing(huge, 'groupby')}")
        else:
            ratio = t / floor
            print(
                f"10M {method}: within {T10M_RATIO:.0f}x GROUP BY ({floor:.2f} s): {ratio:.1f}x "
                f"{_verdict(ratio <= T10M_RATIO)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="rows, comma-separated")
    parser.add_argument("--methods", default=",".join(METHODS), help="of " + ",".join(METHODS))
    parser.add_argument("--skip-peers", action="store_true", help="no anonypy")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--labels", choices=["default", "range"], default="default")
    parser.add_argument("--block-size", type=int, help="the forest's block_size (kanon default)")
    parser.add_argument("--seed", type=int, default=SEED, help="census generator seed")
    parser.add_argument(
        "--memory-limit", help="DuckDB memory_limit of the workers (default: DuckDB's own)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="anonypy cap, seconds")
    parser.add_argument(
        "--kanon-timeout", type=float, default=1800.0, help="cap of a kanon/GROUP BY worker, s"
    )
    args = parse_or_serve(parser, worker)
    if args is None:
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    methods = chosen(parser, args.methods, METHODS)
    if args.skip_peers:
        methods = [m for m in methods if m not in PEERS]
    results: dict[tuple[int, str], dict[str, Any]] = {}
    lines = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kanon_scale_") as tmp:
            db = Path(tmp) / "census.duckdb"
            start = time.perf_counter()
            hierarchies = build_data(db, size, args.seed)
            print(
                f"  generated {size:,} rows in {time.perf_counter() - start:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            for method in methods:
                if method in PEERS and size > PEER_MAX_ROWS:
                    continue
                if method == "forest_fast" and size > FULL_EFFORT_ROWS:
                    continue  # the forest's default there
                spec = {
                    "db": str(db),
                    "method": method,
                    "k": args.k,
                    "labels": args.labels,
                    "block_size": args.block_size,
                    "hierarchies": {c: hierarchies[c] for c in QI},
                    "runs": RUNS_BELOW_1M if size < 1_000_000 else 1,
                    "memory_limit": args.memory_limit,
                }
                cap = args.timeout if method in PEERS else args.kanon_timeout
                out = run_worker(__file__, spec, cap)
                results[size, method] = out
                print(f"  done {size:,} {method}", file=sys.stderr, flush=True)
        for method in methods:
            out = results.get((size, method))
            if out is None:
                continue
            floor = results.get((size, "groupby"), {}).get("time")
            t = out.get("time")
            lines.append(
                (
                    _size_label(size),
                    _method_label(method, size),
                    out.get("note", "?") if t is None else f"{t:.2f}",
                    "" if t is None else mib(out.get("peak")),
                    "-" if out.get("gcp") is None else f"{100 * out['gcp']:.2f}",
                    "-" if out.get("min_class") is None else str(out["min_class"]),
                    "-" if t is None or not floor else f"{t / floor:.1f}",
                )
            )
    header = ("rows", "method", "time s", "peak MiB", "GCP %", "min class", "x GROUP BY")
    print(f"k = {args.k}, labels: {args.labels}, seed {args.seed}")
    print_table(header, lines, left={1})
    print()
    report_targets(results)


if __name__ == "__main__":
    main()
