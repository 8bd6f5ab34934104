"""The build ships what the repository holds: embedded SQL equals sql/, versions agree."""

from __future__ import annotations

import importlib.metadata

import tomllib

import kanon
from kanon.engine.install import sql_bundle
from tests.conftest import REPO


def test_embedded_sql_matches_files_on_disk() -> None:
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in (REPO / "sql").glob("*.sql")}
    embedded = dict(sql_bundle())
    assert embedded == on_disk, "rebuild the extension: sql/ changed since the last build"
    assert [name for name, _ in sql_bundle()] == sorted(on_disk), "bundle not in load order"


def test_versions_agree() -> None:
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text(encoding="utf-8"))
    version = cargo["workspace"]["package"]["version"]
    assert kanon.__version__ == version
    assert importlib.metadata.version("duckdb-kanon") == version


def test_public_api() -> None:
    assert set(kanon.__all__) >= {"install", "configure", "check", "classes", "hierarchy", "hkp"}
