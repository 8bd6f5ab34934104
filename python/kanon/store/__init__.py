"""Stored releases: materialize and refresh, the global view, owned names, to_sql."""
