from __future__ import annotations

import base64
import gzip

import pytest

from gitvow.adapter import configured
from gitvow.errors import PolicyError
from gitvow.request import ZERO_OID, Request
from gitvow_gitsmart import PktLineError, classify_git, read_ref_updates
from gitvow_gitsmart.adapter import GitSmartAdapter, pkt, push_body

A, B = "a" * 40, "b" * 40


def post(path: str, body: bytes, **headers: str) -> Request:
    return Request.from_url("POST", f"https://git.example.test{path}", body=body, headers=headers)


def test_push_commands_carry_created_updated_and_deleted_refs() -> None:
    body = push_body((ZERO_OID, B, "refs/heads/new"), (A, B, "refs/heads/main"), (A, ZERO_OID, "refs/tags/old"))
    got = classify_git(post("/team/app.git/git-receive-pack", body))
    assert got is not None and got.operations == ("git.push", "ref.delete") and got.repo == "team/app"
    assert [(r.ref, r.kind) for r in got.refs] == [("refs/heads/new", "create"), ("refs/heads/main", "update"), ("refs/tags/old", "delete")]
    assert got.change is not None
    assert [(r.ref, r.kind) for r in got.change.refs] == [
        ("refs/heads/new", "created"), ("refs/heads/main", "fast-forward"), ("refs/tags/old", "deleted")]


def test_shallow_lines_are_skipped_and_sha256_ids_accepted() -> None:
    sha256 = "c" * 64
    body = pkt(b"shallow " + A.encode() + b"\n") + pkt(f"{ZERO_OID} {sha256} refs/heads/x\0caps\n".encode()) + b"0000"
    assert [r.new for r in read_ref_updates(body)] == [sha256]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"", "truncated"),
        (b"00", "truncated"),
        (b"zzzz", "bad pkt-line length"),
        (b"0003", "bad pkt-line length"),
        (b"0100short", "bad pkt-line length"),
        (pkt(b"not a command\n") + b"0000", "not a ref-update command"),
        (pkt(f"{A} {B}\n".encode()) + b"0000", "not a ref-update command"),
        (pkt(f"{A} {B} refs/heads/main\n".encode()), "truncated"),
    ],
)
def test_unreadable_commands_raise(body: bytes, error: str) -> None:
    with pytest.raises(PktLineError, match=error):
        read_ref_updates(body)


def test_commands_beyond_the_limit_are_refused_not_truncated() -> None:
    body = push_body(*[(A, B, f"refs/heads/b{i}") for i in range(100)])
    assert len(read_ref_updates(body)) == 100
    with pytest.raises(PktLineError, match="exceed 1000 bytes"):
        read_ref_updates(body, limit=1000)
    got = classify_git(post("/r.git/git-receive-pack", body), limit=1000)
    assert got is not None and got.operations == ("unknown",) and "exceed" in got.note


def test_gzip_encoded_push_is_inflated_within_bounds() -> None:
    body = gzip.compress(push_body((A, B, "refs/heads/main")))
    got = classify_git(post("/r.git/git-receive-pack", body, **{"Content-Encoding": "gzip"}))
    assert got is not None and [r.ref for r in got.refs] == ["refs/heads/main"]
    broken = classify_git(post("/r.git/git-receive-pack", b"not gzip", **{"Content-Encoding": "gzip"}))
    assert broken is not None and broken.operations == ("unknown",)


@pytest.mark.parametrize(
    ("method", "path", "ops", "repo"),
    [
        ("GET", "/o/r.git/info/refs?service=git-upload-pack", ("git.fetch",), "o/r"),
        ("GET", "/o/r/info/refs?service=git-receive-pack", ("git.push",), "o/r"),
        ("POST", "/group/sub/proj.git/git-upload-pack", ("git.fetch",), "group/sub/proj"),
        ("GET", "/o/r.git/info/refs", ("unknown",), "o/r"),
        ("GET", "/o/r.git/info/refs?service=git-upload-pack&service=git-receive-pack", ("unknown",), "o/r"),
        ("GET", "/o/r.git/git-receive-pack", ("unknown",), "o/r"),
        ("GET", "/o/r.git/HEAD", ("unknown",), "o/r"),
        ("PUT", "/o/r.git/info/refs?service=git-upload-pack", ("unknown",), "o/r"),
    ],
)
def test_paths_and_services(method: str, path: str, ops: tuple[str, ...], repo: str) -> None:
    got = classify_git(Request.from_url(method, f"https://h.test{path}"))
    assert got is not None and (got.operations, got.repo) == (ops, repo)


def test_non_git_paths_are_not_claimed() -> None:
    assert classify_git(Request.from_url("POST", "https://h.test/repos/o/r/pulls")) is None


def test_mount_prefix_is_stripped_when_configured() -> None:
    adapter = GitSmartAdapter()
    adapter = configured(adapter, {"strip_prefix": "/git/"})
    got = adapter.classify(Request.from_url("GET", "https://h.test/git/o/r.git/info/refs?service=git-upload-pack"))
    assert got.repo == "o/r"


def test_unknown_options_are_named() -> None:
    with pytest.raises(PolicyError, match="strip_prefx"):
        configured(GitSmartAdapter(), {"strip_prefx": "/git"})


def test_credentials_are_basic_auth_and_keep_a_given_user() -> None:
    adapter = GitSmartAdapter()
    req = Request.from_url("GET", "https://h.test/o/r.git/info/refs?service=git-upload-pack")
    assert base64.b64decode(adapter.credential_headers(req, "tok")["authorization"][6:]) == b"x-access-token:tok"
    assert base64.b64decode(adapter.credential_headers(req, "bob:pw")["authorization"][6:]) == b"bob:pw"


@pytest.mark.parametrize(
    ("argv", "ops", "summary"),
    [
        (["git", "push", "origin", "main"], ("git.push",), "git push"),
        (["git", "-C", "repo", "push", "--force", "origin", "main"], ("git.push", "ref.force"), "git push (force)"),
        (["git", "push", "origin", "+main"], ("git.push", "ref.force"), "git push (force)"),
        (["git", "push", "--force-with-lease=main:abc", "origin", "main"], ("git.push", "ref.force"), "git push (force)"),
        (["git", "push", "origin", ":old"], ("git.push", "ref.delete"), "git push (deletes a ref)"),
        (["/usr/bin/git", "push", "--delete", "origin", "x"], ("git.push", "ref.delete"), "git push (deletes a ref)"),
        (["git", "push", "--mirror", "origin"], ("git.push", "ref.force", "ref.delete"), "git push (force, deletes a ref)"),
        (["git", "fetch", "--all"], ("git.fetch",), "git fetch"),
        (["git", "clone", "https://x/y"], ("git.fetch",), "git clone"),
    ],
)
def test_git_command_lines(argv: list[str], ops: tuple[str, ...], summary: str) -> None:
    got = GitSmartAdapter().classify_command(argv)
    assert got is not None and (got.operations, got.summary) == (ops, summary)


@pytest.mark.parametrize("argv", [["git", "status"], ["git", "commit", "-m", "push"], ["gitk"], ["echo", "git", "push"], ["git"]])
def test_local_git_commands_are_not_forge_operations(argv: list[str]) -> None:
    assert GitSmartAdapter().classify_command(argv) is None


@pytest.mark.parametrize(
    ("line", "refs", "unread"),
    [
        ("git push origin HEAD:main", [("refs/heads/main", "fast-forward")], False),
        ("git push origin +feature", [("refs/heads/feature", "forced")], False),
        ("git push -f origin feature", [("refs/heads/feature", "forced")], False),
        ("git push --force-with-lease origin a b", [("refs/heads/a", "forced"), ("refs/heads/b", "forced")], False),
        ("git push origin :b", [("refs/heads/b", "deleted")], False),
        ("git push --delete origin b", [("refs/heads/b", "deleted")], False),
        ("git push -d origin b refs/tags/v1", [("refs/heads/b", "deleted"), ("refs/tags/v1", "deleted")], False),
        ("git push origin refs/heads/x:refs/heads/main", [("refs/heads/main", "fast-forward")], False),
        ("git push origin x:heads/main", [("refs/heads/main", "fast-forward")], False),
        ("git push origin v1:tags/v1", [("refs/tags/v1", "fast-forward")], False),
        ("git push -o ci.skip origin agent/x", [("refs/heads/agent/x", "fast-forward")], False),
        ("git push --push-option=ci.skip --repo origin agent/x", [], True),  # agent/x is then the remote
        ("git push origin -- agent/x", [("refs/heads/agent/x", "fast-forward")], False),
        ("git push", [], True),
        ("git push origin", [], True),
        ("git push -f", [], True),
        ("git push --force-with-lease", [], True),
        ("git push --mirror", [], True),
        ("git push --all origin", [], True),
        ("git push origin HEAD", [], True),
        ("git push origin @", [], True),
        ("git push origin 'refs/heads/*:refs/heads/*'", [], True),
        ("git push origin 0123abcd0123abcd", [], True),
        ("git push origin main agent/x HEAD", [("refs/heads/main", "fast-forward"), ("refs/heads/agent/x", "fast-forward")], True),
    ],
)
def test_push_command_lines_name_the_refs_they_write(line: str, refs: list[tuple[str, str]], unread: bool) -> None:
    """The gate reads a push's destinations from its refspecs, as the proxy reads them from the
    commands; what the line cannot name (the checkout's branch, every branch) is unread, and the
    change stage refuses it wherever a listed branch rule could refuse one."""
    import shlex

    got = GitSmartAdapter().classify_command(shlex.split(line))
    assert got is not None and got.change is not None
    assert [(r.ref, r.kind) for r in got.change.refs] == refs
    assert bool(got.change.unread_refs) == unread


_A, _B = "a" * 40, "b" * 40


@pytest.mark.parametrize("ref", [
    "refs/heads//main", "refs/heads/main/", "refs/heads/main.", "refs/heads/.hidden", "refs/heads/main.lock",
    "refs/heads/a..b", "refs/heads/main@{1}", "refs/heads/ma in", "refs/heads/ma\tin", "refs/heads/m~1", "refs/heads/m^",
    "refs/heads/m:x", "refs/heads/*", "refs/heads/[x", "refs/heads/a\\b", "HEAD", "main", "refs/main", "heads/main",
])
def test_ref_names_git_refuses_are_refused_before_any_rule_reads_them(ref: str) -> None:
    """A forge that normalised ``refs/heads//main`` to ``main`` would write a branch the rules
    judged under another name: every spelling ``git check-ref-format`` refuses is unreadable."""
    from gitvow_gitsmart.adapter import push_body

    body = push_body((_A, _B, ref))
    got = classify_git(Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack", body=body))
    assert got is not None and got.operations == ("unknown",) and "push commands unreadable" in got.note


@pytest.mark.parametrize("ref", ["refs/heads/main", "refs/heads/agent/x-1.2", "refs/tags/v1.0", "refs/for/main",
                                 "refs/pull/1/head", "refs/heads/MAIN", "refs/heads/été"])
def test_well_formed_ref_names_are_read_as_sent(ref: str) -> None:
    from gitvow_gitsmart.adapter import push_body

    body = push_body((_A, _B, ref))
    got = classify_git(Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack", body=body))
    assert got is not None and got.operations == ("git.push",) and got.refs[0].ref == ref


def test_a_held_push_says_when_its_paths_were_read_from_the_new_trees_alone() -> None:
    """``approvals show`` runs in a process of its own: where the parent's trees are not known
    there, the human is told the listed paths may miss a deletion, rather than shown less silently."""
    from gitvow_gitsmart.classify import describe_push

    parentless = describe_push(push_body((ZERO_OID, _B, "refs/heads/agent/new")), lambda path: False)
    assert "paths read" not in parentless and parentless["paths"] == "README.md"
    on_top = describe_push(push_body(("c" * 40, _B, "refs/heads/agent/x")), lambda path: False)
    assert "from the pushed trees alone" in on_top["paths read"]


def _with_options(*options: str, caps: bytes = b"report-status push-options") -> bytes:
    """A push body as git sends it with ``-o``: commands, flush, the options, flush, the pack."""
    from gitvow_gitsmart.packwrite import files_commit, pack

    new, made = files_commit({"README.md": b"x\n"}, [_A])
    body = pkt(f"{_A} {new} refs/heads/agent/x".encode() + b"\0" + caps + b"\n") + b"0000"
    return body + b"".join(pkt(o.encode() + b"\n") for o in options) + b"0000" + pack(made)


@pytest.mark.parametrize(("options", "operations"), [
    ((), ("git.push",)),
    (("ci.skip",), ("git.push",)),
    (("merge_request.create", "merge_request.target=main", "merge_request.title=t"), ("git.push", "pr.create")),
    (("merge_request.create", "merge_request.merge_when_pipeline_succeeds"), ("git.push", "pr.create", "pr.merge")),
    (("merge_request.auto_merge",), ("git.push", "pr.create", "pr.merge")),
    (("ci.variable=DEPLOY=prod",), ("unknown",)),
    (("some.hook.option",), ("unknown",)),
])
def test_push_options_are_read_as_operations_or_refused(options: tuple[str, ...], operations: tuple[str, ...]) -> None:
    """GitLab acts on push options (opens a merge request, merges it when its pipeline passes):
    each is judged as the same act through the API; an option nobody reads is refused."""
    got = classify_git(Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack",
                                        body=_with_options(*options)))
    assert got is not None and got.operations == operations, got.note
    line = ["git", "push", *[f"-o{o}" if i % 2 else f"--push-option={o}" for i, o in enumerate(options)],
            "origin", "agent/x"]
    gate = GitSmartAdapter().classify_command(line)
    assert gate is not None and gate.operations == operations


def test_push_options_without_the_capability_are_the_pack_and_truncated_ones_unreadable() -> None:
    """Options are read only where the commands named ``push-options``; cut short, they are not read."""
    request = Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack",
                               body=_with_options("merge_request.create", caps=b"report-status"))
    assert classify_git(request).operations == ("unknown",)  # type: ignore[union-attr]
    cut = _with_options("merge_request.create")
    cut = cut[: cut.index(b"merge_request.create") + 5]
    got = classify_git(Request.from_url("POST", "https://git.example.test/team/app.git/git-receive-pack", body=cut))
    assert got is not None and got.operations == ("unknown",) and "unreadable" in got.note
