"""The verbs as Python functions: release, check, hkp, configure, report."""
