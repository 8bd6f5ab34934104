-- kanon_columns: per table and column, the role, hierarchy, weight and priority.
-- Columns: table_name VARCHAR, column_name VARCHAR, role VARCHAR ('identifier' | 'qi' |
--   'sensitive' | 'insensitive'), hierarchy VARCHAR (name of a hierarchy lookup table,
--   NULL = type-based default), weight DOUBLE (finite, > 0, default 1), priority INTEGER
--   (a QI's priority: >= 1, lower = more important, ties allowed; default 0 = none).
-- A persistent table (not TEMP) so that the planner's own cursor can read it.
-- Example: INSERT INTO kanon_columns (table_name, column_name, role) VALUES ('t', 'age', 'qi');
CREATE TABLE IF NOT EXISTS kanon_columns (
    table_name VARCHAR NOT NULL,
    column_name VARCHAR NOT NULL,
    role VARCHAR NOT NULL CHECK (role IN ('identifier', 'qi', 'sensitive', 'insensitive')),
    hierarchy VARCHAR,
    weight DOUBLE NOT NULL DEFAULT 1.0 CHECK (weight > 0 AND isfinite(weight)),
    priority INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (table_name, column_name)
);
