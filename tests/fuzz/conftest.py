"""Hypothesis profiles for the fuzz suite.

``gitvow`` (the default): bounded and derandomised, so ``pytest tests/fuzz`` is fast and gives
the same examples on every run and machine. ``fuzz``: many more examples, random, for the
tox environment of the same name that CI runs (``tox -e fuzz``; a couple of minutes on two
cores). Pick one with ``GITVOW_HYPOTHESIS_PROFILE`` or hypothesis' ``--hypothesis-profile``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# The strategies module sits beside this file; pytest runs with --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("gitvow", max_examples=40, derandomize=True, deadline=None, database=None,
                          suppress_health_check=_QUIET, print_blob=True)
settings.register_profile("fuzz", max_examples=400, deadline=None, suppress_health_check=_QUIET, print_blob=True)
settings.load_profile(os.environ.get("GITVOW_HYPOTHESIS_PROFILE", "gitvow"))
