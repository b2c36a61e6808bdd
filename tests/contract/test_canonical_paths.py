"""Every installed adapter's write, respelled the way a front end would rewrite, is refused by
the pipeline (``path_not_canonical``) before the adapter reads it: one rule for every forge."""

from __future__ import annotations

import pytest

from gitvow.paths import PATH_NOT_CANONICAL
from gitvow.pipeline import Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Fixture, Request
from gitvow.vocabulary import writes


def _writes() -> list[tuple[str, Fixture]]:
    found = []
    for name, adapter in sorted(installed().adapters.items()):
        fixture = next((f for f in adapter.fixtures() if not f.near_miss and any(map(writes, f.operations))), None)
        if fixture is not None:
            found.append((name, fixture))
    return found


def _respell(path: str, how: str) -> str:
    head, _, tail = path.rpartition("/")
    if how == "double-slash":
        return f"{head}//{tail}"
    if how == "dot":
        return f"{head}/./{tail}"
    if how == "dot-dot":
        return f"{head}/x/../{tail}"
    return f"{head}/%2e%2E/{tail}"


@pytest.mark.parametrize("how", ["double-slash", "dot", "dot-dot", "encoded-dot-dot"])
@pytest.mark.parametrize(("name", "fixture"), _writes(), ids=[name for name, _ in _writes()])
def test_a_respelled_write_is_refused_for_every_adapter(name: str, fixture: Fixture, how: str) -> None:
    request = fixture.request()
    host = request.host if request.port == 443 else f"{request.host}:{request.port}"
    engine = Engine(parse_policy({"hosts": {host: name}}), installed())
    assert engine.classify(request)[1] is not None
    respelled = Request(request.method, request.host, _respell(request.path, how), request.query, request.headers,
                        request.body, request.port, request.scheme)
    adapter, classification = engine.classify(respelled)
    assert adapter is not None and adapter.name == name
    assert classification is not None and classification.unknown_code == PATH_NOT_CANONICAL, (name, respelled.path)
