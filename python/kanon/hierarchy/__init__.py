"""Generalization hierarchies: DuckDB lookup tables in ARX's wide format.

A hierarchy is an ordinary table with one row per original value. Column 0 holds the
value itself (level 0), column ``i`` its label at level ``i``, and the last column one
label shared by every row (the root, usually ``'*'``). Columns are read by position,
so ``read_csv('adult_hierarchy_age.csv', delim=';', header=false)`` is a hierarchy
as it stands. Tables made by the builders below name their columns ``level_0`` …
``level_L``; ``level_0`` keeps the type of the source column, labels above it are
``VARCHAR``.

Every builder builds its rows into a fresh temporary table, validates them there with
:func:`validate`, only then replaces (``CREATE OR REPLACE``) the table it is given and
returns a :class:`Hierarchy`: a failure leaves an existing table of that name as it was,
and a view of that name (or the source table) is refused. All heavy work happens in SQL;
Python only computes a handful of constants (the number of levels, split depths).

The generalizers of the Go library described in the seed thesis (§3.4) are
reproduced as follows:

* :func:`suppress` is the ``Suppressor`` (§3.4.3): one level, every value ``'*'``.
* :func:`auto` is ``hierarchy.AutoBuild`` (§3.4.4): the sorted distinct values are
  chopped into ``fanout`` chunks of ``ceil(size / fanout)`` items (one item per chunk
  when a node has no more than ``fanout`` items), recursively, until only singletons
  remain; a node that became a singleton early repeats down to the bottom.
* ``intervals`` without ``width`` is the ``RangeGeneralizer`` over ``IntRange`` /
  ``FloatRange`` (§3.4.5): repeated splits of ``[min, max]`` at the median.
* :func:`prefix_words` is the ``PrefixGeneralizer`` (§3.4.6): level ``i`` keeps the
  first ``W - i`` words.
"""

from kanon.hierarchy.base import ROOT, Hierarchy, levels, validate
from kanon.hierarchy.builders import auto, dates, from_csv, mask, prefix_words, suppress
from kanon.hierarchy.numbers import intervals

__all__ = [
    "ROOT",
    "Hierarchy",
    "auto",
    "dates",
    "from_csv",
    "intervals",
    "levels",
    "mask",
    "prefix_words",
    "suppress",
    "validate",
]
