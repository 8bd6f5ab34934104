"""The Python API of policies: ``kanon.policy`` stores one, ``kanon.verify`` judges a release."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kanon._options import column_names
from kanon.engine.inputs import Data, as_table
from kanon.engine.install import install, require_writable
from kanon.exceptions import InvalidInputError
from kanon.plan.policy import ACCEPT, POLICY_TABLE, RULES, Policy, policy_of
from kanon.plan.verify import VerifyPlan, plan_verify

if TYPE_CHECKING:
    import duckdb

__all__ = ["RuleResult", "Verdict", "policy", "run_verdict", "verify"]


@dataclass(frozen=True)
class RuleResult:
    """One rule's row of a verdict (SQL ``kanon_verify``'s columns)."""

    rule: str
    threshold: float
    value: float | None  # the measure; None where the release holds no row to measure
    passed: bool
    rows: int | None  # rows that break the rule (None: the rule does not count rows)
    classes: int | None  # classes that break it
    columns: list[str]  # the columns that break it
    detail: str

    @property
    def bound(self) -> str:
        """The rule and its threshold as a condition: ``k >= 5``, ``loss <= 0.2``."""
        sign = ">=" if not RULES[self.rule].at_most_passes else "<="
        return f"{self.rule} {sign} {self.threshold:g}"


@dataclass(frozen=True)
class Verdict:
    """The verdict of a policy on a release: one :class:`RuleResult` per rule."""

    rules: tuple[RuleResult, ...]
    policy: Policy

    @property
    def passed(self) -> bool:
        """Whether every rule passed."""
        return all(r.passed for r in self.rules)

    @property
    def failed(self) -> list[RuleResult]:
        """The rules that failed."""
        return [r for r in self.rules if not r.passed]

    def __getitem__(self, rule: str) -> RuleResult:
        for r in self.rules:
            if r.rule == rule:
                return r
        msg = f"the verdict has no rule {rule!r}; its rules are {[r.rule for r in self.rules]}"
        raise KeyError(msg)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data (JSON-ready)."""
        return {
            "policy": self.policy.name,
            "passed": self.passed,
            "rules": [asdict(r) for r in self.rules],
            "accepted": dict(self.policy.accepted),
        }

    def __str__(self) -> str:
        name = "inline policy" if self.policy.name is None else f"policy {self.policy.name!r}"
        lines = [f"{'PASS' if self.passed else 'FAIL'}: {name}"]
        width = max(len(r.bound) for r in self.rules)
        for r in self.rules:
            value = "-" if r.value is None else f"{r.value:.4g}"
            lines.append(
                f"  {'pass' if r.passed else 'FAIL'}  {r.bound:<{width}}  {value:>8}  {r.detail}"
            )
        lines += [f"  accepted unchanged: {c} ({why})" for c, why in self.policy.accepted.items()]
        return "\n".join(lines)


def verify(
    source: Data,
    release: Data,
    policy: str | dict[str, Any] | Policy,
    qi: list[str] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    sensitive: str | list[str] | None = None,
) -> Verdict:
    """Judge ``release`` (made from ``source``) against ``policy`` (SQL ``kanon_verify``).

    Every rule is measured by plain SQL over the release as published, whatever made it.

    Args:
        source: the source data: a table name (with ``con``), a DuckDB relation, a pandas
            or polars DataFrame or a pyarrow Table. Its configured (or given) roles say
            which columns are QIs and sensitive; its row count is the ``rows`` rule's base.
        release: the release, the same kinds of input.
        policy: a stored policy's name (``kanon.policy``), or its rules as a dict, e.g.
            ``{"k": 5, "l": 2, "accept": {"income": "needed for the study"}}``.
        qi: the quasi-identifiers (default: those configured for ``source``).
        con: the connection holding the tables given by name (and ``kanon_policies``).
        sensitive: the sensitive column(s) of ``l`` and ``t`` (default: the configured ones).

    Returns:
        A :class:`Verdict`: ``.passed``, ``.rules``, a readable ``str``.

    Raises:
        ConfigError: an unknown table, column or policy; a rule needing a sensitive column.
        InvalidInputError: an unknown rule or a bad threshold, named.

    Examples:
        >>> import duckdb, kanon
        >>> con = kanon.install(duckdb.connect())
        >>> _ = con.execute("CREATE TABLE t AS SELECT i % 5 AS age FROM range(20) r(i)")
        >>> _ = con.execute("CREATE TABLE r AS SELECT * FROM kanon('t', k := 4, qi := ['age'])")
        >>> kanon.verify("t", "r", {"k": 4}, qi=["age"], con=con).passed
        True
    """
    with ExitStack() as stack:
        con_, src = stack.enter_context(as_table(source, con, "source"))
        _, rel = stack.enter_context(as_table(release, con_, "release"))
        checked = policy_of(con_, policy)
        plan = plan_verify(
            con_, src, rel, checked, tuple(qi or ()), column_names("sensitive", sensitive)
        )
        return run_verdict(con_, plan)


def run_verdict(con: duckdb.DuckDBPyConnection, plan: VerifyPlan) -> Verdict:
    """Run a planned verdict on ``con`` (plain SQL: no UDF, so it runs in a transaction)."""
    rows = con.execute(plan.sql).fetchall()
    return Verdict(tuple(RuleResult(*row) for row in rows), plan.policy)


def policy(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    accept: dict[str, str] | None = None,
    **rules: float,
) -> Policy:
    """Store the policy ``name`` in ``kanon_policies`` (replacing that policy's rows).

    Args:
        con: the connection whose database keeps the policy.
        name: the policy's name, given to ``kanon_verify(..., policy := name)``.
        accept: columns the policy accepts as released unchanged, each with its reason.
        **rules: the rules and their thresholds: ``k``, ``l``, ``t``,
            ``identifying_columns``, ``suppressed``, ``loss``, ``rows`` (docs/policy.md).

    Returns:
        The checked :class:`~kanon.plan.policy.Policy`.

    Raises:
        InvalidInputError: an unknown rule or a bad threshold, named.
    """
    if not isinstance(name, str) or not name:
        msg = f"kanon.policy(): name must be a non-empty string, got {name!r}"
        raise InvalidInputError(msg)
    given: dict[str, Any] = dict(rules)
    if accept is not None:
        given[ACCEPT] = accept
    checked = Policy.of(given, name)
    install(con)
    require_writable(
        con, f"policy {name!r}", "give its rules inline (policy={...}) or open it writable"
    )
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"DELETE FROM {POLICY_TABLE} WHERE policy = ?", [name])
        con.executemany(
            f"INSERT INTO {POLICY_TABLE} (policy, rule, threshold, column_name, reason) "
            "VALUES (?, ?, ?, ?, ?)",
            [(name, *row) for row in checked.rows()],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return checked
