-- kanon: the anonymized rows of a table (every released QI combination occurs >= k times).
-- Parameters: tbl VARCHAR; k BIGINT (>= 1, at most the row count); qi VARCHAR[] (default:
--   the configured QIs); seed UBIGINT (forest: 0 = value order, another value another
--   release); method VARCHAR ('forest', 'forest_paper', 'optimal'); for 'optimal' only:
--   metric VARCHAR ('loss', 'height', 'nue', 'nue_nonmonotonic', 'dm', 'dm_star', 'aecs'),
--   max_suppression DOUBLE (fraction of rows whose QIs may become '*'), drop_suppressed
--   BOOLEAN, min_level / max_level MAP(VARCHAR, INTEGER) (per QI).
-- Output: the table's columns in order, one row per source row (suppressed rows dropped
--   if asked): QIs as VARCHAR labels ('*' at the top), identifiers '*', others unchanged.
-- Depends on: kanon_plan_anonymize (planner UDF), kanon_forest / kanon_optimal (kernels).
-- Example: SELECT * FROM kanon('patients', k := 5, method := 'optimal');
CREATE OR REPLACE TEMP MACRO kanon(tbl, k, qi := CAST([] AS VARCHAR []), seed := 0,
                                   method := 'forest', metric := CAST(NULL AS VARCHAR),
                                   max_suppression := 0.0, drop_suppressed := FALSE,
                                   min_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                   max_level := CAST(NULL AS MAP(VARCHAR, INTEGER))) AS TABLE
SELECT *
FROM query(kanon_plan_anonymize(tbl, k, qi, seed, method, metric, max_suppression,
                                drop_suppressed, min_level, max_level));
