"""Refusals in GitHub's error shapes: what gh, PyGithub and octokit print."""

from __future__ import annotations

import json

from gitvow.request import Request
from gitvow_github.plugin import GitHubAdapter

LINE = "gitvow refused pr.create on o/r (POST /repos/o/r/pulls): no. reason=hard_deny"


def test_rest_is_a_json_message_graphql_an_errors_entry_git_plain_lines() -> None:
    adapter = GitHubAdapter()
    kind, body = adapter.refusal_body(Request.from_url("POST", "https://api.github.com/repos/o/r/pulls"), LINE, "hard_deny")
    assert kind.startswith("application/json") and json.loads(body)["message"] == LINE
    kind, body = adapter.refusal_body(Request.from_url("POST", "https://api.github.com/graphql"), LINE, "hard_deny")
    (error,) = json.loads(body)["errors"]
    assert error["message"] == LINE and error["extensions"]["gitvow_reason"] == "hard_deny"
    assert "message" not in json.loads(body)  # gh would print it twice
    ghes = Request.from_url("POST", "https://ghe.corp.test/api/graphql")
    assert "errors" in json.loads(adapter.refusal_body(ghes, LINE, "hard_deny")[1])
    git = Request.from_url("POST", "https://github.com/o/r.git/git-receive-pack")
    assert adapter.refusal_body(git, LINE, "mode_denied") == ("text/plain; charset=utf-8", (LINE + "\n").encode())
