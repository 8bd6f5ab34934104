"""The privacy models and the check's measures are declared once (``kanon.plan.models``).

The release's options, the check's SQL columns, the kernel's statistics and
``kanon.CheckReport`` all follow the declarations; these tests keep them in step.
"""

from __future__ import annotations

from dataclasses import fields

import duckdb
import pyarrow as pa

import kanon
from kanon import _core
from kanon._options import MACROS
from kanon.plan.models import (
    BASE_MEASURES,
    CHECK_MEASURES,
    MODELS,
    THRESHOLD_MODELS,
    PrivacyModels,
)
from kanon.plan.release.registry import METHODS

MEASURES = [m.name for m in CHECK_MEASURES]


def test_check_report_fields_are_the_declared_measures() -> None:
    names = [f.name for f in fields(kanon.CheckReport)]
    base = [m.name for m in BASE_MEASURES]
    assert names == ["qi", "sensitive", *base, "identifying_columns", "thresholds"]


def test_a_threshold_model_is_one_option_one_measure_of_one_name() -> None:
    for model in THRESHOLD_MODELS:
        assert model.threshold is not None
        assert model.options == model.measures == (model.threshold.name,), model.name
        assert model.threshold.sql == "DOUBLE", model.name


def test_kanon_check_columns_are_the_declared_measures() -> None:
    con = kanon.install(duckdb.connect())
    con.execute("CREATE TABLE t AS SELECT i % 3 AS a, i % 2 AS s FROM range(12) r(i)")
    got = con.execute("SELECT * FROM kanon_check('t', qi := ['a'], sensitive := 's')")
    assert [d[0] for d in got.description] == [*MEASURES, "identifying_columns"]


def test_the_kernel_returns_the_declared_measures() -> None:
    entries = pa.struct([("c", pa.uint32()), ("n", pa.uint64())])
    kind = pa.list_(
        pa.struct([("n", pa.uint64()), ("pop", pa.uint64()), ("entries", pa.list_(entries))])
    )
    classes = pa.array(
        [[{"n": 2, "pop": None, "entries": [{"c": 0, "n": 1}, {"c": 1, "n": 1}]}]], kind
    )
    out = _core.class_stats(classes=classes, options=pa.array(['{"sensitive": true}']))
    assert [f.name for f in out.type] == MEASURES


def test_every_model_is_enforced_by_its_methods_and_measured() -> None:
    options = MACROS["kanon"].options()
    for model in MODELS:
        assert set(model.measures) <= set(MEASURES), model.name
        assert model.reads in ("sensitive", "population"), model.name
        for option in model.options:
            assert options[option][1].scoped, option
            plain = option in PrivacyModels.__dataclass_fields__
            assert plain != (model.threshold is not None), option
            takes = {name for name, m in METHODS.items() if option in m.options}
            assert "optimal" in takes, option
            assert ("mondrian" in takes) == model.local, option


def test_asking_for_a_model_is_its_first_option() -> None:
    assert [m.name for m in PrivacyModels(l=2).asked()] == ["l-diversity"]
    assert [m.name for m in PrivacyModels(t=0.2).asked()] == ["t-closeness"]
    assert [m.name for m in PrivacyModels(population="p").asked()] == ["δ-presence"]
    assert PrivacyModels(l=2).needs_sensitive
    assert not PrivacyModels(population="p").needs_sensitive
    assert not PrivacyModels().any()
