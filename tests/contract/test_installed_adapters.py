"""The contract kit over every adapter installed in this environment (tox runs it per plugin set)."""

from __future__ import annotations

import pytest

from gitvow.adapter import Adapter
from gitvow.contract import AdapterContract
from gitvow.plugins import installed

#: The self-hosted instances first-party fixtures use, as a policy's [hosts] maps them.
MAPPED_HOSTS = {"github": ("ghe.example.test",), "gitsmart": ("git.example.test",),
                "bitbucket": ("bitbucket.example.test",)}


class TestInstalledAdapter(AdapterContract):
    @pytest.fixture
    def adapter(self, installed_adapter: Adapter) -> Adapter:
        return installed_adapter

    @pytest.fixture
    def mapped_hosts(self, adapter: Adapter) -> tuple[str, ...]:
        return MAPPED_HOSTS.get(adapter.name, ())


def test_every_installed_plugin_loads() -> None:
    """A plugin that fails to load is reported by name; in this repository none may."""
    failures = [str(f) for f in installed().failures]
    assert failures == []
