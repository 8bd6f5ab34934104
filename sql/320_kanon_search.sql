-- kanon_search: the full-domain generalization of a table, as one row: the optimal one, or
--   that of Sweeney's Datafly or mu-Argus with what they left unprotected.
-- Parameters: tbl VARCHAR; k BIGINT; qi VARCHAR[] (default: the configured QIs); method
--   VARCHAR ('optimal' (default), 'datafly', 'mu_argus'); metric, max_suppression,
--   drop_suppressed, min_level, max_level and the privacy models (sensitive, l,
--   l_diversity, c, t, t_distance, population, delta_min, delta_max) as for kanon(...)
--   with that method.
-- Output: levels MAP(VARCHAR, UINTEGER) (QI -> level), suppressed BIGINT (rows whose QIs
--   become '*'), cost DOUBLE (the metric's value), classes BIGINT (the suppressed rows
--   count as one class), nodes BIGINT (lattice size), checked BIGINT (nodes grouped),
--   seconds DOUBLE (search time), metric VARCHAR; cost, nodes, checked and metric are NULL
--   for 'datafly' and 'mu_argus'. Then method VARCHAR and, NULL for 'optimal':
--   unprotected_rows / unprotected_classes BIGINT (rows and classes the algorithm alone
--   left below k; the release suppresses them; mu_argus checks combinations of at most
--   3 QIs), suppressed_cells BIGINT (cells mu_argus suppressed, in rows; 0 for datafly),
--   topped_up_rows BIGINT (rows suppressed only to give the kept '*' class k rows).
-- Depends on: kanon_plan_search (planner UDF), kanon_optimal / kanon_historic (kernels).
-- Example: SELECT * FROM kanon_search('patients', k := 5, max_suppression := 0.05);
--          SELECT unprotected_rows FROM kanon_search('patients', k := 5,
--                                                    method := 'mu_argus');
CREATE OR REPLACE TEMP MACRO kanon_search(tbl, k, qi := CAST([] AS VARCHAR []),
                                          method := 'optimal',
                                          metric := CAST(NULL AS VARCHAR),
                                          max_suppression := 0.0, drop_suppressed := FALSE,
                                          min_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                          max_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                          sensitive := CAST(NULL AS VARCHAR),
                                          l := CAST(NULL AS DOUBLE),
                                          l_diversity := CAST(NULL AS VARCHAR),
                                          c := CAST(NULL AS DOUBLE),
                                          t := CAST(NULL AS DOUBLE),
                                          t_distance := CAST(NULL AS VARCHAR),
                                          population := CAST(NULL AS VARCHAR),
                                          delta_min := CAST(NULL AS DOUBLE),
                                          delta_max := CAST(NULL AS DOUBLE))
AS TABLE
SELECT *
FROM query(kanon_plan_search(CAST(to_json({
                'tbl': tbl, 'k': k, 'qi': qi, 'method': method, 'metric': metric,
                'max_suppression': max_suppression, 'drop_suppressed': drop_suppressed,
                'min_level': min_level, 'max_level': max_level, 'sensitive': sensitive, 'l': l,
                'l_diversity': l_diversity, 'c': c, 't': t, 't_distance': t_distance,
                'population': population, 'delta_min': delta_min, 'delta_max': delta_max
            }) AS VARCHAR)));
