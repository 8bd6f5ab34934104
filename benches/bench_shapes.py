"""Shape matrix: kanon's methods on tables shaped unlike our generator, against a floor.

Usage::

    python benches/bench_shapes.py [--sizes 100000,1000000] [--shapes census,uniform,...]
        [--large 10000000 --large-shapes census,uniform] [--memory-limit 6GB]
        [--methods mondrian,forest,forest_range,optimal] [--k 10] [--timeout 1800]

Shapes, generated in SQL from a seed (deterministic; every QI with default hierarchies):

* ``census``: ``kanon.datagen.census`` (skewed, correlated; 7 QIs, ``native_country``
  passed through);
* ``uniform``: 8 independent uniform QIs of mixed cardinality: age (74 values), sex,
  a ZIP-like integer (~2,700), marital status (7), occupation (14), a birth date over 55
  years, education (16), an integer income (10^6 values), plus a timestamp at second
  resolution over a year (the 9th QI: ~10^5-10^6 distinct values);
* ``zipf``: 6 categorical QIs whose values follow power laws (50 to 5,000 values);
* ``wide16``: 16 independent QIs (integers and categories, 3 to 1,000 values);
* ``dup40``: 4 QIs of 2 to 5 values (heavy duplication) and 40 pass-through columns;
* ``doubles``: 4 DOUBLE QIs with 10 % NULLs and repeated values (rounded draws).

Methods, each in a fresh worker that opens the shape's DuckDB file:

* ``floor``: ``CREATE TABLE f AS SELECT *, count(*) OVER (PARTITION BY <QIs>) FROM t``,
  every row with its class size;
* ``mondrian``, ``forest`` (its default effort), ``forest_range`` (``labels := 'range'``)
  and ``optimal`` (``max_suppression := 0.05``), each ``CREATE TABLE rel AS SELECT * FROM
  kanon('t', k := k, ...)``.

Columns: time (the statement, planning included, one run), x floor (time over the
floor's), x census (time over the census table's, same method and size), peak MiB (the
worker's whole-life peak resident set), GCP in % (``w``: the published ranges' widths
and sets' sizes, as ``bench_scale.release_gcp``, for every method alike; ``h``:
``kanon_metrics`` by hierarchy nodes, where some label is a calendar one), the
smallest class (>= k). A statement kanon refuses shows its error.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import min_class, release_gcp
from measure import chosen, ident, literal, mib, print_table, proc_status, process_peak, run_worker

import kanon
import kanon.datagen

TABLE = "t"
METHODS = ("floor", "mondrian", "forest", "forest_range", "optimal")
CENSUS_QI = ["age", "sex", "race", "marital_status", "education", "zip", "birth_date"]


def _u(salt: int) -> str:
    """A uniform draw in [0, 1) per row ``i``, from a hash (deterministic)."""
    return f"(hash(i, {salt}) % 1000000007) / 1000000007.0"


def _pick(salt: int, n: int) -> str:
    """A uniform integer in [0, n)."""
    return f"CAST(floor({_u(salt)} * {n}) AS INTEGER)"


def _zipf(salt: int, n: int, a: float) -> str:
    """A power-law draw in [0, n): value v with weight about (v + 1) ** -a."""
    return f"CAST(floor({n} * pow({_u(salt)}, {a})) AS INTEGER)"


def shape_sql(shape: str, rows: int) -> tuple[str, list[str]]:
    """The SELECT generating ``shape`` over ``range(rows) r(i)``, and its QIs."""
    src = f"FROM range({rows}) r(i)"
    if shape == "uniform":
        cols = {
            "age": f"17 + {_pick(1, 74)}",
            "sex": f"CASE WHEN {_pick(2, 2)} = 0 THEN 'F' ELSE 'M' END",
            "zip": f"10000 + {_pick(3, 2700)} * 31",
            "marital": f"'m' || {_pick(4, 7)}",
            "occupation": f"'o' || {_pick(5, 14)}",
            "birth": f"DATE '1950-01-01' + {_pick(6, 55 * 365)}",
            "education": f"'e' || {_pick(7, 16)}",
            "income": _pick(8, 1_000_000),
            "seen": f"TIMESTAMP '2025-01-01' + to_seconds({_pick(9, 365 * 86400)})",
        }
    elif shape == "zipf":
        cols = {
            f"c{j}": f"'v' || {_zipf(10 + j, n, 3.0)}"
            for j, n in enumerate((50, 200, 500, 1000, 2000, 5000))
        }
    elif shape == "wide16":
        sizes = (3, 5, 7, 10, 12, 20, 30, 50, 74, 100, 150, 200, 365, 500, 700, 1000)
        cols = {
            f"q{j}": (_pick(20 + j, n) if j % 2 else f"'x' || {_pick(20 + j, n)}")
            for j, n in enumerate(sizes)
        }
    elif shape == "dup40":
        cols = {f"d{j}": f"'d' || {_pick(40 + j, n)}" for j, n in enumerate((2, 3, 4, 5))}
        extra = ", ".join(f"{_pick(60 + j, 1000)} AS p{j}" for j in range(40))
        qis = list(cols)
        body = ", ".join(f"{e} AS {ident(c)}" for c, e in cols.items())
        return f"SELECT i AS id, {body}, {extra} {src}", qis
    elif shape == "doubles":
        cols = {
            f"x{j}": (
                f"CASE WHEN {_u(80 + j)} < 0.1 THEN NULL "
                f"ELSE round({_u(90 + j)} * {scale}, {digits}) END"
            )
            for j, (scale, digits) in enumerate(((100, 1), (1000, 0), (1, 3), (1e6, -2)))
        }
    else:
        msg = f"unknown shape {shape!r}"
        raise ValueError(msg)
    body = ", ".join(f"{e} AS {ident(c)}" for c, e in cols.items())
    return f"SELECT i AS id, {body} {src}", list(cols)


SHAPES = ("census", "uniform", "zipf", "wide16", "dup40", "doubles")


def build(db: Path, shape: str, rows: int) -> list[str]:
    """Generate ``shape`` at ``rows`` into ``db`` and declare its roles; return its QIs."""
    with duckdb.connect(str(db)) as con:
        kanon.install(con)
        if shape == "census":
            kanon.datagen.census(con, TABLE, rows=rows, seed=42)
            qis = CENSUS_QI
        else:
            sql, qis = shape_sql(shape, rows)
            con.execute(f"CREATE TABLE {TABLE} AS {sql}")
        cols = [r[0] for r in con.execute(f"DESCRIBE {TABLE}").fetchall()]
        ids = ["person_id", "name"] if shape == "census" else ["id"]
        rest = [c for c in cols if c not in qis and c not in ids]
        kanon.configure(con, TABLE, qi=dict.fromkeys(qis), identifiers=ids, insensitive=rest)
        con.execute("CHECKPOINT")
    return qis


def statement(method: str, k: int, qis: list[str]) -> str:
    if method == "floor":
        part = ", ".join(ident(c) for c in qis)
        return f"SELECT *, count(*) OVER (PARTITION BY {part}) AS n FROM {TABLE}"
    args = [literal(TABLE), f"k := {k}"]
    args += {
        "mondrian": ["method := 'mondrian'"],
        "forest": [],
        "forest_range": ["labels := 'range'"],
        "optimal": ["method := 'optimal'", "max_suppression := 0.05"],
    }[method]
    return f"SELECT * FROM kanon({', '.join(args)})"


def _gcp(con: duckdb.DuckDBPyConnection, qis: list[str]) -> tuple[float | None, str] | None:
    """GCP of the release, and how it was measured (no GCP, and why, if that failed).

    ``"w"``: ``bench_scale.release_gcp``, the width of every published range (ranges and
    interval-hierarchy labels alike) and the size of every published set, one formula for
    every method; ``"h"``: ``kanon_metrics`` (hierarchy nodes by the leaves under them),
    where a label is neither (calendar labels of dates).
    """
    try:
        return release_gcp(con, TABLE, "rel", dict.fromkeys(qis))[0], "w"
    except RuntimeError:
        pass
    names = ", ".join(literal(c) for c in qis)
    try:
        row = con.execute(f"SELECT gcp FROM kanon_metrics('{TABLE}', 'rel', qi := [{names}])")
        value = row.fetchone()
        return (float(value[0]), "h") if value else None
    except duckdb.Error as err:  # e.g. out of memory or of disk for its spill
        return None, "failed: " + str(err).splitlines()[0][:40]


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    con = kanon.install(duckdb.connect(spec["db"]))
    if spec.get("memory_limit"):  # the plan spills to disk beyond it
        con.execute(f"SET memory_limit = {literal(spec['memory_limit'])}")
    qis = list(spec["qis"])
    sql = f"CREATE OR REPLACE TABLE rel AS {statement(spec['method'], spec['k'], qis)}"
    start = time.perf_counter()
    try:
        con.execute(sql)
    except duckdb.Error as err:  # a refusal (e.g. a lattice too large) is a result too
        text = str(err).splitlines()[0]
        kind = "out of memory" if isinstance(err, duckdb.OutOfMemoryException) else "refused"
        return {"note": f"{kind}: " + text[text.rfind("Error: ") + 7 :][:44]}
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {"time": seconds, "peak": process_peak(proc_status("VmHWM"))}
    if spec["method"] != "floor":
        out["gcp"] = _gcp(con, qis)
        out["min_class"] = min_class(con, "rel", qis)
    con.execute("DROP TABLE rel")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--large", default="", help="a larger size run for --large-shapes")
    parser.add_argument("--large-shapes", default="census,uniform")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--memory-limit", help="DuckDB memory_limit of every run, e.g. 6GB")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    shapes = chosen(parser, args.shapes, SHAPES)
    methods = chosen(parser, args.methods, METHODS)
    if "floor" not in methods:
        methods.insert(0, "floor")
    runs = [
        (int(size), shape) for size in args.sizes.split(",") if size.strip() for shape in shapes
    ]
    if args.large:
        large = chosen(parser, args.large_shapes, SHAPES)
        runs += [(int(args.large), shape) for shape in large]
    results: dict[tuple[int, str, str], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kanon-shapes-") as tmp:
        for size, shape in runs:
            db = Path(tmp) / f"{shape}_{size}.duckdb"
            qis = build(db, shape, size)
            for method in methods:
                spec = {"db": str(db), "qis": qis, "method": method, "k": args.k}
                spec["memory_limit"] = args.memory_limit
                r = run_worker(__file__, spec, args.timeout)
                results[size, shape, method] = r
                shown = r["note"] if "note" in r else f"{r['time']:.2f} s"
                print(f"{shape} {size} {method}: {shown}", file=sys.stderr)
            db.unlink(missing_ok=True)
    header = (
        "shape",
        "rows",
        "method",
        "time s",
        "x floor",
        "x census",
        "peak MiB",
        "GCP %",
        "min class",
    )
    print_table(header, [_line(results, key) for key in results], left={0, 2})


def _line(
    results: dict[tuple[int, str, str], dict[str, Any]], key: tuple[int, str, str]
) -> tuple[str, ...]:
    """One row of the table: the run ``key`` against its floor and the census table's run."""
    size, shape, method = key
    r = results[key]
    if "note" in r:
        return (shape, f"{size:,}", method, r["note"], "", "", "", "", "")
    floor = results.get((size, shape, "floor"), {}).get("time")
    census = results.get((size, "census", method), {}).get("time")
    value, how = r.get("gcp") or (None, "")
    gcp = how if value is None else f"{100 * value:.2f} {how}"
    return (
        shape,
        f"{size:,}",
        method,
        f"{r['time']:.2f}",
        f"{r['time'] / floor:.1f}" if floor else "",
        f"{r['time'] / census:.2f}" if census else "",
        mib(r["peak"]),
        gcp,
        str(r.get("min_class", "")),
    )


if __name__ == "__main__":
    main()
