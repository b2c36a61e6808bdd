"""Credentials of known formats found in what a write adds, named by kind and fingerprint only;
the committed pattern set is what scripts/derive_secret_patterns.py derives from detect-secrets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitvow.secrets import fingerprint, scan, scan_text

ROOT = Path(__file__).resolve().parents[2]

# Assembled at run time so that no scanner of this repository trips on the file itself.
SAMPLES = {
    "aws_access_key": "AKIA" + "Q3EGXZJ2MN7WPL4T",
    "github_token": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "gitlab_token": "glpat-" + "xR4nD0mT0k3nV4lu3zzz",
    "slack_token": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "private_key": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----",
    "sendgrid_key": "SG." + "aaaaaaaaaaaaaaaaaaaaaa" + "." + "b" * 43,
    "azure_storage_key": "AccountKey=" + "A" * 86 + "==",
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_format_is_found_by_kind_with_a_fingerprint_and_never_echoed(kind: str) -> None:
    secret = SAMPLES[kind]
    found = scan(f"config:\n  value: '{secret}'\n".encode(), "deploy/config.yml")
    assert [f.kind for f in found] == [kind]
    assert found[0].path == "deploy/config.yml" and len(found[0].fingerprint) == 16
    assert secret not in repr(found) and secret[4:20] not in repr(found)


def test_ordinary_text_and_near_misses_are_not_findings() -> None:
    text = b"AKIA is a prefix; ghp_short; glpat-; sk_test_4eC39HqLyjWDarjtT1zdp7dc; BEGIN PUBLIC KEY"
    assert scan(text) == ()
    assert scan(b"") == ()


def test_one_secret_twice_is_one_finding_and_fingerprints_are_stable() -> None:
    secret = SAMPLES["aws_access_key"]
    found = scan_text(f"{secret}\n{secret}\n")
    assert len(found) == 1 and found[0].fingerprint == fingerprint(secret.encode())


def test_a_secret_at_the_edges_of_the_data_is_found() -> None:
    secret = SAMPLES["github_token"].encode()
    assert scan(secret) and scan(b"x" * 5000 + secret) and scan(secret + b"\0" * 5000)


def test_the_committed_patterns_are_what_detect_secrets_derives() -> None:
    pytest.importorskip("detect_secrets")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "derive_secret_patterns.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_an_anchor_starting_inside_another_is_still_found() -> None:
    """The prefilter's leftmost-first search resumes after the anchor it reported; an anchor
    starting inside it (``ASIA`` then ``AKIA`` in ``ASIAKIA…``, ``xoxo-`` inside ``xoxoxb-``'s
    span) is looked for there, so every anchor an overlapping search finds is found."""
    from gitvow import secrets

    if secrets._automaton() is None:
        pytest.skip("ahocorasick-rs is not installed: the plain search has no prefilter to test")
    every = [anchor for fmt in secrets._formats() for anchor in fmt.anchors]
    cases = [b"ASIAKIA" + b"Q3EGXZJ2MN7WPL4T", b"xxglpat-gldt-yy", b"A3TAKIA ghp_ghs_", b"xoxo-xoxb-" * 3]
    for data in cases:
        naive = {anchor for anchor in every if anchor in data}
        assert {anchor for _, anchor in secrets._found_anchors(data)} == naive, data
    akia = scan(b"x ASIAKIA" + b"Q3EGXZJ2MN7WPL4T y")  # the key at AKIA, not at ASIA
    assert [f.kind for f in akia] == ["aws_access_key"]
