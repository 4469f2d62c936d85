"""``python -m rtrl.cli`` (what the Makefile runs) is the ``rtrl`` command."""

import sys

from rtrl.cli import main

sys.exit(main())
