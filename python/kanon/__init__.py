"""kanon: k-anonymity and privacy checks inside DuckDB.

Quick start::

    import duckdb, kanon
    con = kanon.install(duckdb.connect())
    con.sql("SELECT * FROM kanon_check('patients', qi := ['age', 'zip'], sensitive := 'disease')")
"""

from __future__ import annotations

from kanon import exceptions, hierarchy
from kanon._check import CheckReport, check, classes
from kanon._config import configure
from kanon._core import __version__
from kanon._install import install

__all__ = [
    "CheckReport",
    "__version__",
    "check",
    "classes",
    "configure",
    "exceptions",
    "hierarchy",
    "install",
]
