"""The ``kanon`` command line: ``kanon demo``, ``kanon check FILE`` and ``kanon anonymize IN``."""

from __future__ import annotations

import argparse
import contextlib
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


def _columns(text: str | None) -> list[str]:
    """The columns of a comma-separated option (none when absent)."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


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
            qi=_columns(args.qi),
            sensitive=args.sensitive,
            identifiers=_columns(args.identifiers),
            insensitive=_columns(args.insensitive),
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


def _output_format(path: str) -> str:
    """``parquet`` or ``csv``, by the output file's extension."""
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    msg = f"output file {path!r} must end in .parquet, .pq or .csv"
    raise KanonError(msg)


def _hierarchy_options(con: duckdb.DuckDBPyConnection, specs: list[str]) -> dict[str, str]:
    """Load ``column=FILE`` ARX hierarchy files; return ``{column: hierarchy table}``."""
    from kanon.hierarchy import from_csv

    out: dict[str, str] = {}
    for i, spec in enumerate(specs):
        column, sep, path = spec.partition("=")
        if not sep or not column.strip() or not path.strip():
            msg = f"--hierarchy takes COLUMN=FILE, got {spec!r}"
            raise KanonError(msg)
        if not Path(path).is_file():
            msg = f"no such hierarchy file for column {column.strip()!r}: {path}"
            raise KanonError(msg)
        out[column.strip()] = from_csv(con, path, f"kanon_cli_h{i}").name
    return out


def _cmd_anonymize(args: argparse.Namespace) -> int:
    from kanon._anonymize import AnonymizeOptions, plan_anonymize
    from kanon._config import configure
    from kanon._install import install
    from kanon._models import PrivacyModels
    from kanon._progress import run_with_progress

    fmt = _output_format(args.out)
    qi = _columns(args.qi)
    con = install(duckdb.connect())
    if args.memory_limit:
        # DuckDB otherwise uses up to 80 % of RAM before it spills to disk.
        con.execute(f"SET memory_limit = {literal(args.memory_limit)}")
    out = Path(args.out)
    # Written next to the output under a temporary name and renamed when complete, so an
    # error or Ctrl-C never leaves a half-written file under the output's name.
    partial = out.with_name(f".{out.name}.kanon-partial")
    try:
        view = _read_file(con, args.file, "kanon_cli_view", args.delimiter)
        # A real table: the planner reads it through its own cursor.
        con.execute(f"CREATE TABLE input AS SELECT * FROM {ident(view)}")
        hierarchies = _hierarchy_options(con, args.hierarchy or [])
        unknown = sorted(set(hierarchies) - set(qi))
        if unknown:
            msg = f"--hierarchy names column(s) {', '.join(unknown)} not listed in --qi"
            raise KanonError(msg)
        configure(con, "input", qi={c: hierarchies.get(c) for c in qi})
        options = AnonymizeOptions.of(
            args.k,
            qi,
            seed=args.seed,
            method=args.method,
            labels=args.labels,
            block_size=args.block_size,
            effort=args.effort,
            max_suppression=args.max_suppression,
            identifiers=_columns(args.identifiers),
            insensitive=_columns(args.insensitive),
            keep_undeclared=args.keep_undeclared,
            models=PrivacyModels(sensitive=_columns(args.sensitive) or None),
        )
        plan = plan_anonymize(con, "input", options)
        copy = (
            f"COPY ({plan.sql}) TO {literal(str(partial))} "
            f"(FORMAT {fmt}{', HEADER' if fmt == 'csv' else ''})"
        )
        started = time.perf_counter()
        run_with_progress(
            con,
            lambda: con.execute(copy),
            rows=plan.rows,
            label=f"anonymizing {plan.rows:,} rows",
            show=not args.quiet,
        )
        partial.replace(out)
        if not args.quiet:
            print(
                f"wrote {out} ({plan.rows:,} rows, k = {args.k}, method {options.method}) "
                f"in {time.perf_counter() - started:.2f} s"
            )
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
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
    chk.add_argument("--sensitive", help="sensitive column (l-diversity, t-closeness)")
    chk.add_argument("--identifiers", help="comma-separated identifier columns")
    chk.add_argument("--insensitive", help="comma-separated columns released unchanged")
    chk.add_argument("--population", help="population file for journalist risk")
    chk.add_argument("--delimiter", help="CSV delimiter (default: detected)")
    chk.add_argument("--t-distance", choices=["equal", "ordered"])
    chk.add_argument("--recursive-l", type=int)
    chk.add_argument("--recursive-c", type=float)
    chk.add_argument("--risk-threshold", type=float, default=0.2)
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.set_defaults(func=_cmd_check)
    anon = sub.add_parser(
        "anonymize", help="write a k-anonymous copy of a CSV or Parquet file (CSV or Parquet)"
    )
    anon.add_argument("file")
    anon.add_argument("--k", type=int, required=True, help="smallest class size")
    anon.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    anon.add_argument("--identifiers", help="comma-separated identifier columns (released as '*')")
    anon.add_argument("--sensitive", help="comma-separated sensitive columns (released unchanged)")
    anon.add_argument("--insensitive", help="comma-separated other columns released unchanged")
    anon.add_argument(
        "--keep-undeclared",
        action="store_true",
        help="release columns without a role unchanged even when their values single out "
        "rows (more than 1 %% of the rows, and at least 2, hold a value no other row holds)",
    )
    anon.add_argument(
        "--hierarchy",
        action="append",
        metavar="COLUMN=FILE",
        help="ARX hierarchy file (value;level 1;...;*) of a QI; repeatable (default: by type)",
    )
    anon.add_argument(
        "--method",
        default="forest",
        choices=["forest", "forest_paper", "mondrian", "optimal", "datafly", "mu_argus"],
    )
    anon.add_argument("--labels", choices=["hierarchy", "range"], help="local recoding labels")
    anon.add_argument("--block-size", type=int, help="forest: rows per block")
    anon.add_argument(
        "--effort",
        choices=["full", "fast"],
        help="forest: improvement passes (default: full up to 1,048,576 rows, fast above)",
    )
    anon.add_argument("--max-suppression", type=float, default=0.0, help="optimal: row share")
    anon.add_argument("--seed", type=int, default=0)
    anon.add_argument("--delimiter", help="CSV delimiter of the input (default: detected)")
    anon.add_argument("--out", required=True, help="output file: .csv or .parquet")
    anon.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    anon.add_argument(
        "--memory-limit",
        help="DuckDB memory_limit, e.g. 6GB: the plan spills to disk beyond it",
    )
    anon.set_defaults(func=_cmd_anonymize)
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
    except KeyboardInterrupt:
        print("kanon: interrupted; nothing was written", file=sys.stderr)
        return 130
    if args.command == "demo":
        print(f"done in {time.perf_counter() - started:.2f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
