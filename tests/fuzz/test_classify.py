"""``classify`` never raises, and every answer is in the vocabulary, for every installed adapter.

The adapters' own fixtures are the seeds (real wire shapes of every operation they know), bent
by :mod:`fuzz_strategies`: paths re-encoded and dotted, methods and bodies swapped, encodings
and overrides added. An adapter that raised would be a deny in the pipeline, but a raise is
still a bug: some other input of the same shape may be read wrongly without raising.
"""

from __future__ import annotations

import pytest
from fuzz_strategies import requests_from
from hypothesis import given
from hypothesis import strategies as st

from gitvow.adapter import Adapter
from gitvow.plugins import installed
from gitvow.request import Classification, Request
from gitvow.vocabulary import OPERATIONS

ADAPTERS = installed().adapters


def seeds(adapter: Adapter) -> list[Request]:
    fixtures = [*adapter.fixtures(), *adapter.fail_closed_fixtures()]
    return [fixture.request() for fixture in fixtures]


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_classify_never_raises(name: str) -> None:
    adapter = ADAPTERS[name]
    requests = seeds(adapter)
    if not requests:
        pytest.skip(f"adapter {name!r} ships no fixtures")

    @given(requests_from(requests))
    def check(request: Request) -> None:
        result = adapter.classify(request)
        assert isinstance(result, Classification)
        assert result.operations, request
        assert all(op in OPERATIONS for op in result.operations), (request, result)
        bodies = adapter.comment_bodies(request, result)
        assert bodies is None or all(isinstance(body, str) for body in bodies)

    check()


@given(st.sampled_from(sorted(ADAPTERS)), st.binary(max_size=200), st.text(max_size=80))
def test_classify_never_raises_on_noise(name: str, body: bytes, path: str) -> None:
    adapter = ADAPTERS[name]
    host = adapter.default_hosts[0].split(":")[0] if adapter.default_hosts else "forge.test"
    for method in ("GET", "POST", "PUT"):
        request = Request(method=method, host=host, path="/" + path, body=body,
                          headers={"content-type": "application/json"})
        result = adapter.classify(request)
        assert all(op in OPERATIONS for op in result.operations)
