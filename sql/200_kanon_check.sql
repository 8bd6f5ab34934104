-- kanon_check: measure how anonymous a table is; returns one row.
-- Parameters: tbl VARCHAR (table or view name); qi VARCHAR[] (default: the table's
--   configured QIs); sensitive VARCHAR (default: the configured sensitive column, if one);
--   population VARCHAR (the table tbl was drawn from: journalist risk and δ-presence; every
--   class of tbl must have at least as many rows there); t_distance VARCHAR ('equal' |
--   'ordered' | 'hierarchical', default by type; 'hierarchical' uses the hierarchy named
--   in kanon_columns.hierarchy for the sensitive column, which must cover its values);
--   recursive_l BIGINT, recursive_c DOUBLE (recursive (c,l)-diversity); risk_threshold
--   DOUBLE (default 0.2); identifiers, insensitive VARCHAR[] (roles besides the
--   configuration: such columns are not undeclared).
-- Output: k, classes, rows, l_distinct, l_entropy, recursive_l, recursive_c, recursive_ok,
--   t, prosecutor_max, prosecutor_avg, prosecutor_at_risk, marketer, journalist_max,
--   journalist_avg, journalist_at_risk, delta_min, delta_max (δ-presence: the smallest /
--   largest rows of a class over the rows of the matching population class),
--   identifying_columns VARCHAR[] (columns with no role whose values single out rows:
--   more than 1 % of the rows, and at least 2, hold a value no other row holds; kanon(...)
--   refuses to release them unless keep_undeclared := true).
-- Depends on: kanon_plan_check (planner UDF), kanon_class_stats (kernel UDF).
-- Example: SELECT * FROM kanon_check('patients', qi := ['age', 'zip'], sensitive := 'disease');
CREATE OR REPLACE TEMP MACRO kanon_check(
    tbl,
    qi := CAST([] AS VARCHAR []),
    sensitive := CAST(NULL AS VARCHAR),
    population := CAST(NULL AS VARCHAR),
    t_distance := CAST(NULL AS VARCHAR),
    recursive_l := CAST(NULL AS BIGINT),
    recursive_c := CAST(NULL AS DOUBLE),
    risk_threshold := 0.2,
    identifiers := CAST(NULL AS VARCHAR []),
    insensitive := CAST(NULL AS VARCHAR [])
) AS TABLE
SELECT *
FROM query(kanon_plan_check(CAST(to_json({
                'tbl': tbl, 'qi': qi, 'sensitive': sensitive, 'population': population,
                't_distance': t_distance, 'recursive_l': recursive_l, 'recursive_c': recursive_c,
                'risk_threshold': risk_threshold, 'identifiers': identifiers,
                'insensitive': insensitive
            }) AS VARCHAR)));
