"""The contract kit on the ``gitea`` adapter."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract
from gitvow_gitea import GiteaAdapter


class TestGiteaContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> Adapter:
        return GiteaAdapter()
