"""The contract kit: the test suite every adapter — ours or a third party's — must pass.

Subclass :class:`AdapterContract` in your plugin's tests and give it an ``adapter``
fixture::

    import pytest
    from gitvow.contract import AdapterContract
    from gitvow_bitbucket.adapter import BitbucketAdapter

    class TestBitbucket(AdapterContract):
        @pytest.fixture
        def adapter(self):
            return BitbucketAdapter()

The checks are the adapter testing contract (docs/writing-a-plugin.md, "The contract kit"):
completeness, classification round-trip with near misses, relay coverage at every mode, fail
closed, and the denial line's shape; plus that an installed plugin's entry point loads and
registers the adapter under test, and that no request is classified as an operation the adapter
declared ``unsupported()`` (the forge cannot express it) or ``not_implemented()`` (not
classified yet, so denied as ``unknown``).
docs/writing-a-plugin.md describes each check.
"""

from __future__ import annotations

from gitvow.contract.attacks import Inventory
from gitvow.contract.suite import AdapterContract, engine_for

__all__ = ["AdapterContract", "Inventory", "engine_for"]
