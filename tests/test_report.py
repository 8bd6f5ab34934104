"""``kanon.report``, ``kanon report`` and ``materialize(report=...)``: one offline HTML page.

The numbers the page prints are compared with SQL ``kanon_check`` and ``kanon_metrics`` on
the same data, and the page is rendered in headless Chromium (Debian's ``chromium``,
which ``make test`` installs): the plots draw and the screenshot is not blank.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import zlib
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

import kanon
from kanon import datagen, hierarchy
from kanon.cli import commands as cli
from kanon.exceptions import InvalidInputError

if TYPE_CHECKING:
    from pathlib import Path

METRIC = re.compile(r"data-metric='([^']+)'>([^<]*)<")


def printed(page: str) -> dict[str, str]:
    """The numbers the page prints, by their ``data-metric`` name."""
    return dict(METRIC.findall(page))


def assert_shows(text: str, value: float | None, what: str) -> None:
    """``text`` is ``value`` as the page prints it: 1,234 / 12.34% / 0.1234 / n/a."""
    if value is None:
        assert text == "n/a", what
    elif text.endswith("%"):
        assert abs(float(text[:-1].replace(",", "")) - 100 * value) <= 0.005 + 1e-9, what
    elif "." in text:
        assert abs(float(text.replace(",", "")) - value) <= 0.00005 + 1e-12, what
    else:
        assert int(text.replace(",", "")) == value, what


def one_row(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, Any]:
    """The one row ``sql`` returns, by column name."""
    rel = con.sql(sql)
    (row,) = rel.fetchall()
    return dict(zip(rel.columns, row, strict=True))


def assert_page_is_sql(
    page: str, con: duckdb.DuckDBPyConnection, source: str, release: str, qi: list[str]
) -> None:
    """Every number of the page equals ``kanon_check`` / ``kanon_metrics`` in SQL."""
    shown = printed(page)
    qis = "[" + ", ".join(f"'{q}'" for q in qi) + "]"
    for side, table in (("before", source), ("after", release)):
        row = one_row(con, f"SELECT * FROM kanon_check('{table}', qi := {qis})")
        for key in ("k", "classes", "rows", "prosecutor_at_risk", "prosecutor_max"):
            assert_shows(shown.pop(f"{side}.{key}"), row[key], f"{side}.{key}")
        assert_shows(shown.pop(f"{side}.prosecutor_avg"), row["prosecutor_avg"], side)
    row = one_row(con, f"SELECT * FROM kanon_metrics('{source}', '{release}', qi := {qis})")
    for key in ("gcp", "suppressed", "dm", "c_avg", "nue_quality"):
        assert_shows(shown.pop(f"metrics.{key}"), row[key], key)
    for column, value in dict(row["gcp_by_column"]).items():
        assert_shows(shown.pop(f"metrics.gcp_by_column.{column}"), value, column)
    # Models of the sensitive column, when one is configured.
    assert {k.split(".", 1)[1] for k in shown} <= {"l_distinct", "t"}


@pytest.fixture
def survey(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """A file database with 600 people, a ZIP hierarchy and roles; kanon installed."""
    con = kanon.install(duckdb.connect(str(tmp_path / "db.duckdb")))
    datagen.census(con, "people", rows=600, seed=3)
    con.execute(
        "CREATE TABLE survey AS SELECT name, age, sex, zip, occupation, hours_per_week FROM people"
    )
    hierarchy.mask(con, "h_zip", table="survey", column="zip")
    kanon.configure(
        con,
        "survey",
        qi={"age": None, "sex": None, "zip": "h_zip"},
        identifiers=["name"],
        insensitive=["occupation", "hours_per_week"],
    )
    return con


@pytest.mark.parametrize(
    "options",
    [{}, {"method": "mondrian"}, {"method": "optimal", "max_suppression": 0.05}],
    ids=["forest", "mondrian", "optimal"],
)
def test_materialized_report_prints_what_sql_measures(
    survey: duckdb.DuckDBPyConnection, tmp_path: Path, options: dict[str, object]
) -> None:
    out = tmp_path / "report.html"
    kanon.materialize(survey, "survey", 5, "survey_k5", report=out, **options)  # type: ignore[arg-type]
    page = out.read_text(encoding="utf-8")
    assert_page_is_sql(page, survey, "survey", "survey_k5", ["age", "sex", "zip"])
    assert "<script src=" not in page  # nothing to fetch: plotly.js is inlined
    assert f"<td><bdi>{kanon.__version__}</bdi></td>" in page
    # The sample pairs rows that the unchanged columns identify: each original value
    # lies under its released label.
    sample = page[page.index("<h2>Sample") : page.index("<h2>Parameters")]
    cells = re.findall(r"<td><bdi>([^<]*)</bdi></td>", sample)
    assert cells, "no sample rows"
    for i in range(0, len(cells), 6):
        age, sex, zip_, age_label, sex_label, zip_label = cells[i : i + 6]
        assert sex_label in (sex, "*")
        assert re.fullmatch(zip_label.replace("*", "."), zip_) or zip_label == "*"
        if age_label.startswith("["):
            low, high = (int(x) for x in age_label[1:-1].split(".."))
            assert low <= int(age) <= high
        else:
            assert age_label in (age, "*")


def test_hostile_names_nulls_and_no_unchanged_column(tmp_path: Path) -> None:
    con = kanon.install(duckdb.connect(str(tmp_path / "db.duckdb")))
    con.execute('CREATE TABLE "size" ("v" INTEGER, "s" VARCHAR, "r" VARCHAR)')
    con.execute(
        'INSERT INTO "size" SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE i % 13 END, '
        "['é', 'ß', NULL, '東京'][1 + i % 4], '*' FROM range(120) t(i)"
    )
    kanon.configure(con, "size", qi={"v": None, "s": None}, identifiers=["r"])
    kanon.materialize(con, "size", 4, "size_k4", report=tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert_page_is_sql(page, con, "size", "size_k4", ["v", "s"])
    assert "No sample" in page


def test_bad_arguments_are_kanon_errors(survey: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="out must be a file path"):
        kanon.report("survey", "survey", out="", con=survey)
    with pytest.raises(InvalidInputError, match="sample must be"):
        kanon.report("survey", "survey", out=tmp_path / "r.html", con=survey, sample=-1)
    with pytest.raises(kanon.exceptions.ConfigError, match="no_such"):
        kanon.report("survey", "no_such", out=tmp_path / "r.html", con=survey)


def test_command_line_report(
    survey: duckdb.DuckDBPyConnection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, release = tmp_path / "survey.csv", tmp_path / "survey_k5.csv"
    survey.execute(f"COPY survey TO '{source}'")
    survey.execute(f"COPY (SELECT * FROM kanon('survey', k := 5)) TO '{release}'")
    zips = tmp_path / "zip.csv"
    survey.execute(f"COPY h_zip TO '{zips}' (HEADER false, DELIMITER ';')")
    out = tmp_path / "report.html"
    args = ["report", str(source), str(release), "--qi", "age,sex,zip", "--k", "5"]
    assert cli.main([*args, "--hierarchy", f"zip={zips}", "--out", str(out)]) == 0
    assert printed(out.read_text(encoding="utf-8"))["after.k"] == "5"
    # anonymize ends with the summary and writes the report too.
    written, page = tmp_path / "mondrian.csv", tmp_path / "mondrian.html"
    anonymize = ["anonymize", str(source), "--k", "5", "--qi", "age,sex,zip", "--quiet"]
    anonymize += ["--identifiers", "name", "--insensitive", "occupation,hours_per_week"]
    anonymize += ["--method", "mondrian", "--out", str(written), "--report", str(page)]
    assert cli.main(anonymize) == 0
    assert printed(page.read_text(encoding="utf-8"))["after.k"] == "5"
    assert cli.main([a for a in anonymize if a != "--quiet"]) == 0
    summary = capsys.readouterr().out
    assert "privacy: every class holds at least 5 rows" in summary
    assert re.search(r"utility: GCP [0-9.]+% of the detail lost \(age [0-9.]+%, ", summary)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no chromium on PATH: `make chromium` installs Debian's package")


def png_colors(png: bytes) -> int:
    """Distinct pixel colours of an 8-bit RGB(A) PNG: a blank page has one."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, channels = 8, b"", 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, color = struct.unpack(">IIBB", data[:10])
            assert depth == 8
            assert color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    colors = set()
    prev = bytearray(stride)
    for start in range(0, len(raw), stride + 1):
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                near = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + near) & 0xFF
        colors.update(bytes(line[i : i + 3]) for i in range(0, stride, channels))
        prev = line
    return len(colors)


VERDICT = re.compile(r"data-verdict='([^']+)'[^>]*>([^<]*)<")
POLICY = {"k": 5, "identifying_columns": 0.0, "suppressed": 0.05}


def assert_verdict_is_sql(
    page: str, con: duckdb.DuckDBPyConnection, source: str, release: str
) -> None:
    """The verdict the page prints is SQL ``kanon_verify``'s, rule by rule."""
    shown = dict(VERDICT.findall(page))
    policy = "{" + ", ".join(f"'{r}': {v}" for r, v in POLICY.items()) + "}"
    rows = con.sql(
        f"SELECT rule, value, passed, rows, classes FROM kanon_verify('{source}', "
        f"'{release}', policy := {policy})"
    ).fetchall()
    assert shown.pop("passed") == ("PASS" if all(r[2] for r in rows) else "FAIL")
    assert_shows(
        shown.pop("gcp"),
        one_row(con, f"SELECT gcp FROM kanon_metrics('{source}', '{release}')")["gcp"],
        "gcp",
    )
    for rule, value, passed, n, classes in rows:
        assert_shows(shown.pop(f"{rule}.value"), value, rule)
        assert shown.pop(f"{rule}.passed") == ("PASS" if passed else "FAIL")
        assert shown.pop(f"{rule}.rows") == ("" if n is None else f"{n:,}")
        assert shown.pop(f"{rule}.classes") == ("" if classes is None else f"{classes:,}")
    assert shown == {}


@pytest.mark.slow
def test_report_renders_in_headless_chromium(
    survey: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    # hours_per_week singles rows out: the verdict fails, published with a reason.
    kanon.materialize(
        survey, "survey", 5, "survey_k5", report=out, policy=POLICY, force="a test of the report"
    )
    browser = chromium()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    flags += ["--virtual-time-budget=10000", "--window-size=1200,2400"]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", out.as_uri()], check=True, capture_output=True, timeout=120
    )
    assert png_colors(shot.read_bytes()) > 50
    dom = subprocess.run(
        [*flags, "--dump-dom", out.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
        text=True,
    ).stdout
    # Every plot drew its SVG, and the rendered page prints SQL's numbers.
    assert dom.count('class="main-svg"') >= 2 * 4
    assert_page_is_sql(dom.replace('"', "'"), survey, "survey", "survey_k5", ["age", "sex", "zip"])
    assert_verdict_is_sql(dom.replace('"', "'"), survey, "survey", "survey_k5")
    assert "identifying_columns &lt;= 0 fails for" in dom


# ------------------------------------------------------------------ hostile values and names

LINK = '<a href="https://x">x</a>'
#: Values holding plotly's pseudo-HTML, an entity, and bidirectional controls (an override,
#: and a pop-isolate that would close an isolate early).
HOSTILE = [
    LINK,
    '<span style="color:red">red</span>',
    "<b>bold</b>",
    "a<br>b",
    "H<sub>2</sub>O",
    "\u202eevil",
    "&lt;lit&gt;",
    "x\u2069\u202ey",
]
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
TAG = re.compile(r"<\s*/?\s*(a|span|b|br|sub|sup|i|em|s|u)\b", re.IGNORECASE)


def figures(page: str) -> list[tuple[list[Any], dict[str, Any]]]:
    """Each plot's ``(data, layout)``, as the page hands them to ``Plotly.newPlot``."""
    found = []
    decoder = json.JSONDecoder()
    for m in re.finditer(r'Plotly\.newPlot\(\s*"[^"]+",\s*', page):
        data, end = decoder.raw_decode(page, m.end())
        rest = re.compile(r"\s*,\s*").match(page, end)
        assert rest is not None
        layout, _ = decoder.raw_decode(page, rest.end())
        found.append((data, layout))
    return found


def strings(value: object) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def plot_label(text: str) -> str:
    """``text`` as the report writes it into a figure: entities for ``& < >``, isolated."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "\u2068" + BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", escaped) + "\u2069"


def unwrap(text: str) -> str:
    """``text`` without the report's isolates: FSI ... PDI around text free of controls."""
    return re.sub("\u2068([^\u2068\u2069]*)\u2069", r"\1", text)


def assert_inert(page: str, values: list[str], names: list[str]) -> None:
    """No value or name of the data is markup or a bidi control anywhere on the page."""
    plots = figures(page)
    assert len(plots) == 4
    labels = [s for data, layout in plots for s in strings(data) + strings(layout)]
    assert [s for s in labels if "<" in s] == []
    # Only the report's own isolates, FSI ... PDI around each value, hold a bidi control.
    assert [s for s in labels if BIDI.search(unwrap(s))] == []
    # Each value is a category of the values plot, each name a title and a GCP bar.
    y = {s for data, _ in plots[3:] for trace in data for s in trace["y"]}
    assert {plot_label(v) for v in values} <= y
    titles = {a["text"] for a in plots[3][1]["annotations"]}
    assert {f"{plot_label(n)}: original" for n in names} <= titles
    assert {plot_label(n) for n in names} <= set(plots[2][0][0]["x"])
    # The HTML around the plots: escaped, isolated, no control character.
    script = page.index("<script>")
    body = page[page.index("</script>", script) :]
    body = re.sub(r"<script[^>]*>.*?</script>", "", body, flags=re.DOTALL)
    assert TAG.findall(re.sub(r"</?em>", "", body)) == []
    assert BIDI.search(body) is None
    assert "<bdi>&lt;a href=&quot;https://x&quot;&gt;x&lt;/a&gt;</bdi>" in body
    assert "[U+202E]" in body


@pytest.fixture
def hostile(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """Table ``t`` and its release ``r``: hostile values under hostile column names."""
    con = kanon.install(duckdb.connect(str(tmp_path / "db.duckdb")))
    con.execute(
        'CREATE TABLE t (id INTEGER, "<a href=""https://x"">x</a>" VARCHAR, '
        '"<b>c</b>\u202e" VARCHAR, "<i>s</i>" VARCHAR)'
    )
    con.execute(
        "INSERT INTO t SELECT i, v[1 + i % 8], v[1 + (i // 8) % 8], 'same' "
        "FROM range(64) r(i), (SELECT ? AS v)",
        [HOSTILE],
    )
    con.execute("CREATE TABLE r AS SELECT * FROM t")
    return con


def test_values_and_names_are_plain_text_in_the_report(
    hostile: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    names = [str(r[0]) for r in hostile.execute("DESCRIBE t").fetchall()]
    assert names[1] == LINK
    out = tmp_path / "r.html"
    params = {"note": '<span style="color:red">\u202e', LINK: 1}
    kanon.report("t", "r", names[1:3], out=out, con=hostile, sensitive=names[3], parameters=params)
    page = out.read_text(encoding="utf-8")
    assert_inert(page, HOSTILE, names[1:3])
    # The sample lists hostile values, the verdict names the hostile sensitive column.
    sample = page[page.index("<h2>Sample") : page.index("<h2>Parameters")]
    cells = re.findall(r"<td>(.*?)</td>", sample)
    escaped = {
        "<bdi>" + html.escape(BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", v)) + "</bdi>"
        for v in HOSTILE
    }
    assert cells
    assert set(cells) <= escaped
    assert "distinct values of &lt;i&gt;s&lt;/i&gt;</bdi>" in page
    assert "<p class='severe' data-finding='l'>l &gt;= 2 fails for 64 of 64 rows" in page
    assert "<td><bdi>&lt;span style=&quot;color:red&quot;&gt;[U+202E]</bdi></td>" in page


def test_command_line_report_of_hostile_files(
    hostile: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    source, release = tmp_path / "t.csv", tmp_path / "r.csv"
    hostile.execute(f"COPY t TO '{source}'")
    hostile.execute(f"COPY r TO '{release}'")
    names = [str(r[0]) for r in hostile.execute("DESCRIBE t").fetchall()]
    out = tmp_path / "r.html"
    args = ["report", str(source), str(release), "--qi", ",".join(names[1:3])]
    assert cli.main([*args, "--out", str(out)]) == 0
    assert_inert(out.read_text(encoding="utf-8"), HOSTILE, names[1:3])
    # anonymize --report: the release suppresses most values, the names are still hostile.
    anonymize = ["anonymize", str(source), "--k", "4", "--qi", ",".join(names[1:3]), "--quiet"]
    anonymize += ["--insensitive", f"id,{names[3]}", "--out", str(tmp_path / "k4.csv")]
    assert cli.main([*anonymize, "--report", str(out)]) == 0
    assert_inert(out.read_text(encoding="utf-8"), [], names[1:3])


def test_hostile_report_renders_no_link_in_chromium(
    hostile: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    names = [str(r[0]) for r in hostile.execute("DESCRIBE t").fetchall()]
    out = tmp_path / "r.html"
    kanon.report("t", "r", names[1:3], out=out, con=hostile)
    flags = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run(
        [*flags, "--dump-dom", out.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
        text=True,
    ).stdout
    svgs = re.findall(r"<svg[^>]*main-svg.*?</svg>", dom, flags=re.DOTALL)
    assert len(svgs) >= 2 * 4
    drawn = "".join(svgs)
    # No link, no styled or bold text: the values are drawn as text, < and > included.
    assert re.search(r"<a[\s>]", drawn) is None
    assert "xlink:href" not in drawn
    styles = re.findall(r'<[^<>]*\sstyle="([^"]*)"', drawn)  # of elements, not of text
    assert [s for s in styles if re.search(r"(fill|color):\s*red|font-weight:\s*bold", s)] == []
    assert '&lt;a href="https://x"&gt;x&lt;/a&gt;' in drawn
    assert '&lt;span style="color:red"&gt;red&lt;/span&gt;' in drawn
    assert "&amp;lt;lit&amp;gt;" in drawn
    assert "[U+202E]evil" in drawn
    assert BIDI.search(unwrap(dom)) is None
