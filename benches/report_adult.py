"""The report of Adult at k = 10 and its screenshot, shown in the README.

Materializes the forest's release of UCI Adult (8 QIs with ARX's hierarchies, occupation
sensitive) with ``report=``, then renders the page in headless Chromium:

    python benches/report_adult.py            # writes docs/report-adult-k10.png

Data: ``adult/`` in $KANON_DATA, else ``shared/data`` beside the repository.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
from measure import ADULT_QI, REPO, data_dir

import kanon

QI = [c for c in ADULT_QI if c != "occupation"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "report-adult-k10.png")
    parser.add_argument("--html", type=Path, help="also keep the HTML page here")
    args = parser.parse_args()
    folder = data_dir() / "adult"
    if not (folder / "adult.csv").is_file():
        sys.exit(f"benchmark data missing: {folder / 'adult.csv'} (set KANON_DATA)")
    browser = shutil.which("chromium") or sys.exit("chromium is not on PATH (make chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        con = kanon.install(duckdb.connect(str(Path(tmp) / "adult.duckdb")))
        con.execute(
            "CREATE TABLE adult AS SELECT * FROM read_csv(?, delim = ';', header = true)",
            [str(folder / "adult.csv")],
        ).fetchall()
        for c in QI:
            kanon.hierarchy.from_csv(con, folder / f"adult_hierarchy_{c}.csv", f"h_{c}")
        kanon.configure(con, "adult", qi={c: f"h_{c}" for c in QI}, sensitive=["occupation"])
        page = args.html or Path(tmp) / "report.html"
        kanon.materialize(con, "adult", args.k, "adult_k", report=page)
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--virtual-time-budget=10000",
                "--window-size=1200,2600",
                f"--screenshot={args.out}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
