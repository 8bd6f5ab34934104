-- kanon_policies: named policies, the rules a release must meet (kanon_verify).
-- Columns: policy VARCHAR (the policy's name), rule VARCHAR (a rule: 'k', 'l', 't',
--   'identifying_columns', 'suppressed', 'loss', 'rows'; or 'accept': a column accepted
--   as released unchanged), threshold DOUBLE (the rule's bound; NULL for 'accept'),
--   column_name VARCHAR and reason VARCHAR (for 'accept': the column and why).
-- kanon checks the rows when a policy is used: an unknown rule or a bad threshold is an
-- error naming it. Written by kanon.policy(con, name, ...), editable with SQL.
-- A persistent table (not TEMP) so that the planner's own cursor can read it.
-- Example: INSERT INTO kanon_policies (policy, rule, threshold) VALUES ('strict', 'k', 10);
CREATE TABLE IF NOT EXISTS kanon_policies (
    policy VARCHAR NOT NULL,
    rule VARCHAR NOT NULL,
    threshold DOUBLE,
    column_name VARCHAR,
    reason VARCHAR
);
