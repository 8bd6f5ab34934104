-- kanon_hkp: a transaction table made (h,k,p)-coherent (Xu et al., KDD 2008) by removing
--   public items from every transaction; kanon_hkp_report: what was removed and why.
-- Parameters: tbl VARCHAR; h DOUBLE in (0, 1]; k BIGINT >= 1; p BIGINT >= 1; exactly one of
--   private (list of items; [] = all public), roles VARCHAR (table with columns item and
--   role 'public' | 'private'; items it lacks are public), public_fraction DOUBLE (seeded
--   random share of public items, seed UBIGINT); method VARCHAR ('mmil' | '1il' | 'mm' |
--   'rmall'); min_support DOUBLE (drop items in fewer than this share of transactions);
--   items VARCHAR (the LIST column; default: the only one) or tid and item VARCHAR (long);
--   max_itemsets BIGINT >= 1 (most candidate sets of 2..p public items the mole search may
--   decide; past it an InvalidInputError names the largest p that fits).
-- Output: kanon_hkp: the table's columns and rows, suppressed items removed from the lists
--   (long shape: their rows; an emptied transaction keeps one row, item NULL).
--   kanon_hkp_report: one row: suppressed, size1_moles, moles, dropped, private (items),
--   information_loss, suppressed_occurrences, occurrences, dropped_occurrences,
--   transactions, items, public_items, candidates, method, seconds.
-- Depends on: kanon_plan_hkp / kanon_plan_hkp_report (planner UDFs), kanon_hkp_run (kernel).
-- Example: SELECT * FROM kanon_hkp('baskets', h := 0.4, k := 10, p := 3, private := [3, 4]);
CREATE OR REPLACE TEMP MACRO kanon_hkp(tbl, h, k, p,
                                       private := CAST(NULL AS VARCHAR []),
                                       roles := CAST(NULL AS VARCHAR),
                                       public_fraction := CAST(NULL AS DOUBLE),
                                       seed := 0, method := 'mmil', min_support := 0.0,
                                       items := CAST(NULL AS VARCHAR),
                                       tid := CAST(NULL AS VARCHAR),
                                       item := CAST(NULL AS VARCHAR),
                                       max_itemsets := 10000000) AS TABLE
SELECT *
FROM query(kanon_plan_hkp(CAST(to_json({
                'tbl': tbl, 'h': h, 'k': k, 'p': p, 'private': private, 'roles': roles,
                'public_fraction': public_fraction, 'seed': seed, 'method': method,
                'min_support': min_support, 'items': items, 'tid': tid, 'item': item,
                'max_itemsets': max_itemsets
            }) AS VARCHAR)));

CREATE OR REPLACE TEMP MACRO kanon_hkp_report(tbl, h, k, p,
                                              private := CAST(NULL AS VARCHAR []),
                                              roles := CAST(NULL AS VARCHAR),
                                              public_fraction := CAST(NULL AS DOUBLE),
                                              seed := 0, method := 'mmil',
                                              min_support := 0.0,
                                              items := CAST(NULL AS VARCHAR),
                                              tid := CAST(NULL AS VARCHAR),
                                              item := CAST(NULL AS VARCHAR),
                                              max_itemsets := 10000000) AS TABLE
SELECT *
FROM query(kanon_plan_hkp_report(CAST(to_json({
                'tbl': tbl, 'h': h, 'k': k, 'p': p, 'private': private, 'roles': roles,
                'public_fraction': public_fraction, 'seed': seed, 'method': method,
                'min_support': min_support, 'items': items, 'tid': tid, 'item': item,
                'max_itemsets': max_itemsets
            }) AS VARCHAR)));
