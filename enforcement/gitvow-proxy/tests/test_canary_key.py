"""Canaries derived from the proxy's key: a store that lost its memory forgets none."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from proxy_support import GITVOW, SECRETS, Upstream, git, proxy_env, start_proxy, write_policy

from gitvow.errors import PolicyError
from gitvow.policy.load import parse_policy
from gitvow_proxy.canary_tokens import KEY_FILE, canary_key, derive


def _policy(text: str = "") -> object:
    return parse_policy({"agents": {"bot": {"mode": "advisory"}}, **json.loads(text or "{}")}, absent="skip")


def test_the_key_is_made_once_private_and_derives_stable_distinct_tokens(tmp_path: Path) -> None:
    policy = _policy()
    key = canary_key(policy, tmp_path)  # type: ignore[arg-type]
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert canary_key(policy, tmp_path) == key  # type: ignore[arg-type]
    token = derive(key, "bot")
    assert token.startswith("gvc_") and len(token) == 36
    assert derive(key, "bot") == token != derive(key, "other") != derive(b"another key", "bot")


def test_a_named_key_wins_and_an_unset_one_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy('{"canary": {"secret_env": "GITVOW_TEST_CANARY_KEY"}}')
    monkeypatch.setenv("GITVOW_TEST_CANARY_KEY", "k" * 32)
    assert canary_key(policy, tmp_path) == b"k" * 32  # type: ignore[arg-type]
    assert not (tmp_path / KEY_FILE).exists()
    monkeypatch.delenv("GITVOW_TEST_CANARY_KEY")
    with pytest.raises(PolicyError, match=r"canary\.secret_env"):
        canary_key(policy, tmp_path)  # type: ignore[arg-type]


@pytest.mark.e2e
def test_a_canary_is_refused_after_the_state_file_is_lost(
    upstream: Upstream, ca_file: Path, broken_plugin_path: Path, tmp_path: Path
) -> None:
    policy = write_policy(tmp_path / "policy.toml", upstream, ca_file, tmp_path)
    env = proxy_env(broken_plugin_path)
    proxy = start_proxy(policy, tmp_path, env)
    try:
        issued = subprocess.run([GITVOW, "env", "--policy", str(policy), "--agent", "coder", "--json", "--confdir",
                                 str(proxy.confdir), "--listen-port", str(proxy.port)], capture_output=True, text=True,
                                check=True, env={**os.environ, **env})
        agent: dict[str, str] = {**json.loads(issued.stdout), "HOME": str(tmp_path)}
        canary = agent["GH_TOKEN"]
    finally:
        assert proxy.stop() == 0
    for lost in tmp_path.glob("state.sqlite*"):  # the store forgets everything it held
        lost.unlink()
    proxy = start_proxy(policy, tmp_path, env)
    try:
        agent["HTTPS_PROXY"] = agent["HTTP_PROXY"] = agent["https_proxy"] = agent["http_proxy"] = proxy.url(
            "coder", SECRETS["coder"])
        work = tmp_path / "app"
        git("clone", "-q", upstream.url("/team/app.git"), str(work), cwd=tmp_path, env=agent)
        (work / "leak.txt").write_text(f"my token is {canary}\n")
        git("add", "leak.txt", cwd=work, env=agent)
        git("commit", "-q", "-m", "innocent", cwd=work, env=agent)
        upstream.clear()
        pushed = git("push", "origin", "HEAD:refs/heads/leak", cwd=work, env=agent, check=False)
        assert pushed.returncode == 1 and " ! [remote rejected] HEAD -> leak (gitvow: canary_egress)" in pushed.stderr
        assert not any(s.path.endswith("/git-receive-pack") for s in upstream.seen)
        assert any(line["reason"] == "canary_egress" for line in proxy.audit_lines())
    finally:
        assert proxy.stop() == 0
