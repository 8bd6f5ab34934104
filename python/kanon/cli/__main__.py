"""``python -m kanon.cli``."""

from kanon.cli.commands import main

raise SystemExit(main())
