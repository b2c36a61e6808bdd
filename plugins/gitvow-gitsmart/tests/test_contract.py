"""The contract kit, run on this plugin alone (a third party does the same for theirs)."""

from __future__ import annotations

import pytest

from gitvow.contract import AdapterContract
from gitvow_gitsmart.adapter import GitSmartAdapter


class TestGitSmartContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> GitSmartAdapter:
        return GitSmartAdapter()
