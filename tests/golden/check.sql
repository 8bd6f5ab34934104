WITH __kanon_hist AS (SELECT "age" AS q0, "zz" AS q1, "dx" AS sv, count(*)::UBIGINT AS n FROM "src" GROUP BY ALL),
__kanon_sdict AS (SELECT sv, (row_number() OVER (ORDER BY sv ASC NULLS LAST) - 1)::UINTEGER AS c FROM (SELECT DISTINCT sv FROM __kanon_hist)),
__kanon_cls AS (SELECT __kanon_hist.q0, __kanon_hist.q1, sum(__kanon_hist.n)::UBIGINT AS n, list({'c': __kanon_sdict.c, 'n': __kanon_hist.n}) AS entries FROM __kanon_hist JOIN __kanon_sdict ON __kanon_hist.sv IS NOT DISTINCT FROM __kanon_sdict.sv GROUP BY __kanon_hist.q0, __kanon_hist.q1),
__kanon_classes AS (SELECT n, NULL::UBIGINT AS pop, entries FROM __kanon_cls)
SELECT unnest(kanon_class_stats(list({'n': n, 'pop': pop, 'entries': entries}), '{"sensitive": true, "population": false, "ordered": false, "recursive_l": null, "recursive_c": null, "risk_threshold": 0.2}')), []::VARCHAR[] AS identifying_columns FROM __kanon_classes
