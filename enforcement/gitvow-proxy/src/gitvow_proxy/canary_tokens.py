"""Which canary each agent carries: derived from the proxy's canary key, never only stored.

A canary is the placeholder forge token an agent holds; the proxy refuses to see it leave.
Were canaries only kept in the state store, a store that lost its memory (Redis restarted
without persistence, a SQLite file removed) would forget them, and the proxy would forward
the very tokens it issued. So each agent's canary is an HMAC of its name under a key the
proxy holds: ``[canary] secret_env``/``secret_file`` when the policy names one, otherwise
the file ``canary.key`` in the proxy's confdir, made once (0600) beside its CA. Every replica
that shares the confdir (as it must share the CA) and ``gitvow env`` derive the same token,
before and after any store loss. Tokens a store issued before this existed stay recognised.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from gitvow.errors import PolicyError
from gitvow.policy.load import Policy
from gitvow_proxy.identity import read_secret
from gitvow_proxy.settings import ProxyPolicy

KEY_FILE = "canary.key"


def canary_key(policy: Policy, confdir: str | Path | None = None) -> bytes:
    """The key canaries are derived from; made in ``confdir`` (default ``[proxy] confdir``) if absent."""
    section = policy.section(ProxyPolicy)
    configured = read_secret(section.canary.secret_env, section.canary.secret_file, source=policy.source,
                             key="canary.secret_env" if section.canary.secret_env else "canary.secret_file")
    if configured:
        return configured.encode()
    if section.canary.secret_env or section.canary.secret_file:
        raise PolicyError("the canary key it names is empty or unset; every agent's canary is derived from it",
                          source=policy.source, key="canary.secret_env")
    path = Path(confdir or section.proxy.confdir).expanduser() / KEY_FILE
    try:
        key = path.read_bytes().strip()
    except FileNotFoundError:
        key = b""
    except OSError as exc:
        raise PolicyError(f"cannot read {path}: {exc.strerror or exc}", source=policy.source, key="canary") from None
    if key:
        return key
    return _make_key(path, policy.source)


def ensure_key_file(confdir: Path) -> None:
    """Make ``confdir``'s canary key if it has none (with the CA, so copies carry both)."""
    path = confdir / KEY_FILE
    if not path.exists():
        _make_key(path, None)


def _make_key(path: Path, source: str | None) -> bytes:
    fresh = secrets.token_hex(32).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_bytes().strip()
    except OSError as exc:
        raise PolicyError(f"cannot create {path}: {exc.strerror or exc}", source=source, key="canary") from None
    with os.fdopen(fd, "wb") as out:
        out.write(fresh + b"\n")
    return fresh


def derive(key: bytes, agent: str) -> str:
    """``agent``'s canary under ``key``: shaped like a forge token, the same on every replica."""
    mac = hmac.new(key, b"gitvow canary\0" + agent.encode(), hashlib.sha256).digest()
    return "gvc_" + base64.b32encode(mac).decode().lower()[:32]


def agent_canaries(policy: Policy, key: bytes) -> dict[str, str]:
    """Each agent's derived canary → the agent."""
    return {derive(key, agent): agent for agent in policy.model.agents}
