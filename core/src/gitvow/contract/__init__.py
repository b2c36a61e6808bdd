"""The contract kit: the test suite every adapter — ours or a third party's — must pass.

Subclass :class:`AdapterContract` in your plugin's tests and give it an ``adapter``
fixture::

    import pytest
    from gitvow.contract import AdapterContract
    from gitvow_bitbucket.plugin import BitbucketAdapter

    class TestBitbucket(AdapterContract):
        @pytest.fixture
        def adapter(self):
            return BitbucketAdapter()

The checks are seed 003's testing contract: completeness, classification round-trip with
near misses, relay coverage at every mode, fail closed, and the denial line's shape.
"""

from __future__ import annotations

from gitvow.contract.suite import AdapterContract, engine_for

__all__ = ["AdapterContract", "engine_for"]
