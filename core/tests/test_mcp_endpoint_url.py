"""An ``[mcp.NAME]`` URL is split without urllib.parse when it is plain, with the same answer.

The agent hook's forge path builds an engine, which parses the built-in MCP endpoint's URL;
importing urllib.parse (and ipaddress) for it cost more than the rest of that step.
"""

from __future__ import annotations

import itertools

import pytest

from gitvow.adapters.mcp import McpEndpoint, _split, _split_plain
from gitvow.errors import PolicyError

URLS = [
    "https://api.githubcopilot.com/mcp/", "http://localhost:8080", "https://a.b-c.d:0443/x/y_z.~-/",
    "https://host:65535/p", "https://host:65536/p", "https://host:/p", "HTTPS://Host/p", "https://host/p?q=1",
    "https://host/p#f", "https://user@host/p", "https://[::1]:80/p", "ftp://host/p", "https:///p", "https://h/%41",
    " https://host/p", "https://host/p\n", "https://ho\tst/p", "https://-host/p", "https://host./p", "https://host/p q",
]


def _parse(url: str) -> object:
    try:
        return McpEndpoint.parse("x", url, "github")
    except PolicyError as exc:
        return str(exc)


@pytest.mark.parametrize("url", URLS)
def test_a_plain_url_splits_as_urlsplit_splits_it(url: str) -> None:
    plain = _split_plain(url)
    assert plain is None or plain == _split(url)
    assert _parse(url) == _parse_by_urlsplit(url)


def test_every_short_url_over_tricky_characters_agrees() -> None:
    for rest in ("".join(t) for n in range(4) for t in itertools.product("a:/1.-?@ ", repeat=n)):
        url = f"https://h{rest}"
        plain = _split_plain(url)
        assert plain is None or plain == _split(url), url


def _parse_by_urlsplit(url: str) -> object:
    split = _split(url)
    if split is None:
        return _parse(url)  # both refuse: the same error
    scheme, host, port, path = split
    return McpEndpoint("x", scheme, host, port or (443 if scheme == "https" else 80), "/" + path.strip("/"), "github")
