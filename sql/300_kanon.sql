-- kanon: the anonymized rows of a table (every released QI combination occurs >= k times).
-- Parameters: tbl VARCHAR; k BIGINT (>= 1, at most the row count); qi VARCHAR[] (default:
--   the configured QIs); seed UBIGINT (forest: 0 = value order, another value another
--   release); method VARCHAR ('forest', 'forest_paper', 'mondrian', 'optimal', or Sweeney's historic
--   greedy full-domain baselines 'datafly' and 'mu_argus': rows they leave below k are
--   suppressed, so the release is k-anonymous; kanon_search reports what they left); for
--   'optimal' (and where said, the historic two): metric VARCHAR ('loss', 'height', 'nue', 'nue_nonmonotonic', 'dm',
--   'dm_star', 'aecs'), max_suppression DOUBLE (fraction of rows whose QIs may become '*';
--   also 'datafly': rows its loop may leave below k, 0 = Sweeney's rule of k rows),
--   drop_suppressed BOOLEAN (also 'datafly', 'mu_argus': drop the rows whose QIs are all
--   '*'), min_level / max_level MAP(VARCHAR, INTEGER) (per QI); privacy models besides k
--   (optimal only): sensitive VARCHAR (default: the configured sensitive column), l (with
--   l_diversity VARCHAR 'distinct' (default) | 'entropy' | 'recursive' and c DOUBLE for
--   recursive (c,l)), t DOUBLE with t_distance VARCHAR ('equal' | 'ordered' |
--   'hierarchical', the last with the sensitive column's configured hierarchy), population
--   VARCHAR with delta_min / delta_max DOUBLE (δ-presence); 'mondrian' takes l and t too.
--   labels VARCHAR ('hierarchy' | 'range', local recodings: hierarchy node or the group's
--   observed values [lo..hi] / {a, b}); block_size BIGINT (forest: rows per block);
--   effort VARCHAR (forest: 'full' | 'fast' improvement passes; default 'full' up to
--   1,048,576 rows, 'fast' above).
--   Roles (over the configuration, for this call): identifiers VARCHAR[] (released as '*'),
--   sensitive (also a VARCHAR[] of columns released unchanged; l and t need one),
--   insensitive VARCHAR[] (released unchanged). A column configured as an identifier is
--   never released. A column with no role whose values single out rows (more than 1 % of
--   the rows, and at least 2, hold a value no other row holds) stops the release unless
--   keep_undeclared BOOLEAN is true.
-- Output: the table's columns in order, one row per source row (suppressed rows dropped
--   if asked): QIs as VARCHAR labels ('*' at the top, and for cells 'mu_argus' suppressed),
--   identifiers '*', others unchanged.
-- Depends on: kanon_plan_anonymize (planner UDF), kanon_forest / kanon_optimal /
--   kanon_historic (kernels).
-- Example: SELECT * FROM kanon('patients', k := 5, method := 'optimal', l := 2);
CREATE OR REPLACE TEMP MACRO kanon(tbl, k, qi := CAST([] AS VARCHAR []), seed := 0,
                                   method := 'forest', metric := CAST(NULL AS VARCHAR),
                                   max_suppression := 0.0, drop_suppressed := FALSE,
                                   min_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                   max_level := CAST(NULL AS MAP(VARCHAR, INTEGER)),
                                   sensitive := CAST(NULL AS VARCHAR),
                                   l := CAST(NULL AS DOUBLE),
                                   l_diversity := CAST(NULL AS VARCHAR),
                                   c := CAST(NULL AS DOUBLE), t := CAST(NULL AS DOUBLE),
                                   t_distance := CAST(NULL AS VARCHAR),
                                   population := CAST(NULL AS VARCHAR),
                                   delta_min := CAST(NULL AS DOUBLE),
                                   delta_max := CAST(NULL AS DOUBLE),
                                   labels := CAST(NULL AS VARCHAR),
                                   block_size := CAST(NULL AS BIGINT),
                                   effort := CAST(NULL AS VARCHAR),
                                   identifiers := CAST(NULL AS VARCHAR []),
                                   insensitive := CAST(NULL AS VARCHAR []),
                                   keep_undeclared := FALSE) AS TABLE
SELECT *
FROM query(kanon_plan_anonymize(CAST(to_json({
                'tbl': tbl, 'k': k, 'qi': qi, 'seed': seed, 'method': method, 'metric': metric,
                'max_suppression': max_suppression, 'drop_suppressed': drop_suppressed,
                'min_level': min_level, 'max_level': max_level, 'sensitive': sensitive, 'l': l,
                'l_diversity': l_diversity, 'c': c, 't': t, 't_distance': t_distance,
                'population': population, 'delta_min': delta_min, 'delta_max': delta_max,
                'labels': labels, 'block_size': block_size, 'effort': effort,
                'identifiers': identifiers, 'insensitive': insensitive,
                'keep_undeclared': keep_undeclared
            }) AS VARCHAR)));
