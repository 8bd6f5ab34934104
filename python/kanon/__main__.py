"""``python -m kanon``: the command line, as the ``kanon`` script runs it."""

import sys

from kanon.cli import main

sys.exit(main())
