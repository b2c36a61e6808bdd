"""The core's part of the policy file (pydantic v2, unknown keys rejected everywhere).

The core reads ``hosts``, ``operations``, ``relays``, ``adapters``, ``agents``,
``comment_commands`` and ``mcp``; every other
top-level key belongs to an enforcement point, which contributes its own model through the
``register_policy_sections`` hook (:mod:`gitvow.policy.sections`). :func:`composed_model`
puts them side by side for ``gitvow policy schema``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from gitvow.policy.sections import PolicySection
from gitvow.policy.selftest import PolicyTest

if TYPE_CHECKING:
    from gitvow.adapter import Adapter

ModeName = Literal["advisory", "issues_only", "issues_and_prs", "issues_prs_merge"]


class StrictModel(BaseModel):
    """Base of every policy section: a typo is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class OperationRule(StrictModel):
    """A row override: exactly one of ``min_mode`` (optionally with ``capability``), ``relay``, ``deny``."""

    min_mode: ModeName | None = None
    capability: str | None = None
    relay: str | None = None
    deny: bool = False

    @model_validator(mode="after")
    def _one_rule(self) -> OperationRule:
        chosen = [name for name, set_ in (("min_mode", self.min_mode is not None), ("relay", self.relay is not None), ("deny", self.deny)) if set_]
        if len(chosen) != 1:
            raise ValueError(f"expected exactly one of min_mode, relay or deny = true; got {', '.join(chosen) or 'none'}")
        if self.capability is not None and self.min_mode is None:
            raise ValueError("capability is an OR-grant beside min_mode; set min_mode too")
        return self


class RelayRule(StrictModel):
    """A relay command of the operator's own: how to call it, and what it does."""

    usage: str = Field(min_length=1)
    what: str = Field(default="this operation", min_length=1)


class AgentRule(StrictModel):
    """One agent: its mode on the ladder, OR-granting capabilities, per-repo mode overrides
    (``autonomy``, ``owner/name`` → mode) and, optionally, the only repositories it may touch."""

    mode: ModeName = "advisory"
    capabilities: list[str] = Field(default_factory=list)
    autonomy: dict[str, ModeName] = Field(default_factory=dict)
    repos: list[str] | None = None
    #: The branches this agent may write (patterns by segment, ``agent/**``); replaces ``[branches] allowed``.
    branches: list[str] | None = None
    secret_env: str | None = None
    secret_file: str | None = None
    #: The proxy's shadow mode for this agent (``false``), overriding ``[proxy] enforce``.
    enforce: bool | None = None


class CommentCommandRule(StrictModel):
    """A comment that a bot turns into an operation (Prow's ``/lgtm``, ``bors r+``): a regular
    expression searched in every line of a comment body, and the operations it means."""

    pattern: str = Field(min_length=1)
    operations: list[str] = Field(min_length=1)
    ignore_case: bool = True


PathVerdict = Literal["stage", "refuse"]


class BranchRules(StrictModel):
    """``[branches]``: the branches agents may write (empty: any), the ones they never write
    directly, and whether the forge's default branch is one of those."""

    allowed: list[str] = Field(default_factory=list)
    protected: list[str] = Field(default_factory=list)
    default_branch: bool = True


class PathRules(StrictModel):
    """``[paths]``: protected path patterns and their verdict (``stage`` for approval, or
    ``refuse``); ``defaults`` keeps the built-in CI and ownership patterns."""

    defaults: bool = True
    rules: dict[str, PathVerdict] = Field(default_factory=dict)


class SizeRules(StrictModel):
    """``[size]``: caps per push or per commit request: files changed, bytes of new contents, largest object."""

    max_files: int | None = Field(default=5000, ge=1)
    max_added_bytes: int | None = Field(default=100 * 1024 * 1024, ge=1)
    max_object_bytes: int | None = Field(default=50 * 1024 * 1024, ge=1)


class SecretRules(StrictModel):
    """``[secrets]``: refuse credentials of known formats; ``allow`` lists fingerprints let through."""

    enabled: bool = True
    allow: list[str] = Field(default_factory=list)


class McpRule(StrictModel):
    """An MCP server reached over HTTP: ``url`` (scheme, host, port, path prefix), ``tools``
    (the forge adapter whose tool table classifies its ``tools/call``) and whether its
    ``tools/list`` answers leave out the tools the agent can never use (``filter_tools``)."""

    url: str = Field(min_length=1)
    tools: str = Field(min_length=1)
    filter_tools: bool = False


class CorePolicy(StrictModel):
    """The core's keys. ``hosts`` maps host or host:port to an adapter name; ``agents`` is shared
    by both enforcement points (the proxy reads ``secret_env``/``secret_file`` too);
    ``comment_commands`` names the chat-ops patterns of the operator's bots; ``mcp`` declares
    MCP endpoints (GitHub's hosted server is built in)."""

    hosts: dict[str, str] = Field(default_factory=dict)
    operations: dict[str, OperationRule] = Field(default_factory=dict)
    relays: dict[str, RelayRule] = Field(default_factory=dict)
    adapters: dict[str, dict[str, Any]] = Field(default_factory=dict)
    agents: dict[str, AgentRule] = Field(default_factory=dict)
    comment_commands: dict[str, CommentCommandRule] = Field(default_factory=dict)
    branches: BranchRules = Field(default_factory=BranchRules)
    paths: PathRules = Field(default_factory=PathRules)
    size: SizeRules = Field(default_factory=SizeRules)
    secrets: SecretRules = Field(default_factory=SecretRules)
    #: ``[[tests]]``: what the file must allow and refuse, checked where it is enforced.
    tests: list[PolicyTest] = Field(default_factory=list)
    mcp: dict[str, McpRule] = Field(default_factory=dict)


def composed_model(sections: Iterable[PolicySection], adapters: Iterable[Adapter] = ()) -> type[BaseModel]:
    """One model of the whole file as installed: the core's keys, every section's, and under
    ``adapters.NAME`` each installed adapter's options model (an adapter without options
    takes an empty table; an adapter not installed is no key at all)."""
    bases: tuple[type[BaseModel], ...] = (CorePolicy, *(section.model for section in sections))
    fields: dict[str, Any] = {}
    for adapter in adapters:
        options = adapter.options_model() or _NoOptions
        fields[adapter.name] = (options | None, None)
    per_adapter: type[BaseModel] = create_model(
        "AdapterOptionsByName", __config__=ConfigDict(extra="forbid", frozen=True), **fields
    )
    model: type[BaseModel] = create_model(
        "PolicyFile", __base__=bases, adapters=(per_adapter, Field(default_factory=per_adapter))
    )
    return model


class _NoOptions(StrictModel):
    """An adapter that takes no options: ``[adapters.NAME]`` may only be empty."""
