-- kanon_metrics: the utility of a release against its original table.
-- Parameters: original VARCHAR (the source table; its QIs and hierarchies are used);
--   released VARCHAR (the release, same QI columns holding labels); qi VARCHAR[]
--   (default: the configured QIs of original); k BIGINT (for C_AVG; default: the
--   release's smallest class).
-- Output: one row: rows, classes, min_class, k, cost (Σ over cells of
--   weight · level / height), gcp (mean NCP of the cells, 0..1), dm (Σ class size²),
--   c_avg ((rows / classes) / k), gcp_by_column (struct: column → mean NCP).
-- Depends on: kanon_plan_metrics (planner UDF).
-- Example: SELECT * FROM kanon_metrics('patients', 'patients_k5');
CREATE OR REPLACE TEMP MACRO kanon_metrics(original, released, qi := CAST([] AS VARCHAR []),
                                           k := CAST(NULL AS BIGINT)) AS TABLE
SELECT *
FROM query(kanon_plan_metrics(original, released, qi, k));
