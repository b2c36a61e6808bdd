"""What a Bitbucket write changes: branches, tags, src and browse commits, pull-request targets,
and the forms they are read from (a form a server could read another way is unestablished)."""

from __future__ import annotations

import json

import pytest

from gitvow.change import Change
from gitvow.request import Classification, Request
from gitvow_bitbucket import BitbucketAdapter

R = "https://api.bitbucket.org/2.0/repositories/team/app"
DC = "https://bitbucket.example.test/rest/api/1.0/projects/PROJ/repos/app"
UTILS = "https://bitbucket.example.test/rest/branch-utils/1.0/projects/PROJ/repos/app/branches"
KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"
FORM = {"content-type": "application/x-www-form-urlencoded"}


def classify(method: str, url: str, body: bytes | object = b"", headers: dict[str, str] | None = None) -> Classification:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    if headers is None:
        headers = {"content-type": "application/json"} if raw else {}
    return BitbucketAdapter().classify(Request.from_url(method, url, headers=headers, body=raw))


def change(got: Classification) -> Change:
    assert got.change is not None, got
    return got.change


def multipart(*parts: str, boundary: str = "b0und") -> tuple[bytes, dict[str, str]]:
    body = "".join(f"--{boundary}\r\n{part}\r\n" for part in parts) + f"--{boundary}--\r\n"
    return body.encode(), {"content-type": f"multipart/form-data; boundary={boundary}"}


def field(name: str, value: str, extra: str = "") -> str:
    return f'Content-Disposition: form-data; name="{name}"{extra}\r\n\r\n{value}'


def test_branches_and_tags_name_their_ref_and_a_deletion_is_ref_delete() -> None:
    created = classify("POST", f"{R}/refs/branches", {"name": "release/2.x", "target": {"hash": "abc"}})
    assert created.operations == ("ref.write",)
    assert [(r.ref, r.kind) for r in change(created).refs] == [("refs/heads/release/2.x", "created")]
    for url, ref in ((f"{R}/refs/branches/feature/x", "refs/heads/feature/x"), (f"{R}/refs/tags/v1", "refs/tags/v1")):
        deleted = classify("DELETE", url)
        assert deleted.operations == ("ref.write", "ref.delete") and change(deleted).refs[0].ref == ref
    dc = classify("DELETE", UTILS, {"name": "refs/heads/main", "dryRun": False})
    assert dc.operations == ("ref.write", "ref.delete") and change(dc).refs[0].ref == "refs/heads/main"
    unreadable = classify("DELETE", UTILS, b"{not json")
    assert unreadable.operations == ("ref.write", "ref.delete") and change(unreadable).unestablished
    assert change(classify("POST", f"{R}/refs/branches", {"name": "refs/heads/main"})).unestablished
    assert change(classify("POST", f"{DC}/branches", {"name": "x", "startPoint": "main"})).refs[0].kind == "created"


def test_a_cloud_change_reads_the_main_branch_from_the_api() -> None:
    got = change(classify("POST", f"{R}/src", b"message=m&a.txt=x", FORM))
    assert got.refs[0].ref == "HEAD" and got.default_branch_at == "/2.0/repositories/{repo}#mainbranch.name"
    adapter = BitbucketAdapter()
    assert adapter.git_repository_path(Request.from_url("POST", f"{DC}/branches"), "PROJ/app") == "/scm/PROJ/app.git"
    assert adapter.git_repository_path(Request.from_url("POST", f"{R}/src"), "team/app") is None


def test_a_src_form_is_read_into_paths_branch_and_contents() -> None:
    body = f"branch=agent%2Fx&message=m&%2Fmessage=hello&bitbucket-pipelines.yml=x&files=old.txt&k.py={KEY}"
    got = change(classify("POST", f"{R}/src", body.encode(), FORM))
    assert got.refs[0].ref == "refs/heads/agent/x"
    assert got.paths == ("message", "bitbucket-pipelines.yml", "k.py", "old.txt")
    assert [s.path for s in got.secrets] == ["k.py"] and got.added_bytes == 5 + 1 + len(KEY)
    raw, headers = multipart(field("branch", "agent/y"), field("/src/a.py", "print(1)", '; filename="a.py"'),
                             field("files", "/gone.txt"))
    got = change(classify("POST", f"{R}/src", raw, headers))
    assert got.refs[0].ref == "refs/heads/agent/y" and got.paths == ("src/a.py", "gone.txt") and not got.unestablished
    key_in_message = change(classify("POST", f"{R}/src", f"branch=agent%2Fx&message={KEY}&a=b".encode(), FORM))
    assert key_in_message.secrets


@pytest.mark.parametrize("body, headers", [
    (b'{"branch": "agent/x", "a.txt": "x"}', {"content-type": "application/json"}),
    (b"branch=agent%2Fx&branch=main&a=b", FORM),
    (b"branch=agent%2Fx&a=b&%2Fa=c", FORM),
    (b"branch=agent%2Fx&ci%2F..%2Fbitbucket-pipelines.yml=x", FORM),
    (b"branch=refs%2Fheads%2Fmain&a=b", FORM),
    (b"branch=agent%2Fx&message=only", FORM),
    (multipart(field("branch", "agent/x"), 'Content-Disposition: form-data; name*=UTF-8\'\'a.txt\r\n\r\nx')[0],
     {"content-type": "multipart/form-data; boundary=b0und"}),
    (multipart(field("branch", "agent/x"), "Content-Transfer-Encoding: base64\r\n" + field("a.txt", "eA=="))[0],
     {"content-type": "multipart/form-data; boundary=b0und"}),
    (multipart(field("branch", "agent/x"), 'Content-Disposition: form-data;\r\n name="a.txt"\r\n\r\nx')[0],
     {"content-type": "multipart/form-data; boundary=b0und"}),
    (multipart(field("branch", "agent/x"), field("a.txt", "x"))[0][:-len(b"--b0und--\r\n")],
     {"content-type": "multipart/form-data; boundary=b0und"}),
    (multipart(field("a.txt", "x"))[0], {"content-type": "multipart/form-data"}),
    (b"preamble\r\n" + multipart(field("a.txt", "x"))[0], {"content-type": "multipart/form-data; boundary=b0und"}),
])
def test_a_src_body_read_another_way_is_unestablished(body: bytes, headers: dict[str, str]) -> None:
    got = classify("POST", f"{R}/src", body, headers)
    assert got.operations == ("contents.write",) and change(got).unestablished


def test_a_query_string_names_fields_too() -> None:
    assert change(classify("POST", f"{R}/src?branch=main", b"branch=agent%2Fx&a=b", FORM)).unestablished
    got = change(classify("POST", f"{R}/src?branch=main", b"a=b", FORM))
    assert got.refs[0].ref == "refs/heads/main"


def test_a_browse_commit_is_read_from_its_multipart_form() -> None:
    raw, headers = multipart(field("branch", "agent/new"), field("sourceBranch", "main"), field("content", "x"),
                             field("message", "m"))
    got = change(classify("PUT", f"{DC}/browse/.bitbucket/ci.yml", raw, headers))
    assert got.paths == (".bitbucket/ci.yml",) and got.refs[0].ref == "refs/heads/agent/new"
    assert got.refs[0].kind == "created"
    missing, headers = multipart(field("content", "x"))
    assert change(classify("PUT", f"{DC}/browse/a.txt", missing, headers)).unestablished


def test_a_pull_requests_destination_is_a_base_change_and_its_source_the_agents_branch() -> None:
    retarget = change(classify("PUT", f"{R}/pullrequests/7", {"destination": {"branch": {"name": "main"}}}))
    assert [(r.ref, r.kind) for r in retarget.refs] == [("refs/heads/main", "fast-forward")]
    assert classify("PUT", f"{R}/pullrequests/7", {"title": "t"}).change is None
    assert change(classify("PUT", f"{R}/pullrequests/7", {"destination": {"branch": {}}})).unestablished
    opened = change(classify("POST", f"{R}/pullrequests", {"source": {"branch": {"name": "agent/x"}}}))
    assert opened.heads == ("agent/x",) and opened.refs == ()
    assert classify("POST", f"{R}/pullrequests", {"title": "no source"}).change is None  # Bitbucket opens nothing
    assert change(classify("POST", f"{R}/pullrequests", {"source": {"branch": {}}})).unestablished
    dc = change(classify("PUT", f"{DC}/pull-requests/7", {"version": 1, "toRef": {"id": "refs/heads/main"}}))
    assert dc.refs[0].ref == "refs/heads/main"
    assert classify("PUT", f"{DC}/pull-requests/7", {"version": 1, "title": "t"}).change is None
    assert change(classify("POST", f"{DC}/pull-requests", {"fromRef": {"id": "refs/heads/agent/x"}})).heads == \
        ("agent/x",)


def test_what_the_forge_holds_is_unestablished() -> None:
    sync = "https://bitbucket.example.test/rest/sync/1.0/projects/PROJ/repos/app/synchronize"
    assert change(classify("POST", sync, {"refId": "refs/heads/main", "action": "DISCARD"})).unestablished
    suggestion = f"{DC}/pull-requests/7/comments/3/apply-suggestion"
    assert change(classify("POST", suggestion, {"version": 1})).unestablished
