"""What an agent's shell needs to go through the proxy: ``gitvow env --agent NAME``.

The proxy URL carries the agent's own proxy credentials; the CA variables point at a bundle
of the system's CAs plus the proxy's (so tunnelled hosts keep working); the forge token and
model API key variables hold the agent's canary — a placeholder the proxy replaces on the
wire (``[credentials.NAME]``) and refuses to see leave in a body.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from urllib.parse import quote

from gitvow.errors import GitvowError, PolicyError
from gitvow.policy.load import load_policy
from gitvow_proxy.canary_tokens import canary_key, derive, ensure_key_file
from gitvow_proxy.identity import Identities
from gitvow_proxy.settings import ProxyPolicy

CA_BASENAME = "mitmproxy"
BUNDLE = "gitvow-ca-bundle.pem"
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO")
TOKEN_VARIABLES = (
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GITLAB_TOKEN",
    "GL_TOKEN",
    "LINEAR_API_KEY",
)
#: The model API keys agents read (Claude Code, Codex, their SDKs): the proxy holds the real
#: ones (``[credentials.anthropic]``, ``[credentials.openai]``), the agent a placeholder.
MODEL_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def proxy_ca(confdir: Path) -> Path:
    """The proxy's CA certificate (public part), created the way mitmproxy creates it if absent,
    with the canary key beside it: a confdir copied to every replica carries both."""
    cert = confdir / f"{CA_BASENAME}-ca-cert.pem"
    if not cert.exists():
        from mitmproxy.certs import CertStore
        from mitmproxy.options import KEY_SIZE

        CertStore.from_store(confdir, CA_BASENAME, KEY_SIZE)
    ensure_key_file(confdir)
    return cert


def ca_bundle(confdir: Path) -> Path:
    """System CAs + the proxy CA in one file, rewritten when either is newer."""
    ca = proxy_ca(confdir)
    bundle = confdir / BUNDLE
    system = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    sources = [p for p in (system, ca) if p.exists()]
    if not bundle.exists() or any(p.stat().st_mtime > bundle.stat().st_mtime for p in sources):
        bundle.write_text("".join(p.read_text(encoding="utf-8").rstrip("\n") + "\n" for p in sources), encoding="utf-8")
    return bundle


def agent_environment(
    policy_path: str | Path,
    agent: str,
    *,
    listen_host: str | None = None,
    listen_port: int | None = None,
    confdir: str | None = None,
    state: str | None = None,
) -> dict[str, str]:
    """The variables, in the order a shell should set them."""
    policy = load_policy(policy_path, absent="skip")
    model = policy.model
    if agent not in model.agents:
        known = ", ".join(sorted(model.agents)) or "none"
        raise PolicyError(f"no agent {agent!r} (agents: {known})", source=policy.source, key=f"agents.{agent}")
    secret = Identities.from_policy(policy).secret(agent)
    if secret is None:
        raise GitvowError(f"agent {agent!r} has no readable secret (secret_env or secret_file)")
    settings = policy.section(ProxyPolicy).proxy
    host = listen_host or settings.listen_host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    port = settings.listen_port if listen_port is None else listen_port
    netloc = f"[{host}]" if ":" in host else host
    url = f"http://{quote(agent, safe='')}:{quote(secret, safe='')}@{netloc}:{port}"
    conf = Path(confdir or settings.confdir).expanduser()
    conf.mkdir(parents=True, exist_ok=True)
    bundle = str(ca_bundle(conf))
    canary = derive(canary_key(policy, conf), agent)
    env: dict[str, str] = {}
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        env[name] = url
    for name in CA_VARIABLES:
        env[name] = bundle
    env["NODE_EXTRA_CA_CERTS"] = str(proxy_ca(conf))
    # git otherwise sends each request without proxy credentials first and retries after the
    # 407: one wasted round trip and one refused audit line per network command.
    env["GIT_HTTP_PROXY_AUTHMETHOD"] = "basic"
    for name in (*TOKEN_VARIABLES, *MODEL_KEY_VARIABLES):
        env[name] = canary
    env["GITVOW_AGENT"] = agent
    return env
