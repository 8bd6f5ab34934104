"""The ``kanon`` command line: ``kanon demo`` and ``kanon check FILE``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import duckdb

from kanon._check import check, classes
from kanon._sql import ident, literal
from kanon.exceptions import KanonError

__all__ = ["main"]


def _read_file(con: duckdb.DuckDBPyConnection, path: str, name: str, delimiter: str | None) -> str:
    """Create view ``name`` over a CSV or Parquet file; return the name."""
    if not Path(path).is_file():
        msg = f"no such file: {path}"
        raise KanonError(msg)
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        source = f"read_parquet({literal(path)})"
    else:
        opts = "" if delimiter is None else f", delim = {literal(delimiter)}"
        source = f"read_csv({literal(path)}{opts})"
    con.execute(f"CREATE OR REPLACE TEMP VIEW {ident(name)} AS SELECT * FROM {source}")
    return name


def _histogram(con: duckdb.DuckDBPyConnection, table: str, qi: list[str], top: int = 8) -> str:
    hist = classes(table, qi, con=con).to_pylist()
    lines = ["  class size   classes      rows   cumulative"]
    lines.extend(
        f"  {row['class_size']:>10,} {row['classes']:>9,} {row['rows']:>9,}"
        f"   {row['cumulative_share']:>9.2%}"
        for row in hist[:top]
    )
    if len(hist) > top:
        lines.append(f"  ... {len(hist) - top} larger class sizes")
    return "\n".join(lines)


def _cmd_check(args: argparse.Namespace) -> int:
    con = duckdb.connect()
    try:
        table = _read_file(con, args.file, "input", args.delimiter)
        population = None
        if args.population:
            population = _read_file(con, args.population, "population", args.delimiter)
        report = check(
            table,
            qi=[q.strip() for q in args.qi.split(",") if q.strip()],
            sensitive=args.sensitive,
            con=con,
            population=population,
            t_distance=args.t_distance,
            recursive_l=args.recursive_l,
            recursive_c=args.recursive_c,
            risk_threshold=args.risk_threshold,
        )
        if args.json:
            print(json.dumps(report.to_dict(), indent=2))
        else:
            print(f"privacy check of {args.file}")
            print(report)
            print("class sizes:")
            print(_histogram(con, table, list(report.qi)))
    finally:
        con.close()
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from kanon.demo import run_demo

    run_demo(rows=args.rows, seed=args.seed, k=args.k)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kanon", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="generate a census-like table, anonymize it to k and report")
    demo.add_argument("--rows", type=int, default=20_000)
    demo.add_argument("--k", type=int, default=5)
    demo.add_argument("--seed", type=int, default=42)
    demo.set_defaults(func=_cmd_demo)
    chk = sub.add_parser("check", help="measure k, l, t and risks of a CSV or Parquet file")
    chk.add_argument("file")
    chk.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    chk.add_argument("--sensitive")
    chk.add_argument("--population", help="population file for journalist risk")
    chk.add_argument("--delimiter", help="CSV delimiter (default: detected)")
    chk.add_argument("--t-distance", choices=["equal", "ordered"])
    chk.add_argument("--recursive-l", type=int)
    chk.add_argument("--recursive-c", type=float)
    chk.add_argument("--risk-threshold", type=float, default=0.2)
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.set_defaults(func=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    try:
        status = int(args.func(args))
    except (KanonError, duckdb.Error) as exc:
        print(f"kanon: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "demo":
        print(f"done in {time.perf_counter() - started:.2f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
