from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

# The support module sits beside this file; pytest runs with --import-mode=importlib.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _needs_the_tools(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("e2e") is None:
        return
    for tool in ("bwrap", "socat"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian packages bubblewrap, socat)")
