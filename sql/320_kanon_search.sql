-- kanon_search: the optimal full-domain generalization of a table, as one row.
-- Parameters: tbl VARCHAR; k BIGINT; qi VARCHAR[] (default: the configured QIs); metric,
--   max_suppression, drop_suppressed, min_level, max_level as for kanon(..., method :=
--   'optimal').
-- Output: levels MAP(VARCHAR, UINTEGER) (QI -> level), suppressed BIGINT (rows whose QIs
--   become '*'), cost DOUBLE (the metric's value), classes BIGINT, nodes BIGINT (lattice
--   size), checked BIGINT (nodes grouped), seconds DOUBLE (search time), metric VARCHAR.
-- Depends on: kanon_plan_search (planner UDF), kanon_optimal (kernel UDF).
-- Example: SELECT * FROM kanon_search('patients', k := 5, max_suppression := 0.05);
CREATE OR REPLACE TEMP MACRO kanon_search(tbl, k, qi := CAST([] AS VARCHAR []),
                                          metric := CAST(NULL AS VARCHAR),
                                          max_suppression := 0.0, drop_suppressed := FALSE,
                                          min_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                          max_level := CAST(NULL AS MAP(VARCHAR, INTEGER)))
AS TABLE
SELECT *
FROM query(kanon_plan_search(tbl, k, qi, metric, max_suppression, drop_suppressed, min_level,
                             max_level));
