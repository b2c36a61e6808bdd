"""The agent gate's sections of the policy file, as the existing ``gitvow`` 0.42 wrote them.

Files written for the old tool must load unchanged, so the keys, their shapes and their
defaults are the old tool's: command rules are ``{pattern}`` or ``{program, verbs}`` with an
optional ``target``; ``when`` is ``immediate``, ``commit`` or ``observe``; ``_doc``-style keys
are comments. The old tool's keys that gitvow does not implement (``decisions``,
``intent``…) are accepted and reported as ignored by ``gitvow policy check``; any other
unknown key is an error, as everywhere in the policy file.

This module (and pydantic with it) is imported when plugins are discovered and a policy file
is validated; a hook call that finds its policy in the compiled-policy cache
(:mod:`gitvow_gate.gate_policy`) never imports it.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gitvow.policy.load import Policy
from gitvow_gate.gate_policy import command_rule_pattern

When = Literal["immediate", "commit", "observe"]
#: Checks stated on the parsed command (program, flags, targets), not on its text.
Check = Literal["recursive_delete"]
Question = Literal["gate_bearing", "route_gate", "route_callers"]

#: Top-level keys of gitvow 0.42 that this gitvow accepts and does not act on.
IGNORED_KEYS: tuple[str, ...] = ("decisions", "intent", "outcomes", "sync", "runtime", "snapshots", "pricing")


def drop_comments(data: Any) -> Any:
    """Keys starting with ``_`` are comments in the old format (``_doc``, ``_doc_when``)."""
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith("_"))}
    return data


def _check_regex(pattern: str, what: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{what} is not a valid regular expression: {pattern!r} ({exc})") from None
    return pattern


class LegacyModel(BaseModel):
    """Unknown keys are errors; ``_``-prefixed keys are comments and dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _comments(cls, data: Any) -> Any:
        return drop_comments(data)


class CommandRuleEntry(LegacyModel):
    """A ``bash_deny``/``bash_confirm`` entry: ``pattern``, or ``program`` + ``verbs`` (+ ``target``), or ``check``."""

    pattern: str | None = None
    program: str | list[str] | None = None
    verbs: list[str] | None = None
    target: str | None = None
    #: A check on the parsed command instead of a pattern (:mod:`gitvow_gate.protections`).
    check: Check | None = None
    reason: str | None = None
    when: When | None = None
    id: str | None = None
    pack: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> CommandRuleEntry:
        if self.check is not None:
            if self.pattern is not None or self.program is not None or self.verbs is not None or self.target is not None:
                raise ValueError("'check' stands alone: no 'pattern', 'program', 'verbs' or 'target' beside it")
            return self
        if self.pattern is not None:
            if self.target is not None:
                raise ValueError("'target' is only for rules written as program and verbs")
            _check_regex(self.pattern, "pattern")
            return self
        if self.program is None or self.verbs is None:
            raise ValueError("a command rule needs a 'pattern', or 'program' and 'verbs', or a 'check'")
        programs = [self.program] if isinstance(self.program, str) else self.program
        if not programs or not all(programs):
            raise ValueError("'program' must be a non-empty string or list of them")
        if not self.verbs or not all(self.verbs):
            raise ValueError("'verbs' must be a non-empty list of strings")
        _check_regex(command_rule_pattern(tuple(programs), tuple(self.verbs)), "verbs")
        if self.target is not None:
            _check_regex(self.target, "target")
        return self


class PathRuleEntry(LegacyModel):
    """A ``path_confirm`` entry: a regex on the edited file's path."""

    pattern: str
    reason: str | None = None
    when: When | None = None
    id: str | None = None
    pack: str | None = None

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        return _check_regex(value, "pattern")


class ProviderEntry(LegacyModel):
    """A provider (docs/gate.md, "Providers"): a command asked factual questions about an edit."""

    name: str = Field(min_length=1)
    command: str | list[str]
    questions: list[Question] = Field(default_factory=lambda: _all_questions())
    timeout: float = Field(default=10, gt=0, le=600)

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | list[str]) -> str | list[str]:
        argv = value if isinstance(value, list) else _split(value)
        if not argv or not argv[0]:
            raise ValueError("command is empty")
        return value


class ClassifierEntry(LegacyModel):
    """``llm_classifier``: a command that reads the hook JSON and prints ``ALLOW|CONFIRM|DENY <reason>``."""

    enabled: bool = False
    command: str | list[str] = ""
    timeout: float = Field(default=30, gt=0, le=600)

    @model_validator(mode="after")
    def _command(self) -> ClassifierEntry:
        if self.enabled:
            argv = self.command if isinstance(self.command, list) else _split(self.command)
            if not argv or not argv[0]:
                raise ValueError("an enabled classifier needs a command")
        return self


def _all_questions() -> list[Question]:
    return ["gate_bearing", "route_gate", "route_callers"]


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot split command {text!r} like a shell would: {exc}") from None


def _regex_list(values: list[str], what: str) -> list[str]:
    for value in values:
        _check_regex(value, what)
    return values


class GateSections(BaseModel):
    """The gate's top-level keys of the policy file, registered with the core by :mod:`gitvow_gate.plugin`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``keep`` (default): the packaged built-in rules stay in force and this file's rules add
    #: to them. ``replace``: only this file's rules apply (gitvow 0.42's behaviour for a user
    #: file); ``gitvow policy check`` says so.
    builtin_rules: Literal["keep", "replace"] = "keep"
    bash_deny: list[CommandRuleEntry] = Field(default_factory=list)
    bash_confirm: list[CommandRuleEntry] = Field(default_factory=list)
    path_confirm: list[PathRuleEntry] = Field(default_factory=list)
    mcp_allow: list[str] = Field(default_factory=list)
    mcp_deny: list[str] = Field(default_factory=list)
    providers: list[ProviderEntry] = Field(default_factory=list)
    llm_classifier: ClassifierEntry | None = None
    # gitvow 0.42 keys accepted as they are and not acted on (see IGNORED_KEYS)
    decisions: dict[str, Any] | None = None
    intent: dict[str, Any] | None = None
    outcomes: dict[str, Any] | None = None
    sync: dict[str, Any] | None = None
    runtime: dict[str, Any] | None = None
    snapshots: dict[str, Any] | None = None
    pricing: dict[str, Any] | None = None

    @field_validator("mcp_allow", "mcp_deny")
    @classmethod
    def _mcp(cls, values: list[str]) -> list[str]:
        return _regex_list(values, "MCP tool pattern")

    @model_validator(mode="before")
    @classmethod
    def _comments(cls, data: Any) -> Any:
        return drop_comments(data)


def ignored_keys(data: dict[str, Any]) -> list[str]:
    """The keys of a policy document that gitvow accepts without acting on them."""
    return [key for key in data if key in IGNORED_KEYS or (isinstance(key, str) and key.startswith("_"))]


def notes(policy: Policy) -> list[str]:
    """What ``gitvow policy check`` says about a valid file: built-in protections switched off."""
    if policy.section(GateSections).builtin_rules == "replace":
        return ['builtin_rules = "replace": the gate\'s built-in rules (recursive deletes of / and home '
                "directories, force pushes, destructive git/kubectl/terraform/SQL/AWS, CI and policy edits…) are "
                "NOT in force; only this file's rules apply"]
    return []
