"""``python -m pypto.runtime``: the runtime's command line (see :mod:`pypto.runtime.cli`)."""

import sys

from pypto.runtime.cli import main

sys.exit(main())
