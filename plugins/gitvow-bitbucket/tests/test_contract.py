"""The contract kit on the ``bitbucket`` adapter."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract
from gitvow_bitbucket import BitbucketAdapter


class TestBitbucketContract(AdapterContract):
    @pytest.fixture
    def mapped_hosts(self) -> tuple[str, ...]:
        """The self-hosted instance the fixtures use, mapped in [hosts] by a policy."""
        return ("bitbucket.example.test",)

    @pytest.fixture
    def adapter(self) -> Adapter:
        return BitbucketAdapter()
