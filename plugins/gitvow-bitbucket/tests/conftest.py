from __future__ import annotations

import pytest

from gitvow_bitbucket import BitbucketAdapter


@pytest.fixture
def bitbucket() -> BitbucketAdapter:
    return BitbucketAdapter()
