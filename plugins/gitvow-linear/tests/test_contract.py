"""The contract kit on the ``linear`` adapter, with its default limits and with tighter ones."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter, configured
from gitvow.contract import AdapterContract
from gitvow_linear import LinearAdapter


class TestLinearContract(AdapterContract):
    @pytest.fixture
    def adapter(self) -> Adapter:
        return LinearAdapter()


class TestLinearContractTightLimits(AdapterContract):
    """The fail-closed fixtures follow configured limits, and every fixture still fits them."""

    @pytest.fixture
    def adapter(self) -> Adapter:
        adapter = LinearAdapter()
        adapter = configured(adapter, {"body_limit": 4096, "field_limit": 4})
        return adapter
