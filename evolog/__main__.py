"""``python -m evolog`` is the ``evolog`` command."""

import sys

from ._cli import main

sys.exit(main())
