"""How kanon writes SQL: quoting, DuckDB types and the CTE helpers every planner uses."""
