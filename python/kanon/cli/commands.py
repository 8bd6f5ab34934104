"""The ``kanon`` command line: demo, check, anonymize, metrics, verify, report, hierarchy."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from kanon._options import add_flags, flag_values, keywords
from kanon.api.check import check, classes
from kanon.cli.files import InputFile, formula_safe, parse_types, read_input
from kanon.exceptions import InvalidInputError, KanonError
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

    from kanon.cli.files import FormulaSafe
    from kanon.hierarchy import Hierarchy
    from kanon.plan.policy import Policy

__all__ = ["main"]

STDOUT = "-"
"""``--out -`` writes the release as CSV to standard output."""
# Exit status after standard output was closed early (128 + SIGPIPE, as a shell reports
# a command that a closed pipe stopped, e.g. ``cat big | head -1``).
EXIT_BROKEN_PIPE = 141


def _read_file(
    con: duckdb.DuckDBPyConnection, path: str, name: str, args: argparse.Namespace
) -> InputFile:
    """Create view ``name`` over a CSV or Parquet file, by the reading options of ``args``."""
    return read_input(
        con,
        path,
        name,
        delimiter=args.delimiter,
        all_text=args.all_text,
        types=parse_types(args.type),
    )


def _require_columns(
    con: duckdb.DuckDBPyConnection, source: InputFile, path: str, names: list[str]
) -> None:
    """Name the file, not kanon's view of it, when an option names a column it lacks."""
    have = [str(r[0]) for r in con.execute(f"DESCRIBE {ident(source.view)}").fetchall()]
    lower = {h.lower() for h in have}
    for name in names:
        if name.lower() not in lower:
            listed = ", ".join(repr(h) for h in have)
            msg = f"{path} has no column {name!r} (its columns: {listed})"
            raise KanonError(msg)


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
        source = _read_file(con, args.file, "input", args)
        qi = _columns(args.qi)
        roles = [*_columns(args.identifiers), *_columns(args.insensitive)]
        _require_columns(
            con, source, args.file, [*qi, *roles, *([args.sensitive] if args.sensitive else [])]
        )
        table = source.view
        population = None
        if args.population:
            population = _read_file(con, args.population, "population", args).view
        given = flag_values(args, "kanon_check")
        report = check(table, qi=qi, con=con, population=population, **given)
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


def _load_pair(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> list[str]:
    """Read ``args.file`` as table ``input`` and ``args.release`` as ``released``.

    ``input``'s QIs are configured with the ``--hierarchy`` files; returns the QIs.
    """
    qi = _columns(args.qi)
    source = _read_file(con, args.file, "kanon_cli_view", args)
    release = _read_file(con, args.release, "kanon_cli_release", args)
    _require_columns(con, source, args.file, qi)
    _require_columns(con, release, args.release, qi)
    # Real tables: the planner reads them through its own cursor.
    con.execute(f"CREATE TABLE input AS SELECT * FROM {ident(source.view)}")
    con.execute(f"CREATE TABLE released AS SELECT * FROM {ident(release.view)}")
    _configure_input(con, args.hierarchy or [], qi)
    return qi


def _cmd_metrics(args: argparse.Namespace) -> int:
    from kanon.api.release import metrics
    from kanon.engine.install import install

    con = install(duckdb.connect())
    try:
        qi = _load_pair(con, args)
        measured = metrics("input", "released", qi=qi, con=con, k=args.k)
        if args.json:
            print(json.dumps(measured.to_dict(), indent=2))
        else:
            print(f"utility of {args.release} as a release of {args.file}")
            print(measured)
    finally:
        con.close()
    return 0


def _policy_arg(text: str, db: str | None) -> Policy:
    """``--policy``: a JSON file of rules, else a policy stored in ``--db``'s kanon_policies."""
    from kanon.plan.policy import Policy, stored_policy

    if text.lower().endswith(".json") or Path(text).is_file():
        try:
            rules = json.loads(Path(text).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            msg = f"--policy {text!r}: cannot read it as a JSON policy file ({exc})"
            raise InvalidInputError(msg) from None
        return Policy.of(rules, Path(text).stem)
    if db is None:
        msg = (
            f"--policy {text!r} is not a JSON file; a stored policy's name needs --db, the "
            "DuckDB file whose kanon_policies holds it"
        )
        raise InvalidInputError(msg)
    if not Path(db).is_file():
        msg = f"--db {db!r}: no such DuckDB file"
        raise InvalidInputError(msg)
    with duckdb.connect(db, read_only=True) as stored:
        return stored_policy(stored, text)


def _cmd_verify(args: argparse.Namespace) -> int:
    from kanon.api.verify import verify
    from kanon.engine.install import install

    policy = _policy_arg(args.policy, args.db)
    con = install(duckdb.connect())
    try:
        qi = _load_pair(con, args)
        verdict = verify(
            "input", "released", policy, qi=qi, con=con, sensitive=_columns(args.sensitive)
        )
        if args.json:
            print(json.dumps(verdict.to_dict(), indent=2))
        else:
            print(f"verdict on {args.release} as a release of {args.file}")
            print(verdict)
    finally:
        con.close()
    return 0 if verdict.passed else 1


def _cmd_report(args: argparse.Namespace) -> int:
    from kanon.api.report import report
    from kanon.engine.install import install

    policy = None if args.policy is None else _policy_arg(args.policy, args.db)
    con = install(duckdb.connect())
    try:
        qi = _load_pair(con, args)
        params = {"original": args.file, "release": args.release}
        out = report(
            "input",
            "released",
            qi,
            out=args.out,
            con=con,
            sensitive=args.sensitive,
            k=args.k,
            parameters=params,
            policy=policy,
        )
        print(f"wrote {out}")
    finally:
        con.close()
    return 0


def _output_format(path: str) -> str:
    """``parquet`` or ``csv``, by the output file's extension (``-``: CSV on stdout)."""
    if path == STDOUT:
        return "csv"
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    msg = f"output file {path!r} must end in .parquet, .pq, .csv, .tsv or .txt (or be - for stdout)"
    raise KanonError(msg)


def _copy_options(fmt: str, args: argparse.Namespace, source: InputFile) -> str:
    """COPY options: Parquet, or CSV with a header and the output's delimiter.

    The delimiter is ``--out-delimiter`` when given, a tab for a ``.tsv`` output, else the
    input CSV's own (given or sniffed), else a comma. Fields holding the delimiter, a
    quote or a line break are quoted, quotes doubled (RFC 4180).
    """
    if fmt != "csv":
        return f"FORMAT {fmt}"
    if args.out_delimiter is not None:
        delimiter = args.out_delimiter
    elif args.out.lower().endswith(".tsv"):
        delimiter = "\t"
    else:
        delimiter = source.delimiter or ","
    if not delimiter or any(ch in delimiter for ch in '"\r\n'):
        msg = f"the output delimiter cannot be empty, a quote or a line break, got {delimiter!r}"
        raise KanonError(msg)
    return f"FORMAT csv, HEADER, DELIMITER {literal(delimiter)}, QUOTE '\"', ESCAPE '\"'"


def _hierarchy_options(
    con: duckdb.DuckDBPyConnection, specs: list[str], qi: list[str]
) -> dict[str, str]:
    """Load ``column=FILE`` ARX hierarchy files; return ``{column: hierarchy table}``.

    Each file is checked against its column of table ``input`` as it is loaded, so that
    an error names the file as given and the column (``hierarchy file 'ages.csv' for
    column 'age': ...``), not the table kanon loaded it into.
    """
    from kanon.hierarchy import from_csv, validate

    out: dict[str, str] = {}
    for i, spec in enumerate(specs):
        column, sep, path = spec.partition("=")
        column = column.strip()
        if not sep or not column or not path.strip():
            msg = f"--hierarchy takes COLUMN=FILE, got {spec!r}"
            raise KanonError(msg)
        where = f"hierarchy file {path!r} for column {column!r}"
        if column not in qi:
            msg = (
                f"{where}: the column is not listed in --qi ({', '.join(qi)}); add it to "
                "--qi or leave this --hierarchy out"
            )
            raise KanonError(msg)
        if not Path(path).is_file():
            msg = f"{where}: no such file"
            raise KanonError(msg)
        table = _hierarchy_table(i)
        try:
            from_csv(con, path, table)
            validate(con, table, table="input", column=column)
        except KanonError as exc:
            text = str(exc)
            for named in (f"hierarchy file {path!r} ", f"hierarchy {table!r} "):
                text = text.removeprefix(named)
            msg = f"{where}: {text}"
            raise type(exc)(msg) from exc
        out[column] = table
    return out


def _hierarchy_table(i: int) -> str:
    """The table that the ``i``-th ``--hierarchy`` file is loaded into."""
    return f"kanon_cli_h{i}"


def _configure_input(con: duckdb.DuckDBPyConnection, specs: list[str], qi: list[str]) -> None:
    """Configure table ``input``'s QIs with the ``--hierarchy`` files (others: by type)."""
    from kanon.api.configure import configure

    hierarchies = _hierarchy_options(con, specs, qi)
    configure(con, "input", qi={c: hierarchies.get(c) for c in qi})


#: The tables the commands read their files into, each with the argument naming the file.
_FILE_TABLES = (("input", "file"), ("released", "release"), ("population", "population"))


def _named_by_files(message: str, args: argparse.Namespace) -> str:
    """``message`` naming the user's files where it names the tables kanon read them into."""
    for table, option in _FILE_TABLES:
        path = getattr(args, option, None)
        if isinstance(path, str):
            message = message.replace(f"table {table!r}", repr(path))
    for i, spec in enumerate(getattr(args, "hierarchy", None) or []):
        path = spec.partition("=")[2]
        message = message.replace(f"hierarchy {_hierarchy_table(i)!r}", f"hierarchy file {path!r}")
    return message


def _pair_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``metrics`` and ``report``: an original, its release, how to read them."""
    parser.add_argument("file", help="the original")
    parser.add_argument("release", help="the release of it, with labels in the QI columns")
    parser.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    _hierarchy_flag(
        parser, "the ARX hierarchy file the release used for a QI; repeatable (default: by type)"
    )
    parser.add_argument("--k", type=int, help="the k the release was made for (C_AVG)")
    _reading_options(parser)


def _policy_flags(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--policy NAME|FILE.json`` and ``--db`` (where a stored policy is read)."""
    parser.add_argument(
        "--policy",
        required=required,
        metavar="NAME|FILE.json",
        help='a JSON file of rules ({"k": 5, "l": 2, ...}) or a policy stored in --db',
    )
    parser.add_argument("--db", help="the DuckDB file whose kanon_policies holds --policy NAME")


def _hierarchy_flag(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--hierarchy", action="append", metavar="COLUMN=FILE", help=help_text)


def _cmd_anonymize(args: argparse.Namespace) -> int:
    from kanon.engine.install import install
    from kanon.engine.progress import run_with_progress
    from kanon.plan.release.resolve import AnonymizeOptions, plan_anonymize

    fmt = _output_format(args.out)
    qi = _columns(args.qi)
    con = install(duckdb.connect())
    if args.memory_limit:
        # DuckDB otherwise uses up to 80 % of RAM before it spills to disk.
        con.execute(f"SET memory_limit = {literal(args.memory_limit)}")
    to_stdout = args.out == STDOUT
    out = Path(args.out)
    # Written next to the output under a temporary name and renamed when complete, so an
    # error or Ctrl-C never leaves a half-written file under the output's name; a release
    # for stdout is written to a temporary directory first and copied out when complete.
    scratch = Path(tempfile.mkdtemp(prefix="kanon-")) if to_stdout else None
    partial = (
        scratch / "release.csv"
        if scratch is not None
        else out.with_name(f".{out.name}.kanon-partial")
    )
    try:
        source = _read_file(con, args.file, "kanon_cli_view", args)
        roles = [*_columns(args.identifiers), *_columns(args.sensitive)]
        roles += _columns(args.insensitive)
        _require_columns(con, source, args.file, [*qi, *roles])
        view = source.view
        # A real table: the planner reads it through its own cursor.
        con.execute(f"CREATE TABLE input AS SELECT * FROM {ident(view)}")
        _configure_input(con, args.hierarchy or [], qi)
        values = keywords("kanon anonymize", "kanon", flag_values(args, "kanon"))
        options = AnonymizeOptions.of(args.k, qi, values)
        plan = plan_anonymize(con, "input", options)
        # With a summary or a report the release is kept as a table to measure it.
        kept = not args.quiet or bool(args.report)
        target = "released" if kept else f"({plan.sql})"
        options_sql = _copy_options(fmt, args, source)
        neutralise = fmt == "csv" and not args.allow_formulas

        def run() -> FormulaSafe | None:
            if kept:
                con.execute(f"CREATE TEMP TABLE released AS {plan.sql}").fetchall()
            # A CSV's fields that a spreadsheet would evaluate get a leading ' (OWASP).
            safe = formula_safe(con, target) if neutralise else None
            written = f"({safe.select})" if safe is not None else target
            con.execute(f"COPY {written} TO {literal(str(partial))} ({options_sql})").fetchall()
            return safe

        started = time.perf_counter()
        safe = run_with_progress(
            con,
            run,
            rows=plan.rows,
            label=f"anonymizing {plan.rows:,} rows",
            show=not args.quiet,
        )
        if to_stdout:
            sys.stdout.flush()
            with partial.open("rb") as fh:
                shutil.copyfileobj(fh, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            partial.replace(out)
        if not args.quiet:
            # With the release on stdout, the summary goes to stderr.
            print(
                f"wrote {'standard output' if to_stdout else out} ({plan.rows:,} rows, "
                f"k = {args.k}, method {options.method}) "
                f"in {time.perf_counter() - started:.2f} s",
                file=sys.stderr if to_stdout else sys.stdout,
            )
            _summarize(con, qi, args.k, file=sys.stderr if to_stdout else sys.stdout)
            if fmt == "csv":
                print(_formulas_line(con, safe), file=sys.stderr if to_stdout else sys.stdout)
        if args.report:
            from kanon.api.report import report

            sensitive = _columns(args.sensitive)
            params = {"input": args.file, "method": options.method, **values}
            report(
                "input",
                "released",
                qi,
                out=args.report,
                con=con,
                sensitive=sensitive[0] if len(sensitive) == 1 else None,
                k=args.k,
                parameters=params,
            )
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        con.close()
    return 0


#: The builders of ``kanon.hierarchy`` that ``kanon hierarchy --kind`` runs.
HIERARCHY_KINDS = ("intervals", "mask", "dates", "auto", "prefix_words", "suppress")


def _cmd_hierarchy(args: argparse.Namespace) -> int:
    from kanon import hierarchy
    from kanon.engine.install import install

    options: dict[str, Any] = {}
    if args.width is not None:
        options["width"] = int(args.width) if args.width.is_integer() else args.width
    if args.fanout is not None:
        options["fanout"] = args.fanout
    takes = {"intervals": {"width", "fanout"}, "auto": {"fanout"}}.get(args.kind, set())
    if set(options) - takes:
        msg = f"--kind {args.kind} takes no --{' --'.join(sorted(set(options) - takes))}"
        raise KanonError(msg)
    con = install(duckdb.connect())
    try:
        source = _read_file(con, args.file, "kanon_cli_view", args)
        _require_columns(con, source, args.file, [args.column])
        con.execute(f"CREATE TABLE input AS SELECT * FROM {ident(source.view)}")
        build: Callable[..., Hierarchy] = getattr(hierarchy, args.kind)
        built = build(con, "kanon_cli_hierarchy", table="input", column=args.column, **options)
        built.to_csv(con, args.out)
        print(
            f"wrote {args.out}: {args.kind} hierarchy of {args.column}, {built.levels} levels "
            f"above the values (use it with --hierarchy {args.column}={args.out})"
        )
    finally:
        con.close()
    return 0


def _summarize(con: duckdb.DuckDBPyConnection, qi: list[str], k: int, file: TextIO) -> None:
    """The release's privacy and utility in three lines (table ``released`` of ``input``)."""
    from kanon.api.release import metrics

    m = metrics("input", "released", qi=qi, con=con, k=k)
    per_column = ", ".join(f"{c} {v:.2%}" for c, v in m.gcp_by_column.items())
    print(
        f"privacy: every class holds at least {m.min_class} rows ({m.classes:,} classes); "
        f"{m.suppressed:,} rows suppressed",
        file=file,
    )
    print(f"utility: GCP {m.gcp:.2%} of the detail lost ({per_column})", file=file)


def _formulas_line(con: duckdb.DuckDBPyConnection, safe: FormulaSafe | None) -> str:
    """The summary's line on the CSV fields neutralised as formulas (``None``: allowed)."""
    if safe is None:
        return "formulas: CSV fields written as they are (--allow-formulas)"
    fields = safe.header + (int(con.execute(safe.count).fetchall()[0][0]) if safe.count else 0)
    return (
        f"formulas: {fields:,} CSV field{'' if fields == 1 else 's'} starting with =, +, -, @, "
        "tab, CR or ' (numbers such as -5 aside) got a leading ' (OWASP); strip one leading ' "
        "to restore them, or pass --allow-formulas"
    )


def _cmd_demo(args: argparse.Namespace) -> int:
    from kanon.cli.demo import run_demo

    run_demo(rows=args.rows, seed=args.seed, k=args.k, db=args.db, report=args.report or None)
    return 0


def _reading_options(parser: argparse.ArgumentParser) -> None:
    """The options of how input files are read (``check`` and ``anonymize``)."""
    parser.add_argument("--delimiter", help="CSV delimiter of the input (default: detected)")
    parser.add_argument(
        "--all-text",
        action="store_true",
        help="read every CSV column as text (default: a column is typed only where the "
        "sniffed type keeps every value's text, so 02134, +1 and 1.50 stay text)",
    )
    parser.add_argument(
        "--type",
        action="append",
        metavar="COLUMN=TYPE",
        help="read COLUMN as DuckDB TYPE (e.g. zip=VARCHAR, price=DOUBLE); every value "
        "must convert; repeatable",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kanon",
        description=__doc__,
        epilog="CSV values keep their text (see --all-text and --type of check and anonymize). "
        "Exit status: 0 done, 1 a verdict of FAIL (verify), 2 error, 130 interrupted, 141 "
        "standard output closed early.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="generate a census-like table, anonymize it to k and report")
    demo.add_argument("--rows", type=int, default=20_000)
    demo.add_argument("--k", type=int, default=5)
    demo.add_argument("--seed", type=int, default=42)
    demo.add_argument(
        "--db", default="kanon-demo.duckdb", help="the DuckDB file to write (default: %(default)s)"
    )
    demo.add_argument(
        "--report",
        default="kanon-demo.html",
        help="the HTML report to write; '' for none (default: %(default)s)",
    )
    demo.set_defaults(func=_cmd_demo)
    chk = sub.add_parser("check", help="measure k, l, t and risks of a CSV or Parquet file")
    chk.add_argument("file")
    chk.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    add_flags(chk, "kanon_check")
    chk.add_argument("--population", help="population file for journalist risk")
    _reading_options(chk)
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.set_defaults(func=_cmd_check)
    met = sub.add_parser(
        "metrics", help="measure the utility of a release (kanon_metrics) of a CSV or Parquet file"
    )
    _pair_arguments(met)
    met.add_argument("--json", action="store_true", help="print the metrics as JSON")
    met.set_defaults(func=_cmd_metrics)
    ver = sub.add_parser(
        "verify",
        help="judge a release against a policy: exit 0 on PASS, 1 on FAIL, 2 on an error",
    )
    ver.add_argument("file", help="the original")
    ver.add_argument("release", help="the release of it, as published")
    _policy_flags(ver, required=True)
    ver.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    ver.add_argument("--sensitive", help="comma-separated sensitive columns (rules l and t)")
    _hierarchy_flag(ver, "the ARX hierarchy file of a QI (rule loss); repeatable")
    _reading_options(ver)
    ver.add_argument("--json", action="store_true", help="print the verdict as JSON")
    ver.set_defaults(func=_cmd_verify)
    rep = sub.add_parser(
        "report", help="write an HTML report of a release beside its original (offline)"
    )
    _pair_arguments(rep)
    rep.add_argument("--sensitive", help="sensitive column (l-diversity, t-closeness)")
    rep.add_argument("--out", required=True, help="the HTML file to write")
    _policy_flags(rep, required=False)
    rep.set_defaults(func=_cmd_report)
    hier = sub.add_parser(
        "hierarchy", help="build a hierarchy of a column and write it in ARX's CSV format"
    )
    hier.add_argument("file", help="the CSV or Parquet file holding the column")
    hier.add_argument("--column", required=True, help="the column to build it for")
    hier.add_argument(
        "--kind",
        required=True,
        choices=HIERARCHY_KINDS,
        help="intervals (numbers), mask (codes such as ZIP), dates, auto (a balanced tree), "
        "prefix_words (text), suppress (value then *)",
    )
    hier.add_argument("--width", type=float, help="intervals: the width of the first level")
    hier.add_argument("--fanout", type=int, help="intervals, auto: children per node")
    hier.add_argument("--out", required=True, help="the hierarchy file to write (ARX CSV, ;)")
    _reading_options(hier)
    hier.set_defaults(func=_cmd_hierarchy)
    anon = sub.add_parser(
        "anonymize", help="write a k-anonymous copy of a CSV or Parquet file (CSV or Parquet)"
    )
    anon.add_argument("file")
    anon.add_argument("--k", type=int, required=True, help="smallest class size")
    anon.add_argument("--qi", required=True, help="comma-separated quasi-identifiers")
    _hierarchy_flag(
        anon, "ARX hierarchy file (value;level 1;...;*) of a QI; repeatable (default: by type)"
    )
    add_flags(anon, "kanon")
    _reading_options(anon)
    anon.add_argument(
        "--out",
        required=True,
        help="output file: .csv, .tsv, .txt or .parquet; - writes CSV to standard output",
    )
    anon.add_argument(
        "--out-delimiter",
        help="CSV output delimiter (default: the input CSV's, a tab for .tsv, else a comma)",
    )
    anon.add_argument(
        "--allow-formulas",
        action="store_true",
        help="write CSV fields that start like a spreadsheet formula (=, +, -, @, tab, CR) "
        "unchanged (default: prefix them, and fields starting with ', with a ')",
    )
    anon.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    anon.add_argument("--report", help="also write the HTML report of the release (kanon.report)")
    anon.add_argument(
        "--memory-limit",
        help="DuckDB memory_limit, e.g. 6GB: the plan spills to disk beyond it",
    )
    anon.set_defaults(func=_cmd_anonymize)
    return parser


def _mute_stdout() -> None:
    """Point stdout at /dev/null: its reader is gone, and Python flushes it at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    try:
        status = int(args.func(args))
        if args.command == "demo":
            print(f"done in {time.perf_counter() - started:.2f} s")
        # Flushed here, so that a closed pipe is reported below and not at exit.
        sys.stdout.flush()
    except BrokenPipeError:
        _mute_stdout()
        return EXIT_BROKEN_PIPE
    except (KanonError, duckdb.Error) as exc:
        print(f"kanon: error: {_named_by_files(str(exc), args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kanon: interrupted; nothing was written", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
