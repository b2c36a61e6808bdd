"""Refusals in Gitea's error shape: what tea and py-gitea print."""

from __future__ import annotations

import json

from gitvow.request import Request
from gitvow_gitea.adapter import GiteaAdapter

LINE = "gitvow refused pr.merge on t/a (POST /api/v1/repos/t/a/pulls/7/merge): no. reason=hard_deny"


def test_api_message_git_plain() -> None:
    adapter = GiteaAdapter()
    api = Request.from_url("POST", "https://codeberg.org/api/v1/repos/t/a/pulls/7/merge")
    assert json.loads(adapter.refusal_body(api, LINE, "hard_deny")[1])["message"] == LINE
    git = Request.from_url("POST", "https://codeberg.org/t/a.git/git-receive-pack")
    assert adapter.refusal_body(git, LINE, "mode_denied")[1] == (LINE + "\n").encode()
