"""The agent gate's view: ``glab`` argv and GitLab MCP tool calls → the same operations as the wire."""

from __future__ import annotations

import shlex

import pytest

from gitvow_gitlab.adapter import GitLabAdapter


@pytest.fixture
def adapter() -> GitLabAdapter:
    return GitLabAdapter()


GLAB = [
    ("glab mr create --fill --yes", "pr.create"),
    ("glab mr new -t title -d body", "pr.create"),
    ("glab mr merge 12", "pr.merge"),
    ("glab mr merge 12 --auto-merge --squash", "pr.merge"),
    ("glab mr accept 12", "pr.merge"),
    ("glab mr approve 12", "pr.review"),
    ("glab mr revoke 12", "pr.review"),
    ("glab mr note 12 -m looks-good", "issue.comment"),
    ("glab mr update 12 --draft", "pr.edit"),
    ("glab mr close 12", "pr.edit"),
    ("glab mr rebase 12", "pr.update_branch"),
    ("glab mr delete 12", "unknown"),
    ("glab mr list", "read"),
    ("glab mr view 12 --comments", "read"),
    ("glab mr diff 12", "read"),
    ("glab mr checkout 12", "git.fetch"),
    ("glab issue create -t bug -d text", "issue.create"),
    ("glab issue note 3 -m thanks", "issue.comment"),
    ("glab issue update 3 --label bug", "issue.edit"),
    ("glab issue close 3", "issue.edit"),
    ("glab issue delete 3", "unknown"),
    ("glab issue list --assignee=@me", "read"),
    ("glab repo delete group/proj --yes", "repo.delete"),
    ("glab repo create newproj", "repo.create"),
    ("glab repo fork group/proj", "repo.fork"),
    ("glab repo clone group/proj", "git.fetch"),
    ("glab release create v1.0", "release.write"),
    ("glab variable set TOKEN value", "secret.write"),
    ("glab var delete TOKEN", "secret.write"),
    ("glab variable list", "read"),
    ("glab ci run --branch main", "workflow.dispatch"),
    ("glab pipeline retry 55", "workflow.dispatch"),
    ("glab ci status", "read"),
    ("glab label create --name bug", "label.manage"),
    ("glab snippet create -t x file.txt", "gist.write"),
    ("glab auth login --hostname gitlab.com", "auth.login"),
    ("glab deploy-key add key.pub", "unknown"),
    ("glab token create --name t", "unknown"),
    ("glab cluster agent list", "unknown"),
    ("/usr/local/bin/glab mr merge 1", "pr.merge"),
    ("glab mr -R team/app merge 1", "pr.merge"),
    ("glab mr --unknown-flag value merge 1", "unknown"),
]


@pytest.mark.parametrize(("command", "operation"), GLAB, ids=[c for c, _ in GLAB])
def test_glab_subcommands(adapter: GitLabAdapter, command: str, operation: str) -> None:
    call = adapter.classify_command(shlex.split(command))
    assert call is not None and call.operations == (operation,) and call.adapter == "gitlab"


def test_help_is_not_a_way_around_the_gate(adapter: GitLabAdapter) -> None:
    """``-m -h`` would make ``-h`` the note, so ``-h`` anywhere does not mean "only help"."""
    call = adapter.classify_command(["glab", "mr", "merge", "1", "-m", "-h"])
    assert call is not None and call.operations == ("pr.merge",)


@pytest.mark.parametrize("command", ["glab config set editor vim", "glab alias list", "glab version", "glab", "git push", "gh pr merge 1"])
def test_local_or_foreign_commands_are_not_ours(adapter: GitLabAdapter, command: str) -> None:
    assert adapter.classify_command(shlex.split(command)) is None


def test_repo_flag_names_the_repository(adapter: GitLabAdapter) -> None:
    for argv in (["glab", "mr", "merge", "1", "-R", "team/app"], ["glab", "mr", "merge", "1", "--repo=team/app"],
                 ["glab", "mr", "merge", "1", "-Rteam/app"]):
        call = adapter.classify_command(argv)
        assert call is not None and call.repo == "team/app"


API = [
    ("glab api projects/:id/merge_requests -X POST -f title=t", "pr.create"),
    ("glab api projects/:id/merge_requests -f title=t", "pr.create"),
    ("glab api --method PUT projects/:id/merge_requests/3/merge", "pr.merge"),
    ("glab api -X PUT projects/group%2Fproj/merge_requests/3/merge", "pr.merge"),
    ("glab api projects/:id/merge_requests/3", "read"),
    ("glab api -X POST projects/:id/labels -f name=bug -f color=#f00", "label.manage"),
    ("glab api -X PUT projects/:id/issues/3 -f add_labels=bug", "label.add"),
    ("glab api -X POST /projects/:id/merge_requests/3/discussions -f body=x", "issue.comment"),
    ("glab api -X POST projects/:id/merge_requests/3/discussions -F position[new_line]=3 -f body=x", "pr.review"),
    ("glab api -X DELETE projects/:id", "repo.delete"),
    ("glab api https://gitlab.com/api/v4/projects/1/pipeline -X POST", "workflow.dispatch"),
    ("glab api -X POST projects/:id/nonsense", "unknown"),
    ("glab api graphql -f query='mutation { mergeRequestAccept(input: {projectPath: \"g/p\", iid: \"1\"}) { errors } }'", "pr.merge"),
    ("glab api graphql -f query='query { currentUser { id } }'", "read"),
    ("glab api graphql -f query='mutation { destroyNote(input: {id: \"x\"}) { errors } }'", "unknown"),
    ("glab api", "unknown"),
    ("glab api projects/:id/merge_requests -ftitle=t", "pr.create"),
    ("glab api projects/:id/merge_requests -f=title=t", "pr.create"),
    ("glab api projects/:id/merge_requests --raw-field=title=t", "pr.create"),
    ("glab api projects/:id/merge_requests/3/merge -XPUT", "pr.merge"),
    ("glab api projects/:id/merge_requests/3/merge -X=PUT", "pr.merge"),
    ("glab api projects/:id/merge_requests/3/merge --method=PUT --paginate", "pr.merge"),
    ("glab api projects/:id/merge_requests -iftitle=t", "unknown"),
    ("glab api projects/:id/merge_requests -i", "read"),
]


@pytest.mark.parametrize(("command", "operation"), API, ids=[c for c, _ in API])
def test_glab_api_is_classified_like_the_request_it_sends(adapter: GitLabAdapter, command: str, operation: str) -> None:
    call = adapter.classify_command(shlex.split(command))
    assert call is not None and call.operations == (operation,)


def test_glab_api_placeholders_take_the_repo_flag(adapter: GitLabAdapter) -> None:
    call = adapter.classify_command(shlex.split("glab api -X PUT projects/:id/merge_requests/3/merge -R team/app"))
    assert call is not None and call.operations == ("pr.merge",) and call.repo == "team/app"
    bare = adapter.classify_command(shlex.split("glab api -X PUT projects/:id/merge_requests/3/merge"))
    assert bare is not None and bare.repo is None


MCP = [
    ("mcp__gitlab__create_merge_request", {"project_id": "team/app"}, "pr.create"),
    ("mcp__gitlab__merge_merge_request", {"project_id": "team/app", "merge_request_iid": 3}, "pr.merge"),
    ("mcp__gitlab__approve_merge_request", {}, "pr.review"),
    ("mcp__gitlab__create_merge_request_thread", {}, "pr.review"),
    ("mcp__gitlab__create_note", {}, "issue.comment"),
    ("mcp__gitlab__create_issue_note", {}, "issue.comment"),
    ("mcp__gitlab__create_issue", {}, "issue.create"),
    ("mcp__gitlab__update_issue", {}, "issue.edit"),
    ("mcp__gitlab__create_label", {}, "label.manage"),
    ("mcp__gitlab__create_branch", {}, "ref.write"),
    ("mcp__gitlab__create_or_update_file", {}, "contents.write"),
    ("mcp__gitlab__push_files", {}, "ref.write"),  # POST …/repository/commits, as on the wire
    ("mcp__gitlab__fork_repository", {}, "repo.fork"),
    ("mcp__gitlab__create_repository", {}, "repo.create"),
    ("mcp__gitlab__create_pipeline", {}, "workflow.dispatch"),
    ("mcp__gitlab__create_project_variable", {}, "secret.write"),
    ("mcp__gitlab__delete_issue", {}, "unknown"),
    ("mcp__gitlab__get_merge_request", {}, "read"),
    ("mcp__gitlab__list_issues", {}, "read"),
    ("mcp__gitlab__brand_new_write_tool", {}, "unknown"),
    ("mcp__my-gitlab-server__merge_merge_request", {}, "pr.merge"),
    ("create_merge_request", {}, "pr.create"),
]


@pytest.mark.parametrize(("tool", "arguments", "operation"), MCP, ids=[t for t, _, _ in MCP])
def test_mcp_tools(adapter: GitLabAdapter, tool: str, arguments: dict[str, object], operation: str) -> None:
    call = adapter.classify_mcp_tool(tool, arguments)
    assert call is not None and call.operations == (operation,)


def test_mcp_repository_and_foreign_servers(adapter: GitLabAdapter) -> None:
    call = adapter.classify_mcp_tool("mcp__gitlab__merge_merge_request", {"project_id": "team/app"})
    assert call is not None and call.repo == "team/app"
    numeric = adapter.classify_mcp_tool("mcp__gitlab__merge_merge_request", {"project_id": "42"})
    assert numeric is not None and numeric.repo is None
    assert adapter.classify_mcp_tool("mcp__github__create_pull_request", {}) is None
    assert adapter.classify_mcp_tool("mcp__github__create_issue", {}) is None
    assert adapter.classify_mcp_tool("some_bare_tool", {}) is None


def test_mcp_execute_graphql_is_classified_by_its_document(adapter: GitLabAdapter) -> None:
    merge = 'mutation { mergeRequestAccept(input: {projectPath: "g/p", iid: "1"}) { errors } }'
    call = adapter.classify_mcp_tool("mcp__gitlab__execute_graphql", {"query": merge})
    assert call is not None and call.operations == ("pr.merge",) and call.repo == "g/p"
    read = adapter.classify_mcp_tool("mcp__gitlab__execute_graphql", {"query": "{ currentUser { id } }"})
    assert read is not None and read.operations == ("read",)
    junk = adapter.classify_mcp_tool("mcp__gitlab__execute_graphql", {"query": "mutation {"})
    assert junk is not None and junk.operations == ("unknown",)


def test_relay_hints_name_the_gitlab_tools(adapter: GitLabAdapter) -> None:
    assert "glab mr create" in adapter.relay_hints("pr.create")
    assert "glab mr merge" in adapter.relay_hints("pr.merge")
    assert any("merge_merge_request" in h for h in adapter.relay_hints("pr.merge"))
    assert adapter.relay_hints("team-merge") == ()
