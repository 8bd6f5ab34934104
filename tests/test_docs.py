"""Every code block of README.md and docs/*.md runs, as written, top to bottom.

Each page runs in a subprocess of its own, in an empty directory (``python
tests/test_docs.py [--update] PAGE`` runs one by hand; ``--update`` rewrites
the outputs shown):

* ``python`` blocks share one namespace per page, like a session typed in order;
* ``sql`` blocks run on the page's ``con`` (a Python block before them defines it), one
  statement at a time, each result fetched in full;
* ``bash`` blocks run in ``bash -euo pipefail`` with two stand-ins first on ``PATH``:
  ``pip install`` checks that its targets are this checkout or its extras, and ``make``
  dry-runs its targets (``make -n``). This suite runs in the environment those commands
  build, and ``.ci/run`` runs them for real on a fresh machine;
* a ``text`` block is output: it must equal what the code block before it printed.

Any other kind of block is an error, so nothing in the docs goes unrun.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from importlib.metadata import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = ("python", "sql", "bash")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its info string, its text and the line its fence opens on."""

    lang: str
    code: str
    line: int


def blocks(text: str) -> list[Block]:
    """The page's fenced blocks, in order."""
    found: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2), i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            msg = f"line {start + 1}: the block is not closed"
            raise ValueError(msg)
        found.append(Block(lang, "\n".join(body) + "\n", start + 1))
        i += 1
    return found


def _stand_ins(directory: Path) -> dict[str, str]:
    """``pip`` and ``make`` stand-ins for the bash blocks; returns their environment."""
    extras = metadata("duckdb-kanon").get_all("Provides-Extra") or []
    allowed = {".", "-e"} | {f".[{e}]" for e in extras} | {f"'.[{e}]'" for e in extras}
    pip = directory / "pip"
    pip.write_text(
        "#!/usr/bin/env bash\n"
        '[ "$1" = install ] || { echo "docs: only pip install is checked" >&2; exit 1; }\n'
        "shift\n"
        'for a in "$@"; do case "$a" in '
        + "|".join(sorted(a.replace("[", "\\[").replace("]", "\\]") for a in allowed))
        + ') ;; *) echo "docs: pip install $a: not this checkout" >&2; exit 1;; esac; done\n'
    )
    make = directory / "make"
    real_make = shutil.which("make") or "make"
    make.write_text(f'#!/usr/bin/env bash\nexec {real_make} -n -C {ROOT} "$@"\n')
    for f in (pip, make):
        f.chmod(0o755)
    path = os.pathsep.join([str(directory), str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**os.environ, "PATH": path}


def _run_sql(ns: dict[str, object], code: str) -> str:
    con = ns.get("con")
    if con is None:
        msg = "an sql block needs a Python block before it that defines con"
        raise RuntimeError(msg)
    out = []
    for statement in con.extract_statements(code):  # type: ignore[attr-defined]
        rel = con.sql(statement.query)  # type: ignore[attr-defined]
        if rel is not None:
            out.append(str(rel.fetchall()))
    return "\n".join(out)


def run_page(page: Path, update: bool = False) -> list[str]:
    """Run every block of ``page`` in the current directory; return the failures.

    With ``update``, a text block that differs from the output is rewritten instead.
    """
    failures: list[str] = []
    rewrites: dict[int, str] = {}
    ns: dict[str, object] = {"__name__": "__docs__"}
    env = _stand_ins(Path(tempfile.mkdtemp(prefix="docs-bin-")))
    printed: str | None = None
    for b in blocks(page.read_text(encoding="utf-8")):
        where = f"{page.name}:{b.line}"
        if b.lang == "text":
            if printed is None:
                failures.append(f"{where}: a text block shows output, but no code ran before it")
            elif printed.strip() != b.code.strip():
                if update:
                    rewrites[b.line] = printed.strip() + "\n"
                else:
                    failures.append(f"{where}: the output differs; it was:\n{printed}")
            printed = None
            continue
        if b.lang not in CODE:
            failures.append(f"{where}: a block of kind {b.lang!r} cannot be run ({CODE} can)")
            continue
        buffer = io.StringIO()
        try:
            if b.lang == "bash":
                done = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", b.code],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                buffer.write(done.stdout)
                if done.returncode:
                    failures.append(f"{where}: exit status {done.returncode}\n{done.stderr}")
            else:
                with contextlib.redirect_stdout(buffer):
                    if b.lang == "python":
                        exec(compile(b.code, where, "exec"), ns)
                    else:
                        print(_run_sql(ns, b.code))
        except Exception:  # report every failing block, not only the first
            failures.append(f"{where}:\n{traceback.format_exc()}")
        printed = buffer.getvalue()
    if rewrites:
        _rewrite(page, rewrites)
    return failures


def _rewrite(page: Path, outputs: dict[int, str]) -> None:
    """Replace the text blocks opening on the given lines by the given outputs."""
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    for opening in sorted(outputs, reverse=True):
        end = opening
        while not lines[end].strip().startswith(("```", "~~~")):
            end += 1
        lines[opening:end] = [outputs[opening]]
    page.write_text("".join(lines), encoding="utf-8")


#: Pages whose blocks take 7 s or more to run (the slow marker's rule).
SLOW_PAGES = {"README.md", "cli.md", "spark.md"}


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_PAGES else p for p in PAGES],
    ids=[p.name for p in PAGES],
)
def test_every_block_runs(page: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, __file__, str(page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_runner_reports_each_kind_of_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "page.md"
    fence = "```"
    page.write_text(
        f"{fence}python\nprint(1)\n{fence}\n\n{fence}text\n2\n{fence}\n\n"
        f"{fence}sql\nSELECT 1\n{fence}\n\n{fence}bash\npip install duckdb-kanon\n{fence}\n\n"
        f"{fence}bash\nmake no-such-target\n{fence}\n\n{fence}js\n1\n{fence}\n\n"
        f"{fence}python\nprint(3)\n{fence}\n\n{fence}text\n3\n{fence}\n"
    )
    monkeypatch.chdir(tmp_path)
    failures = run_page(page)
    assert [f.split(":", 2)[1].split()[0] for f in failures] == ["5", "9", "13", "17", "21"]
    assert "output differs" in failures[0]
    assert "defines con" in failures[1]
    assert "not this checkout" in failures[2]
    assert "no-such-target" in failures[3]
    assert "'js'" in failures[4]


if __name__ == "__main__":
    # python tests/test_docs.py [--update] PAGE: --update rewrites the shown outputs.
    problems = run_page(Path(sys.argv[-1]).resolve(), update="--update" in sys.argv)
    print("\n\n".join(problems))
    sys.exit(1 if problems else 0)
