"""The SQL compiler: the catalog in, SQL out. It reads the catalog and never writes."""
