"""kanon: k-anonymization and privacy checks inside DuckDB.

Quick start::

    import duckdb, kanon
    con = kanon.install(duckdb.connect())
    con.sql("SELECT * FROM kanon('patients', k := 5, qi := ['age', 'zip'])")
    con.sql("SELECT * FROM kanon_check('patients', qi := ['age', 'zip'], sensitive := 'disease')")
"""

from __future__ import annotations

from kanon import exceptions, hierarchy
from kanon._check import CheckReport, check, classes
from kanon._config import configure
from kanon._core import __version__
from kanon._hkp_api import HkpResult, hkp
from kanon._install import install
from kanon._materialize import Refreshed, materialize, refresh
from kanon._metrics import Metrics
from kanon._portable import to_sql
from kanon._release import anonymize, explain, metrics, search
from kanon._report import report
from kanon.planner.search import Transformation

__all__ = [
    "CheckReport",
    "HkpResult",
    "Metrics",
    "Refreshed",
    "Transformation",
    "__version__",
    "anonymize",
    "check",
    "classes",
    "configure",
    "exceptions",
    "explain",
    "hierarchy",
    "hkp",
    "install",
    "materialize",
    "metrics",
    "refresh",
    "report",
    "search",
    "to_sql",
]
