"""The release workflow (``.github/workflows/release.yml``): valid, and the full matrix.

Validated against the GitHub workflow schema that check-jsonschema ships (offline); the
checks below then read the matrix: manylinux x86_64 and aarch64, musllinux x86_64, macOS
arm64 and x86_64, Windows x64, the sdist, and publishing only on a version tag.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML

from tests.conftest import REPO

if TYPE_CHECKING:
    from pathlib import Path

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def _load() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def test_workflow_validates_against_the_schema() -> None:
    result = _validate(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_workflow_does_not_validate(tmp_path: Path) -> None:
    """The validation can fail: a job without ``runs-on`` is refused."""
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text(encoding="utf-8")
    broken.write_text(text.replace("    runs-on: ubuntu-latest\n", "", 1), encoding="utf-8")
    assert _validate(broken).returncode != 0


def _steps_with(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action)]


def test_the_matrix_covers_every_platform() -> None:
    jobs = _load()["jobs"]
    built: set[tuple[str, str]] = set()
    for name in ("linux", "musllinux", "macos", "windows"):
        job = jobs[name]
        (step,) = _steps_with(job, "PyO3/maturin-action@")
        rows = job.get("strategy", {}).get("matrix", {})
        variants = rows.get("include") or [{"target": t} for t in rows.get("target", [])] or [{}]
        for variant in variants:
            target = str(step["with"]["target"])
            for key, value in variant.items():
                target = target.replace(f"${{{{ matrix.{key} }}}}", str(value))
            assert "--release" in step["with"]["args"]
            built.add((name, target))
    assert built == {
        ("linux", "x86_64"),
        ("linux", "aarch64"),
        ("musllinux", "x86_64-unknown-linux-musl"),
        ("macos", "aarch64"),
        ("macos", "x86_64"),
        ("windows", "x64"),
    }
    assert _steps_with(jobs["linux"], "PyO3/maturin-action@")[0]["with"]["manylinux"] == "2014"
    assert _steps_with(jobs["sdist"], "PyO3/maturin-action@")[0]["with"]["command"] == "sdist"


def test_publishing_happens_on_version_tags_only() -> None:
    workflow = _load()
    assert workflow["on"]["push"] == {"tags": ["v*"]}
    publish = workflow["jobs"]["publish"]
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert set(publish["needs"]) == {"sdist", "smoke"}
    assert publish["permissions"] == {"id-token": "write"}
    assert _steps_with(publish, "pypa/gh-action-pypi-publish@")
