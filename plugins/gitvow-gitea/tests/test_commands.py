"""``tea`` command lines for the agent gate."""

from __future__ import annotations

import pytest

from gitvow_gitea import GiteaAdapter


@pytest.mark.parametrize(
    ("argv", "operations", "repo"),
    [
        (["tea", "pr", "create", "--title", "Fix", "--base", "main"], ("pr.create",), None),
        (["tea", "pulls", "create", "--repo", "team/app"], ("pr.create",), "team/app"),
        (["/usr/local/bin/tea", "pr", "merge", "7", "-r", "team/app"], ("pr.merge",), "team/app"),
        (["tea", "pr", "approve", "7"], ("pr.review",), None),
        (["tea", "pr", "close", "7"], ("pr.edit",), None),
        (["tea", "issue", "create", "--title", "Crash"], ("issue.create",), None),
        (["tea", "issues", "close", "3", "--repo=team/app"], ("issue.edit",), "team/app"),
        (["tea", "comment", "3", "Reproduced"], ("issue.comment",), None),
        (["tea", "--login", "codeberg", "labels", "create", "--name", "bug"], ("label.manage",), None),
        (["tea", "release", "create", "--tag", "v1"], ("release.write",), None),
        (["tea", "repo", "fork"], ("repo.fork",), None),
        (["tea", "pr", "list"], ("read",), None),
        (["tea", "pr"], ("read",), None),
        (["tea", "issue", "3"], ("read",), None),
    ],
)
def test_tea(gitea: GiteaAdapter, argv: list[str], operations: tuple[str, ...], repo: str | None) -> None:
    call = gitea.classify_command(argv)
    assert call is not None
    assert (call.operations, call.repo, call.adapter) == (operations, repo, "gitea")


@pytest.mark.parametrize(
    "argv", [["gh", "pr", "create"], ["tea"], ["tea", "login", "add"], ["tea", "pr", "frobnicate"], ["teapot", "pr", "merge"]]
)
def test_not_recognised(gitea: GiteaAdapter, argv: list[str]) -> None:
    assert gitea.classify_command(argv) is None
