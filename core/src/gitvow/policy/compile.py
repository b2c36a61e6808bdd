"""The one path from validated policy data to the kernel's input: :class:`CompiledPolicy`.

:func:`compile_policy` is the one way a policy becomes what :class:`gitvow.pipeline.Engine`
judges with: the table, the relay templates, the grants, hosts, adapter options and comment
commands. The policy loader calls it with the pydantic model's dump (and extends the result
with the validated sections, :class:`gitvow.policy.load.Policy`); the agent gate caches a
validated file's :meth:`CompiledPolicy.to_plain` form, so its hook builds the same compiled
policy from JSON and never imports pydantic. Both enforcement points therefore judge with the
same table, the same relay templates and the same grants from the same data.

Input is the *validated* plain form (``OperationRule.model_dump()`` and friends): these
functions check cross-references (an operation's relay exists, the operation is in the
vocabulary) but not types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from gitvow.change_rules import DEFAULT_RULES, ChangeRules, compile_rules
from gitvow.comments import CommentCommand, compile_command
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.modes import Mode
from gitvow.policy.table import DEFAULT_TABLE, PolicyRow, PolicyTable
from gitvow.relay import RelayTemplate

if TYPE_CHECKING:
    from typing import Any

_NOTHING: Mapping[str, Any] = MappingProxyType({})
#: The keys of the plain form (:meth:`CompiledPolicy.to_plain`), each a validated table of the file.
PLAIN_KEYS: tuple[str, ...] = ("hosts", "operations", "relays", "adapters", "agents", "comment_commands", "mcp",
                               "branches", "paths", "size", "secrets")


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """What the engine judges with, as plain data: no pydantic model, nothing to validate.

    ``plain`` is the validated input it was compiled from (:data:`PLAIN_KEYS`, plus the
    installed relay templates it was checked against), so it can be cached as JSON and
    compiled again to an equal policy (:meth:`to_plain`, :meth:`from_plain`).
    """

    table: PolicyTable = field(default_factory=lambda: DEFAULT_TABLE)
    relays: Mapping[str, RelayTemplate] = field(default_factory=dict)
    hosts: Mapping[str, str] = field(default_factory=dict)
    adapter_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    comment_commands: tuple[CommentCommand, ...] = ()
    #: ``[agents.NAME]`` as the evaluator's grants.
    grants: Mapping[str, Grant] = field(default_factory=dict)
    #: ``[mcp.NAME]`` as validated (``url``, ``tools``, ``filter_tools``); the engine adds the built-in ones.
    mcp: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str | None = None
    plain: Mapping[str, Any] = _NOTHING
    #: ``[branches]``, ``[paths]``, ``[size]``, ``[secrets]`` and agents' ``branches``, for stage 5b.
    change_rules: ChangeRules = DEFAULT_RULES

    def grant_for(self, agent: str) -> Grant | None:
        """The grant of ``[agents.NAME]``, or None when the policy does not name that agent."""
        return self.grants.get(agent)

    def to_plain(self) -> dict[str, Any]:
        """The JSON-ready form :meth:`from_plain` compiles again (the agent gate caches it)."""
        return {key: self.plain.get(key, {}) for key in (*PLAIN_KEYS, "installed_relays")}

    @classmethod
    def from_plain(cls, plain: Mapping[str, Any], *, source: str | None = None) -> CompiledPolicy:
        """Compile a :meth:`to_plain` form again (validated once already: only cross-references are checked)."""
        installed = {command: RelayTemplate(command, usage, what, bool(staged))
                     for command, usage, what, staged in plain.get("installed_relays", ())}
        return compile_policy(plain, installed, source=source)

    def restricted_to(self, adapters: Mapping[str, object]) -> CompiledPolicy:
        """This policy with ``[hosts]`` and ``[adapters.NAME]`` limited to ``adapters``: for an
        engine built from some of the installed adapters (the agent gate loads only the one a
        command needs), which must not be refused for naming the others."""
        return CompiledPolicy(
            table=self.table, relays=self.relays, comment_commands=self.comment_commands, grants=self.grants,
            hosts={host: name for host, name in self.hosts.items() if name in adapters},
            adapter_options={name: opts for name, opts in self.adapter_options.items() if name in adapters},
            mcp={name: rule for name, rule in self.mcp.items() if rule.get("tools") in adapters},
            source=self.source, plain=self.plain, change_rules=self.change_rules,
        )


def compile_policy(
    plain: Mapping[str, Any], installed: Mapping[str, RelayTemplate] | None = None, *, source: str | None = None
) -> CompiledPolicy:
    """Validated plain data (``CorePolicy.model_dump()``'s tables, :data:`PLAIN_KEYS`) and the
    installed relay templates → the compiled policy. Raises :class:`PolicyError` for a broken
    cross-reference (an unknown operation or relay, a comment pattern that does not compile)."""
    relays = relay_templates(plain.get("relays") or {}, installed)
    adapters = plain.get("adapters") or {}
    return CompiledPolicy(
        table=policy_table(plain.get("operations") or {}, relays, source=source),
        relays=relays,
        hosts=dict(plain.get("hosts") or {}),
        adapter_options={name: dict(options) for name, options in adapters.items()},
        comment_commands=comment_commands(plain.get("comment_commands") or {}, source=source),
        grants={name: grant(rule) for name, rule in (plain.get("agents") or {}).items()},
        mcp={name: dict(rule) for name, rule in (plain.get("mcp") or {}).items()},
        source=source,
        plain={**{key: plain.get(key) or {} for key in PLAIN_KEYS},
               "installed_relays": [[r.command, r.usage, r.what, r.staged] for r in (installed or {}).values()]},
        change_rules=compile_rules(plain),
    )


def relay_templates(
    relays: Mapping[str, Mapping[str, Any]], installed: Mapping[str, RelayTemplate] | None = None
) -> dict[str, RelayTemplate]:
    """The installed relay templates, then ``[relays.NAME]`` rows of the file over them."""
    templates = dict(installed or {})
    for command, rule in relays.items():
        templates[command] = RelayTemplate(command, rule["usage"], rule.get("what") or "this operation")
    return templates


def policy_table(
    operations: Mapping[str, Mapping[str, Any]],
    relays: Mapping[str, RelayTemplate],
    *,
    source: str | None = None,
) -> PolicyTable:
    """The default table with the file's ``[operations]`` rows over it; a relay row must name a known relay."""
    rows: dict[str, PolicyRow] = {}
    for name, rule in operations.items():
        relay = rule.get("relay")
        if relay is not None and relay not in relays:
            known = ", ".join(sorted(relays)) or "none"
            raise PolicyError(
                f"relay {relay!r} is not defined; add [relays.{relay}] or use one of: {known}",
                source=source,
                key=f"operations.{name!r}.relay",
            )
        min_mode = rule.get("min_mode")
        rows[name] = PolicyRow(
            min_mode=Mode.parse(min_mode) if min_mode else Mode.ADVISORY,
            capability=rule.get("capability"),
            relay=relay,
            deny=bool(rule.get("deny", False)),
        )
    return PolicyTable(rows, source=source)


def grant(agent: Mapping[str, Any]) -> Grant:
    """An ``[agents.NAME]`` row as the evaluator's :class:`Grant`."""
    autonomy = agent.get("autonomy") or {}
    return Grant(
        mode=Mode.parse(agent.get("mode") or "advisory"),
        capabilities=frozenset(agent.get("capabilities") or ()),
        autonomy=MappingProxyType({repo.lower(): Mode.parse(mode) for repo, mode in autonomy.items()}),
    )


def comment_commands(rules: Mapping[str, Mapping[str, Any]], *, source: str | None = None) -> tuple[CommentCommand, ...]:
    """``[comment_commands.NAME]`` rows compiled: each pattern a regular expression, each
    operation one of the vocabulary (``unknown`` included: a command the operator wants refused)."""
    import re

    from gitvow.vocabulary import OPERATIONS

    compiled: list[CommentCommand] = []
    for name, rule in rules.items():
        for operation in rule["operations"]:
            if operation not in OPERATIONS:
                raise PolicyError(f"{operation!r} is not an operation; see `gitvow ops`", source=source,
                                  key=f"comment_commands.{name}.operations")
        try:
            compiled.append(compile_command(name, rule["pattern"], rule["operations"],
                                            ignore_case=rule.get("ignore_case", True)))
        except re.error as exc:
            raise PolicyError(f"not a regular expression ({exc})", source=source,
                              key=f"comment_commands.{name}.pattern") from None
    return tuple(compiled)
