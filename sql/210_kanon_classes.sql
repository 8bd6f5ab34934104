-- kanon_classes: the class-size histogram of a table over its quasi-identifiers.
-- Parameters: tbl VARCHAR; qi VARCHAR[] (default: the table's configured QIs).
-- Output: class_size UBIGINT, classes UBIGINT (classes of that size), rows UBIGINT
--   (rows in them), share DOUBLE (rows / all rows), cumulative_share DOUBLE; one row per
--   size, smallest first.
-- Depends on: kanon_plan_classes (planner UDF).
-- Example: SELECT * FROM kanon_classes('patients', qi := ['age', 'zip']);
CREATE OR REPLACE TEMP MACRO kanon_classes(tbl, qi := CAST([] AS VARCHAR [])) AS TABLE
SELECT *
FROM query(kanon_plan_classes(CAST(to_json({
                'tbl': tbl, 'qi': qi
            }) AS VARCHAR)));
