WITH "__kanon_src" AS MATERIALIZED (SELECT *, row_number() OVER () AS "__kanon_row" FROM "t_items"),
"__kanon_flat" AS MATERIALIZED (SELECT "__kanon_row", unnest("basket") AS item, generate_subscripts("basket", 1) AS pos FROM "__kanon_src"),
"__kanon_bad" AS (SELECT count(*) FILTER (WHERE item IS NULL) AS nulls, 'InvalidInputError: column ''basket'' of table ''t_items'' holds NULL items (a list may be NULL, its elements may not); NULL elements: ' AS msg FROM "__kanon_flat"),
"__kanon_dict" AS (SELECT item, (row_number() OVER (ORDER BY item) - 1)::UINTEGER AS code FROM (SELECT DISTINCT item FROM "__kanon_flat" WHERE item IS NOT NULL)),
"__kanon_tx" AS (SELECT list(d.code) AS codes FROM "__kanon_flat" f JOIN "__kanon_dict" d ON f.item = d.item GROUP BY f."__kanon_row"),
"__kanon_run" AS (SELECT CASE WHEN b.nulls > 0 THEN error(b.msg || b.nulls) ELSE kanon_hkp_run((SELECT list(codes) FROM "__kanon_tx"), CAST((SELECT count(*) FROM "__kanon_src") AS UBIGINT), CAST((SELECT count(*) FROM "__kanon_dict") AS UBIGINT), (SELECT coalesce(list(code ORDER BY code), CAST([] AS UINTEGER[])) FROM "__kanon_dict" WHERE CAST(item AS VARCHAR) IN (SELECT unnest(['5', '6']::VARCHAR[]))), '{"h": 0.5, "k": 3, "p": 2, "method": "mmil", "min_support": 0.0, "public_fraction": null, "seed": 0, "max_itemsets": 10000000}') END AS r FROM "__kanon_bad" b),
"__kanon_values" AS (SELECT list(item ORDER BY code) AS v FROM "__kanon_dict"),
"__kanon_gone" AS (SELECT item FROM "__kanon_dict" WHERE code IN (SELECT unnest(x.r.suppressed || x.r.dropped) FROM "__kanon_run" x)),
"__kanon_kept" AS (SELECT f."__kanon_row", list(f.item ORDER BY f.pos) AS kept FROM "__kanon_flat" f ANTI JOIN "__kanon_gone" g ON f.item = g.item GROUP BY f."__kanon_row")
SELECT s."rid", CASE WHEN s."basket" IS NULL THEN NULL ELSE coalesce(k.kept, list_filter(s."basket", lambda x: false)) END AS "basket" FROM "__kanon_src" s LEFT JOIN "__kanon_kept" k ON s."__kanon_row" = k."__kanon_row" ORDER BY s."__kanon_row"
