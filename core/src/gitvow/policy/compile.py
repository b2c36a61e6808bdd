"""The one path from validated policy data to what the evaluator uses: table, relays, grants.

Every enforcement point goes through these functions. The policy loader calls them with the
pydantic model's dump; the agent gate, which caches a validated file's plain form so its hook
never imports pydantic, calls them with that cached form. Both therefore build the same
table, the same relay templates and the same grants from the same data.

Input is the *validated* plain form (``OperationRule.model_dump()`` and friends): these
functions check cross-references (an operation's relay exists, the operation is in the
vocabulary) but not types.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gitvow.comments import CommentCommand, compile_command
from gitvow.errors import PolicyError
from gitvow.evaluator import Grant
from gitvow.modes import Mode
from gitvow.policy.table import PolicyRow, PolicyTable
from gitvow.relay import RelayTemplate


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
