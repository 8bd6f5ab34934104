"""The command line: ``kanon anonymize|check|configure|demo|...`` (:mod:`.commands`)."""

from kanon.cli.commands import main

__all__ = ["main"]
