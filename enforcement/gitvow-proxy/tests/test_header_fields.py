"""The pipeline reads a request's headers exactly as mitmproxy's ``Headers`` would, as sent."""

from __future__ import annotations

import pytest
from mitmproxy import http
from mitmproxy.test import tflow

from gitvow_proxy.addons.enforcement import as_request
from gitvow_proxy.header_fields import HeaderFields

FIELDS: list[list[tuple[bytes, bytes]]] = [
    [],
    [(b"Content-Encoding", b"gzip")],
    [(b"content-encoding", b"gzip"), (b"CONTENT-ENCODING", b"br")],  # folded, as mitmproxy folds them
    [(b"X-Http-Method-Override", b"DELETE"), (b"Accept", b"*/*")],
    [(b"X-Caf\xc3\xa9", b"caf\xc3\xa9 \xff"), (b"Host", b"h")],  # not UTF-8: surrogate escapes, both ways
    [(b"accept", b"caf\xc3"), (b"Accept", b"\xa9")],  # a character split over two folded fields stays split
]


@pytest.mark.parametrize("fields", FIELDS)
def test_reads_like_mitmproxy(fields: list[tuple[bytes, bytes]]) -> None:
    theirs, ours = http.Headers(fields), HeaderFields(tuple(fields))
    names = ["content-encoding", "Content-Encoding", "x-http-method-override", "X-Café", "x-caf\udcc3\udca9", "accept",
             "host", "absent", "ACCEPT"]
    for name in names:
        assert ours.get(name) == theirs.get(name)
        assert ours.get(name, "") == theirs.get(name, "")
        assert (name in ours) == (name in theirs)
        if name in theirs:
            assert ours[name] == theirs[name]
        else:
            with pytest.raises(KeyError):
                ours[name]
    assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert dict(ours) == dict(theirs)


def test_the_request_keeps_the_headers_as_sent() -> None:
    flow = tflow.tflow()
    flow.request.headers["Authorization"] = "token agent-placeholder"
    request = as_request(flow)
    flow.request.headers["Authorization"] = "Bearer injected"  # what the enforcement point sets afterwards
    flow.request.headers["Content-Encoding"] = "gzip"
    assert request.header("authorization") == "token agent-placeholder" and request.header("content-encoding") == ""
    assert "injected" not in repr(request) and "agent-placeholder" not in repr(request)
