"""``python -m gitvow``: the same as the ``gitvow`` command (hooks may be installed this way)."""

from __future__ import annotations

import sys

from gitvow.cli.main import main

sys.exit(main())
