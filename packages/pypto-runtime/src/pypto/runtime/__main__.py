"""``python -m pypto.runtime``: the same program as the ``pypto-runtime`` command (see :mod:`pypto.runtime.cli`)."""

import sys

from pypto.runtime.cli import main

sys.exit(main())
