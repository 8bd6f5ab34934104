"""``kanon.hkp(...)``: (h,k,p)-coherence of transaction data from Python.

Runs the plan of :func:`kanon.plan.hkp.plan_hkp` on any input the Python API accepts; kept
apart from :mod:`kanon.plan.hkp`, which the installer imports for its UDFs, so that the
inputs' module (which installs them) imports no module that imports it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

from kanon.engine.inputs import as_table, like_input
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.hkp import MAX_ITEMSETS, HkpOptions, plan_hkp

if TYPE_CHECKING:
    from kanon.engine.inputs import Data

__all__ = ["HkpResult", "hkp"]


@dataclass(frozen=True)
class HkpResult:
    """An (h,k,p)-coherent release and what it took (``kanon.hkp``).

    SQL returns the same as ``kanon_hkp`` (the release) and ``kanon_hkp_report``.

    Items are values of the input (integers or text). Information loss is the share of
    all item occurrences (a transaction holding an item, public or private, after the
    ``min_support`` preprocessing) that the suppression removed.
    """

    release: Any  # same kind of object as the input
    suppressed: list[Any]  # public items removed, size-1 moles first, then greedy order
    size1_moles: list[Any]  # public items that are moles on their own
    moles: list[tuple[Any, ...]]  # minimal moles of 2..p public items
    information_loss: float  # suppressed_occurrences / occurrences
    suppressed_occurrences: int
    occurrences: int  # item occurrences after preprocessing (the denominator)
    dropped: list[Any]  # items removed by the min_support preprocessing
    dropped_occurrences: int
    private: list[Any]  # the private items (after preprocessing)
    transactions: int
    items: int  # distinct items after preprocessing
    public_items: int
    candidates: int  # sets of 2..p public items whose mole status was decided
    method: str
    seconds: float  # time in the kernel


_CLASSES: dict[str, type[Exception]] = {
    "InvalidInputError: ": InvalidInputError,
    "ConfigError: ": ConfigError,
}


def _fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[Any]:
    """Run ``sql``; an error raised as a kanon class inside DuckDB comes out as that class."""
    try:
        return con.execute(sql).fetchall()
    except duckdb.InvalidInputException as err:
        text = str(err)
        for marker, cls in _CLASSES.items():
            if marker in text:
                raise cls(text.split(marker, 1)[1].strip()) from err
        raise


def _private_items(private: object) -> tuple[str | None, ...] | None:
    """``private`` of :func:`hkp`: a list of items (as text), or None."""
    if private is None:
        return None
    if isinstance(private, str) or not isinstance(private, list | tuple | set | frozenset):
        msg = f"private must be a list of items, e.g. [3, 4] or ['milk'], got {private!r}"
        raise InvalidInputError(msg)
    return tuple(None if v is None else str(v) for v in private)


def hkp(
    data: Data,
    h: float,
    k: int,
    p: int,
    *,
    private: list[Any] | None = None,
    roles: str | None = None,
    public_fraction: float | None = None,
    seed: int = 0,
    method: str = "mmil",
    min_support: float = 0.0,
    max_itemsets: int = MAX_ITEMSETS,
    items: str | None = None,
    tid: str | None = None,
    item: str | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> HkpResult:
    """Make transaction data (h,k,p)-coherent (SQL ``kanon_hkp`` / ``kanon_hkp_report``).

    An attacker who knows at most ``p`` public items of a person finds at least ``k``
    transactions holding them, and no private item occurs in more than a fraction ``h``
    of those (Xu et al., KDD 2008). Public items are suppressed from every transaction
    until that holds: size-1 moles first, then greedily (``method``) the items of the
    minimal moles found level by level. Private items are never suppressed; every
    transaction is kept.

    Args:
        data: a table name (with ``con``), a DuckDB relation, a pandas or polars
            DataFrame or a pyarrow Table: one LIST column of items per transaction, or a
            long table of (transaction id, item) rows.
        h: the largest allowed probability of inferring a private item, in (0, 1].
        k: the smallest allowed number of transactions matching what an attacker knows.
        p: the most public items an attacker knows.
        private: the private items (every other item is public; ``[]``: all public).
        roles: instead, a table with columns ``item`` and ``role`` (``'public'`` or
            ``'private'``; items it does not list are public).
        public_fraction: instead, the share of items drawn public with ``seed`` (after
            preprocessing), the rest private: the paper's experimental setting.
        seed: seed of the ``public_fraction`` draw.
        method: how the greedy phase picks the next item: ``"mmil"`` (most minimal
            moles per occurrence lost, the default), ``"1il"`` (least frequent),
            ``"mm"`` (in most minimal moles) or ``"rmall"`` (every item of every
            minimal mole).
        min_support: preprocessing: items in fewer than ``min_support * transactions``
            transactions are dropped from the data and the release (the paper: 0.001).
        max_itemsets: the most candidate sets of 2..p public items the mole search may
            decide (default ten million): dense data (many items in most transactions)
            makes their number grow like C(items, p); past the budget the call fails
            with an InvalidInputError naming the largest p that fits.
        items: the LIST column (default: the only one).
        tid: the transaction id column of a long table (with ``item``).
        item: the item column of a long table.
        con: connection holding ``data`` when it is a table name.

    Returns:
        An :class:`HkpResult`: the release (the same kind of object as ``data``; a DuckDB
        relation for a table name), the suppressed items, the moles and the loss.

    Raises:
        ConfigError: unknown table or column, no or several LIST columns, an item type
            other than integers and text, none or several of private / roles /
            public_fraction, a malformed roles table.
        InvalidInputError: h, k, p, min_support, public_fraction, seed, max_itemsets or
            method out of range; a private item that occurs in no transaction; NULL items
            (in a list) or NULL transaction ids; a search past ``max_itemsets`` (lower p,
            raise k or max_itemsets).

    Examples:
        >>> import pyarrow as pa, kanon
        >>> t = pa.table({"basket": [[0, 2, 6], [0, 2, 5], [1, 2], [0, 1, 5], [0, 1, 2],
        ...                          [0, 1, 2, 3, 4, 5]]})
        >>> r = kanon.hkp(t, h=0.5, k=3, p=3, private=[3, 4])
        >>> r.suppressed, r.moles
        ([6, 5, 1], [(1, 5), (2, 5), (0, 1, 2)])
        >>> r.release.column("basket").to_pylist()
        [[0, 2], [0, 2], [2], [0], [0, 2], [0, 2, 3, 4]]
    """
    options = HkpOptions(
        h=h,
        k=k,
        p=p,
        private=_private_items(private),
        roles=roles,
        public_fraction=public_fraction,
        seed=seed,
        method=method,
        min_support=min_support,
        max_itemsets=max_itemsets,
        items=items,
        tid=tid,
        item=item,
    )
    with as_table(data, con) as (con_, name):
        plan = plan_hkp(con_, name, options)
        ((sup, size1, moles, loss, sup_occ, occ, dropped, drop_occ, priv, *counts),) = _fetch(
            con_, plan.report_sql
        )
        transactions, n_items, public_items, candidates, method_, seconds = counts
        release_sql = plan.release_without([*sup, *dropped])
        if isinstance(data, str):
            release: Any = con_.sql(release_sql)
        else:
            release = like_input(data, con_.sql(release_sql).to_arrow_table(), con)
    return HkpResult(
        release=release,
        suppressed=list(sup),
        size1_moles=list(size1),
        moles=[tuple(m) for m in moles],
        information_loss=float(loss),
        suppressed_occurrences=int(sup_occ),
        occurrences=int(occ),
        dropped=list(dropped),
        dropped_occurrences=int(drop_occ),
        private=list(priv),
        transactions=int(transactions),
        items=int(n_items),
        public_items=int(public_items),
        candidates=int(candidates),
        method=str(method_),
        seconds=float(seconds),
    )
