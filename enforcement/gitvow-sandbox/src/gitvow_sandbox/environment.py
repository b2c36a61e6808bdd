"""The agent's environment inside: what ``gitvow env`` prints, pointed at the sandbox's side
of the bridge, plus a short list of harmless variables of the caller's.

Nothing else of the caller's environment goes in: a forge token, a cloud key or an SSH agent
socket in the operator's shell would otherwise be the agent's. ``[sandbox] pass_env`` and
``--pass-env`` add variables by name. Model API keys are not among them: inside they are
placeholders (the agent's canary) and the proxy sends the real key (``[credentials.anthropic]``,
``[credentials.openai]``), so a prompt-injected agent has no key to send elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from gitvow_sandbox.errors import SandboxError
from gitvow_sandbox.layout import RUN_DIR

#: The loopback port inside the sandbox where the proxy answers (the bridge's inner end).
INNER_PORT = 3128
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO")
BUNDLE = "ca-bundle.pem"
PROXY_CA = "proxy-ca.pem"
#: The model API key variables agents read → the ``[credentials.NAME]`` the proxy sends instead.
MODEL_KEYS = {"ANTHROPIC_API_KEY": "anthropic", "OPENAI_API_KEY": "openai"}
#: What a model key variable holds inside when the agent's environment names no canary.
PLACEHOLDER = "gitvow-held-by-the-proxy"
#: The caller's variables that carry no credential and that programs expect.
SAFE = ("PATH", "TERM", "COLORTERM", "NO_COLOR", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ",
        "USER", "LOGNAME", "SHELL", "EDITOR", "VISUAL", "PAGER")


def from_proxy(policy: Path, agent: str, host: str, port: int) -> dict[str, str]:
    """``gitvow env``'s variables for the proxy at ``host:port`` (gitvow-proxy's own code)."""
    try:
        from gitvow_proxy.agentenv import agent_environment
    except ModuleNotFoundError as exc:
        if exc.name == "gitvow_proxy":
            raise SandboxError("the agent's environment comes from gitvow-proxy, which is not installed: "
                               "pip install gitvow-proxy, or pass --env-json FILE (what `gitvow env --json` "
                               "printed where the proxy runs)") from None
        raise
    return agent_environment(policy, agent, listen_host=host, listen_port=port)


def from_json(path: Path) -> dict[str, str]:
    """``gitvow env --json`` output, written where the proxy runs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SandboxError(f"{path}: cannot read the agent's environment ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise SandboxError(f"{path}: expected the JSON object `gitvow env --json` prints")
    return data


def _inner_url(url: str) -> str:
    """The proxy URL with its credentials, at the bridge's end inside the sandbox."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@127.0.0.1:{INNER_PORT}" if userinfo else f"127.0.0.1:{INNER_PORT}"
    return urlunsplit((parts.scheme or "http", netloc, "", "", ""))


def for_sandbox(agent_env: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """``agent_env`` pointed inside: the proxy URL at the inner port, CA files copied to the
    run's directory (the proxy's directory, with its CA key, stays hidden)."""
    env = dict(agent_env)
    proxy_url = next((env[name] for name in PROXY_VARIABLES if name in env), None)
    if proxy_url is None:
        raise SandboxError("the agent's environment names no proxy (HTTPS_PROXY)")
    for name in PROXY_VARIABLES:
        env[name] = _inner_url(proxy_url)
    copies = {name: BUNDLE for name in CA_VARIABLES} | {"NODE_EXTRA_CA_CERTS": PROXY_CA}
    for name, basename in copies.items():
        source = env.get(name)
        if source is None:
            continue
        target = run_dir / basename
        if not target.exists():
            try:
                shutil.copyfile(source, target)
            except OSError as exc:
                raise SandboxError(f"cannot read the CA file {source} for the sandbox ({exc.strerror})") from None
        env[name] = str(RUN_DIR / basename)
    env.pop("NO_PROXY", None)
    env.pop("no_proxy", None)
    for name in MODEL_KEYS:  # an environment from an older `gitvow env --json` lacks them
        env.setdefault(name, env.get("GH_TOKEN", PLACEHOLDER))
    return env


def refuse_model_keys(pass_env: Iterable[str]) -> None:
    """SandboxError when a model API key is asked to be passed in: the proxy holds it."""
    for name in pass_env:
        if name in MODEL_KEYS:
            raise SandboxError(f"{name} is not passed into the sandbox: the proxy holds model keys. Put it in the "
                               f"policy as [credentials.{MODEL_KEYS[name]}] token_env = \"{name}\" (the agent gets "
                               f"a placeholder) and drop it from --pass-env / [sandbox] pass_env")


def compose(agent_env: Mapping[str, str], home: Path, pass_env: Iterable[str],
            outer: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment inside: safe caller variables, the ones passed by name, the agent's."""
    outer = os.environ if outer is None else outer
    env = {name: outer[name] for name in (*SAFE, *pass_env) if name in outer}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=str(home), TMPDIR="/tmp", GITVOW_SANDBOX="1")
    env.update(agent_env)
    return env
