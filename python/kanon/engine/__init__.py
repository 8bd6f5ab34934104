"""kanon inside DuckDB: the macros, the kernel UDFs, inputs and progress."""
