"""The command line: ``kanon check FILE`` on CSV and Parquet, ``kanon demo``."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import duckdb
import pytest

from kanon.cli import main

if TYPE_CHECKING:
    from pathlib import Path

ROWS = "(34, '53711', 'F', 'flu'), (34, '53711', 'F', 'hiv'), (35, '53711', 'M', 'flu')"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"csv": tmp_path / "people.csv", "parquet": tmp_path / "people.parquet"}
    with duckdb.connect() as con:
        con.execute(f"CREATE TABLE p AS SELECT * FROM (VALUES {ROWS}) AS v(age, zip, sex, dx)")
        con.execute(f"COPY p TO '{out['csv']}' (HEADER, DELIMITER ';')")
        con.execute(f"COPY p TO '{out['parquet']}' (FORMAT parquet)")
    return out


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_check_prints_a_readable_report(
    files: dict[str, Path], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(files[kind]), "--qi", "age,zip", "--sensitive", "dx"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"k \(smallest class\) +1 ", out)
    assert re.search(r"l-diversity \(distinct\) +1 ", out)
    assert "class sizes:" in out


def test_check_json_with_population(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "check",
        str(files["csv"]),
        "--qi",
        "zip",
        "--sensitive",
        "dx",
        "--population",
        str(files["parquet"]),
        "--delimiter",
        ";",
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["k"], report["l_distinct"], report["journalist_max"]) == (3, 2, 1 / 3)
    assert report["qi"] == ["zip"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--qi", "nope"], "has no column 'nope'"),
        (["--qi", "age", "--sensitive", "age"], "both a quasi-identifier"),
        (["--qi", "age", "--risk-threshold", "2"], "risk_threshold"),
    ],
)
def test_check_errors_exit_2(
    files: dict[str, Path], args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(files["csv"]), *args]) == 2
    assert fragment in capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "ghost.csv"), "--qi", "a"]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_explains_and_its_hints_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--rows", "3000", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "== 1. The risk before ==" in out
    # The policy refuses income and hours released unchanged, then passes them generalized.
    first = out[out.index("== 3. A first release") : out.index("== 4.")]
    assert "FAIL: policy 'demo'" in first
    assert re.search(r"income: [\d,]+ rows \(", first)
    assert "nothing was published" in first
    assert "PASS: policy 'demo'" in out[out.index("== 4.") :]
    assert re.search(r"Of all [\d,]+ classes, [\d,]+ \([\d,]+ of 3,000 rows\) hold a single", out)
    assert "SELECT * FROM kanon('census', k := 5)" in out
    assert out.count("  person ") == 3
    assert "people share these values" in out
    assert re.search(r"k \(smallest class\) +5 ", out)
    assert (tmp_path / "kanon-demo.html").is_file()
    # The hints, as printed, run from this directory on the file the demo wrote.
    hints = out[out.index("In Python (these lines run as printed") :].splitlines()[1:]
    code = "\n".join(line.strip() for line in hints if line.startswith("    "))
    exec(compile(code, "hints", "exec"), {})
    assert "k (smallest class)" in capsys.readouterr().out
    # Its own file is replaced on a second run; anyone else's is refused.
    assert main(["demo", "--rows", "500", "--report", ""]) == 0
    duckdb.connect(str(tmp_path / "other.duckdb")).close()
    capsys.readouterr()
    assert main(["demo", "--db", "other.duckdb"]) == 2
    assert "was not written by kanon demo" in capsys.readouterr().err


def test_population_with_a_qi_typed_differently_in_the_two_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "sample.csv"
    sample.write_text("zip,dx\n2134,a\n53711,b\n53711,c\n")  # zip sniffed as a number here
    population = tmp_path / "population.csv"
    population.write_text("zip\n02134\n02134\n02134\n2134\n53711\n53711\n53711\n53711\n")
    args = ["check", str(sample), "--qi", "zip", "--population", str(population), "--json"]
    assert main(args) == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    # '2134' has one person in the population ('02134' is another ZIP): risk 1.
    assert report["journalist_max"] == 1.0


def test_python_dash_m_runs_the_command_line(files: dict[str, Path]) -> None:
    """``python -m kanon`` is the ``kanon`` script (for environments without its entry point)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "kanon", "check", str(files["csv"]), "--qi", "age,zip"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2].split()[:4] == ["k", "(smallest", "class)", "1"]
    usage = subprocess.run(
        [sys.executable, "-m", "kanon", "--help"], capture_output=True, text=True, check=False
    )
    assert usage.returncode == 0
    assert usage.stdout.startswith("usage: kanon ")


HIERARCHIES = {
    "missing_value": ("age", "34;30-39;*\n", ["does not cover", "'35'"]),
    "malformed": ("age", "34;30-39;*\n35;30-39\n", ["every row must have the 3 fields"]),
    "not_nested": ("age", "34;a;x;*\n35;a;y;*\n", ["not nested"]),
    "not_a_qi": ("zip", "53711;5371*;*\n", ["--qi"]),
    "unknown_column": ("nope", "1;*\n", ["--qi"]),
}


@pytest.mark.parametrize("command", ["anonymize", "metrics"])
@pytest.mark.parametrize("case", sorted(HIERARCHIES))
def test_hierarchy_errors_name_the_file_and_column(
    files: dict[str, Path],
    tmp_path: Path,
    command: str,
    case: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    column, body, fragments = HIERARCHIES[case]
    path = tmp_path / f"{case}.csv"
    path.write_text(body, encoding="utf-8")
    data = str(files["csv"])
    if command == "anonymize":
        args = ["anonymize", data, "--k", "2", "--out", str(tmp_path / "out.csv"), "--quiet"]
    else:
        args = ["metrics", data, data]
    assert main([*args, "--qi", "age,sex", "--hierarchy", f"{column}={path}"]) == 2
    err = capsys.readouterr().err
    assert f"hierarchy file {str(path)!r} for column {column!r}: " in err
    for fragment in fragments:
        assert fragment in err
    if case == "missing_value":  # and the data file whose value it misses
        assert f"of {data!r}" in err
    assert "kanon_cli" not in err
    assert "'input'" not in err
    assert not (tmp_path / "out.csv").exists()


def test_errors_name_the_input_file_not_kanons_table(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(files["csv"])
    out = str(tmp_path / "out.csv")
    assert main(["anonymize", data, "--k", "9", "--qi", "age", "--out", out, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"rows of {data!r} (3)" in err
    assert "'input'" not in err
