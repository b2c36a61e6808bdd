"""The contract kit, run on this plugin alone (tests/contract runs it over every installed adapter)."""

from __future__ import annotations

import pytest

from gitvow.contract import AdapterContract
from gitvow_gitlab.adapter import GitLabAdapter


class TestGitLabContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> GitLabAdapter:
        return GitLabAdapter()
