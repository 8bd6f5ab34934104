"""The command line's files: CSV read keeping every value's text, written without formulas.

DuckDB's CSV sniffer types columns from a sample: ``02134`` becomes the integer 2134,
``1.50`` the double 1.5, ``+1`` the integer 1. The command line reads every CSV field
as text and then gives a column the sniffed type only where that changes no value's
text (every non-NULL value reads back, ``CAST(CAST(v AS type) AS VARCHAR)``, as the
same text): ages ``34`` stay numbers (and get interval hierarchies), ZIP codes with a
leading zero, phone numbers with ``+``, amounts written ``1.50`` stay ``VARCHAR``.
``all_text`` keeps every column ``VARCHAR``; ``types`` casts named columns to a given
type (every value must cast). Parquet columns keep their stored types.

A file that cannot be read or parsed is reported as such, naming the file and DuckDB's
reason, before any column is looked up.

A CSV output neutralises spreadsheet formulas by OWASP's convention (:func:`formula_safe`):
a text field that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return and is
not a plain number (``-5``, ``+3.2``, ``-1e3``) gets a leading single quote ``'``, and so
does a field that already starts with ``'``; stripping exactly one leading ``'`` from every
field that starts with one restores the original.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from kanon.exceptions import InvalidInputError
from kanon.sql.quote import ident, literal

__all__ = ["FormulaSafe", "InputFile", "formula_safe", "parse_types", "read_input"]

# A type name as a user writes it: words, an optional (precision, scale), optional [].
_TYPE_RE = re.compile(
    r"[A-Za-z][A-Za-z0-9_]*( [A-Za-z][A-Za-z0-9_]*)*(\(\s*\d+\s*(,\s*\d+\s*)?\))?(\[\])?"
)
# Delimiters tried when the sniffer reads a file as a single column.
_CANDIDATES = (",", ";", "\t", "|")
# The sniffer's spelling of "no character".
_EMPTY = "(empty)"
_NEWLINES = ("\\n", "\\r\\n", "\\r")
# A plain number (RE2, ASCII digits): an optional sign, digits with an optional decimal
# point, an optional exponent. A spreadsheet reads it as a number, not a formula: kept.
_PLAIN_NUMBER = r"[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?"
# The first characters that make a spreadsheet evaluate a field (OWASP, CSV injection),
# and the quote that neutralises them, which is therefore escaped by itself too.
_FORMULA_START = ("=", "@", "\t", "\r")
_SIGNS = ("+", "-")
_QUOTE = "'"
# Column types whose CSV text is checked; all others print as numbers, booleans, dates,
# times, intervals, UUIDs, lists or structs.
_TEXT_TYPES = ("VARCHAR", "JSON", "BLOB")


@dataclass(frozen=True)
class InputFile:
    """A view over an input file.

    Attributes:
        view: The temporary view's name.
        delimiter: The CSV's field delimiter (given or sniffed); ``None`` for Parquet.
    """

    view: str
    delimiter: str | None


@dataclass(frozen=True)
class FormulaSafe:
    """A relation as it is written to CSV with its formulas neutralised.

    Attributes:
        select: The query to ``COPY``: every column under its (neutralised) name, the
            fields of text columns neutralised.
        count: A query of one value: how many data fields ``select`` neutralises;
            ``None`` when the relation has no text column.
        header: How many column names it neutralises.
    """

    select: str
    count: str | None
    header: int


def _formula(text: str) -> str:
    """SQL: whether the VARCHAR ``text`` gets a leading ``'`` (false for NULL).

    A ``CASE``, so that only fields starting with a sign meet the regular expression.
    """
    first = f"left({text}, 1)"
    starts = ", ".join(literal(c) for c in (*_FORMULA_START, _QUOTE))
    signs = ", ".join(literal(c) for c in _SIGNS)
    return (
        f"CASE WHEN {first} IN ({starts}) THEN true WHEN {first} IN ({signs}) "
        f"THEN NOT regexp_full_match({text}, {literal(_PLAIN_NUMBER)}) ELSE false END"
    )


def _neutralised(text: str) -> str:
    """SQL: the VARCHAR ``text``, with a leading ``'`` where :func:`_formula` holds."""
    return f"CASE WHEN {_formula(text)} THEN {literal(_QUOTE)} || {text} ELSE {text} END"


def formula_safe(con: duckdb.DuckDBPyConnection, relation: str) -> FormulaSafe:
    """Neutralise the spreadsheet formulas of ``relation`` as it is written to CSV.

    OWASP's convention against CSV injection: a field of a text column (``VARCHAR``,
    ``JSON``, ``BLOB``, an ``ENUM``), or a column name, that starts with ``=``, ``+``,
    ``-``, ``@``, a tab or a carriage return gets a leading ``'``, unless it is a plain
    number: an optional sign, ASCII digits with an optional decimal point, an optional
    exponent (``-5``, ``+3.2``, ``-1e3``, ``.5``; not ``-``, ``+1 555 0100``, ``-inf`` or
    ``1+1``). A field that already starts with ``'`` gets one too, so stripping exactly
    one leading ``'`` from every field that starts with one restores the original.
    Numeric and other typed columns are written unchanged.

    Args:
        con: The connection ``relation`` binds on.
        relation: A table or view (SQL, quoted as needed) or a parenthesised query.

    Returns:
        The query to write and the query that counts what it neutralises.
    """
    described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    names = [str(r[0]) for r in described]
    text = [str(r[1]) in _TEXT_TYPES or str(r[1]).startswith("ENUM(") for r in described]
    (labels,) = con.execute(
        f"SELECT [{_neutralised('x')} FOR x IN ?::VARCHAR[]]", [names]
    ).fetchall()[0]
    columns, checks = [], []
    for name, label, is_text in zip(names, labels, text, strict=True):
        if is_text:
            value = f"CAST({ident(name)} AS VARCHAR)"
            columns.append(f"{_neutralised(value)} AS {ident(label)}")
            checks.append(f"count(*) FILTER (WHERE {_formula(value)})")
        else:
            columns.append(f"{ident(name)} AS {ident(label)}")
    return FormulaSafe(
        select=f"SELECT {', '.join(columns)} FROM {relation}",
        count=f"SELECT {' + '.join(checks)} FROM {relation}" if checks else None,
        header=sum(a != b for a, b in zip(names, labels, strict=True)),
    )


def parse_types(specs: list[str] | None) -> dict[str, str]:
    """Parse ``COLUMN=TYPE`` options into ``{column: type}``.

    Raises:
        InvalidInputError: A spec is not ``COLUMN=TYPE`` or the type is not a type name.
    """
    out: dict[str, str] = {}
    for spec in specs or []:
        column, sep, typ = spec.partition("=")
        column, typ = column.strip(), typ.strip()
        if not sep or not column or not typ:
            msg = f"--type takes COLUMN=TYPE (e.g. zip=VARCHAR, age=INTEGER), got {spec!r}"
            raise InvalidInputError(msg)
        if not _TYPE_RE.fullmatch(typ):
            msg = f"--type {spec!r}: {typ!r} is not a DuckDB type name"
            raise InvalidInputError(msg)
        out[column] = typ
    return out


def _reason(exc: BaseException) -> str:
    """DuckDB's message without its list of options and fixes, on one line."""
    kept: list[str] = []
    for line in str(exc).splitlines():
        text = line.strip()
        if not text or text.startswith(
            ("Possible", "The search space", "LINE ", "file =", "* ", "Delimiter Candidates")
        ):
            if kept:
                break
            continue
        kept.append(text)
    reason = re.sub(r"^[A-Za-z ]*Error: ", "", " ".join(kept)) or str(exc).strip()
    return reason if len(reason) <= 400 else reason[:400] + " ..."


def _unparsable(path: str, what: str, reason: str) -> InvalidInputError:
    return InvalidInputError(f"could not parse {path} as {what}: {reason}")


def _check_readable(path: str) -> None:
    """Raise a clear error for a missing, non-regular, unreadable or empty file."""
    p = Path(path)
    if not p.exists():
        msg = f"no such file: {path}"
        raise InvalidInputError(msg)
    if p.is_dir():
        msg = f"{path} is a directory, not a CSV or Parquet file"
        raise InvalidInputError(msg)
    try:
        with p.open("rb") as fh:
            first = fh.read(1)
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror or exc}"
        raise InvalidInputError(msg) from exc
    if not first:
        msg = f"{path} is empty (not even a header line)"
        raise InvalidInputError(msg)


def _strict_reason(con: duckdb.DuckDBPyConnection, path: str, delimiter: str) -> str | None:
    """DuckDB's complaint about the file read strictly with ``delimiter``, or None.

    The number of fields is the first line's; every row must have as many.
    """
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as fh:
            first = next(csv.reader(fh, delimiter=delimiter, quotechar='"'), None)
    except (UnicodeDecodeError, csv.Error, OSError) as exc:
        return str(exc)
    if not first:
        return None
    columns = "{" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(len(first))) + "}"
    try:
        con.execute(
            f"SELECT count(*) FROM read_csv({literal(path)}, delim={literal(delimiter)}, "
            f"quote='\"', escape='\"', header=false, auto_detect=false, columns={columns}, "
            "strict_mode=true)"
        ).fetchall()
    except duckdb.Error as exc:
        return _reason(exc)
    return None


def _not_text(path: str) -> str | None:
    """Why the file's first 64 KiB are not UTF-8 text, or None if they are."""
    with Path(path).open("rb") as fh:
        head = fh.read(65536)
    nul = head.find(b"\0")
    if nul >= 0:
        return f"it is not UTF-8 text (a NUL byte at offset {nul})"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a character cut at the 64 KiB mark
            return f"it is not UTF-8 text (byte 0x{head[exc.start]:02x} at offset {exc.start})"
    return None


def _head_lines(path: str, count: int) -> list[str]:
    """The first ``count`` lines of the file, as text (undecodable bytes replaced)."""
    lines: list[str] = []
    with Path(path).open("rb") as fh:
        while len(lines) < count:
            line = fh.readline(65536)
            if not line:
                break
            lines.append(line.decode("utf-8", errors="replace"))
    return lines


def _sniff(
    con: duckdb.DuckDBPyConnection, path: str, delimiter: str | None
) -> tuple[str, str, list[tuple[str, str]]]:
    """Sniff the CSV; return (delimiter, reader SQL reading every column as text, columns)."""
    opts = "" if delimiter is None else f", delim={literal(delimiter)}"
    try:
        row = con.execute(
            "SELECT Delimiter, Quote, Escape, NewLineDelimiter, Comment, SkipRows, HasHeader, "
            f"Columns, DateFormat, TimestampFormat FROM sniff_csv({literal(path)}{opts})"
        ).fetchall()[0]
    except duckdb.Error as exc:
        strict = None if delimiter is None else _strict_reason(con, path, delimiter)
        reason = strict or _reason(exc)
        binary = _not_text(path)
        raise _unparsable(path, "CSV", f"{binary}; {reason}" if binary else reason) from exc
    delim, quote, escape, newline, comment, skip, header, cols, _, _ = row
    columns = [(str(c["name"]), str(c["type"])) for c in cols]
    if delimiter is None and len(columns) == 1:
        # The sniffer found no delimiter that splits every row alike and fell back to
        # one column per line: if the first line holds a usual delimiter, say why that
        # one does not work.
        counts = Counter(
            ch for ch in "".join(_head_lines(path, 1)) if ch in _CANDIDATES and ch != delim
        )
        if counts:
            likely = counts.most_common(1)[0][0]
            strict = _strict_reason(con, path, likely)
            if strict is not None:
                msg = (
                    f"no delimiter splits every row into the same number of fields; "
                    f"with {likely!r} (found in the first line): {strict}"
                )
                raise _unparsable(path, "CSV", msg)

    skipped = _head_lines(path, int(skip))
    if any(line.strip() and not line.lstrip().startswith("#") for line in skipped):
        # The sniffer starts the table below lines that do not fit it; an anonymizer must
        # not drop rows silently, so those lines are reported (blank and # lines are not).
        strict = _strict_reason(con, path, str(delim))
        msg = (
            f"its first {int(skip)} line(s) do not have the fields of the rows below them "
            f"(DuckDB would skip them); {strict or 'remove them or make every row alike'}"
        )
        raise _unparsable(path, "CSV", msg)

    def opt(value: Any) -> str:
        return "" if value is None or value == _EMPTY else str(value)

    parts = [
        literal(path),
        "auto_detect=false",
        f"delim={literal(opt(delim))}",
        f"quote={literal(opt(quote))}",
        f"escape={literal(opt(escape))}",
        f"comment={literal(opt(comment))}",
        f"skip={int(skip)}",
        f"header={'true' if header else 'false'}",
        "columns={" + ", ".join(f"{literal(n)}: 'VARCHAR'" for n, _ in columns) + "}",
    ]
    if newline in _NEWLINES:
        parts.append(f"new_line={literal(newline)}")
    return str(delim), f"read_csv({', '.join(parts)})", columns


def _match_types(
    path: str, columns: list[tuple[str, str]], types: dict[str, str]
) -> dict[str, str]:
    """``types`` keyed by the file's own spelling of each column."""
    by_lower = {n.lower(): n for n, _ in columns}
    out: dict[str, str] = {}
    for column, typ in types.items():
        if column.lower() not in by_lower:
            names = ", ".join(repr(n) for n, _ in columns)
            msg = (
                f"--type names column {column!r}, which {path} does not have (its columns: {names})"
            )
            raise InvalidInputError(msg)
        out[by_lower[column.lower()]] = typ
    return out


def _check_type_name(con: duckdb.DuckDBPyConnection, column: str, typ: str) -> None:
    try:
        con.execute(f"SELECT CAST(NULL AS {typ})").fetchall()
    except duckdb.Error as exc:
        msg = f"--type {column}={typ}: {_reason(exc)}"
        raise InvalidInputError(msg) from exc


def read_input(
    con: duckdb.DuckDBPyConnection,
    path: str,
    name: str,
    *,
    delimiter: str | None = None,
    all_text: bool = False,
    types: dict[str, str] | None = None,
) -> InputFile:
    """Create temporary view ``name`` over a CSV or Parquet file.

    Args:
        con: The DuckDB connection.
        path: The file (``.parquet`` / ``.pq``: Parquet; anything else: CSV).
        name: The view to create (replaced if it exists).
        delimiter: The CSV delimiter (``None``: sniffed).
        all_text: Keep every CSV column ``VARCHAR``.
        types: ``{column: type}`` casts that override the rule above.

    Returns:
        The view and the CSV's delimiter.

    Raises:
        InvalidInputError: The file is missing, unreadable, empty or cannot be parsed
            (the message names it and gives DuckDB's reason), or ``types`` names an
            unknown column or type or a value that does not cast.
    """
    _check_readable(path)
    wanted = dict(types or {})
    for column, typ in wanted.items():
        _check_type_name(con, column, typ)
    if path.lower().endswith((".parquet", ".pq")):
        source = f"read_parquet({literal(path)})"
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        except duckdb.Error as exc:
            raise _unparsable(path, "Parquet", _reason(exc)) from exc
        columns = [(str(r[0]), str(r[1])) for r in described]
        sniffed_delim: str | None = None
        candidates: dict[str, str] = {}
    else:
        sniffed_delim, source, columns = _sniff(con, path, delimiter)
        candidates = {} if all_text else {n: t for n, t in columns if t != "VARCHAR"}
    forced = _match_types(path, columns, wanted)
    candidates = {n: t for n, t in candidates.items() if n not in forced and _TYPE_RE.fullmatch(t)}

    # One pass over the whole file: it reports a row DuckDB cannot parse anywhere (not
    # only in the sniffer's sample), tests every sniffed type and every forced cast.
    aggs = ["count(*)"]
    for n, t in candidates.items():
        c = ident(n)
        aggs.append(
            f"count(*) FILTER (WHERE {c} IS NOT NULL "
            f"AND CAST(TRY_CAST({c} AS {t}) AS VARCHAR) IS DISTINCT FROM {c})"
        )
    for n, t in forced.items():
        c = ident(n)
        bad = f"{c} IS NOT NULL AND TRY_CAST({c} AS {t}) IS NULL"
        aggs.append(f"count(*) FILTER (WHERE {bad})")
        aggs.append(f"CAST(min({c}) FILTER (WHERE {bad}) AS VARCHAR)")
    try:
        stats = con.execute(f"SELECT {', '.join(aggs)} FROM {source}").fetchall()[0]
    except duckdb.Error as exc:
        what = "Parquet" if sniffed_delim is None else "CSV"
        raise _unparsable(path, what, _reason(exc)) from exc
    changed = stats[1 : 1 + len(candidates)]
    cast = {n: t for (n, t), bad in zip(candidates.items(), changed, strict=True) if bad == 0}
    failures = stats[1 + len(candidates) :]
    for i, (n, t) in enumerate(forced.items()):
        bad_count, example = failures[2 * i], failures[2 * i + 1]
        if bad_count:
            msg = (
                f"--type {n}={t}: {bad_count} value(s) of column {n!r} in {path} "
                f"do not convert to {t} (e.g. {example!r})"
            )
            raise InvalidInputError(msg)
        cast[n] = t
    select = ", ".join(
        f"CAST({ident(n)} AS {cast[n]}) AS {ident(n)}" if n in cast else ident(n)
        for n, _ in columns
    )
    con.execute(f"CREATE OR REPLACE TEMP VIEW {ident(name)} AS SELECT {select} FROM {source}")
    return InputFile(view=name, delimiter=sniffed_delim)
