"""Count what is done, not requests; judge every issue a request creates, as the forge reads it.

Real adapters (GitHub, GitLab, Gitea, Linear) inside the real pipeline with the proxy's gates.
The proxy's tox environment installs only the GitHub plugin; the others' cases run where
they are installed (``all``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gitvow import plugins
from gitvow.gates import Caller
from gitvow.pipeline import Action, Decision, Engine
from gitvow.policy.load import parse_policy
from gitvow.request import Request
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.store import MemoryStore, SQLiteStore, Store

GOOD_BODY = "## Why\nthe build breaks on main"
GITHUB_GQL = "https://api.github.com/graphql"
GITLAB = "https://gitlab.com/api/v4/projects/team%2Fapp/issues"
GITLAB_GQL = "https://gitlab.com/api/graphql"
GITEA = "https://codeberg.org/api/v1/repos/team/app/issues"
LINEAR = "https://api.linear.app/graphql"


class Harness:
    def __init__(self, extra: dict[str, Any], store: Store | None = None) -> None:
        data: dict[str, Any] = {"agents": {"bot": {"mode": "issues_and_prs"}}, **extra}
        self.policy = parse_policy(data)
        self.engine = Engine(self.policy, plugins.installed())
        self.store = store or MemoryStore()
        self.gates = ProxyGates(self.policy, self.store, credentials={}, canaries={})

    def send(self, url: str, body: object, *, method: str = "POST", content_type: str = "application/json") -> Decision:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = Request.from_url(method, url, body=raw, headers={"content-type": content_type})
        grant = self.policy.grant_for("bot")
        assert grant is not None
        return self.engine.decide(request, Caller("bot", grant), self.gates)


def need(*names: str) -> None:
    for name in names:
        pytest.importorskip(f"gitvow_{name}", reason=f"the {name} adapter plugin is not installed")


def gql(query: str, variables: dict[str, object] | None = None) -> dict[str, object]:
    return {"query": query, "variables": variables or {}}


def github_issues(*drafts: tuple[str, str]) -> dict[str, object]:
    fields = " ".join(
        f'i{n}: createIssue(input: {{repositoryId: "R", title: {json.dumps(t)}, body: {json.dumps(b)}}}) {{ issue {{ id }} }}'
        for n, (t, b) in enumerate(drafts)
    )
    return gql(f"mutation {{ {fields} }}")


def linear_issues(*drafts: tuple[str, str]) -> dict[str, object]:
    fields = " ".join(
        f'i{n}: issueCreate(input: {{teamId: "T", title: {json.dumps(t)}, description: {json.dumps(b)}}}) {{ success }}'
        for n, (t, b) in enumerate(drafts)
    )
    return gql(f"mutation {{ {fields} }}")


def gitlab_issues(*drafts: tuple[str, str]) -> dict[str, object]:
    fields = " ".join(
        f'i{n}: createIssue(input: {{projectPath: "team/app", title: {json.dumps(t)}, description: {json.dumps(b)}}}) {{ errors }}'
        for n, (t, b) in enumerate(drafts)
    )
    return gql(f"mutation {{ {fields} }}")


SHAPE = {"issue_shape": {"title_max": 40, "body_min": 10, "required_sections": ["## Why"]}}
GOOD = ("A short title", GOOD_BODY)
BAD = ("x" * 41, GOOD_BODY)


def outcome(decision: Decision) -> str:
    return "forward" if decision.action is Action.FORWARD else str(decision.reason)


@pytest.mark.parametrize("build", [github_issues, linear_issues, gitlab_issues], ids=["github", "linear", "gitlab"])
def test_every_issue_a_graphql_request_creates_is_checked(build: Any) -> None:
    url = {github_issues: GITHUB_GQL, linear_issues: LINEAR, gitlab_issues: GITLAB_GQL}[build]
    need({github_issues: "github", linear_issues: "linear", gitlab_issues: "gitlab"}[build])
    h = Harness(SHAPE)
    assert outcome(h.send(url, build(GOOD))) == "forward"
    assert outcome(h.send(url, build(GOOD, GOOD))) == "forward"
    second_bad = h.send(url, build(GOOD, BAD))
    assert outcome(second_bad) == "issue_shape"
    assert second_bad.message is not None and "issue 2 of 2" in second_bad.message


def test_graphql_issues_are_read_from_variables_and_their_defaults() -> None:
    need("github")
    h = Harness(SHAPE)
    query = "mutation($i: CreateIssueInput!) { createIssue(input: $i) { issue { id } } }"
    good = {"repositoryId": "R", "title": GOOD[0], "body": GOOD[1]}
    assert outcome(h.send(GITHUB_GQL, gql(query, {"i": good}))) == "forward"
    assert outcome(h.send(GITHUB_GQL, gql(query, {"i": {**good, "title": "x" * 41}}))) == "issue_shape"
    defaulted = ('mutation($t: String = "' + "x" * 41 + '") { createIssue(input: {repositoryId: "R", title: $t, '
                 'body: "## Why\\nlong enough"}) { issue { id } } }')
    assert outcome(h.send(GITHUB_GQL, gql(defaulted))) == "issue_shape"


def test_a_decoy_object_is_not_the_issue() -> None:
    need("github", "gitlab", "gitea")
    h = Harness(SHAPE)
    # GraphQL: the good title sits in a string literal elsewhere; the issue's own title is bad.
    decoy = gql('mutation { createIssue(input: {repositoryId: "R", title: "' + "x" * 41 + '", body: "## Why\\nsee"}) '
                '{ issue { title(filter: {title: "A short title", body: "## Why fine enough"}) } } }')
    assert outcome(h.send(GITHUB_GQL, decoy)) == "issue_shape"
    rest = {
        "https://api.github.com/repos/team/app/issues": ("title", "body"),
        GITEA: ("title", "body"),
        GITLAB: ("title", "description"),
    }
    for url, (title, body) in rest.items():
        assert outcome(h.send(url, {title: GOOD[0], body: GOOD[1]})) == "forward", url
        shaped = {"extra": {title: GOOD[0], body: GOOD[1]}, title: BAD[0], body: BAD[1]}
        assert outcome(h.send(url, shaped)) == "issue_shape", url


def test_gitlab_reads_title_and_description_wherever_grape_does() -> None:
    need("gitlab")
    h = Harness(SHAPE)
    from urllib.parse import urlencode

    query = urlencode({"title": GOOD[0], "description": GOOD[1]})
    assert outcome(h.send(f"{GITLAB}?{query}", b"")) == "forward"
    form = urlencode({"title": GOOD[0], "description": "too short"}).encode()
    assert outcome(h.send(GITLAB, form, content_type="application/x-www-form-urlencoded")) == "issue_shape"
    # A title in both the query string and the body: which one GitLab keeps is not guessed.
    both = h.send(f"{GITLAB}?title=x", {"title": GOOD[0], "description": GOOD[1]})
    assert outcome(both) == "issue_shape"


def test_linear_rich_text_description_is_unreadable() -> None:
    need("linear")
    h = Harness(SHAPE)
    body = gql('mutation { issueCreate(input: {teamId: "T", title: "A short title", description: "## Why\\nlong enough", '
               'descriptionData: "{}"}) { success } }')
    assert outcome(h.send(LINEAR, body)) == "issue_shape"


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_aliased_writes_count_against_budgets_and_caps(store_kind: str, tmp_path: Any) -> None:
    store: Store = MemoryStore() if store_kind == "memory" else SQLiteStore(tmp_path / "state.sqlite")
    need("github")
    h = Harness({"budget": {"window_seconds": 3600, "writes": 10, "operations": {"issue.create": 3}}}, store)
    assert outcome(h.send(GITHUB_GQL, github_issues(GOOD, GOOD, GOOD, GOOD))) == "write_budget"  # 4 > 3 at once
    assert outcome(h.send(GITHUB_GQL, github_issues(GOOD, GOOD))) == "forward"
    assert outcome(h.send(GITHUB_GQL, github_issues(GOOD, GOOD))) == "write_budget"  # 2 + 2 > 3
    assert outcome(h.send("https://api.github.com/repos/team/app/issues", {"title": "t"})) == "forward"  # REST: 1
    assert outcome(h.send(GITHUB_GQL, github_issues(GOOD))) == "write_budget"
    # Counters record each action once, with its final outcome.
    assert dict(h.gates.counts) == {("bot", "issue.create", "allowed"): 2 + 1,
                                    ("bot", "issue.create", "throttled"): 4 + 2 + 1}


def test_linear_counts_each_issue_and_each_parent_link() -> None:
    need("linear")
    h = Harness({"budget": {"window_seconds": 3600, "operations": {"issue.create": 3, "issue.relate": 1}}})
    linked = gql('mutation { a: issueCreate(input: {teamId: "T", title: "t", parentId: "P"}) { success } '
                 'b: issueCreate(input: {teamId: "T", title: "t", parentId: "P"}) { success } }')
    assert outcome(h.send(LINEAR, linked)) == "write_budget"  # two parent links against a cap of one
    assert outcome(h.send(LINEAR, linear_issues(GOOD, GOOD))) == "forward"
    assert outcome(h.send(LINEAR, linear_issues(GOOD, GOOD))) == "write_budget"


def test_the_total_budget_counts_every_action() -> None:
    need("github")
    h = Harness({"budget": {"window_seconds": 3600, "writes": 3}})
    comments = gql(" ".join(["mutation {"] + [f'c{n}: addComment(input: {{subjectId: "I", body: "x"}}) {{ clientMutationId }}'
                                              for n in range(3)] + ["}"]))
    assert outcome(h.send(GITHUB_GQL, comments)) == "forward"
    throttled = h.send(GITHUB_GQL, gql('mutation { addComment(input: {subjectId: "I", body: "x"}) { clientMutationId } }'))
    assert outcome(throttled) == "write_budget" and throttled.status == 429


def test_github_issue_creations_without_a_title_in_the_request_are_unreadable() -> None:
    need("github")
    h = Harness(SHAPE)
    discussion = 'mutation { createDiscussion(input: {repositoryId: "R", categoryId: "C", title: "%s", body: "%s"}) { clientMutationId } }'
    assert outcome(h.send(GITHUB_GQL, gql(discussion % (GOOD[0], "## Why\\nit matters")))) == "forward"
    assert outcome(h.send(GITHUB_GQL, gql(discussion % ("x" * 41, "## Why\\nit matters")))) == "issue_shape"
    converted = h.send(GITHUB_GQL, gql('mutation { convertProjectV2DraftIssueItemToIssue(input: {itemId: "I", repositoryId: "R"}) { clientMutationId } }'))
    assert outcome(converted) == "issue_shape"
    assert converted.message is not None and "could not be read" in converted.message
