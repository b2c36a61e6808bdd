"""JSON write bodies (GitHub's contents, Git Data and GraphQL writes) read by
:mod:`gitvow.api_change`: branch spellings, exact paths, strict base64, every string of the
body scanned, pull request heads, and the default branch described by a forge's API."""

from __future__ import annotations

import base64

import pytest

from gitvow.api_change import (
    BodyUnreadable,
    FileWrite,
    body_texts,
    branch_refs,
    decode_base64,
    read_json,
    ref_changes,
    write_change,
)
from gitvow.change import DEFAULT_BRANCH_REF, FAST_FORWARD, Change, RefChange
from gitvow.change_rules import DEFAULT_RULES, ChangeRules, judge
from gitvow.githead import API_HEAD_KIND, api_head_target, parse_api_head, resolve_heads

# Shaped like an AWS access key id; assembled so that no scanner of this repository trips on the file.
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"


def test_branch_spellings_the_forge_may_read_two_ways_yield_both() -> None:
    assert branch_refs("agent/x") == ("refs/heads/agent/x",)
    assert branch_refs("refs/heads/main") == ("refs/heads/main", "refs/heads/refs/heads/main")
    assert branch_refs("heads/main") == ("refs/heads/heads/main", "refs/heads/main")
    assert branch_refs("refs/tags/v1") == ("refs/tags/v1", "refs/heads/refs/tags/v1")
    assert branch_refs("  ") == ()
    refs = ref_changes(branch_refs("heads/main"), FAST_FORWARD)
    verdict = judge(Change(refs=refs), DEFAULT_RULES, "a", "main")
    assert verdict is not None and verdict.code == "branch_protected"


@pytest.mark.parametrize(("raw", "expected"), [
    ("src/app.py", "src/app.py"),
    (".github/", ".github/"),  # a directory (a subtree put in place by id)
    ("a/../.github/workflows/ci.yml", None),
    ("./x", None),
    ("a//b", None),
    ("a\\b", None),
    ("a\nb", None),
])
def test_paths_are_exact_or_refused(raw: str, expected: str | None) -> None:
    change = write_change((), [FileWrite(raw, b"x")])
    if expected is None:
        assert change.unestablished and change.paths == ()
    else:
        assert change.paths == (expected,) and not change.unestablished


def test_base64_is_strict() -> None:
    assert decode_base64(base64.b64encode(b"hello").decode()) == b"hello"
    assert decode_base64("aGVs\nbG8=\n") == b"hello"  # line breaks, as some clients wrap it
    for bad in ("aGVsbG8=aGVsbG8=", "aGVs_G8=", "aGVsbG8", "not base64!"):  # decoders would disagree
        assert decode_base64(bad) is None, bad


def test_every_string_of_the_body_is_read_decoded() -> None:
    data = read_json(b'{"message": "\\u0041KIA' + CLOUD_KEY[4:].encode() + b'", "committer": {"name": "x"}}')
    texts = list(body_texts(data))
    assert CLOUD_KEY in texts and "committer" in texts and "x" in texts
    assert "c2VjcmV0" not in list(body_texts({"content": "c2VjcmV0"}, skip=frozenset({"content"})))
    with pytest.raises(BodyUnreadable):
        read_json(b"[1]")
    with pytest.raises(BodyUnreadable):  # parsers differ on which one counts
        read_json(b'{"branch": "agent/x", "branch": "main"}')
    with pytest.raises(BodyUnreadable):
        read_json(b'{"tree": [{"path": "a", "path": ".github/workflows/x.yml"}]}')
    with pytest.raises(BodyUnreadable):
        read_json(b'{"ref": "x"}', limit=5)
    with pytest.raises(BodyUnreadable):
        read_json(b"{nope")


def test_write_change_counts_scans_and_keeps_protected_text() -> None:
    change = write_change(
        ref_changes(branch_refs("agent/x"), FAST_FORWARD),
        [FileWrite("config/a.py", f'KEY = "{CLOUD_KEY}"\n'.encode()), FileWrite(".github/workflows/ci.yml", b"on: push\n"),
         FileWrite("old.txt", None)],
        texts=["add config"],
    )
    assert change.paths == ("config/a.py", ".github/workflows/ci.yml", "old.txt")
    assert change.added_bytes == len(f'KEY = "{CLOUD_KEY}"\n') + 9 and change.largest == len(f'KEY = "{CLOUD_KEY}"\n')
    assert [(s.kind, s.path) for s in change.secrets] == [("aws_access_key", "config/a.py")]
    assert dict(change.diffs)[".github/workflows/ci.yml"] == "on: push\n"
    assert CLOUD_KEY not in str(change.diffs)  # a file holding a credential is never shown
    verdict = judge(change, DEFAULT_RULES, "a", "main")
    assert verdict is not None and verdict.code == "secret_detected" and CLOUD_KEY not in verdict.why
    # a secret only in the commit message is found too
    message = write_change(ref_changes(branch_refs("agent/x"), FAST_FORWARD), [], texts=[f"oops {CLOUD_KEY}"])
    assert [s.kind for s in message.secrets] == ["aws_access_key"]
    bad = write_change((), [FileWrite("a/../b", b"x")])
    verdict = judge(bad, DEFAULT_RULES, "a")
    assert verdict is not None and verdict.code == "change_unestablished"


def test_a_write_that_names_no_branch_goes_to_the_default_branch() -> None:
    change = write_change([RefChange(DEFAULT_BRANCH_REF, "", "", FAST_FORWARD)], [FileWrite("a.txt", b"x")],
                          default_branch_at="/repos/{repo}")
    assert DEFAULT_RULES.needs_default_branch(change, "a")
    verdict = judge(change, DEFAULT_RULES, "a", "trunk")
    assert verdict is not None and verdict.code == "branch_protected" and "refs/heads/trunk" in verdict.why
    verdict = judge(change, ChangeRules(default_branch=False, allowed=("agent/**",)), "a", "trunk")
    assert verdict is not None and verdict.code == "branch_not_allowed"
    assert judge(change, ChangeRules(default_branch=False), "a", "trunk") is None
    # where nobody asked the forge: which branch it writes is not established
    verdict = judge(change, DEFAULT_RULES, "a")
    assert verdict is not None and verdict.code == "change_unestablished"


def test_a_pull_request_head_is_judged_by_the_allowed_patterns_only() -> None:
    rules = ChangeRules(allowed=("agent/**",))
    assert judge(Change(heads=("agent/x",)), rules, "a", "main") is None
    verdict = judge(Change(heads=("feature",)), rules, "a", "main")
    assert verdict is not None and verdict.code == "branch_not_allowed"
    assert judge(Change(heads=("main",)), DEFAULT_RULES, "a", "main") is None  # opening a PR from it writes nothing


def test_the_api_describes_the_default_branch() -> None:
    target = api_head_target("O/R", "/repos/O/R")
    assert target.kind == API_HEAD_KIND and target.value == "o/r"
    assert parse_api_head(b'{"default_branch": "trunk"}') == "trunk"
    for body in (b"[]", b"{}", b'{"default_branch": 3}', b"nope"):
        assert parse_api_head(body) is None
    asked: list[str] = []

    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        asked.append(path)
        return (200, b'{"default_branch": "trunk"}') if path == "/repos/O/R" else (404, b"{}")

    other = api_head_target("o/x", "/repos/o/x")
    answers = resolve_heads([target, other], fetch)
    assert answers[target].type == "trunk" and other not in answers and asked == ["/repos/O/R", "/repos/o/x"]


def test_an_api_that_names_the_default_branch_elsewhere_says_where_after_a_fragment() -> None:
    """Bitbucket Cloud's ``mainbranch.name``: the key path after ``#``, never sent on the wire."""
    assert parse_api_head(b'{"mainbranch": {"name": "trunk"}}', "mainbranch.name") == "trunk"
    for body in (b'{"mainbranch": "trunk"}', b'{"mainbranch": {"name": ""}}', b'{"default_branch": "x"}'):
        assert parse_api_head(body, "mainbranch.name") is None
    asked: list[str] = []

    def fetch(method: str, path: str, body: bytes) -> tuple[int, bytes]:
        asked.append(path)
        return 200, b'{"mainbranch": {"name": "trunk", "type": "branch"}}'

    target = api_head_target("w/r", "/2.0/repositories/w/r#mainbranch.name")
    assert resolve_heads([target], fetch)[target].type == "trunk" and asked == ["/2.0/repositories/w/r"]
