"""What a Gitea or Forgejo API write changes (:mod:`gitvow_gitea.changes`): the contents,
diffpatch and branches endpoints read as Go reads them, the rest unestablished."""

from __future__ import annotations

import base64
import json

from gitvow.change import Change
from gitvow.request import Classification, Request
from gitvow_gitea import GiteaAdapter

API = "https://codeberg.org/api/v1/repos/team/app"
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"
JSON = {"content-type": "application/json"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def classify(method: str, path: str, body: object = None, *, headers: dict[str, str] | None = None,
             raw: bytes | None = None) -> Classification:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    return GiteaAdapter().classify(Request.from_url(method, f"{API}{path}", body=data, headers=headers or JSON))


def change_of(result: Classification) -> Change:
    assert result.change is not None, result
    return result.change


def test_the_multi_file_contents_api_names_every_path() -> None:
    body = {"branch": "main", "new_branch": "agent/x", "files": [
        {"operation": "create", "path": "src/a.py", "content": b64("print(1)\n")},
        {"operation": "update", "path": ".gitea/workflows/ci.yml", "from_path": "ci.yml", "content": b64("on: push\n")},
        {"operation": "delete", "path": "old.txt"},
    ]}
    result = classify("POST", "/contents", body)
    change = change_of(result)
    assert result.operations == ("contents.write",)
    assert change.paths == ("src/a.py", "ci.yml", ".gitea/workflows/ci.yml", "old.txt")
    assert change.refs[0].ref == "refs/heads/agent/x" and change.refs[0].kind == "created"
    assert "on: push" in dict(change.diffs)[".gitea/workflows/ci.yml"]


def test_no_branch_is_the_default_branch() -> None:
    change = change_of(classify("PUT", "/contents/docs/a.md", {"content": b64("x"), "sha": "abc"}))
    assert change.refs[0].ref == "HEAD" and change.paths == ("docs/a.md",)
    assert change_of(classify("DELETE", "/contents/.forgejo/workflows/x.yml", {"sha": "a"})).paths == \
        (".forgejo/workflows/x.yml",)


def test_a_key_in_the_content_is_found() -> None:
    change = change_of(classify("POST", "/contents/k.py", {"branch": "agent/x", "content": b64(f"K='{CLOUD_KEY}'")}))
    assert [(s.kind, s.path) for s in change.secrets] == [("aws_access_key", "k.py")]


def test_what_gitea_could_read_otherwise_is_unestablished() -> None:
    cases = [
        ("POST", "/contents/.gitea%5Cworkflows%5Cci.yml", {"content": b64("x"), "branch": "agent/x"}),
        ("POST", "/contents/a.txt", {"content": "not base64!", "branch": "agent/x"}),
        ("POST", "/contents/a.txt", {"content": b64("x"), "branch": "agent/x", "Branch": "main"}),
        ("POST", "/contents/a.txt", {"content": b64("x"), "branch": "refs/heads/main"}),
        ("POST", "/contents", {"files": [{"operation": "upload", "path": "a", "content": b64("x")}]}),
        ("POST", "/contents", {"files": [{"operation": "create", "path": "a/../b", "content": b64("x")}]}),
        ("POST", "/contents", {"files": [{"operation": "create", "path": "a", "PATH": "b", "content": b64("x")}]}),
        ("POST", "/contents", {"files": []}),
        ("POST", "/diffpatch", {"branch": "agent/x", "content": "not a patch at all\n"}),
        ("POST", "/diffpatch", {"branch": "agent/x", "content": "--- a/x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n"}),
        ("POST", "/diffpatch", {"branch": "agent/x", "content": 'diff --git "a/x y" "b/x y"\n'}),
    ]
    for method, path, body in cases:
        assert change_of(classify(method, path, body)).unestablished, (path, body)
    form = classify("POST", "/contents/a.txt", raw=b"content=eA%3D%3D&branch=main",
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert change_of(form).unestablished
    assert change_of(classify("POST", "/contents/a.txt", raw=b"[1]")).unestablished


def test_a_patch_names_the_files_of_its_headers() -> None:
    patch = ("diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n"
             "diff --git a/ci.yml b/.gitea/workflows/ci.yml\nrename from ci.yml\nrename to .gitea/workflows/ci.yml\n")
    change = change_of(classify("POST", "/diffpatch", {"branch": "agent/x", "content": patch}))
    assert set(change.paths) == {"src/a.py", "ci.yml", ".gitea/workflows/ci.yml"}
    assert change.added_bytes == len(patch)


def test_a_patch_is_read_by_gits_own_rules_not_only_its_diff_git_headers() -> None:
    """``git apply`` also writes from traditional ``---``/``+++`` sections, ``copy to`` lines and
    quoted names: each is read as git reads it (the paths git names), so none slips past [paths]."""
    traditional = "--- a/.gitea/workflows/ci.yml\n+++ b/.gitea/workflows/ci.yml\n@@ -1 +1 @@\n-a\n+b\n"
    copied = ("diff --git a/ci.yml b/.gitea/workflows/deploy.yml\nsimilarity index 100%\n"
              "copy from ci.yml\ncopy to .gitea/workflows/deploy.yml\n")
    quoted = ('diff --git "a/x y" "b/.gitea/workflows/x y.yml"\nsimilarity index 100%\n'
              'rename from "x y"\nrename to ".gitea/workflows/x y.yml"\n')
    after = ("--- /dev/null\n+++ b/.gitea/workflows/late.yml\n@@ -0,0 +1 @@\n+on: push\n"
             "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n")
    for patch, path in ((traditional, ".gitea/workflows/ci.yml"), (copied, ".gitea/workflows/deploy.yml"),
                        (quoted, ".gitea/workflows/x y.yml"), (after, ".gitea/workflows/late.yml")):
        change = change_of(classify("POST", "/diffpatch", {"branch": "agent/x", "content": patch}))
        assert not change.unestablished and path in change.paths, (patch, change.paths)


def test_branches_created_deleted_and_renamed() -> None:
    created = change_of(classify("POST", "/branches", {"new_branch_name": "agent/n", "old_ref_name": "main"}))
    assert created.refs[0].ref == "refs/heads/agent/n" and created.refs[0].kind == "created"
    deleted = classify("DELETE", "/branches/agent/old")
    assert deleted.operations == ("ref.write", "ref.delete") and change_of(deleted).refs[0].ref == "refs/heads/agent/old"
    renamed = classify("PATCH", "/branches/main", {"name": "agent/main"})
    assert "ref.delete" in renamed.operations
    assert [r.ref for r in change_of(renamed).refs] == ["refs/heads/main", "refs/heads/agent/main"]


def test_the_default_branch_is_read_where_gitea_serves_git() -> None:
    assert GiteaAdapter().git_repository_path(Request.from_url("POST", f"{API}/contents"), "team/app") == \
        "/team/app.git"


def test_tags_are_refs_of_their_own() -> None:
    created = change_of(classify("POST", "/tags", {"tag_name": "v1", "target": "main"}))
    assert created.refs[0].ref == "refs/tags/v1" and created.refs[0].kind == "created"
    deleted = classify("DELETE", "/tags/v1.0")
    assert deleted.operations == ("ref.write", "ref.delete") and change_of(deleted).refs[0].ref == "refs/tags/v1.0"


def test_merge_upstream_is_the_forges_to_say_so_unestablished() -> None:
    assert change_of(classify("POST", "/merge-upstream", {"branch": "agent/x"})).unestablished


def test_a_key_in_a_patch_or_a_message_is_found() -> None:
    patch = f"diff --git a/k.py b/k.py\n--- a/k.py\n+++ b/k.py\n@@ -0,0 +1 @@\n+K = '{CLOUD_KEY}'\n"
    assert change_of(classify("POST", "/diffpatch", {"branch": "agent/x", "content": patch})).secrets
    escaped = json.dumps({"branch": "agent/x", "message": CLOUD_KEY, "content": b64("x")}).replace("AKIA", "\\u0041KIA")
    found = change_of(classify("POST", "/contents/a.txt", raw=escaped.encode())).secrets
    assert [s.kind for s in found] == ["aws_access_key"]


def test_a_pull_requests_base_is_a_base_change_and_its_head_the_agents_branch() -> None:
    retarget = classify("PATCH", "/pulls/7", {"base": "main"})
    assert retarget.operations == ("pr.edit",)
    assert [(r.ref, r.kind) for r in change_of(retarget).refs] == [("refs/heads/main", "fast-forward")]
    assert classify("PATCH", "/pulls/7", {"title": "t"}).change is None
    assert change_of(classify("PATCH", "/pulls/7", {"base": "agent/x", "Base": "main"})).unestablished
    assert change_of(classify("PATCH", "/pulls/7", {"base": "refs/heads/main"})).unestablished
    opened = change_of(classify("POST", "/pulls", {"head": "fork:agent/x", "base": "main", "title": "t"}))
    assert opened.heads == ("agent/x",) and opened.refs == ()


def test_a_patch_git_cannot_read_is_unestablished() -> None:
    for patch in ("", "just words\n", "diff --git a/a b/a\nnew file mode 100644\n--- /dev/null\n+++ b/c\n"):
        assert change_of(classify("POST", "/diffpatch", {"branch": "agent/x", "content": patch})).unestablished, patch


def test_a_header_that_names_one_file_and_a_section_that_writes_another_is_read_as_git_writes_it() -> None:
    """``diff --git a/a b/a`` then ``+++ b/.gitea/workflows/x.yml``: git writes the second name."""
    patch = "diff --git a/a b/a\n--- a/a\n+++ b/.gitea/workflows/x.yml\n@@ -1 +1 @@\n-x\n+y\n"
    got = change_of(classify("POST", "/diffpatch", {"branch": "agent/x", "content": patch}))
    assert ".gitea/workflows/x.yml" in got.paths, got.paths
