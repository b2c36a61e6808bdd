"""The contract kit, run on this plugin alone (a third party does the same for theirs)."""

from __future__ import annotations

import pytest

from gitvow.contract import AdapterContract
from gitvow_github.adapter import GitHubAdapter


class TestGitHubContract(AdapterContract):
    @pytest.fixture
    def mapped_hosts(self) -> tuple[str, ...]:
        """The self-hosted instance the fixtures use, mapped in [hosts] by a policy."""
        return ("ghe.example.test",)

    @pytest.fixture
    def adapter(self) -> GitHubAdapter:
        return GitHubAdapter()
