"""One loaded policy, ready to serve: engine, identities, credentials, gates.

Built whole or not at all, so a reload swaps one object and a bad edit leaves the last good
:class:`Runtime` in place. Secrets (agent passwords, forge tokens) are read here, from the
environment or files the policy names, and re-read on every reload.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.pipeline import Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy, load_policy
from gitvow.policy.selftest import failures as policy_test_failures
from gitvow_proxy.canary_tokens import agent_canaries, canary_key
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.identity import Identities, read_secret
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.store import Store, StoreError, is_shared, open_store


@dataclass(frozen=True, slots=True)
class Runtime:
    policy: Policy
    engine: Engine
    identities: Identities
    gates: ProxyGates
    #: Every injected secret, so responses can be scrubbed of them.
    secrets: tuple[str, ...]
    #: Each agent's grant, built once per policy rather than once per request.
    grants: Mapping[str, Grant]
    #: ``secrets`` encoded, for the response scan.
    needles: tuple[bytes, ...] = ()
    #: The SHA-256 of the policy file as it was loaded ("" when unreadable), for recordings.
    sha256: str = ""
    #: Agents in shadow mode (``[proxy] enforce = false``, or their own ``enforce = false``):
    #: what would be refused is forwarded and recorded as ``would_refuse``.
    shadowed: frozenset[str] = frozenset()
    #: Every canary the proxy recognises → the agent it was issued to (derived and stored).
    canaries: Mapping[str, str] = field(default_factory=dict)

    def grant_for(self, agent: str) -> Grant | None:
        return self.grants.get(agent)

    @property
    def source(self) -> str | None:
        return self.policy.source


def read_credentials(policy: Policy, plugins: Plugins) -> dict[str, str]:
    tokens: dict[str, str] = {}
    for adapter, rule in policy.section(ProxyPolicy).credentials.items():
        key = f"credentials.{adapter}"
        if adapter not in plugins.adapters:
            known = ", ".join(sorted(plugins.adapters)) or "none installed"
            raise PolicyError(f"adapter {adapter!r} is not installed; expected one of: {known}", source=policy.source, key=key)
        token = read_secret(rule.token_env, rule.token_file, source=policy.source, key=key)
        if token is not None:
            tokens[adapter] = token
    return tokens


def open_state(policy: Policy, override: str | None = None) -> Store:
    """The state store ``[proxy] state`` (or ``override``) names, with the password and CA the
    policy points to for a shared store; raises PolicyError naming the key."""
    settings = policy.section(ProxyPolicy).proxy
    spec = override or settings.state
    password: str | None = None
    ca_file: str | None = None
    if is_shared(spec):
        password = read_secret(settings.state_password_env, settings.state_password_file,
                               source=policy.source, key="proxy.state_password")
        ca_file = str(Path(settings.state_ca).expanduser()) if settings.state_ca else None
    try:
        return open_store(spec, password=password, ca_file=ca_file)
    except StoreError as exc:
        raise PolicyError(str(exc), source=policy.source, key="proxy.state") from None


def build_runtime(
    path: str | Path, store: Store, *, plugins: Plugins | None = None, previous: Runtime | None = None,
    confdir: str | Path | None = None,
) -> Runtime:
    """Load and validate ``path`` and everything it names; raises PolicyError.

    The answers the forge gave about opaque ids survive a reload (``previous``) when the
    cache's settings did not change: what a node id names does not depend on the policy."""
    plugins = plugins if plugins is not None else installed()
    sha256 = file_sha256(path)
    policy = load_policy(path, relays=plugins.relays, sections=plugins.sections, absent="skip",
                         adapters=plugins.adapters)
    engine = Engine(policy, plugins)
    failed = policy_test_failures(policy, plugins, tool_calls="skip")
    if failed:
        raise PolicyError("; ".join(failed), source=policy.source)
    identities = Identities.from_policy(policy)
    credentials = read_credentials(policy, plugins)
    # Derived, so a store that lost its memory forgets none; what a store issued before stays known.
    canaries = {**_stored_canaries(store, policy), **agent_canaries(policy, canary_key(policy, confdir))}
    settings = policy.section(ProxyPolicy).proxy
    kept = previous.gates.resolutions if previous is not None else None
    if kept is not None and (kept.size, kept.ttl) != (settings.resolve_cache_size, settings.resolve_ttl):
        kept = None
    gates = ProxyGates(policy, store, credentials=credentials, canaries=canaries, resolutions=kept,
                       counts=previous.gates.counts if previous is not None else None)
    grants = {name: grant for name in policy.model.agents if (grant := policy.grant_for(name)) is not None}
    secrets = tuple(credentials.values())
    return Runtime(policy, engine, identities, gates, secrets, grants, tuple(s.encode() for s in secrets), sha256,
                   shadowed(policy), canaries)


def shadowed(policy: Policy) -> frozenset[str]:
    """The agents whose refusals are only recorded: ``[agents.NAME] enforce``, else ``[proxy] enforce``."""
    default = policy.section(ProxyPolicy).proxy.enforce
    return frozenset(name for name, rule in policy.model.agents.items()
                     if not (default if rule.enforce is None else rule.enforce))


def _stored_canaries(store: Store, policy: Policy) -> dict[str, str]:
    try:
        return {token: agent for token, agent in store.canaries().items() if agent in policy.model.agents}
    except StoreError as exc:
        raise PolicyError(str(exc), source=policy.source, key="proxy.state") from None


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, or "" when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""
