"""Who is talking to the proxy: ``Proxy-Authorization: Basic NAME:secret``.

Secrets come from the environment or a file named in the policy, never from the policy text
itself. An agent without a readable secret cannot authenticate at all (fail closed); a wrong
or missing credential is a 407 and nothing goes upstream.
"""

from __future__ import annotations

import binascii
import hmac
import logging
import os
from base64 import b64decode
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitvow.errors import PolicyError
from gitvow.policy.load import Policy

log = logging.getLogger("gitvow_proxy")

PROXY_AUTHENTICATE = 'Basic realm="gitvow"'


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller: an agent named in ``[agents]`` or the ``[internal]`` identity."""

    name: str
    internal: bool = False


def read_secret(env: str | None, file: str | None, *, source: str | None, key: str) -> str | None:
    """A secret from ``env`` or ``file``; None (with a warning) when it is not there."""
    if env is not None:
        value = os.environ.get(env)
        if not value:
            log.warning("%s: environment variable %s is not set; %s cannot be used", source or "policy", env, key)
            return None
        return value
    if file is not None:
        try:
            value = Path(file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise PolicyError(f"cannot read {file}: {exc.strerror or exc}", source=source, key=key) from None
        return value or None
    return None


def unset_secrets(policy: Policy) -> list[tuple[str, str]]:
    """(key, variable) of each forge credential and agent secret the policy names by an
    environment variable that is not set: the proxy refuses to start without them unless told
    to (a credential missing means allowed writes go out without a token; an agent's, that the
    agent cannot authenticate)."""
    from gitvow_proxy.settings import ProxyPolicy

    settings = policy.section(ProxyPolicy)
    named: list[tuple[str, str | None]] = [
        (f"credentials.{adapter}", rule.token_env) for adapter, rule in settings.credentials.items()]
    named += [(f"agents.{name}", agent.secret_env) for name, agent in policy.model.agents.items()]
    if settings.internal is not None:
        named.append(("internal", settings.internal.secret_env))
    return [(key, env) for key, env in named if env is not None and not os.environ.get(env)]


class Identities:
    """The name → secret table of one policy, and the check of one header."""

    def __init__(self, secrets: Mapping[str, str], internal: str | None = None) -> None:
        self._secrets = dict(secrets)
        self._internal = internal

    @classmethod
    def from_policy(cls, policy: Policy) -> Identities:
        from gitvow_proxy.settings import ProxyPolicy

        source = policy.source
        internal_rule = policy.section(ProxyPolicy).internal
        secrets: dict[str, str] = {}
        for name, agent in policy.model.agents.items():
            secret = read_secret(agent.secret_env, agent.secret_file, source=source, key=f"agents.{name}")
            if secret is not None:
                secrets[name] = secret
        internal = None
        if internal_rule is not None:
            if internal_rule.name in policy.model.agents:
                raise PolicyError(f"{internal_rule.name!r} is also an agent", source=source, key="internal.name")
            secret = read_secret(internal_rule.secret_env, internal_rule.secret_file, source=source, key="internal")
            if secret is not None:
                secrets[internal_rule.name] = secret
                internal = internal_rule.name
        return cls(secrets, internal)

    def __contains__(self, name: str) -> bool:
        return name in self._secrets

    def authenticate(self, header: str) -> Identity | None:
        """The identity a ``Proxy-Authorization`` value proves, or None: checked in full every
        time, a wrong name costing what a wrong secret costs."""
        return self._check(header)

    def _check(self, header: str) -> Identity | None:
        scheme, _, value = header.strip().partition(" ")
        if scheme.lower() != "basic" or not value:
            return None
        try:
            decoded = b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        name, sep, secret = decoded.partition(":")
        expected = self._secrets.get(name)
        if not sep or expected is None:
            # Compare anyway so a wrong name costs the same time as a wrong secret.
            hmac.compare_digest(secret.encode(), b"x" * 32)
            return None
        if not hmac.compare_digest(secret.encode(), expected.encode()):
            return None
        return Identity(name, internal=name == self._internal)

    def secrets(self) -> tuple[str, ...]:
        """Every proxy secret, so a recording can be scrubbed of them."""
        return tuple(self._secrets.values())

    def secret(self, name: str) -> str | None:
        """The secret of ``name`` (for ``gitvow env``, which prints it into the agent's own shell)."""
        return self._secrets.get(name)
