"""What the audit addon writes about a request holds no secret, however fast it is written.

The audit fields an agent chooses (host, path, the repository read out of the path) are
checked for every secret and canary in every encoding the canary check decodes; values found
clean are remembered per redactor (its secrets never change), and new values are scanned
together once. Each attack below was caught by the field-by-field scan; it must still be caught
with the memo warm, with the joined scan, and when only one field is new. The response scrub
(the forge echoing the injected token) is checked here too, in every place it looks.
"""

from __future__ import annotations

import base64
import gzip
import json
from urllib.parse import quote

import pytest
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from gitvow_proxy.addons.scrub_and_record import scrub
from gitvow_proxy.flow_metadata import SECRETS_KEY, Audited
from gitvow_proxy.record import REDACTED, REDACTED_HOST, Redactor, canary_placeholder, clean_audited

CANARY = "gvc_0123456789abcdef0123456789abcdef"
TOKEN = "ghs_tokentokentokentoken"


def redactor() -> Redactor:
    return Redactor.build(secrets=(TOKEN,), canaries={CANARY: "coder"}, literal=())


def spellings(secret: str) -> list[str]:
    """The secret in upper case, percent-encoded, JSON-escaped, and base64 at each alignment."""
    raw = secret.encode()
    return [secret.upper(), secret[:8].upper() + secret[8:], "".join(f"%{b:02X}" for b in raw),
            quote(secret, safe=""), "".join(f"\\u{b:04x}" for b in raw),
            *(base64.b64encode(b"x" * shift + raw).decode().rstrip("=") for shift in range(3)),
            base64.urlsafe_b64encode(raw).decode().rstrip("=")]


def entry(path: str = "/api/v3/repos/team/app/pulls", host: str = "ghes.test:443", repo: str | None = "team/app") -> Audited:
    return Audited(method="GET", host=host, path=path, agent="coder", verdict="allow", reason=None, stage="pipeline",
                   repo=repo)


def assert_clean(written: Audited, secret: str) -> None:
    text = json.dumps([written.host, written.path, written.repo])
    for needle in (secret, secret.upper(), secret.lower()):
        assert needle.lower() not in text.lower(), text


WHERE = {
    "repo": lambda s: entry(path=f"/api/v3/repos/team/{s}/pulls", repo=f"team/{s}"),
    "repo only": lambda s: entry(repo=f"team/{s}"),
    "path only": lambda s: entry(path=f"/api/v3/repos/team/app/issues?q={s}"),
    "host only": lambda s: entry(host=f"{s}.example.test:443"),
}


@pytest.mark.parametrize("secret", [CANARY, TOKEN])
@pytest.mark.parametrize("where", sorted(WHERE))
@pytest.mark.parametrize("warm", [False, True])
def test_a_secret_in_any_audit_field_in_any_encoding_is_redacted(secret: str, where: str, warm: bool) -> None:
    red = redactor()
    if warm:  # the usual fields seen clean before: nothing of them answers for the attacked one
        for _ in range(2):
            clean_audited(entry(), red)
    for spelled in [secret, *spellings(secret)]:
        attacked = WHERE[where](spelled)
        before = (attacked.host, attacked.path, attacked.repo)
        clean_audited(attacked, red)
        assert (attacked.host, attacked.path, attacked.repo) != before, (where, spelled)
        assert_clean(attacked, spelled)
        assert_clean(attacked, secret)


def test_an_upper_case_canary_as_the_repository_name_is_replaced_by_its_placeholder() -> None:
    attacked = entry(path=f"/api/v3/repos/team/{CANARY.upper()}/pulls", repo=f"team/{CANARY.upper()}")
    clean_audited(attacked, redactor())
    assert attacked.repo == canary_placeholder("coder")
    assert CANARY.upper() not in attacked.path
    attacked = entry(host=f"{CANARY.upper()}.example.test:443")
    clean_audited(attacked, redactor())
    assert attacked.host == REDACTED_HOST


def test_a_secret_split_across_two_fields_is_not_one_and_clean_fields_are_kept() -> None:
    """The joined scan puts NUL between fields: half a token in the path and half in the
    repository is no token (and nothing is redacted); clean values are written as they came."""
    red = redactor()
    half = len(CANARY) // 2
    split = entry(path=f"/x/{CANARY[:half]}", repo=f"{CANARY[half:]}/y")
    clean_audited(split, red)
    assert (split.path, split.repo) == (f"/x/{CANARY[:half]}", f"{CANARY[half:]}/y")
    fine = entry()
    clean_audited(fine, red)
    assert (fine.host, fine.path, fine.repo) == ("ghes.test:443", "/api/v3/repos/team/app/pulls", "team/app")


# -- the response scrub --------------------------------------------------------------------------

def _flow(response: http.Response) -> http.HTTPFlow:
    flow = tflow.tflow()
    flow.response = response
    flow.metadata[SECRETS_KEY] = (TOKEN.encode(),)
    return flow


@pytest.mark.parametrize("encoding", ["gzip", "GZIP"])
def test_a_compressed_echo_of_the_injected_token_is_scrubbed(encoding: str) -> None:
    body = gzip.compress(f"you sent token {TOKEN}".encode())
    flow = _flow(tutils.tresp(content=b"", headers=http.Headers([(b"Content-Encoding", encoding.encode())])))
    flow.response.raw_content = body
    scrub(flow)
    assert TOKEN.encode() not in flow.response.content and REDACTED in flow.response.content


def test_an_echo_in_a_header_or_the_body_is_scrubbed_and_the_rest_kept() -> None:
    flow = _flow(tutils.tresp(content=f"token {TOKEN}".encode(),
                              headers=http.Headers([(b"X-Echo", f"token {TOKEN}".encode()), (b"X-Fine", b"ok")])))
    scrub(flow)
    assert flow.response.headers["x-echo"] == REDACTED.decode() and flow.response.headers["x-fine"] == "ok"
    assert flow.response.content == b"token " + REDACTED


def test_a_response_without_the_token_is_untouched() -> None:
    flow = _flow(tutils.tresp(content=b'[{"number": 1}]'))
    before = (flow.response.headers.fields, flow.response.raw_content)
    scrub(flow)
    assert (flow.response.headers.fields, flow.response.raw_content) == before


def test_a_body_that_cannot_be_decoded_is_refused() -> None:
    flow = _flow(tutils.tresp(content=b"", headers=http.Headers([(b"content-encoding", b"gzip")])))
    flow.response.raw_content = b"not gzip at all " + TOKEN.encode()
    scrub(flow)
    assert flow.response.status_code == 502 and TOKEN.encode() not in flow.response.raw_content


def test_every_injected_secret_is_looked_for_not_only_the_shortest() -> None:
    """The scrub looks for the secrets no other contains (``token X`` holds ``X``); a secret
    that holds none of the others (a second credential) is still looked for on its own."""
    secrets = (TOKEN.encode(), f"token {TOKEN}".encode(), TOKEN.encode(), b"", b"glpat-second-credential")
    for body in (b"echo glpat-second-credential", f"echo token {TOKEN}".encode(), f"echo {TOKEN}".encode()):
        flow = _flow(tutils.tresp(content=body, headers=http.Headers([(b"X-Echo", body)])))
        flow.metadata[SECRETS_KEY] = secrets
        scrub(flow)
        out = flow.response.content + b"".join(v for _, v in flow.response.headers.fields)
        assert not any(s in out for s in secrets if s), out
        assert out.count(REDACTED) == 2  # in the header and in the body
