"""``kanon anonymize`` and the progress bar: files in and out, errors, Ctrl-C."""

from __future__ import annotations

import _thread
import csv
import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from kanon.cli import commands as cli
from kanon.engine.progress import format_bar, run_with_progress


def _write_people(path: Path, rows: int) -> None:
    con = duckdb.connect()
    fmt = "parquet" if path.suffix == ".parquet" else "csv, HEADER"
    con.execute(
        "COPY (SELECT i AS id, 17 + hash(i) % 70 AS age, "
        "CAST(10000 + hash(i + 7) % 90000 AS VARCHAR) AS zip, "
        "CASE WHEN i % 3 = 0 THEN 'f' ELSE 'm' END AS sex, 'd' || (i % 5) AS disease "
        f"FROM range({rows}) r(i)) TO '{path}' (FORMAT {fmt})"
    )


def _min_class(path: Path, qi: str) -> tuple[int, int]:
    con = duckdb.connect()
    n, smallest = con.execute(
        f"SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM '{path}' GROUP BY {qi})"
    ).fetchall()[0]
    return int(n), int(smallest)


@pytest.mark.parametrize(
    ("source", "out", "method"),
    [
        ("in.csv", "out.parquet", "mondrian"),
        ("in.parquet", "out.csv", "forest"),
        ("in.csv", "out.parquet", "forest --effort fast"),
        ("in.csv", "out.csv", "optimal"),
    ],
)
def test_anonymize_writes_a_k_anonymous_file(
    tmp_path: Path, source: str, out: str, method: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_people(tmp_path / source, 500)
    (tmp_path / "h_sex.csv").write_text("f;*\nm;*\n")
    status = cli.main(
        [
            "anonymize",
            str(tmp_path / source),
            "--k",
            "5",
            "--qi",
            "age,zip,sex",
            "--identifiers",
            "id",
            "--sensitive",
            "disease",
            "--hierarchy",
            f"sex={tmp_path / 'h_sex.csv'}",
            "--method",
            *method.split(),
            "--out",
            str(tmp_path / out),
            "--memory-limit",
            "1GB",
        ]
    )
    assert status == 0, capsys.readouterr().err
    rows, smallest = _min_class(tmp_path / out, "age, zip, sex")
    assert rows == 500
    assert smallest >= 5
    ids = duckdb.sql(f"SELECT DISTINCT id::VARCHAR FROM '{tmp_path / out}'").fetchall()
    assert ids == [("*",)]
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []
    assert "wrote" in capsys.readouterr().out


def test_anonymize_errors_name_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_people(tmp_path / "in.csv", 50)
    base = ["anonymize", str(tmp_path / "in.csv"), "--k", "5", "--out", str(tmp_path / "o.csv")]
    assert cli.main([*base, "--qi", "age,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert cli.main([*base, "--qi", "age", "--hierarchy", "zip=missing.csv"]) == 2
    assert "missing.csv" in capsys.readouterr().err
    assert cli.main([*base, "--qi", "age", "--hierarchy", "zip"]) == 2
    assert "COLUMN=FILE" in capsys.readouterr().err
    out_json = ["anonymize", str(tmp_path / "in.csv"), "--k", "5", "--qi", "age"]
    assert cli.main([*out_json, "--out", str(tmp_path / "o.json")]) == 2
    assert ".parquet" in capsys.readouterr().err
    assert cli.main([*base, "--qi", "age", "--memory-limit", "lots'; DROP TABLE x; --"]) == 2
    assert "memory" in capsys.readouterr().err.lower()
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.slow
def test_ctrl_c_leaves_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_people(tmp_path / "in.parquet", 200_000)
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        status = cli.main(
            [
                "anonymize",
                str(tmp_path / "in.parquet"),
                "--k",
                "5",
                "--qi",
                "age,zip,sex",
                "--identifiers",
                "id",
                "--sensitive",
                "disease",
                "--block-size",
                "20000",
                "--out",
                str(tmp_path / "out.parquet"),
            ]
        )
    finally:
        timer.cancel()
    assert status == 130
    assert "interrupted" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_progress_bar_reports_rows_elapsed_and_time_left() -> None:
    assert format_bar("x", 0, 100, 2.0).endswith("00:02 elapsed, ~? left")
    line = format_bar("anonymizing", 250, 1000, 10.0)
    assert "250/1,000 rows" in line
    assert "25%" in line
    assert "~00:30 left" in line
    con = duckdb.connect()
    stream = io.StringIO()

    def work() -> list[tuple[int, ...]]:
        time.sleep(0.3)
        return con.execute("SELECT sum(i) FROM range(1000) r(i)").fetchall()

    result = run_with_progress(con, work, rows=10, after=0.0, stream=stream)
    assert result == [(499500,)]
    assert "10/10 rows" in stream.getvalue()


# ------------------------------------------------------------------- CSV fidelity


def _read_text(path: Path, delimiter: str) -> list[dict[str, str | None]]:
    """Every field of a CSV file as text (no type sniffing)."""
    con = duckdb.connect()
    rel = con.execute(
        f"SELECT * FROM read_csv('{path}', delim='{delimiter}', all_varchar=true, header=true)"
    )
    names = [d[0] for d in rel.description]
    return [dict(zip(names, row, strict=True)) for row in rel.fetchall()]


def _smallest_class(rows: list[dict[str, str | None]], qi: list[str]) -> int:
    """Independent check: the smallest group of rows with equal released QI labels."""
    con = duckdb.connect()
    con.execute("CREATE TABLE r (a VARCHAR, b VARCHAR)")
    con.executemany("INSERT INTO r VALUES (?, ?)", [[row[q] for q in qi] for row in rows])
    return int(
        con.execute("SELECT min(n) FROM (SELECT count(*) n FROM r GROUP BY a, b)").fetchall()[0][0]
    )


@pytest.mark.slow
def test_csv_values_keep_their_text_and_numbers_get_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ZIP with a leading zero comes after DuckDB's 20,480-row sniffing sample, which
    # types the column BIGINT; prices are written with two decimals, phones with '+'.
    source = tmp_path / "in.csv"
    zips = ["53711", "53715", "60601"]
    lines = ["id;zip;age;price;phone;city"]
    lines += [
        f"{i};{zips[i % 3]};{20 + i % 50};{i % 7}.50;+1{600 + i % 300};{'ab'[i % 2]}"
        for i in range(25_000)
    ]
    lines += [f"{25_000 + i};02134;{30 + i};1.50;+1608;a" for i in range(6)]
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.csv"
    args = ["anonymize", str(source), "--k", "5", "--qi", "age,city", "--quiet"]
    args += ["--insensitive", "id,zip,price,phone"]
    assert cli.main([*args, "--out", str(out)]) == 0, capsys.readouterr().err
    original = {r["id"]: r for r in _read_text(source, ";")}
    released = _read_text(out, ";")
    assert len(released) == len(original)
    for row in released:
        before = original[row["id"]]  # type: ignore[index]
        assert (row["zip"], row["price"], row["phone"]) == (
            before["zip"],
            before["price"],
            before["phone"],
        )
    assert sum(row["zip"] == "02134" for row in released) == 6
    # age is a true number column: generalized by integer intervals, e.g. '[30..35]'.
    ages = {row["age"] for row in released}
    assert any(a is not None and a.startswith("[") and ".." in a for a in ages), ages
    assert _smallest_class(released, ["age", "city"]) >= 5

    # --all-text: age is text too, so its only generalization is suppression.
    assert cli.main([*args, "--all-text", "--out", str(out)]) == 0, capsys.readouterr().err
    released = _read_text(out, ";")
    assert {row["age"] for row in released} <= {str(a) for a in range(20, 70)} | {"*"}
    assert _smallest_class(released, ["age", "city"]) >= 5


def test_type_option_casts_a_column_or_names_the_bad_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.csv"
    rows = [f"{i},{i % 4}.50,0{i % 3}" for i in range(40)]
    source.write_text("id,price,code\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out.csv"
    base = ["anonymize", str(source), "--k", "5", "--qi", "price", "--quiet", "--out", str(out)]
    base += ["--insensitive", "id,code"]
    # '0.50' is text unless told otherwise: suppression is its only generalization.
    assert cli.main(base) == 0, capsys.readouterr().err
    assert {r["price"] for r in _read_text(out, ",")} <= {"0.50", "1.50", "2.50", "3.50", "*"}
    assert cli.main([*base, "--k", "15", "--type", "price=DOUBLE"]) == 0
    prices = {r["price"] for r in _read_text(out, ",")}
    assert any(p is not None and p.startswith("[0.5..") for p in prices), prices
    assert {r["code"] for r in _read_text(out, ",")} == {"00", "01", "02"}
    assert cli.main([*base, "--type", "code=INTEGER", "--type", "id=DATE"]) == 2
    err = capsys.readouterr().err
    assert "id=DATE" in err
    assert "'0'" in err
    assert cli.main([*base, "--type", "nope=INTEGER"]) == 2
    assert "'nope'" in capsys.readouterr().err
    assert cli.main([*base, "--type", "price=INT); DROP TABLE x; --"]) == 2
    assert "type name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("out", "extra", "expected"),
    [("out.csv", [], ";"), ("out.tsv", [], "\t"), ("out.csv", ["--out-delimiter", "|"], "|")],
)
def test_csv_output_keeps_the_delimiter_and_quotes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    out: str,
    extra: list[str],
    expected: str,
) -> None:
    source = tmp_path / "in.csv"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT i AS id, 20 + i % 30 AS age, "
        "'a;b|c,\"q\"' || chr(9) || i AS note FROM range(60) r(i)) "
        f"TO '{source}' (HEADER, DELIMITER ';')"
    )
    assert source.read_text().startswith("id;age;note\n")
    args = ["anonymize", str(source), "--k", "5", "--qi", "age", "--quiet"]
    args += ["--insensitive", "id,note"]
    status = cli.main([*args, "--out", str(tmp_path / out), *extra])
    assert status == 0, capsys.readouterr().err
    text = (tmp_path / out).read_text()
    assert text.splitlines()[0] == expected.join(["id", "age", "note"])
    released = {r["id"]: r["note"] for r in _read_text(tmp_path / out, expected)}
    assert released == {str(i): f'a;b|c,"q"\t{i}' for i in range(60)}


def test_csv_to_stdout_and_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    _write_people(source, 30_000)
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).parent.parent)}
    kanon = [sys.executable, "-m", "kanon.cli", "anonymize", str(source), "--k", "5"]
    kanon += ["--qi", "age,sex", "--keep-undeclared", "--out", "-"]
    whole = subprocess.run(kanon, env=env, capture_output=True, check=False)
    assert whole.returncode == 0, whole.stderr
    lines = whole.stdout.decode().splitlines()
    assert lines[0] == "id,age,zip,sex,disease"
    assert len(lines) == 30_001
    assert "wrote standard output (30,000 rows" in whole.stderr.decode()
    assert list(tmp_path.iterdir()) == [source]
    # A reader that takes one line and exits: the CLI's next writes meet a closed pipe.
    producer = subprocess.Popen(
        [*kanon, "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert producer.stdout is not None
    reader = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.stdin.readline(), end='')"],
        stdin=producer.stdout,
        capture_output=True,
        check=False,
    )
    producer.stdout.close()
    _, err = producer.communicate(timeout=120)
    assert reader.stdout.decode() == "id,age,zip,sex,disease\n"
    assert err == b""
    assert producer.returncode == cli.EXIT_BROKEN_PIPE


def test_broken_pipe_on_check_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    _write_people(tmp_path / "in.csv", 50)
    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["check", str(tmp_path / "in.csv"), "--qi", "age", "--json"]) == 141
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", ["check", "anonymize"])
@pytest.mark.parametrize(
    ("name", "body", "fragment"),
    [
        (
            "binary.csv",
            bytes(range(256)) * 16,
            "could not parse {path} as CSV: it is not UTF-8 text",
        ),
        ("ragged.csv", b"age,zip\n1,2\n3,4,5\n6\n", "could not parse {path} as CSV: .*Expected"),
        ("skip.csv", b"age;zip\n1;2\n3;4;5\n6;7;8\n", "first 2 line.*Expected"),
        ("empty.csv", b"", "{path} is empty"),
        ("fake.parquet", b"age,zip\n1,2\n", "could not parse {path} as Parquet"),
    ],
)
def test_unparsable_file_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
    body: bytes,
    fragment: str,
) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    args = [command, str(path), "--qi", "age"]
    if command == "anonymize":
        args += ["--k", "2", "--out", str(tmp_path / "out.csv")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert re.search(fragment.format(path=re.escape(str(path))), err), err
    assert "has no column" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_ragged_csv_with_the_delimiter_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("age;zip\n1;2\n3;4;5\n")
    assert cli.main(["check", str(path), "--qi", "age", "--delimiter", ";"]) == 2
    err = capsys.readouterr().err
    assert f"could not parse {path} as CSV" in err
    assert "Expected Number of Columns: 2 Found: 3" in err


def test_missing_directory_and_unreadable_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--k", "2", "--qi", "age", "--out", str(tmp_path / "o.csv")]
    assert cli.main(["anonymize", str(tmp_path / "ghost.csv"), *base]) == 2
    assert f"no such file: {tmp_path / 'ghost.csv'}" in capsys.readouterr().err
    assert cli.main(["anonymize", str(tmp_path), *base]) == 2
    assert f"{tmp_path} is a directory" in capsys.readouterr().err
    people = tmp_path / "people.csv"
    people.write_text("age,zip\n1,2\n")
    assert cli.main(["anonymize", str(people), *base[:-3], "nope", *base[-2:]]) == 2
    assert f"{people} has no column 'nope' (its columns: 'age', 'zip')" in capsys.readouterr().err
    if os.geteuid() != 0:  # root reads any file: the permission case needs another user
        locked = tmp_path / "locked.csv"
        locked.write_text("age\n1\n")
        locked.chmod(0)
        assert cli.main(["check", str(locked), "--qi", "age"]) == 2
        assert f"cannot read {locked}" in capsys.readouterr().err


def test_comment_lines_before_the_header_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.csv"
    path.write_text("# exported 2024\nzip,age\n02134,34\n02139,34\n")
    out = tmp_path / "out.csv"
    args = ["anonymize", str(path), "--k", "2", "--qi", "age", "--insensitive", "zip"]
    assert cli.main([*args, "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert (lines[0], sorted(lines[1:])) == ("zip,age", ["02134,34", "02139,34"])
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("source", "out", "method"),
    [("in.csv", "out.csv", "forest"), ("in.parquet", "out.parquet", "optimal")],
)
def test_metrics_measures_what_anonymize_wrote(
    tmp_path: Path, source: str, out: str, method: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kanon metrics SOURCE RELEASE`` prints kanon_metrics of the two files."""
    import json

    import kanon

    _write_people(tmp_path / source, 300)
    (tmp_path / "h_sex.csv").write_text("f;*\nm;*\n")
    hierarchy = ["--hierarchy", f"sex={tmp_path / 'h_sex.csv'}"]
    common = [*hierarchy, "--all-text"] if source.endswith(".csv") else hierarchy
    anonymize = ["anonymize", str(tmp_path / source), "--k", "5", "--qi", "age,zip,sex"]
    roles = ["--identifiers", "id", "--sensitive", "disease", "--method", method]
    output = ["--out", str(tmp_path / out), "--quiet"]
    assert cli.main([*anonymize, *roles, *common, *output]) == 0
    capsys.readouterr()
    args = ["metrics", str(tmp_path / source), str(tmp_path / out), "--qi", "age,zip,sex"]
    assert cli.main([*args, *common, "--k", "5", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    # The same measure in Python, over the same files read the same way.
    con = kanon.install(duckdb.connect())
    text = source.endswith(".csv")
    read = "read_csv('{}', all_varchar = true)" if text else "'{}'"
    con.execute(f"CREATE TABLE src AS SELECT * FROM {read.format(tmp_path / source)}")
    con.execute(f"CREATE TABLE rel AS SELECT * FROM {read.format(tmp_path / out)}")
    h_sex = f"read_csv('{tmp_path / 'h_sex.csv'}', header = false, all_varchar = true)"
    con.execute(f"CREATE TABLE h_sex AS SELECT * FROM {h_sex}")
    kanon.configure(con, "src", qi={"age": None, "zip": None, "sex": "h_sex"})
    expected = kanon.metrics("src", "rel", con=con, k=5)
    assert printed["rows"] == expected.rows == 300
    assert (printed["classes"], printed["min_class"]) == (expected.classes, expected.min_class)
    assert printed["gcp"] == pytest.approx(expected.gcp)
    assert printed["gcp_by_column"] == pytest.approx(expected.gcp_by_column)
    assert cli.main([*args, *common]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"utility of {tmp_path / out} as a release of {tmp_path / source}")
    assert re.search(rf"GCP +{expected.gcp:.2%} ", shown)
    assert cli.main(["metrics", str(tmp_path / source), str(tmp_path / out), "--qi", "age,zz"]) == 2
    assert "has no column 'zz'" in capsys.readouterr().err


# ------------------------------------------------------------- spreadsheet formulas in CSV

#: Text a spreadsheet evaluates (or the quote that marks it), and text it does not.
FORMULAS = ["=1+1", '=HYPERLINK("https://x","y")', "@SUM(A1)", "+1 555 0100", "-2+3", "-"]
FORMULAS += ["\tx", "\rx", "'quoted", "''twice", "-inf"]
INERT = ["-5", "+3.2", "-1e3", ".5", "7", "plain", "a=b", " =x"]
PLAIN_NUMBER = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _neutralised(field: str) -> str:
    """OWASP's convention, independently: a leading ' on a field a spreadsheet evaluates."""
    first = field[:1]
    if first in ("=", "@", "\t", "\r", "'") or (
        first in ("+", "-") and not PLAIN_NUMBER.fullmatch(field)
    ):
        return "'" + field
    return field


def _restored(field: str) -> str:
    """The reverse: exactly one leading ' stripped."""
    return field[1:] if field.startswith("'") else field


def _write_formulas(path: Path) -> list[str]:
    """A Parquet file: a QI and a pass-through column of formulas, numeric columns beside."""
    values = FORMULAS + INERT
    con = duckdb.connect()
    con.execute(
        'COPY (SELECT i AS id, v[1 + i % len(v)] AS "=note", v[1 + (i // 5) % len(v)] AS grp, '
        "CASE WHEN i % 2 = 0 THEN -1e3 ELSE '-inf'::DOUBLE END AS amount, -i AS minus "
        f"FROM range({5 * len(values)}) r(i), (SELECT ? AS v)) TO '{path}' (FORMAT parquet)",
        [values],
    )
    return values


def _fields(path: Path, delimiter: str = ",") -> list[list[str]]:
    """Every field of a CSV file exactly as written (quotes removed, nothing else)."""
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh, delimiter=delimiter))


def test_csv_fields_that_spreadsheets_evaluate_get_a_quote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.csv"
    values = _write_formulas(source)
    args = ["anonymize", str(source), "--k", "5", "--qi", "grp"]
    args += ["--insensitive", "id,=note,amount,minus", "--out", str(out)]
    assert cli.main(args) == 0
    header, *rows = _fields(out)
    assert header == ["id", "'=note", "grp", "amount", "minus"]
    original = duckdb.sql(f"SELECT id, \"=note\", grp FROM '{source}'").fetchall()
    by_id = {str(i): (note, grp) for i, note, grp in original}
    assert len(rows) == len(by_id) == 5 * len(values)
    for id_, note, grp, amount, minus in rows:
        # The pass-through column and the QI labels (each value's class holds k = 5 rows,
        # so the labels are the values) are quoted; numeric columns are left alone.
        assert (note, grp) == tuple(_neutralised(v) for v in by_id[id_])
        assert amount in ("-1000.0", "-inf")
        assert minus == str(-int(id_))
    assert {r[1] for r in rows} > {"'=1+1", "'@SUM(A1)", "'-inf", "''quoted", "-5", "-1e3"}
    changed = 1 + sum(
        (note != _restored(note)) + (grp != _restored(grp)) for _, note, grp, _, _ in rows
    )
    summary = capsys.readouterr().out
    assert f"formulas: {changed} CSV fields starting with =, +, -, @, tab, CR or '" in summary
    assert "strip one leading ' to restore them, or pass --allow-formulas" in summary


@pytest.mark.parametrize(("out", "delimiter"), [("out.csv", ","), ("out.tsv", "\t")])
def test_quoted_formulas_reverse_to_the_allowed_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, delimiter: str
) -> None:
    source = tmp_path / "in.parquet"
    _write_formulas(source)
    args = ["anonymize", str(source), "--k", "5", "--qi", "grp"]
    args += ["--insensitive", "id,=note,amount,minus"]
    quoted, raw = tmp_path / out, tmp_path / f"raw_{out}"
    assert cli.main([*args, "--out", str(quoted)]) == 0
    assert cli.main([*args, "--out", str(raw), "--allow-formulas"]) == 0
    assert capsys.readouterr().out.endswith(
        "formulas: CSV fields written as they are (--allow-formulas)\n"
    )
    allowed = _fields(raw, delimiter)
    assert allowed[0][1] == "=note"
    assert {r[1] for r in allowed} >= set(FORMULAS)  # the opt-out writes them unchanged
    # Rows come in no set order: compared as sorted lists, header first.
    restored = [[_restored(f) for f in row] for row in _fields(quoted, delimiter)]
    assert restored[0] == allowed[0]
    assert sorted(restored[1:]) == sorted(allowed[1:])
    # Standard output gets the same release, the summary goes to standard error.
    assert cli.main([*args, "--out", "-", "--out-delimiter", delimiter]) == 0
    captured = capsys.readouterr()
    printed = list(csv.reader(io.StringIO(captured.out, newline=""), delimiter=delimiter))
    written = _fields(quoted, delimiter)
    assert printed[0] == written[0]
    assert sorted(printed[1:]) == sorted(written[1:])
    assert "formulas: " in captured.err
