"""Policy-file sections the proxy reads; :class:`ProxyPolicy` registers them with the core.

Every section is optional and every default is the safe one: no section, no extra gate
(the policy table and identity still apply). Keys, in one place so the README can quote
them::

    [proxy]                       # how the proxy runs
    listen_host = "127.0.0.1"     # --listen-host overrides
    listen_port = 8080            # --listen-port overrides
    confdir = "~/.local/share/gitvow/mitmproxy"   # mitmproxy's CA; --confdir overrides
    other_hosts = "tunnel"        # hosts no adapter serves: "tunnel" untouched or "refuse"
    allowed_repos = ["org/*"]     # repositories the proxy serves at all (repo_not_in_config); unset: all
    state = "~/.local/state/gitvow/state.sqlite"   # ":memory:" keeps nothing across restarts;
                                  # "redis://HOST:PORT/DB" (or rediss://) shares it between replicas
    state_password_env = "GITVOW_REDIS_PASSWORD"  # or state_password_file; never in the URL
    state_ca = "/path/redis-ca.pem"  # rediss:// with a private CA
    upstream_ca = "/path/ca.pem"  # extra CA to trust upstream (a GHES with a private CA)
    reload_interval = 1.0         # seconds between policy-file checks
    plain_hosts = ["127.0.0.1:8929"]   # served hosts reached over plain http:// (else insecure_upstream)
    resolve_ttl = 300.0           # seconds an answer about an opaque id (node id, project id) is kept
    resolve_cache_size = 4096     # answers kept at most

    [credentials.ADAPTER]         # the token injected for that adapter's hosts
    token_env = "GITHUB_TOKEN"    # or token_file = "/run/secrets/github"

    [internal]                    # the control plane: skips the agent gates
    name = "control-plane"
    secret_env = "GITVOW_INTERNAL_SECRET"    # or secret_file

    [run_state]
    paused = ["owner/repo"]               # every agent request on it: repo_paused
    auto_merge_off = ["owner/repo"]       # pr.merge on it: repo_auto_merge_disabled

    [write_surface]
    enforce = true                        # false: audit "would refuse" and let it pass
    lanes = { triage = ["issue.*", "label.add"] }
    agents = { bot = "triage" }           # an agent without a lane is not restricted here

    [budget]                              # per agent, sliding window
    window_seconds = 3600
    writes = 200                          # every write operation
    operations = { "pr.create" = 5 }      # per-operation caps in the same window
    agents = { bot = { writes = 20 } }    # per-agent overrides

    [canary]
    enabled = true                        # one proxy-issued token per agent, refused in bodies
    scan_limit = 8388608                  # bytes examined (inflated); larger bodies are refused
    tokens = ["extra-literal-canary"]     # operator-planted tokens, refused for every agent

    [issue_shape]
    enabled = true
    title_max = 120
    body_min = 20
    body_max = 65536
    required_sections = ["## Summary"]

    [egress]                              # hosts no adapter serves (addons/egress.py)
    allow = ["pypi.org", "*.pythonhosted.org"]   # set: only these are tunnelled (egress_not_allowed)
    internal = ["registry.corp:8443"]     # may resolve to loopback/private/link-local addresses
                                          # (egress_private_address otherwise)

    [audit]
    path = "~/.local/state/gitvow/audit.jsonl"    # "-" for standard error

    [approvals]                           # requests the `approval` relay staged for a human
    ttl = 86400                           # seconds a pending approval waits; then approval_expired
    poll_interval = 1.0                   # seconds between the proxy's looks for approved ones

    [admin]                               # /metrics, and the approval desk with a secret
    listen = "127.0.0.1:8081"             # loopback unless you mean it
    secret_env = "GITVOW_ADMIN_SECRET"    # or secret_file: the operator's, never an agent's
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from gitvow.policy.load import Policy

DEFAULT_STATE = "~/.local/state/gitvow/state.sqlite"
DEFAULT_CONFDIR = "~/.local/share/gitvow/mitmproxy"
DEFAULT_AUDIT = "~/.local/state/gitvow/audit.jsonl"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProxySettings(_Section):
    """``[proxy]``: how the proxy treats hosts no adapter serves, which repositories it serves, where state lives."""

    listen_host: str = "127.0.0.1"
    listen_port: int = Field(default=8080, ge=0, le=65535)
    confdir: str = DEFAULT_CONFDIR
    other_hosts: Literal["tunnel", "refuse"] = "tunnel"
    allowed_repos: list[str] | None = None
    state: str = DEFAULT_STATE
    state_password_env: str | None = None
    state_password_file: str | None = None
    state_ca: str | None = None
    upstream_ca: str | None = None
    reload_interval: float = Field(default=1.0, gt=0)
    plain_hosts: list[str] = Field(default_factory=list)
    resolve_ttl: float = Field(default=300.0, gt=0)
    resolve_cache_size: int = Field(default=4096, gt=0)
    #: ``false``: shadow mode. What would be refused is forwarded (with the credential) and
    #: recorded as ``would_refuse`` with its reason; ``[agents.NAME] enforce`` overrides it per agent.
    enforce: bool = True
    #: Seconds a stopping proxy (SIGTERM) waits for the requests in flight to get their answers.
    shutdown_grace: float = Field(default=30.0, ge=0)

    def plain(self, host: str, port: int) -> bool:
        """Whether ``host:port`` (or ``host``) is marked to be reached over plain HTTP."""
        if not self.plain_hosts:
            return False
        hosts = {entry.lower() for entry in self.plain_hosts}
        return f"{host}:{port}".lower() in hosts or host.lower() in hosts

    @model_validator(mode="after")
    def _one_password(self) -> ProxySettings:
        if self.state_password_env is not None and self.state_password_file is not None:
            raise ValueError("set at most one of state_password_env or state_password_file")
        return self


class CredentialRule(_Section):
    """``[credentials.ADAPTER]``: exactly one of ``token_env`` or ``token_file``."""

    token_env: str | None = None
    token_file: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> CredentialRule:
        if (self.token_env is None) == (self.token_file is None):
            raise ValueError("set exactly one of token_env or token_file")
        return self


class InternalIdentity(_Section):
    """``[internal]``: the control plane's proxy identity; it skips the agent gates."""

    name: str = Field(min_length=1)
    secret_env: str | None = None
    secret_file: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> InternalIdentity:
        if (self.secret_env is None) == (self.secret_file is None):
            raise ValueError("set exactly one of secret_env or secret_file")
        return self


class RunState(_Section):
    """``[run_state]``: repositories paused, and repositories whose auto-merge is off."""

    paused: list[str] = Field(default_factory=list)
    auto_merge_off: list[str] = Field(default_factory=list)


class WriteSurface(_Section):
    """``[write_surface]``: lanes of write operations (glob patterns) and each agent's lane."""

    enforce: bool = True
    lanes: dict[str, list[str]] = Field(default_factory=dict)
    agents: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _lanes_exist(self) -> WriteSurface:
        for agent, lane in self.agents.items():
            if lane not in self.lanes:
                known = ", ".join(sorted(self.lanes)) or "none"
                raise ValueError(f"agent {agent!r} names lane {lane!r}, which is not defined (lanes: {known})")
        return self

    def allows(self, lane: str, operation: str) -> bool:
        return any(fnmatch.fnmatchcase(operation, pattern) for pattern in self.lanes.get(lane, ()))


class BudgetLimits(_Section):
    """Per-agent overrides of ``[budget]``."""

    writes: int | None = Field(default=None, ge=0)
    operations: dict[str, int] = Field(default_factory=dict)


class Budget(_Section):
    """``[budget]``: writes per agent per sliding window, with caps per operation."""

    window_seconds: int = Field(default=3600, gt=0)
    writes: int | None = Field(default=None, ge=0)
    operations: dict[str, int] = Field(default_factory=dict)
    agents: dict[str, BudgetLimits] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known_operations(self) -> Budget:
        from gitvow.vocabulary import OPERATIONS

        names = set(self.operations).union(*(set(limits.operations) for limits in self.agents.values()))
        unknown = sorted(name for name in names if name not in OPERATIONS)
        if unknown:
            raise ValueError(f"unknown operation(s) {', '.join(unknown)}; expected names of the vocabulary (`gitvow ops`)")
        return self

    def limits_for(self, agent: str) -> tuple[int | None, dict[str, int]]:
        """The overall write limit and per-operation caps that apply to ``agent``."""
        override = self.agents.get(agent)
        if override is None:
            return self.writes, self.operations
        writes = override.writes if override.writes is not None else self.writes
        return writes, {**self.operations, **override.operations}


class Canary(_Section):
    """``[canary]``: proxy-issued per-agent tokens (plus literal ones) refused in outgoing bodies."""

    enabled: bool = True
    scan_limit: int = Field(default=8 * 1024 * 1024, gt=0)
    tokens: list[str] = Field(default_factory=list)
    #: The key each agent's canary is derived from (default: ``canary.key`` in the confdir).
    secret_env: str | None = None
    secret_file: str | None = None

    @model_validator(mode="after")
    def _long_enough(self) -> Canary:
        if self.secret_env is not None and self.secret_file is not None:
            raise ValueError("set at most one of secret_env or secret_file")
        short = [t for t in self.tokens if len(t) < 12]
        if short:
            raise ValueError("canary tokens must be at least 12 characters, so ordinary text never matches")
        return self


class IssueShape(_Section):
    """``[issue_shape]``: what an issue an agent opens must look like."""

    enabled: bool = True
    title_max: int = Field(default=256, gt=0)
    body_min: int = Field(default=0, ge=0)
    body_max: int = Field(default=65536, gt=0)
    required_sections: list[str] = Field(default_factory=list)
    scan_limit: int = Field(default=1024 * 1024, gt=0)


def _host_pattern_problem(pattern: str) -> str | None:
    host, sep, port = pattern.rpartition(":") if pattern.count(":") == 1 else (pattern, "", "")
    if not host or any(c in host for c in "/@ "):
        return f"expected HOST or HOST:PORT (glob patterns allowed in HOST), got {pattern!r}"
    if sep and not port.isdigit():
        return f"the port of {pattern!r} is not a number"
    return None


def _host_matches(patterns: list[str], host: str, port: int) -> bool:
    host = host.lower().strip("[]")
    for pattern in patterns:
        name, sep, wanted = pattern.lower().rpartition(":") if pattern.count(":") == 1 else (pattern.lower(), "", "")
        if fnmatch.fnmatchcase(host, name.strip("[]")) and (not sep or wanted == str(port)):
            return True
    return False


class Egress(_Section):
    """``[egress]``: which hosts no adapter serves may be tunnelled, and which may be internal."""

    allow: list[str] = Field(default_factory=list)
    internal: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _patterns(self) -> Egress:
        problems = [why for why in map(_host_pattern_problem, [*self.allow, *self.internal]) if why]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def allows(self, host: str, port: int) -> bool:
        """Whether a tunnel to ``host:port`` may open (no ``allow`` list: every host may)."""
        return not self.allow or _host_matches(self.allow, host, port) or self.is_internal(host, port)

    def is_internal(self, host: str, port: int) -> bool:
        """Whether the operator mapped ``host:port`` as internal: its private addresses are meant."""
        return _host_matches(self.internal, host, port)


class OtlpExportSettings(_Section):
    """``[audit.otlp]``: each decision as an OpenTelemetry log record, over OTLP/HTTP."""

    endpoint: str = Field(pattern=r"^https?://", description="the collector's logs URL, e.g. http://127.0.0.1:4318/v1/logs")
    protocol: Literal["http/protobuf"] = "http/protobuf"
    #: An environment variable holding the headers (``k=v,k2=v2``, OTEL_EXPORTER_OTLP_HEADERS' format).
    headers_env: str | None = None
    queue: int = Field(default=2048, gt=0)


class Audit(_Section):
    """``[audit]``: where the one-JSON-line-per-decision log goes (``-`` is standard error), and
    optionally an OpenTelemetry collector that receives each decision too."""

    path: str = DEFAULT_AUDIT
    otlp: OtlpExportSettings | None = None


Event = Literal["staged", "approved", "rejected", "expired", "sent", "failed"]
NOTIFY_EVENTS: tuple[Event, ...] = ("staged", "approved", "rejected", "expired", "sent", "failed")


class Webhook(_Section):
    """One receiver of ``[approvals.notify]``: ``json`` (signed with HMAC-SHA256 when it has a
    secret) or ``slack`` (Slack's incoming-webhook ``text``, with a link to the desk)."""

    url: str
    format: Literal["json", "slack"] = "json"
    secret_env: str | None = None
    secret_file: str | None = None
    events: list[Event] = Field(default_factory=lambda: list(NOTIFY_EVENTS))

    @model_validator(mode="after")
    def _checked(self) -> Webhook:
        if self.secret_env is not None and self.secret_file is not None:
            raise ValueError("set one of secret_env or secret_file, not both")
        if not self.url.startswith(("https://", "http://")):
            raise ValueError(f"url must be http(s)://…, got {self.url!r}")
        return self


class Notify(_Section):
    """``[approvals.notify]``: who is told when an approval is staged, decided, expired or sent."""

    webhooks: list[Webhook] = Field(default_factory=list)
    #: The desk as the human reaches it (links in the messages); default: ``[admin] listen``.
    desk_url: str | None = None
    attempts: int = Field(default=6, gt=0, le=20)
    timeout: float = Field(default=10.0, gt=0, le=120)


class Approvals(_Section):
    """``[approvals]``: how long a staged request waits for a human, how often the proxy looks."""

    ttl: int = Field(default=86400, gt=0)
    poll_interval: float = Field(default=1.0, gt=0)
    #: Approvals one agent may have waiting (pending, approved or being sent). None: the
    #: agent's ``[budget]`` writes per window, when it has one; else no cap.
    max_pending: int | None = Field(default=None, gt=0)
    #: Seconds an approval may stay in ``sending`` before it is shown as stuck (its sender
    #: died mid-send; see :mod:`gitvow_proxy.stuck`). Longer than the sender's own timeout.
    stuck_after: float = Field(default=180.0, gt=0)
    notify: Notify | None = None


class Admin(_Section):
    """``[admin]``: the admin listener (``/metrics``) and the operator secret that opens the approval desk."""

    listen: str = "127.0.0.1:8081"
    secret_env: str | None = None
    secret_file: str | None = None
    #: More ``Host`` names the listener answers to (a TLS front end's); the listen address and,
    #: on loopback, ``localhost``/``127.0.0.1``/``[::1]`` always. Any other ``Host`` is refused.
    hosts: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_source(self) -> Admin:
        if self.secret_env is not None and self.secret_file is not None:
            raise ValueError("set one of secret_env or secret_file, not both")
        host, sep, port = self.listen.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"listen must be HOST:PORT, got {self.listen!r}")
        return self

    @property
    def address(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]"), int(port)


class ProxyPolicy(_Section):
    """Every top-level key the proxy owns, registered through ``register_policy_sections``."""

    proxy: ProxySettings = Field(default_factory=ProxySettings)
    credentials: dict[str, CredentialRule] = Field(default_factory=dict)
    internal: InternalIdentity | None = None
    run_state: RunState = Field(default_factory=RunState)
    write_surface: WriteSurface = Field(default_factory=WriteSurface)
    budget: Budget = Field(default_factory=Budget)
    canary: Canary = Field(default_factory=Canary)
    issue_shape: IssueShape | None = None
    egress: Egress = Field(default_factory=Egress)
    audit: Audit = Field(default_factory=Audit)
    approvals: Approvals = Field(default_factory=Approvals)
    admin: Admin | None = None


def proxy_problems(policy: Policy) -> list[str]:
    """The proxy's cross-references (run by :func:`gitvow.policy.load.parse_policy`): keys that
    would make the proxy refuse to start, or that it would accept and never act on."""
    from gitvow.policy.checks import agents_expected, operation_pattern_problem, repo_shape, undefined_agents

    section = policy.section(ProxyPolicy)
    problems: list[str] = []
    installed = policy.installed_adapters
    if installed is not None:
        for name in section.credentials:
            if name not in installed:
                problems.append(f"credentials.{name}: no adapter {name!r} is installed; expected one of "
                                f"{', '.join(sorted(installed)) or 'none'} (or install the plugin that provides it)")
    for lane, patterns in section.write_surface.lanes.items():
        for i, pattern in enumerate(patterns):
            why = operation_pattern_problem(pattern)
            if why:
                problems.append(f"write_surface.lanes.{lane}.{i}: {why}")
    for key, names in (("write_surface.agents", section.write_surface.agents), ("budget.agents", section.budget.agents)):
        for name in undefined_agents(names, policy):
            problems.append(f"{key}.{name}: agent {name!r} is not defined; {agents_expected(policy)}")
    shapes: list[tuple[str, list[str], bool]] = [
        ("proxy.allowed_repos", section.proxy.allowed_repos or [], True),
        ("run_state.paused", section.run_state.paused, True),
        ("run_state.auto_merge_off", section.run_state.auto_merge_off, True),
    ]
    for key, repos, glob in shapes:
        for i, repo in enumerate(repos):
            why = repo_shape(repo, glob=glob)
            if why:
                problems.append(f"{key}.{i}: {why}")
    from gitvow_proxy.audit import audit_path_problem

    why = audit_path_problem(section.audit.path)
    if why:
        problems.append(f"audit.path: {why}; expected a file the proxy can append to (or \"-\")")
    return problems


__all__ = [
    "Admin",
    "Approvals",
    "Audit",
    "Budget",
    "BudgetLimits",
    "Canary",
    "CredentialRule",
    "Egress",
    "InternalIdentity",
    "IssueShape",
    "ProxyPolicy",
    "ProxySettings",
    "RunState",
    "WriteSurface",
    "proxy_problems",
]
