WITH "__kanon_class_sizes" AS (SELECT count(*)::UBIGINT AS size FROM "src" GROUP BY "age", "zz"),
"__kanon_size_histogram" AS (SELECT size AS class_size, count(*)::UBIGINT AS classes, sum(size)::UBIGINT AS rows FROM "__kanon_class_sizes" GROUP BY size)
SELECT class_size, classes, rows, rows / sum(rows) OVER () AS share, sum(rows) OVER (ORDER BY class_size) / sum(rows) OVER () AS cumulative_share FROM "__kanon_size_histogram" ORDER BY class_size
