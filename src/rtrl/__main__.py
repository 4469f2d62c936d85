"""``python -m rtrl`` is the ``rtrl`` command."""

import sys

from rtrl.cli import main

sys.exit(main())
