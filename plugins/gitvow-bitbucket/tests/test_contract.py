"""The contract kit on the ``bitbucket`` adapter."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract
from gitvow_bitbucket import BitbucketAdapter


class TestBitbucketContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> Adapter:
        return BitbucketAdapter()
