"""``python -m headwater``: the ``headwater`` command."""

import sys

from headwater.runtime.commands.cli import main

sys.exit(main())
