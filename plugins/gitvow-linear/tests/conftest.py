from __future__ import annotations

import pytest

from gitvow_linear import LinearAdapter


@pytest.fixture
def linear() -> LinearAdapter:
    return LinearAdapter()
