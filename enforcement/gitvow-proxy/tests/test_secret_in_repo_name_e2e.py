"""A secret an agent puts where a repository name goes never reaches the audit log or a recording.

The path is redacted in a recording, but the repository the classifier reads out of it is a
field of its own: in the audit line (``repo``) and in the recorded flow's metadata. An agent that
writes to ``/repos/team/<its canary>/…`` — or to its proxy secret, percent- or base64-encoded —
is refused (``canary_egress``), and what is written about that refusal holds no secret either.

A real ``gitvow proxy --record`` process and a loopback stand-in forge.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from proxy_support import GITVOW, SECRETS, ProxyProcess, Upstream, client, proxy_env, start_proxy

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def proxy(api: Upstream, ca_file: Path, broken_plugin_path: Path,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    workdir = tmp_path_factory.mktemp("secret-in-repo")
    policy = workdir / "policy.toml"
    policy.write_text(textwrap.dedent(f"""
        [hosts]
        "{api.netloc}" = "github"

        [credentials.github]
        token_env = "GITVOW_TEST_GIT_TOKEN"

        [proxy]
        upstream_ca = "{ca_file}"
        state = "{workdir / 'state.sqlite'}"

        [audit]
        path = "{workdir / 'audit.jsonl'}"

        [agents.coder]
        mode = "issues_and_prs"
        secret_env = "GITVOW_TEST_CODER"
    """))
    running = start_proxy(policy, workdir, proxy_env(broken_plugin_path), args=["--record", str(workdir / "flows")])
    yield running
    assert running.stop() == 0, running.log_text()


def canary(proxy: ProxyProcess) -> str:
    env = {**os.environ, "GITVOW_TEST_CODER": SECRETS["coder"]}
    out = subprocess.run([GITVOW, "env", "--policy", str(proxy.policy), "--agent", "coder", "--json",
                          "--confdir", str(proxy.confdir)], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["GH_TOKEN"])


def spellings(secret: str) -> list[bytes]:
    """The secret as written, percent-encoded, and its base64 spelling at each alignment."""
    raw = secret.encode()
    found = [raw, quote(secret, safe="").encode(), "".join(f"%{b:02X}" for b in raw).encode()]
    found += [base64.b64encode(b"\0" * shift + raw)[4:-4] for shift in range(3)]
    return found


def test_a_secret_as_a_repository_name_is_refused_and_never_written(proxy: ProxyProcess, api: Upstream,
                                                                    ca_file: Path) -> None:
    token = canary(proxy)
    secret = SECRETS["coder"]
    canaries = [token, "".join(f"%{b:02X}" for b in token.encode()), base64.b64encode(token.encode()).decode()]
    # the agent's own proxy secret is its to send (no canary): forwarded, but never written down
    secrets = [secret, quote(secret, safe=""), base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")]
    with client(proxy, "coder", ca_file) as c:
        for name in canaries:
            answer = c.post(api.url(f"/api/v3/repos/team/{name}/issues/1/comments"), json={"body": "hi"})
            assert answer.status_code == 403, (name, answer.status_code, answer.text[:200])
            assert answer.headers["x-gitvow-reason"] == "canary_egress", name
        for name in [*secrets, "app"]:
            assert c.post(api.url(f"/api/v3/repos/team/{name}/issues/1/comments"), json={"body": "hi"}).status_code == 201
        # a host no adapter serves, named after the canary, over plain HTTP and through CONNECT
        assert c.get(f"http://{token}.example.test/").status_code >= 400
        with pytest.raises(httpx.HTTPError):
            c.get(f"https://{token}.example.test/")
    proxy.stop()
    audit = proxy.audit.read_bytes()
    flows = (proxy.audit.parent / "flows").read_bytes()
    lines = [json.loads(line) for line in audit.splitlines() if line.strip()]
    posts = [line["reason"] for line in lines if line["method"] == "POST"]
    assert posts == ["canary_egress"] * len(canaries) + [None] * (len(secrets) + 1)
    assert len([line for line in lines if line["method"] in ("GET", "CONNECT")]) == 2, lines  # both audited
    for written, what in ((audit, "audit log"), (flows, "recording"), (proxy.log.read_bytes(), "proxy log")):
        for needle in [*spellings(token), *spellings(secret)]:
            assert needle not in written, (what, needle)
    assert {line["repo"] for line in lines if line["method"] == "POST"} >= {"team/app"}
