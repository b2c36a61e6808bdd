"""``[comment_commands]`` on every installed forge: a chat-ops command in a comment, a review,
an issue or a pull-request body is judged as the operation the bot performs.

Each case is a real wire shape of that forge (REST or GraphQL) carrying ``bors r+``; the
adapter's :meth:`~gitvow.adapter.Adapter.comment_bodies` (the core's default reader on every
shipped forge) exposes the text and the pipeline adds ``pr.merge``. Runs in each plugin's
tox environment for the forges installed there.
"""

from __future__ import annotations

import json

import pytest

from gitvow.gates import Caller
from gitvow.pipeline import Action, Engine
from gitvow.plugins import installed
from gitvow.policy.load import parse_policy
from gitvow.request import Request

JSON = {"content-type": "application/json"}
TEXT = "Thanks, looks right.\nbors r+"


def gql(query: str, variables: dict[str, object] | None = None) -> bytes:
    return json.dumps({"query": query, "variables": variables or {}}).encode()


CASES: list[tuple[str, str, str, bytes]] = [
    ("github", "POST", "https://api.github.com/repos/team/app/issues/1/comments", json.dumps({"body": TEXT}).encode()),
    ("github", "POST", "https://api.github.com/repos/team/app/pulls/1/reviews",
     json.dumps({"body": TEXT, "event": "COMMENT"}).encode()),
    ("github", "POST", "https://api.github.com/graphql",
     gql('mutation { addComment(input: {subjectId: "I_1", body: "bors r+"}) { clientMutationId } }')),
    ("github", "POST", "https://api.github.com/graphql",
     gql("mutation($b: String!) { addComment(input: {subjectId: \"I_1\", body: $b}) { clientMutationId } }", {"b": TEXT})),
    ("gitlab", "POST", "https://gitlab.com/api/v4/projects/team%2Fapp/merge_requests/7/notes", json.dumps({"body": TEXT}).encode()),
    ("gitea", "POST", "https://codeberg.org/api/v1/repos/team/app/issues/1/comments", json.dumps({"body": TEXT}).encode()),
    ("linear", "POST", "https://api.linear.app/graphql",
     gql('mutation { commentCreate(input: {issueId: "ISS-1", body: "bors r+"}) { success } }')),
]


@pytest.mark.parametrize(("adapter", "method", "url", "body"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_bot_command_in_a_comment_is_its_operation(adapter: str, method: str, url: str, body: bytes) -> None:
    plugins = installed()
    if adapter not in plugins.adapters:
        pytest.skip(f"the {adapter} adapter is not installed here")
    data = {"agents": {"bot": {"mode": "issues_only"}},
            "comment_commands": {"bors": {"pattern": r"^bors\s+r\+", "operations": ["pr.merge"]}}}
    engine = Engine(parse_policy(data, relays=plugins.relays, sections=plugins.sections, absent="skip"), plugins)
    plain = Engine(parse_policy({"agents": data["agents"]}, relays=plugins.relays, sections=plugins.sections,
                                absent="skip"), plugins)
    request = Request.from_url(method, url, headers=JSON, body=body)
    grant = engine.policy.grant_for("bot")
    assert grant is not None
    _, without = plain.classify(request)
    _, classification = engine.classify(request)
    assert without is not None and classification is not None
    assert "pr.merge" not in without.operations, without
    assert classification.operations == (*without.operations, "pr.merge"), classification
    assert engine.decide(request, Caller("bot", grant)).action is not Action.FORWARD
