from __future__ import annotations

import pytest

from gitvow.contract import engine_for
from gitvow.pipeline import Engine
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.fixtures import FAIL_CLOSED, FIXTURES


@pytest.fixture
def adapter() -> GitHubAdapter:
    return GitHubAdapter()


@pytest.fixture
def engine(adapter: GitHubAdapter) -> Engine:
    """The default policy with the adapter on its hosts and the fixtures' GHES host."""
    return engine_for(adapter, [*FIXTURES, *FAIL_CLOSED])
