"""What a GitHub API write changes: the contents API, Git Data refs, blobs and trees, merges,
pull request heads and bases, and the GraphQL mutations that move refs or write content —
each read where GitHub reads it, and each attempt to slip past a branch, path or secret rule
kept as a case."""

from __future__ import annotations

import base64
import json

import pytest

from gitvow.change import CREATED, DEFAULT_BRANCH_REF, DELETED, FAST_FORWARD, Change
from gitvow.change_rules import DEFAULT_RULES, ChangeRules, judge
from gitvow.request import Classification, Request
from gitvow_github.adapter import GitHubAdapter
from gitvow_github.changes import rest_change

ADAPTER = GitHubAdapter()
# Shaped like an AWS access key id; assembled so that no scanner of this repository trips on the file.
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"
SHA = "a" * 40


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def rest(method: str, path: str, body: object = None, host: str = "api.github.com") -> Classification:
    raw = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    return ADAPTER.classify(Request.from_url(method, f"https://{host}{path}", body=raw))


def graphql(query: str, variables: dict[str, object] | None = None, host: str = "api.github.com") -> Classification:
    path = "/graphql" if host == "api.github.com" else "/api/graphql"
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    return ADAPTER.classify(Request.from_url("POST", f"https://{host}{path}", body=body))


def change_of(result: Classification) -> Change:
    assert result.change is not None, result
    return result.change


def refs(change: Change) -> list[tuple[str, str]]:
    return [(r.ref, r.kind) for r in change.refs]


def code(change: Change, rules: ChangeRules = DEFAULT_RULES, default: str | None = "main") -> str | None:
    verdict = judge(change, rules, "coder", default)
    return None if verdict is None else verdict.code


AGENT_ONLY = ChangeRules(allowed=("agent/**",))


def test_the_contents_api_names_its_path_branch_and_decoded_content() -> None:
    result = rest("PUT", "/repos/o/r/contents/src/app.py",
                  {"message": "add", "content": b64("print(1)\n"), "branch": "agent/x"})
    change = change_of(result)
    assert result.operations == ("contents.write",) and result.repo == "o/r"
    assert refs(change) == [("refs/heads/agent/x", FAST_FORWARD)]
    assert change.paths == ("src/app.py",) and change.added_bytes == 9
    assert change.default_branch_at == "/repos/{repo}"
    assert code(change, AGENT_ONLY) is None
    assert code(change_of(rest("PUT", "/repos/o/r/contents/a", {"content": b64("x"), "branch": "main"}))) == (
        "branch_protected")


def test_the_contents_api_without_a_branch_writes_the_default_branch() -> None:
    change = change_of(rest("PUT", "/api/v3/repos/o/r/contents/a.txt", {"message": "m", "content": b64("x")},
                            host="ghes.example.test"))
    assert refs(change) == [(DEFAULT_BRANCH_REF, FAST_FORWARD)] and change.default_branch_at == "/api/v3/repos/{repo}"
    deleted = change_of(rest("DELETE", "/repos/o/r/contents/.github/workflows/ci.yml", {"message": "m", "sha": SHA}))
    assert refs(deleted) == [(DEFAULT_BRANCH_REF, FAST_FORWARD)] and deleted.paths == (".github/workflows/ci.yml",)


def test_a_workflow_through_the_contents_api_is_staged_with_its_text() -> None:
    change = change_of(rest("PUT", "/repos/o/r/contents/.github/workflows/ci.yml",
                            {"message": "ci", "content": b64("on: push\n"), "branch": "agent/x"}))
    verdict = judge(change, DEFAULT_RULES, "coder", "main")
    assert verdict is not None and verdict.code == "path_protected" and verdict.relay == "approval"
    assert change.diffs == ((".github/workflows/ci.yml", "on: push\n"),)
    # percent-encoded and case-folded spellings of the same path
    encoded = change_of(rest("PUT", "/repos/o/r/contents/.GitHub/Workflows/ci%2Eyml",
                             {"content": b64("x"), "branch": "agent/x"}))
    assert code(encoded) == "path_protected"


def test_a_cloud_key_in_new_content_or_the_message_is_found_never_echoed() -> None:
    for body in ({"content": b64(f"KEY={CLOUD_KEY}\n"), "branch": "agent/x", "message": "m"},
                 {"content": b64("x"), "branch": "agent/x", "message": f"key {CLOUD_KEY}"},
                 {"content": b64("x"), "branch": "agent/x", "committer": {"name": CLOUD_KEY, "email": "a@b"}}):
        change = change_of(rest("PUT", "/repos/o/r/contents/conf.py", body))
        verdict = judge(change, DEFAULT_RULES, "coder", "main")
        assert verdict is not None and verdict.code == "secret_detected" and CLOUD_KEY not in verdict.why
    # the key hidden behind a JSON escape is the key GitHub stores
    raw = json.dumps({"content": b64("x"), "branch": "agent/x", "message": "k"}).replace(
        '"k"', '"\\u0041' + CLOUD_KEY[1:] + '"').encode()
    assert code(change_of(rest("PUT", "/repos/o/r/contents/a", raw))) == "secret_detected"


@pytest.mark.parametrize("body", [
    {"content": "not base64!", "branch": "agent/x"},
    {"content": b64("x") + b64("y"), "branch": "agent/x"},  # padding inside: decoders disagree
    {"content": 3, "branch": "agent/x"},
    {"branch": "agent/x"},
    {"content": b64("x"), "branch": ["agent/x"]},
    "[]",
])
def test_a_contents_body_that_cannot_be_read_exactly_is_refused(body: object) -> None:
    raw = body.encode() if isinstance(body, str) else body
    assert code(change_of(rest("PUT", "/repos/o/r/contents/a.txt", raw))) == "change_unestablished"


def test_a_branch_spelled_as_a_ref_is_judged_as_every_branch_it_may_be() -> None:
    for branch in ("refs/heads/main", "heads/main"):
        change = change_of(rest("PUT", "/repos/o/r/contents/a", {"content": b64("x"), "branch": branch}))
        assert code(change) == "branch_protected", branch


def test_git_data_refs() -> None:
    created = rest("POST", "/repos/o/r/git/refs", {"ref": "refs/heads/agent/new", "sha": SHA})
    assert created.operations == ("ref.write",) and ("refs/heads/agent/new", CREATED) in refs(change_of(created))
    assert code(change_of(created), AGENT_ONLY) is None
    assert code(change_of(rest("POST", "/repos/o/r/git/refs", {"ref": "refs/heads/feature", "sha": SHA})),
                AGENT_ONLY) == "branch_not_allowed"
    moved = rest("PATCH", "/repos/o/r/git/refs/heads/main", {"sha": SHA})
    assert moved.operations == ("ref.write",) and ("refs/heads/main", FAST_FORWARD) in refs(change_of(moved))
    assert code(change_of(moved)) == "branch_protected"
    forced = rest("PATCH", "/repos/o/r/git/refs/heads/agent/x", {"sha": SHA, "force": True})
    assert forced.operations == ("ref.write", "ref.force")
    assert rest("PATCH", "/repos/o/r/git/refs/heads/agent/x", {"sha": SHA, "force": "true"}).change.unestablished  # type: ignore[union-attr]
    deleted = rest("DELETE", "/repos/o/r/git/refs/heads/agent/x")
    assert deleted.operations == ("ref.write", "ref.delete") and ("refs/heads/agent/x", DELETED) in refs(
        change_of(deleted))
    tag = change_of(rest("DELETE", "/repos/o/r/git/refs/tags/v1"))
    assert ("refs/tags/v1", DELETED) in refs(tag)


def test_blobs_and_trees_carry_content_and_paths() -> None:
    blob = change_of(rest("POST", "/repos/o/r/git/blobs", {"content": b64(CLOUD_KEY), "encoding": "base64"}))
    assert blob.refs == () and code(blob) == "secret_detected"
    assert code(change_of(rest("POST", "/repos/o/r/git/blobs", {"content": CLOUD_KEY}))) == "secret_detected"
    assert code(change_of(rest("POST", "/repos/o/r/git/blobs", {"content": "x", "encoding": "latin1"}))) == (
        "change_unestablished")
    tree = change_of(rest("POST", "/repos/o/r/git/trees", {"base_tree": SHA, "tree": [
        {"path": "src/a.py", "mode": "100644", "type": "blob", "content": "x = 1\n"},
        {"path": ".github/workflows/ci.yml", "mode": "100644", "type": "blob", "sha": SHA}]}))
    assert tree.paths == ("src/a.py", ".github/workflows/ci.yml") and code(tree) == "path_protected"
    # a subtree put in place by id: its directory, which could hold a protected file
    nested = change_of(rest("POST", "/repos/o/r/git/trees", {"base_tree": SHA, "tree": [
        {"path": ".github", "mode": "040000", "type": "tree", "sha": SHA}]}))
    assert nested.paths == (".github/",) and code(nested) == "path_protected"
    assert code(change_of(rest("POST", "/repos/o/r/git/trees", {"tree": [
        {"path": "a/../.github/workflows/x.yml", "mode": "100644", "type": "blob", "content": "x"}]}))) == (
        "change_unestablished")
    commit = change_of(rest("POST", "/repos/o/r/git/commits", {"message": f"m {CLOUD_KEY}", "tree": SHA}))
    assert code(commit) == "secret_detected"


def test_merges_renames_and_pull_requests() -> None:
    assert code(change_of(rest("POST", "/repos/o/r/merges", {"base": "main", "head": "agent/x"}))) == (
        "branch_protected")
    assert code(change_of(rest("POST", "/repos/o/r/merge-upstream", {"branch": "main"}))) == "branch_protected"
    renamed = rest("POST", "/repos/o/r/branches/agent/x/rename", {"new_name": "agent/y"})
    assert "ref.delete" in renamed.operations
    assert ("refs/heads/agent/x", DELETED) in refs(change_of(renamed))
    pull = change_of(rest("POST", "/repos/o/r/pulls", {"head": "octo:feature", "base": "main", "title": "t"}))
    assert pull.heads == ("feature",) and pull.refs == ()
    assert code(pull, AGENT_ONLY) == "branch_not_allowed" and code(pull) is None
    assert code(change_of(rest("POST", "/repos/o/r/pulls", {"head": "agent/x", "base": "main"})), AGENT_ONLY) is None
    retarget = change_of(rest("PATCH", "/repos/o/r/pulls/7", {"base": "main"}))
    assert code(retarget) == "branch_protected"
    assert rest("PATCH", "/repos/o/r/pulls/7", {"title": "t"}).change is None
    assert rest("PUT", "/repos/o/r/pulls/7/merge", {}).change is None  # pr.merge's mode or relay decides


COMMIT = """mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }"""


def commit_input(branch: str, additions: list[tuple[str, str]], deletions: tuple[str, ...] = ()) -> dict[str, object]:
    return {"input": {
        "branch": {"repositoryNameWithOwner": "o/r", "branchName": branch},
        "message": {"headline": "change"}, "expectedHeadOid": SHA,
        "fileChanges": {"additions": [{"path": p, "contents": b64(t)} for p, t in additions],
                        "deletions": [{"path": p} for p in deletions]}}}


def test_create_commit_on_branch() -> None:
    result = graphql(COMMIT, commit_input("agent/x", [("src/a.py", "x\n")], ("old.txt",)))
    change = change_of(result)
    assert result.operations == ("ref.write",) and result.repo == "o/r"
    assert refs(change) == [("refs/heads/agent/x", FAST_FORWARD)] and change.paths == ("src/a.py", "old.txt")
    assert change.default_branch_at == "/repos/{repo}" and code(change, AGENT_ONLY) is None
    ghes = change_of(graphql(COMMIT, commit_input("agent/x", [("a", "x")]), host="ghes.example.test"))
    assert ghes.default_branch_at == "/api/v3/repos/{repo}"
    assert code(change_of(graphql(COMMIT, commit_input("main", [("a", "x")])))) == "branch_protected"
    assert code(change_of(graphql(COMMIT, commit_input("agent/x", [("a", CLOUD_KEY)])))) == "secret_detected"
    staged = change_of(graphql(COMMIT, commit_input("agent/x", [(".github/workflows/ci.yml", "on: push\n")])))
    assert code(staged) == "path_protected" and staged.diffs == ((".github/workflows/ci.yml", "on: push\n"),)
    # the same mutation written inline, and aliased twice: both fields judged
    inline = graphql('mutation { a: createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "o/r", '
                     'branchName: "agent/x"}, message: {headline: "h"}, expectedHeadOid: "' + SHA + '", '
                     'fileChanges: {}}) { commit { oid } } b: createCommitOnBranch(input: {branch: '
                     '{repositoryNameWithOwner: "o/r", branchName: "main"}, message: {headline: "h"}, '
                     'expectedHeadOid: "' + SHA + '", fileChanges: {}}) { commit { oid } } }')
    assert code(change_of(inline)) == "branch_protected"
    by_id = graphql(COMMIT, {"input": {"branch": {"id": "REF_1"}, "message": {"headline": "h"},
                                       "expectedHeadOid": SHA, "fileChanges": {}}})
    assert code(change_of(by_id)) == "change_unestablished"
    both = graphql(COMMIT, {"input": {"branch": {"id": "REF_1", "repositoryNameWithOwner": "o/r",
                                                 "branchName": "agent/x"}, "message": {"headline": "h"},
                                      "expectedHeadOid": SHA, "fileChanges": {}}})
    assert code(change_of(both)) == "change_unestablished"  # GitHub could take the id: not guessed


def test_graphql_ref_mutations() -> None:
    created = graphql('mutation { createRef(input: {repositoryId: "R_1", name: "refs/heads/feature", '
                      'oid: "' + SHA + '"}) { ref { id } } }')
    assert code(change_of(created), AGENT_ONLY) == "branch_not_allowed"
    forced = graphql('mutation { updateRef(input: {refId: "REF_1", oid: "' + SHA + '", force: true}) { ref { id } } }')
    assert "ref.force" in forced.operations
    moved = graphql('mutation { updateRef(input: {refId: "REF_1", oid: "' + SHA + '"}) { ref { id } } }')
    assert "ref.force" not in moved.operations and code(change_of(moved)) == "change_unestablished"
    deleted = graphql('mutation { deleteRef(input: {refId: "REF_1"}) { clientMutationId } }')
    assert "ref.delete" in deleted.operations
    many = graphql('mutation($u: [RefUpdate!]!) { updateRefs(input: {repositoryId: "R_1", refUpdates: $u}) '
                   '{ clientMutationId } }', {"u": [
                       {"name": "refs/heads/agent/a", "afterOid": SHA, "beforeOid": SHA},
                       {"name": "refs/heads/agent/b", "afterOid": SHA, "force": True},
                       {"name": "refs/heads/agent/c", "afterOid": "0" * 40}]})
    assert set(many.operations) >= {"ref.write", "ref.force", "ref.delete"}
    merged = graphql('mutation { mergeBranch(input: {repositoryId: "R_1", base: "main", head: "agent/x"}) '
                     '{ clientMutationId } }')
    assert code(change_of(merged)) == "branch_protected"
    linked = graphql('mutation { createLinkedBranch(input: {issueId: "I_1", oid: "' + SHA + '", name: "feature"}) '
                     '{ clientMutationId } }')
    assert code(change_of(linked), AGENT_ONLY) == "branch_not_allowed"
    pull = graphql('mutation { createPullRequest(input: {repositoryId: "R_1", baseRefName: "main", '
                   'headRefName: "feature", title: "t"}) { pullRequest { id } } }')
    assert code(change_of(pull), AGENT_ONLY) == "branch_not_allowed" and code(change_of(pull)) is None
    retarget = graphql('mutation { updatePullRequest(input: {pullRequestId: "PR_1", baseRefName: "main"}) '
                       '{ clientMutationId } }')
    assert code(change_of(retarget)) == "branch_protected"
    titled = graphql('mutation { updatePullRequest(input: {pullRequestId: "PR_1", title: "t"}) { clientMutationId } }')
    assert titled.change is None


def test_a_query_string_on_a_write_is_not_guessed_at() -> None:
    """GitHub merges query parameters with the body's: ``?branch=main`` beside a body naming
    an agent branch is not established, and a deletion stays a deletion."""
    raw = json.dumps({"content": b64("x"), "branch": "agent/x"}).encode()
    result = ADAPTER.classify(Request.from_url("PUT", "https://api.github.com/repos/o/r/contents/a?branch=main",
                                               body=raw))
    assert code(change_of(result)) == "change_unestablished"
    deleted = ADAPTER.classify(Request.from_url("DELETE", "https://api.github.com/repos/o/r/git/refs/heads/x?a=1"))
    assert "ref.delete" in deleted.operations


def test_gh_api_shows_the_gate_what_its_fields_change() -> None:
    """At the gate, ``gh api``'s ``-f``/``-F`` fields are the body: the branch and path rules
    judge what they show; a body the line does not show (``--input``) is left to the proxy."""
    put = ADAPTER.classify_command(["gh", "api", "-X", "PUT", "repos/o/r/contents/.github/workflows/ci.yml",
                                    "-f", "message=ci", "-f", f"content={b64('on: push')}", "-f", "branch=agent/x"])
    assert put is not None and put.change is not None and put.change.paths == (".github/workflows/ci.yml",)
    assert code(put.change) == "path_protected"
    keyed = ADAPTER.classify_command(["gh", "api", "-X", "PUT", "repos/o/r/contents/a.py", "-f", "message=m",
                                      "-f", f"content={b64(CLOUD_KEY)}", "-f", "branch=agent/x"])
    assert keyed is not None and keyed.change is not None and code(keyed.change) == "secret_detected"
    hidden = ADAPTER.classify_command(["gh", "api", "-X", "PATCH", "repos/o/r/git/refs/heads/x", "--input", "b.json"])
    assert hidden is not None and hidden.change is None and hidden.operations == ("ref.write",)
    gone = ADAPTER.classify_command(["gh", "api", "-X", "DELETE", "repos/o/r/git/refs/heads/x", "--input", "b.json"])
    assert gone is not None and gone.operations == ("ref.write", "ref.delete")


@pytest.mark.parametrize(("tree", "unestablished"), [
    ([{"path": "a.txt", "mode": "100644", "type": "blob", "content": "x"},
      {"path": "a.txt", "mode": "100644", "type": "blob", "content": "y"}], "twice"),
    ([{"path": "sub/.GIT/config", "mode": "100644", "type": "blob", "content": "x"}], ".git"),
    ([{"path": "a.txt", "mode": "10064x", "type": "blob", "content": "x"}], "not octal"),
])
def test_a_tree_git_would_read_otherwise_is_unestablished(tree: list[dict[str, str]], unestablished: str) -> None:
    change = rest_change("git/create-tree", "/repos/o/r/git/trees", json.dumps({"tree": tree}).encode(), "")
    assert change is not None and unestablished in change.unestablished


def test_a_zero_padded_or_bare_tree_mode_is_a_directory() -> None:
    for mode in ("040000", "40000", "0040000"):
        tree = [{"path": ".github/workflows", "mode": mode, "sha": None}]
        change = rest_change("git/create-tree", "/repos/o/r/git/trees", json.dumps({"tree": tree}).encode(), "")
        assert change is not None and change.paths == (".github/workflows/",), (mode, change)
