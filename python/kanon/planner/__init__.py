"""The planner: turns a call of ``kanon(...)`` and the catalog into one SQL query.

:func:`kanon._anonymize.plan_anonymize` resolves the call (table, roles, hierarchies,
privacy models) and hands it to the method's module through the registry
(:mod:`kanon.planner.registry`); each method emits its SQL from the shared vocabulary:
SQL parts (:mod:`~kanon.planner.sql`), hierarchies (:mod:`~kanon.planner.hierarchies`),
column coding (:mod:`~kanon.planner.coding`) and labels (:mod:`~kanon.planner.labels`).
"""
