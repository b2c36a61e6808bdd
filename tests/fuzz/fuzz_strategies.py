"""Request strategies shared by the fuzz tests: real wire shapes (the adapters' own fixtures),
then bent — paths re-encoded, dot segments, doubled slashes, case, bodies swapped."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

from graphql import GraphQLSchema, build_schema
from hypothesis import strategies as st

from gitvow.request import Request

SCHEMAS = Path(__file__).resolve().parent / "schemas"
METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "post", "Put", "PROPFIND", "")
CONTENT_TYPES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/x-git-receive-pack-request", "text/plain", "application/graphql", "")
ENCODINGS = ("", "identity", "gzip", "deflate", "br", "gzip, gzip", "x-unknown")
_UNRESERVED = string.ascii_letters + string.digits + "-._~"


def percent(char: str, lower: bool) -> str:
    text = "".join(f"%{byte:02X}" for byte in char.encode())
    return text.lower() if lower else text


@st.composite
def path_variant(draw: st.DrawFn, path: str) -> str:
    """An equivalent spelling of ``path`` (as a lax server would read it) or a garbled one."""
    segments = path.split("/")
    kind = draw(st.sampled_from(("encode", "encode_slash", "dot", "dotdot", "double", "case", "trailing", "mixed")))
    if kind in ("encode", "mixed") and len(path) > 1:
        index = draw(st.integers(1, len(path) - 1))
        if path[index] in _UNRESERVED:
            path = path[:index] + percent(path[index], draw(st.booleans())) + path[index + 1 :]
    if kind in ("encode_slash", "mixed") and path.count("/") > 2:
        slashes = [i for i, c in enumerate(path) if c == "/"][2:]
        index = draw(st.sampled_from(slashes))
        path = path[:index] + draw(st.sampled_from(("%2F", "%2f", "%252F"))) + path[index + 1 :]
    if kind in ("dot", "dotdot", "double", "mixed"):
        segments = path.split("/")
        index = draw(st.integers(1, max(1, len(segments) - 1)))
        extra = {"dot": ["."], "dotdot": ["zz", ".."], "double": [""]}.get(kind) or draw(
            st.sampled_from((["."], ["zz", ".."], [""], ["%2E"], ["%2e%2E"], ["zz", "%2E%2E"])))
        segments[index:index] = extra
        path = "/".join(segments)
    if kind == "case":
        chars = list(path)
        for index in draw(st.lists(st.integers(0, len(chars) - 1), min_size=1, max_size=4)):
            chars[index] = chars[index].swapcase()
        path = "".join(chars)
    if kind == "trailing":
        path += draw(st.sampled_from(("/", "//", "/.", "%2F")))
    return path


def bodies() -> st.SearchStrategy[bytes]:
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=40),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=12,
    )
    return st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda value: json.dumps(value).encode()),
        st.text(max_size=200).map(str.encode),
        st.sampled_from((b"", b"{}", b"[]", b'{"query": "mutation { x }"}', b'{"query": 1}', b"\x1f\x8b\x08\x00",
                         b"0000", b"0032want " + b"a" * 40 + b"\n")),
    )


@st.composite
def bent_request(draw: st.DrawFn, base: Request) -> Request:
    """``base`` with any of its parts replaced or bent."""
    request = base
    if draw(st.booleans()):
        request = replace(request, path=draw(path_variant(request.path)))
    if draw(st.booleans()):
        request = replace(request, method=draw(st.sampled_from(METHODS)))
    if draw(st.booleans()):
        request = replace(request, body=draw(bodies()))
    if draw(st.booleans()):
        headers = dict(request.headers)
        headers["content-type"] = draw(st.sampled_from(CONTENT_TYPES))
        encoding = draw(st.sampled_from(ENCODINGS))
        if encoding:
            headers["content-encoding"] = encoding
        if draw(st.booleans()):
            headers["x-http-method-override"] = draw(st.sampled_from(("GET", "PUT", "DELETE")))
        request = replace(request, headers=headers)
    if draw(st.booleans()):
        request = replace(request, query=draw(st.sampled_from(("", "_method=GET", "query=mutation%7Bx%7D", "a=%ZZ",
                                                               "service=git-receive-pack", "per_page=1&per_page=2"))))
    if draw(st.booleans()):
        request = replace(request, path=draw(st.text(alphabet=string.printable + "é\u2028\x00", max_size=60)))
    return request


def requests_from(fixtures: list[Request]) -> st.SearchStrategy[Request]:
    return st.sampled_from(fixtures).flatmap(bent_request)


def graphql_body(document: object, variables: dict[str, object] | None = None) -> bytes:
    payload: dict[str, object] = {"query": document}
    if variables is not None:
        payload["variables"] = variables
    return json.dumps(payload).encode()


@cache
def schema(name: str) -> GraphQLSchema:
    """The derived schema ``schemas/NAME.graphql``, built once (hypothesis-graphql takes it built)."""
    return build_schema((SCHEMAS / f"{name}.graphql").read_text(encoding="utf-8"))


Maker = Callable[[bytes], Request]
