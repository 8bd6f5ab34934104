"""Policies: named rules with thresholds that a release must meet, declared once.

A policy is given inline (a SQL struct, a Python dict, a JSON file) or by the name of
one stored in ``kanon_policies`` (one row per rule, plus one row per column the policy
accepts as released unchanged, with the reason). :data:`RULES` declares every rule:
its name, what it bounds, and the values its threshold takes. ``kanon.plan.verify``
measures each rule on a release.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb

from kanon.exceptions import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ACCEPT",
    "POLICY_TABLE",
    "RULES",
    "Policy",
    "Rule",
    "policy_of",
    "rules_table",
    "stored_policy",
]

#: The table of stored policies (created by ``kanon.install``, editable with SQL).
POLICY_TABLE = "kanon_policies"
#: The key of an inline policy (and the ``rule`` of a stored row) naming the columns it
#: accepts as released unchanged, each with its reason.
ACCEPT = "accept"


@dataclass(frozen=True)
class Rule:
    """One rule of a policy: its name, what it bounds and its threshold's values."""

    name: str
    doc: str
    at_least: float = 0.0  # the least threshold
    at_most: float | None = 1.0  # the largest threshold (None: no bound)
    whole: bool = False  # the threshold is a whole number
    at_most_passes: bool = True  # the measure passes at or below the threshold (else at or above)
    default: float | None = None  # checked with this threshold when the policy omits it

    def check(self, value: Any, policy: str) -> float:
        """``value`` as this rule's threshold, or a kanon error naming the rule."""
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value >= self.at_least
            and (self.at_most is None or value <= self.at_most)
            and (not self.whole or float(value).is_integer())
        )
        if not ok:
            msg = f"{policy}: rule {self.name!r} ({self.doc}) needs {self.accepts}, got {value!r}"
            raise InvalidInputError(msg)
        return int(value) if self.whole else float(value)

    @property
    def accepts(self) -> str:
        """The threshold's values, as said in errors and docs."""
        if self.whole:
            return f"a whole number >= {self.at_least:g}"
        if self.at_most is None:
            return f"a number >= {self.at_least:g}"
        return f"a number in [{self.at_least:g}, {self.at_most:g}]"


#: Every rule, in the order a verdict lists them; ``doc`` says what its value measures.
RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        Rule(
            "k",
            "the smallest class: rows equal on the released QIs (NULL equal to NULL, the "
            "suppressed rows one class)",
            at_least=1,
            at_most=None,
            whole=True,
            at_most_passes=False,
        ),
        Rule(
            "l",
            "the fewest distinct values (NULL one of them) of a sensitive column in a class",
            at_least=1,
            at_most=None,
            at_most_passes=False,
        ),
        Rule(
            "t",
            "the largest EMD of a class's sensitive values to the release's (ordered "
            "distance for numbers and dates, else equal)",
        ),
        Rule(
            "identifying_columns",
            "the largest share of rows, over the columns released besides the QIs (not all "
            "'*', not accepted), whose value fewer than k rows hold (the policy's k, else 2; "
            "NULL never counts)",
        ),
        Rule("suppressed", "the share of the release's rows with every QI '*'"),
        Rule("loss", "the release's GCP (as kanon_metrics computes it)"),
        Rule("rows", "the share of the source's rows missing from the release", default=0.0),
    )
}


@dataclass(frozen=True)
class Policy:
    """A checked policy: its rules' thresholds and the columns it accepts unchanged."""

    name: str | None  # the stored name; None for a policy given inline
    thresholds: dict[str, float] = field(default_factory=dict)  # in RULES order
    accepted: dict[str, str] = field(default_factory=dict)  # column -> reason

    @property
    def k(self) -> int:
        """The k of ``identifying_columns``: the policy's k, else 2 (a unique value)."""
        return int(self.thresholds.get("k", 2))

    @classmethod
    def of(cls, rules: Mapping[str, Any], name: str | None = None) -> Policy:
        """Check ``rules`` (rule name -> threshold, and :data:`ACCEPT`) into a policy."""
        what = "the inline policy" if name is None else f"policy {name!r}"
        if not isinstance(rules, dict):
            msg = f"{what} must be a mapping of rule name to threshold, got {rules!r}"
            raise InvalidInputError(msg)
        thresholds: dict[str, float] = {}
        accepted: dict[str, str] = {}
        for key, value in rules.items():
            if key == ACCEPT:
                accepted = _accepted(what, value)
            elif not isinstance(key, str) or key not in RULES:
                msg = (
                    f"{what}: unknown rule {key!r}; the rules are "
                    f"{', '.join(RULES)} (and {ACCEPT!r}: columns accepted unchanged)"
                )
                raise InvalidInputError(msg)
            elif value is not None:
                thresholds[key] = RULES[key].check(value, what)
        for rule in RULES.values():
            if rule.default is not None:
                thresholds.setdefault(rule.name, rule.default)
        ordered = {r: thresholds[r] for r in RULES if r in thresholds}
        return cls(name, ordered, accepted)

    def rows(self) -> list[tuple[str, float | None, str | None, str | None]]:
        """The policy as ``kanon_policies`` rows after the name: rule, threshold, column, reason."""
        out: list[tuple[str, float | None, str | None, str | None]] = [
            (rule, value, None, None) for rule, value in self.thresholds.items()
        ]
        return out + [(ACCEPT, None, c, reason) for c, reason in self.accepted.items()]


def _accepted(name: str, value: Any) -> dict[str, str]:
    """The accepted columns: a mapping of column name to a non-empty reason."""
    if not isinstance(value, dict) or not all(
        isinstance(c, str) and c and isinstance(r, str) and r.strip() for c, r in value.items()
    ):
        msg = (
            f"{name}: {ACCEPT!r} must map each column released unchanged to the reason it "
            f"is accepted, e.g. {{'income': 'needed for the study'}}, got {value!r}"
        )
        raise InvalidInputError(msg)
    return dict(value)


def stored_policy(con: duckdb.DuckDBPyConnection, name: str) -> Policy:
    """The policy ``name`` of ``kanon_policies``, checked; a kanon error if it is absent."""
    try:
        rows = con.execute(
            f"SELECT rule, threshold, column_name, reason FROM {POLICY_TABLE} "
            "WHERE policy = ? ORDER BY rowid",
            [name],
        ).fetchall()
        listed = con.execute(f"SELECT DISTINCT policy FROM {POLICY_TABLE}").fetchall()
        names = [str(r[0]) for r in listed]
    except duckdb.CatalogException:  # kanon.install has not created the table here
        rows, names = [], []
    what = f"policy {name!r} of {POLICY_TABLE}"
    if not rows:
        known = ", ".join(repr(n) for n in sorted(names)) or "none"
        msg = (
            f"there is no policy {name!r} in {POLICY_TABLE} (stored policies: {known}); "
            "write it with kanon.policy(con, name, k=..., ...) or give the rules inline"
        )
        raise ConfigError(msg)
    rules: dict[str, Any] = {}
    accepted: dict[str, Any] = {}
    for rule, threshold, column, reason in rows:
        if rule == ACCEPT:
            accepted[column] = reason
            continue
        if rule in rules:
            msg = f"{what} gives rule {rule!r} twice; delete one of its rows"
            raise ConfigError(msg)
        if threshold is None:
            msg = f"{what} gives rule {rule!r} no threshold; set kanon_policies.threshold"
            raise ConfigError(msg)
        rules[rule] = threshold
    if accepted:
        rules[ACCEPT] = accepted
    return Policy.of(rules, name)


def policy_of(con: duckdb.DuckDBPyConnection, value: Any) -> Policy:
    """A policy given by name (stored), inline (a mapping), or already checked."""
    if isinstance(value, Policy):
        return value
    if isinstance(value, str) and value:
        return stored_policy(con, value)
    if isinstance(value, dict):
        return Policy.of(value)
    msg = (
        "policy must be the name of a stored policy or its rules, e.g. {'k': 5, 'l': 2} "
        f"(the rules: {', '.join(RULES)}), got {value!r}"
    )
    raise InvalidInputError(msg)


def rules_table() -> str:
    """docs/policy.md's table of the rules: name, what passes, the threshold's values."""
    lines = ["| rule | its value | passes when | threshold |", "| --- | --- | --- | --- |"]
    for r in RULES.values():
        sign = "≤" if r.at_most_passes else "≥"
        default = "" if r.default is None else f" (always checked, default {r.default:g})"
        lines.append(f"| `{r.name}` | {r.doc} | value {sign} threshold | {r.accepts}{default} |")
    return "\n".join(lines)
