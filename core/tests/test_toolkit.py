"""The helpers every adapter shares: path splitting, MCP tool names, option values, Basic auth."""

from __future__ import annotations

import base64

import pytest

from gitvow.argv import option_at, option_value
from gitvow.auth import basic_authorization
from gitvow.mcp import split_tool
from gitvow.paths import PathRefused, split_path


@pytest.mark.parametrize(("path", "segments"), [
    ("/api/v4/projects/g%2Fp/issues", ["api", "v4", "projects", "g/p", "issues"]),
    ("/api/v4/projects/g%2fp/", ["api", "v4", "projects", "g/p"]),
    ("/repos/o/r/contents/a%20b", ["repos", "o", "r", "contents", "a b"]),
    ("/", []),
    ("", []),
    ("a/b/", ["a", "b"]),
    ("/team/app.git/.well-known", ["team", "app.git", ".well-known"]),
    ("/a/...", ["a", "..."]),
])
def test_split_path_decodes_each_segment_after_splitting(path: str, segments: list[str]) -> None:
    assert split_path(path) == segments


@pytest.mark.parametrize("path", [
    "/api//v4", "//api/v4", "//", "///", ".", "..", "../a", "/a/..", "/api/v4//", "/api/./v4", "/api/../v4", "/api/%2e%2e/v4", "/api/%2E/v4", "/a/.%2e/b",
])
def test_split_path_refuses_what_a_front_end_would_rewrite(path: str) -> None:
    with pytest.raises(PathRefused):
        split_path(path)


@pytest.mark.parametrize(("tool", "parts"), [
    ("mcp__github__create_issue", ("github", "create_issue")),
    ("mcp__my-gitlab__a__b", ("my-gitlab", "a__b")),
    ("mcp____x", ("", "x")),
    ("mcp__server", (None, "mcp__server")),
    ("create_issue", (None, "create_issue")),
])
def test_split_tool_reads_the_agents_spellings(tool: str, parts: tuple[str | None, str]) -> None:
    assert split_tool(tool) == parts


@pytest.mark.parametrize("args", [
    ["-X", "PUT"], ["-XPUT"], ["-X=PUT"], ["--method", "PUT"], ["--method=PUT"], ["x", "--method=PUT", "-X", "GET"],
])
def test_option_value_reads_every_spelling(args: list[str]) -> None:
    assert option_value(args, ("-X", "--method")) == "PUT"


def test_option_value_and_option_at_edge_cases() -> None:
    assert option_value(["-X"], ("-X", "--method")) is None
    assert option_value(["--methodology", "x"], ("-X", "--method")) is None
    assert option_at("-X", "POST", ("-X", "--method")) == ("POST", 2)
    assert option_at("--method=POST", None, ("-X", "--method")) == ("POST", 1)
    assert option_at("-f", "a=b", ("-X", "--method")) is None
    assert option_value(["plan", "-chdir=infra/prod"], ("-chdir",)) == "infra/prod"
    assert option_value(["get", "pods", "-nbilling"], ("--namespace", "-n")) == "billing"


def test_basic_authorization_fills_the_missing_half() -> None:
    def decoded(headers: dict[str, str]) -> str:
        scheme, _, value = headers["authorization"].partition(" ")
        assert scheme == "Basic"
        return base64.b64decode(value).decode()

    assert decoded(basic_authorization("t0k", user="oauth2")) == "oauth2:t0k"
    assert decoded(basic_authorization("t0k", password="x-oauth-basic")) == "t0k:x-oauth-basic"
    assert decoded(basic_authorization("me:t0k", user="oauth2")) == "me:t0k"
