"""``python -m headwater``: the ``headwater`` command."""

import sys

from headwater.runtime.cli import main

sys.exit(main())
