"""``[comment_commands]``: a comment a bot turns into a merge is judged as a merge, on any forge.

The core alone: a stand-in forge whose comments are ``issue.comment``; the generic body reader
(:func:`gitvow.comments.bodies_of`) and the pipeline do the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import pytest

from gitvow.adapter import Adapter
from gitvow.comments import bodies_of, graphql_strings
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import Mode
from gitvow.pipeline import Action, Engine
from gitvow.plugins import Plugins
from gitvow.policy.load import parse_policy
from gitvow.request import Classification, Request

HOST = "forge.example.test"
TABLE = {
    "prow": {"pattern": r"^/(lgtm|approve)\b", "operations": ["pr.merge"]},
    "bors": {"pattern": r"^bors\s+r\+", "operations": ["pr.merge"]},
    "mergify": {"pattern": r"^@mergify(io)?\s+queue", "operations": ["pr.merge"]},
    "retest": {"pattern": r"^/retest$", "operations": ["workflow.dispatch"], "ignore_case": False},
}
ISSUES_ONLY = Caller("bot", Grant(Mode.ISSUES_ONLY))


class Forge(Adapter):
    """Comments are POSTs to ``/comments``; git pushes are POSTs to ``/push``."""

    name = "forge"
    default_hosts = (HOST,)

    def classify(self, request: Request) -> Classification:
        if request.method == "GET":
            return Classification(("read",), repo="o/r")
        if request.path == "/push":
            return Classification(("git.push",), repo="o/r")
        return Classification(("issue.comment",), repo="o/r")


class Unreadable(Forge):
    name = "unreadable"
    default_hosts = ("unreadable.example.test",)

    def comment_bodies(self, request: Request, classification: Classification) -> Sequence[str] | None:
        raise RuntimeError("reader bug")


def engine(table: dict[str, dict[str, object]] | None = None) -> Engine:
    plugins = Plugins.of(adapters=[Forge(), Unreadable()])
    data = {"comment_commands": TABLE if table is None else table}
    return Engine(parse_policy(data, relays=plugins.relays, sections=()), plugins)


def comment(body: bytes, *, content_type: str = "application/json", host: str = HOST, path: str = "/comments") -> Request:
    return Request.from_url("POST", f"https://{host}{path}", headers={"content-type": content_type}, body=body)


def operations(body: bytes, **kwargs: str) -> tuple[str, ...]:
    _, classification = engine().classify(comment(body, **kwargs))
    assert classification is not None
    return classification.operations


@pytest.mark.parametrize(
    "text",
    ["/lgtm", "Nice work.\n/approve", "  /LGTM  ", "bors r+", "Bors R+ please", "@Mergifyio queue", "@mergify queue default",
     "ok\r\n/approve\r\n", "line\u2028/lgtm"],
)
def test_a_bot_command_is_its_operation(text: str) -> None:
    assert operations(json.dumps({"body": text}).encode()) == ("issue.comment", "pr.merge")


@pytest.mark.parametrize("text", ["lgtm", "I will /approve later", "/approver", "borsch r+", "/RETEST", "mergify queue"])
def test_plain_comments_stay_comments(text: str) -> None:
    assert operations(json.dumps({"body": text}).encode()) == ("issue.comment",)


def test_the_comment_is_refused_at_a_mode_that_allows_comments_but_not_merges() -> None:
    gitvow = engine()
    plain = gitvow.decide(comment(json.dumps({"body": "thanks"}).encode()), ISSUES_ONLY)
    assert plain.action is Action.FORWARD
    decision = gitvow.decide(comment(json.dumps({"body": "thanks\nbors r+"}).encode()), ISSUES_ONLY)
    assert decision.action is Action.DENY and decision.message is not None and "pr.merge" in decision.message
    assert decision.classification is not None
    assert decision.classification.details["comment_commands"] == ("bors",)


def test_every_carrier_is_read() -> None:
    assert "pr.merge" in operations(b"body=%2Flgtm", content_type="application/x-www-form-urlencoded")
    assert "pr.merge" in operations(b'{"comment": {"text": "\\u002flgtm"}}')
    assert "pr.merge" in operations(b"", path="/comments?body=%2Fapprove")
    query = 'mutation($b: String = "/lgtm") { addComment(input: {subjectId: "x", body: $b}) { id } }'
    assert "pr.merge" in operations(json.dumps({"query": query}).encode())
    by_variable = "mutation($i: AddCommentInput!) { addComment(input: $i) { id } }"
    assert "pr.merge" in operations(json.dumps({"query": by_variable, "variables": {"i": {"body": "bors r+"}}}).encode())


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"--x\r\n", "multipart/form-data; boundary=x"), (b"\xff\xfe", "application/json"), (b"{not json", "application/json"),
     (json.dumps({"query": "mutation {"}).encode(), "application/json"), (b"x" * (256 * 1024 + 1), "application/json")],
)
def test_an_unreadable_comment_is_unknown_while_a_table_is_declared(body: bytes, content_type: str) -> None:
    """Multipart, not UTF-8, not JSON, a GraphQL document that does not parse, over the limit."""
    assert "unknown" in operations(body, content_type=content_type)
    _, untouched = engine({}).classify(comment(body, content_type=content_type))
    assert untouched is not None and untouched.operations == ("issue.comment",)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "x-unknown"])
def test_an_encoded_comment_is_unknown(encoding: str) -> None:
    request = Request.from_url("POST", f"https://{HOST}/comments", body=b'{"body": "thanks"}',
                               headers={"content-type": "application/json", "content-encoding": encoding})
    _, classification = engine().classify(request)
    assert classification is not None and classification.is_unknown
    identity = replace(request, headers={"content-type": "application/json", "content-encoding": "identity"})
    assert engine().classify(identity)[1] == engine({}).classify(identity)[1]


def test_a_reader_that_raises_is_unknown() -> None:
    _, classification = engine().classify(comment(b'{"body": "hi"}', host="unreadable.example.test"))
    assert classification is not None and classification.is_unknown


def test_requests_that_carry_no_text_are_not_read() -> None:
    push = comment(b"\x00PACK binary", content_type="application/x-git-receive-pack-request", path="/push")
    _, classification = engine().classify(push)
    assert classification is not None and classification.operations == ("git.push",)
    assert bodies_of(push, Classification(("git.push",))) == ()


def test_graphql_strings_are_every_literal() -> None:
    assert graphql_strings('query { a(x: "1", y: ["2", {z: "3"}]) } fragment F on T { b(w: """4""") }') == ["1", "2", "3", "4"]
    assert graphql_strings("query {") is None


@pytest.mark.parametrize(
    ("rule", "key"),
    [({"pattern": "(", "operations": ["pr.merge"]}, "comment_commands.bad.pattern"),
     ({"pattern": "x", "operations": ["pr.merrge"]}, "comment_commands.bad.operations")],
)
def test_a_bad_row_is_an_error_naming_its_key(rule: dict[str, object], key: str) -> None:
    with pytest.raises(PolicyError, match=key.replace(".", r"\.")):
        parse_policy({"comment_commands": {"bad": rule}}, relays={}, sections=(), source="p.toml")
    with pytest.raises(PolicyError, match="unknown key"):
        parse_policy({"comment_commands": {"bad": {"pattern": "x", "operations": ["pr.merge"], "regex": "y"}}},
                     relays={}, sections=())


def test_empty_by_default() -> None:
    assert parse_policy({}, relays={}, sections=()).comment_commands == ()
