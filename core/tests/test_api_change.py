"""A write through an API carries a Change (:mod:`gitvow.api_change`): canonical paths and branch
names or refused, contents decoded as the forge decodes them, and a write that names no branch
judged against the repository's default branch (or refused when it is not known)."""

from __future__ import annotations

import base64

import pytest

from gitvow.api_change import (
    DEFAULT_BRANCH_REF,
    FileWrite,
    WriteUnreadable,
    branch_created,
    branch_deleted,
    canonical_branch,
    canonical_path,
    decode_content,
    file_change,
)
from gitvow.change import CREATED, DELETE_OPERATION, FAST_FORWARD, FORCE_OPERATION, FORCED, with_operations
from gitvow.change_rules import DEFAULT_RULES, ChangeRules, judge

# Shaped like an AWS access key id; assembled so that no scanner of this repository trips on the file.
CLOUD_KEY = "AKIA" + "Q3EGXZJ2MN7WPL4T"


@pytest.mark.parametrize("path", [
    "a/../.github/workflows/x.yml", "./.gitlab-ci.yml", ".github//workflows/x.yml", "/.gitlab-ci.yml",
    ".gitea/workflows/", ".gitea\\workflows\\ci.yml", "a\x00b", "a\nb", "", None, 7, "..", ".",
])
def test_a_path_a_forge_could_clean_into_another_is_refused(path: object) -> None:
    with pytest.raises(WriteUnreadable):
        canonical_path(path)


@pytest.mark.parametrize("path", [".gitlab-ci.yml", ".gitea/workflows/ci.yml", "src/a b.py", "dir/.hidden", "a..b"])
def test_a_canonical_path_is_kept_as_it_is(path: str) -> None:
    assert canonical_path(path) == path


@pytest.mark.parametrize("branch", [
    "refs/heads/main", "HEAD", "@", "a..b", "a b", "feature.lock", "-x", "a/.b", ".b", "a//b", "a/", "a.",
    "a@{1}", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "", None, ["main"],
])
def test_a_branch_name_git_refuses_or_a_forge_could_read_as_another_ref_is_refused(branch: object) -> None:
    with pytest.raises(WriteUnreadable):
        canonical_branch(branch)


def test_contents_are_decoded_as_the_forge_decodes_them() -> None:
    assert decode_content("hi", None, "f") == b"hi"
    assert decode_content("hi", "text", "f") == b"hi"
    assert decode_content("aGk=\n", "base64", "f") == b"hi"  # line breaks are ignored, as Go and Ruby do
    for value, encoding in (("a$b=", "base64"), ("aGk", "base64"), ("hi", "gzip"), (3, "text")):
        with pytest.raises(WriteUnreadable):
            decode_content(value, encoding, "f")


def test_a_file_write_counts_every_path_decodes_and_scans_its_contents() -> None:
    key = f'KEY = "{CLOUD_KEY}"\n'.encode()
    files = [
        FileWrite("src/a.py", b"x" * 10),
        FileWrite("config/s.py", decode_content(base64.b64encode(key).decode(), "base64", "f")),
        FileWrite(".gitlab-ci.yml", b"deploy:\n  script: sh\n", previous="ci.yml"),
        FileWrite("old.txt", deleted=True),
    ]
    change = file_change("agent/x", files, body=b'{"commit_message": "m"}')
    assert change.paths == ("src/a.py", "config/s.py", "ci.yml", ".gitlab-ci.yml", "old.txt")
    assert change.added_bytes == 10 + len(key) + 21 and change.largest == len(key)
    (secret,) = change.secrets
    assert secret.kind == "aws_access_key" and secret.path == "config/s.py" and CLOUD_KEY not in repr(change)
    assert dict(change.diffs)[".gitlab-ci.yml"].startswith("(moved from ci.yml)\ndeploy:")
    assert dict(change.diffs)["old.txt"] == "(deleted)"
    assert change.refs[0].ref == "refs/heads/agent/x" and change.refs[0].kind == FAST_FORWARD


def test_a_key_anywhere_in_the_body_is_found_too() -> None:
    change = file_change("agent/x", [FileWrite("a.txt", b"a")], body=f'{{"message": "{CLOUD_KEY}"}}'.encode())
    assert [s.kind for s in change.secrets] == ["aws_access_key"]
    assert judge(change, DEFAULT_RULES, None, "main").code == "secret_detected"  # type: ignore[union-attr]


def test_force_and_deletion_are_operations_of_their_own() -> None:
    forced = file_change("agent/x", [FileWrite("a", b"a")], kind=FORCED)
    assert with_operations(("ref.write",), forced) == ("ref.write", FORCE_OPERATION)
    assert with_operations(("ref.write",), branch_deleted("agent/x")) == ("ref.write", DELETE_OPERATION)
    assert branch_created("agent/y", "main").refs[0].kind == CREATED


def test_a_write_that_names_no_branch_is_judged_against_the_default_branch() -> None:
    change = file_change(None, [FileWrite("src/a.py", b"a")])
    assert change.refs[0].ref == DEFAULT_BRANCH_REF
    rules = ChangeRules(allowed=("agent/**",), default_branch=False)
    assert DEFAULT_RULES.needs_default_branch(change, None) and rules.needs_default_branch(change, None)
    refused = judge(change, DEFAULT_RULES, None, "trunk")
    assert refused is not None and refused.code == "branch_protected" and "refs/heads/trunk" in refused.why
    unknown = judge(change, DEFAULT_RULES, None, None)
    assert unknown is not None and unknown.code == "change_unestablished"
    # without the default-branch rule, the name still decides the allowed patterns
    outside = judge(change, rules, None, "trunk")
    assert outside is not None and outside.code == "branch_not_allowed"
    assert judge(change, ChangeRules(allowed=("trunk",), default_branch=False), None, "trunk") is None
