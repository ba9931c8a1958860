"""``python -m symroof``: the same as the ``symroof`` command."""

from __future__ import annotations

import sys

from symroof.cli import main

sys.exit(main())
