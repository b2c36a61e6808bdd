"""No encoding, dot-segment, case or slash variant of a refused request is allowed.

The refused requests are the adapters' own write fixtures that an agent at ``issues_only``
may not send (merges, pull requests, pushes, ref writes …). Each is re-spelled the ways a
lax front end would read as the same request (``%6Derge``, ``%2F``, ``/./``, ``/x/../``,
``//``, swapped case, a trailing slash) and sent through the whole pipeline: the answer must
never be a forward.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fuzz_strategies import path_variant
from hypothesis import given
from hypothesis import strategies as st

from gitvow.gates import Caller
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Request

PLUGINS = installed()


def fixture_hosts() -> dict[str, str]:
    """``[hosts]`` rows for the hosts the adapters' fixtures use beyond their defaults (GHES,
    a bare git server), so those fixtures are judged, not tunnelled. A host two adapters'
    fixtures share is left out."""
    served = {host for adapter in PLUGINS.adapters.values() for host in adapter.default_hosts}
    rows: dict[str, str] = {}
    shared: set[str] = set()
    for name, adapter in sorted(PLUGINS.adapters.items()):
        for fixture in (*adapter.fixtures(), *adapter.fail_closed_fixtures()):
            request = fixture.request()
            key = request.host if request.port == 443 else f"{request.host}:{request.port}"
            if key in served:
                continue
            if rows.get(key, name) != name:
                shared.add(key)
            rows[key] = name
    return {key: name for key, name in rows.items() if key not in shared}


ENGINE = Engine(parse_policy({"hosts": fixture_hosts(), "agents": {"bot": {"mode": "issues_only"}}},
                             relays=PLUGINS.relays, sections=PLUGINS.sections, absent="skip"), PLUGINS)
GRANT = ENGINE.policy.grant_for("bot")
assert GRANT is not None
AGENT = Caller("bot", GRANT)
REFUSED = (Action.DENY, Action.THROTTLE)


def refused(name: str) -> list[Request]:
    adapter = PLUGINS.adapters[name]
    out = []
    for fixture in adapter.fixtures():
        request = fixture.request()
        if request.method in ("GET", "HEAD", "OPTIONS") or fixture.near_miss:
            continue
        if ENGINE.decide(request, AGENT).action in REFUSED:  # a tunnelled host (no [hosts] row) is not one
            out.append(request)
    return out


@pytest.mark.parametrize("name", sorted(PLUGINS.adapters))
def test_no_variant_of_a_refused_request_is_allowed(name: str) -> None:
    requests = refused(name)
    if not requests:
        pytest.skip(f"no fixture of {name!r} is refused at issues_only")

    @given(st.sampled_from(requests).flatmap(lambda r: st.tuples(st.just(r), path_variant(r.path))),
           st.sampled_from(("same", "lower", "mixed")))
    def check(pair: tuple[Request, str], method_case: str) -> None:
        request, path = pair
        method = {"same": request.method, "lower": request.method.lower(), "mixed": request.method.capitalize()}[method_case]
        variant = replace(request, path=path, method=method)
        decision = ENGINE.decide(variant, AGENT)
        assert decision.action in REFUSED, (request.method, request.path, "->", method, path,
                                                       decision.classification)

    check()
