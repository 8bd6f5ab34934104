"""The planner of ``kanon(...)``: turns a call and the catalog into one SQL query.

:func:`~kanon.plan.release.resolve.plan_anonymize` resolves the call (table, roles,
hierarchies, privacy models) and hands it to the method's module through the registry
(:mod:`kanon.plan.release.registry`); each method emits its SQL from the shared vocabulary:
SQL parts (:mod:`kanon.sql.cte`), hierarchies (:mod:`kanon.plan.hierarchies`), column
coding (:mod:`kanon.plan.coding`) and labels (:mod:`kanon.plan.labels`).
"""
