"""``python -m evolog`` is the ``evolog`` command."""

import sys

from ._entry import main

sys.exit(main())
