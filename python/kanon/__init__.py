"""kanon: k-anonymization and privacy checks inside DuckDB.

Quick start::

    import duckdb, kanon
    con = kanon.install(duckdb.connect())
    con.sql("SELECT * FROM kanon('patients', k := 5, qi := ['age', 'zip'])")
    con.sql("SELECT * FROM kanon_check('patients', qi := ['age', 'zip'], sensitive := 'disease')")
"""

from __future__ import annotations

from kanon import exceptions, hierarchy
from kanon._core import __version__
from kanon.api.check import CheckReport, check, classes
from kanon.api.configure import configure
from kanon.api.hkp import HkpResult, hkp
from kanon.api.release import anonymize, explain, metrics, search
from kanon.api.report import report
from kanon.api.verify import Verdict, policy, verify
from kanon.engine.install import install
from kanon.plan.metrics import Metrics
from kanon.plan.release.search import Transformation
from kanon.store.export import to_sql
from kanon.store.materialize import Refreshed, materialize, refresh

__all__ = [
    "CheckReport",
    "HkpResult",
    "Metrics",
    "Refreshed",
    "Transformation",
    "Verdict",
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
    "policy",
    "refresh",
    "report",
    "search",
    "to_sql",
    "verify",
]
