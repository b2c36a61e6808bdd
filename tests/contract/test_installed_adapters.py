"""The contract kit over every adapter installed in this environment (tox runs it per plugin set)."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract
from gitvow.plugins import installed


class TestInstalledAdapter(AdapterContract):
    @pytest.fixture
    def adapter(self, installed_adapter: Adapter) -> Adapter:
        return installed_adapter


def test_every_installed_plugin_loads() -> None:
    """A plugin that fails to load is reported by name; in this repository none may."""
    failures = [str(f) for f in installed().failures]
    assert failures == []
