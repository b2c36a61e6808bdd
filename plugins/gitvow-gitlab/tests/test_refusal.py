"""Refusals in GitLab's error shapes: what glab and python-gitlab print."""

from __future__ import annotations

import json

from gitvow.adapter import configured
from gitvow.request import Request
from gitvow_gitlab.plugin import GitLabAdapter

LINE = "gitvow refused issue.create on g/p (POST /api/v4/projects/g%2Fp/issues): no. reason=mode_denied"


def test_rest_message_graphql_errors_git_plain() -> None:
    adapter = GitLabAdapter()
    rest = Request.from_url("POST", "https://gitlab.com/api/v4/projects/g%2Fp/issues")
    assert json.loads(adapter.refusal_body(rest, LINE, "mode_denied")[1])["message"] == LINE
    graphql = Request.from_url("POST", "https://gitlab.com/api/graphql")
    assert json.loads(adapter.refusal_body(graphql, LINE, "mode_denied")[1])["errors"][0]["message"] == LINE
    git = Request.from_url("POST", "https://gitlab.com/g/p.git/git-receive-pack")
    assert adapter.refusal_body(git, LINE, "mode_denied")[0].startswith("text/plain")
    rooted = configured(GitLabAdapter(), {"relative_url_root": "/gitlab"})
    under = Request.from_url("POST", "https://git.example.test/gitlab/api/v4/projects/1/issues")
    assert json.loads(rooted.refusal_body(under, LINE, "mode_denied")[1])["message"] == LINE
