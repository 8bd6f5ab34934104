"""``kanon anonymize`` and the progress bar: files in and out, errors, Ctrl-C."""

from __future__ import annotations

import _thread
import io
import threading
import time
from typing import TYPE_CHECKING

import duckdb
import pytest

from kanon import cli
from kanon._progress import format_bar, run_with_progress

if TYPE_CHECKING:
    from pathlib import Path


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
