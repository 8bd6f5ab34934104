-- kanon_metrics: the utility of a release against its original table.
-- Parameters: original VARCHAR (the source table; its QIs and hierarchies are used);
--   released VARCHAR (the release, same QI columns holding labels); qi VARCHAR[]
--   (default: the configured QIs of original); k BIGINT (for C_AVG; default: the
--   release's smallest class).
-- Output: one row: rows, classes, min_class, k, cost (Σ over cells of
--   weight · level / height), gcp (mean NCP of the released cells, 0..1, unweighted),
--   dm (Σ released class size², the '*' class as one), c_avg ((rows / classes) / k),
--   gcp_by_column (struct: column → mean NCP), then the metrics of kanon_search
--   (column ← search metric): suppressed (S), loss ← 'loss', height ← 'height',
--   nue ← 'nue', nue_nonmonotonic ← 'nue_nonmonotonic', dm_star ← 'dm_star',
--   dm_nonmonotonic ← 'dm' (the search's 'dm' is ARX's non-monotonic DM; column dm
--   keeps its meaning), aecs ← 'aecs'.
-- Rules (N = original rows, w_j = kanon_columns.weight):
--   suppressed rows: released rows with '*' in every QI (none if every row is, the
--   top node) plus the rows missing from the release (N − released rows, dropped);
--   the rest are kept. A column's level: the lowest hierarchy level holding every
--   label (not NULL) of its kept rows (0 if only NULLs); none for local recoding.
--   loss = (Σ cells w_j·NCP + dropped rows·Σw) / (N·Σw): gcp weighted, over N rows,
--   a dropped row losing 1 per cell. height = Σ kept cells w_j·level_j/height_j (NULL
--   cells too) + S·Σw. nue = Σ_j w_j Σ_{labels g at level_j} Σ_{v under g}
--   c_v·log2(n_g/c_v) over the ORIGINAL rows (c_v rows of value v, n_g rows under g,
--   suppressed rows at their label); nue_nonmonotonic adds Σ_j w_j Σ_g s_g·log2(S/s_g),
--   s_g = n_g − kept rows labelled g. Both NULL when a column has no level (mixed
--   levels, e.g. the forest: no row correspondence). dm_star = Σ|E|² over the classes
--   of the original at the columns' levels, each suppressed class on its own (no level:
--   dm if no row was dropped, else NULL). dm_nonmonotonic = Σ kept |E|² + N·S.
--   aecs = rows / classes of the release (kept '*' rows one class, dropped rows none).
-- Depends on: kanon_plan_metrics (planner UDF).
-- Example: SELECT * FROM kanon_metrics('patients', 'patients_k5');
CREATE OR REPLACE TEMP MACRO kanon_metrics(original, released, qi := CAST([] AS VARCHAR []),
                                           k := CAST(NULL AS BIGINT)) AS TABLE
SELECT *
FROM query(kanon_plan_metrics(CAST(to_json({
                'original': original, 'released': released, 'qi': qi, 'k': k
            }) AS VARCHAR)));
