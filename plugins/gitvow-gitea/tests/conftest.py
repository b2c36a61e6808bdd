from __future__ import annotations

import pytest

from gitvow_gitea import GiteaAdapter


@pytest.fixture
def gitea() -> GiteaAdapter:
    return GiteaAdapter()
