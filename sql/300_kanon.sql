-- kanon: the anonymized rows of a table (local recoding, every row in a class of >= k).
-- Parameters: tbl VARCHAR; k BIGINT (>= 1, at most the row count); qi VARCHAR[]
--   (default: the table's configured QIs); seed UBIGINT (0 = value order; another
--   value draws another, equally valid release); method VARCHAR ('forest').
-- Output: the table's columns in order, one row per source row: quasi-identifiers as
--   VARCHAR labels of their group's hierarchy level ('*' at the top), identifiers as
--   '*', every other column unchanged.
-- Depends on: kanon_plan_anonymize (planner UDF), kanon_forest (kernel UDF).
-- Example: SELECT * FROM kanon('patients', k := 5);
CREATE OR REPLACE TEMP MACRO kanon(tbl, k, qi := CAST([] AS VARCHAR []), seed := 0,
                                   method := 'forest') AS TABLE
SELECT *
FROM query(kanon_plan_anonymize(tbl, k, qi, seed, method));
