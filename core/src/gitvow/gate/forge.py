"""Forge operations recognised in a tool call, judged by the proxy's own policy table.

``gh pr merge 12`` typed in the agent's shell and the ``PUT …/pulls/12/merge`` it would send
are one operation, ``pr.merge``, and get one verdict with one denial line. The adapters
contribute the classifiers (``Adapter.classify_command`` / ``classify_mcp_tool``); the
evaluator, the table and the message are :class:`gitvow.pipeline.Engine`'s.

This stage applies only when the policy names the hook's agent in ``[agents.NAME]``: with no
entry the gate behaves as gitvow 0.42 did. It is also the only stage that imports the
plugin machinery, and only for a call that may be a forge operation (a forge CLI in command
position, or an MCP tool), so a plain shell command never pays for plugin discovery.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitvow.gate.call import GateCall
from gitvow.gate.shell import Command

log = logging.getLogger("gitvow.gate.forge")

#: Programs whose commands adapters classify (git, GitHub, GitLab, Gitea/Forgejo CLIs).
FORGE_PROGRAMS = frozenset({"git", "gh", "glab", "tea", "hub", "fj", "berg"})
#: git subcommands that talk to a remote; ``git status`` and friends never reach a forge, and
#: agents run them constantly, so they do not pay for loading the plugins.
GIT_REMOTE_SUBCOMMANDS = frozenset({"push", "fetch", "pull", "clone", "ls-remote", "submodule", "lfs", "remote",
                                    "request-pull", "archive"})
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"})


def _git_subcommand(args: Sequence[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    return args[i] if i < len(args) else None


def _may_reach_forge(command: Command) -> bool:
    if command.indirect or command.program not in FORGE_PROGRAMS:
        return False
    if command.program == "git":
        return _git_subcommand(command.args) in GIT_REMOTE_SUBCOMMANDS
    return True


@dataclass(frozen=True, slots=True)
class ForgeVerdict:
    """``allowed`` with the operations found, or a refusal with the proxy's one-line denial."""

    allowed: bool
    operations: tuple[str, ...] = ()
    message: str = ""
    code: str | None = None


def may_be_forge(call: GateCall, commands: Sequence[Command] | None) -> bool:
    if call.kind == "mcp":
        return True
    if call.kind == "shell" and commands:
        return any(_may_reach_forge(c) for c in commands)
    return False


def evaluate(
    call: GateCall, commands: Sequence[Command] | None, agent: str, policy_source: str
) -> ForgeVerdict:
    """Classify the call with every installed adapter and evaluate each operation for ``agent``."""
    from gitvow.pipeline import Engine
    from gitvow.plugins import installed
    from gitvow.policy.load import load_policy
    from gitvow.request import Classification, ToolCall

    plugins = installed()
    if plugins.failures:
        # the operation may be one the broken plugin would have refused: fail closed, by name
        failure = plugins.failures[0]
        return ForgeVerdict(
            False,
            message=f"gitvow refused the call: forge operations cannot be checked because {failure}; "
            "fix or uninstall the plugin. reason=internal_error",
            code="internal_error",
        )
    policy = load_policy(policy_source, relays=plugins.relays)
    engine = Engine(policy, plugins)
    grant = policy.grant_for(agent)
    if grant is None:
        return ForgeVerdict(True)
    found: list[str] = []
    for adapter in plugins.adapters.values():
        calls: list[tuple[ToolCall | None, str]] = []
        try:
            if call.kind == "mcp":
                calls.append((adapter.classify_mcp_tool(call.mcp_tool, _mapping(call.arguments)), call.mcp_tool))
            else:
                for command in commands or ():
                    if _may_reach_forge(command):
                        calls.append((adapter.classify_command(command.argv), command.program))
        except Exception as exc:
            log.error("adapter %r raised classifying a tool call: %s: %s", adapter.name, type(exc).__name__, exc)
            return ForgeVerdict(
                False,
                message=f"gitvow refused the call: adapter {adapter.name!r} failed to classify it "
                f"({type(exc).__name__}); ask a human. reason=internal_error",
                code="internal_error",
            )
        for tool_call, what in calls:
            if tool_call is None:
                continue
            classification = Classification(
                operations=tool_call.operations, repo=tool_call.repo, adapter=tool_call.adapter or adapter.name
            )
            verdict = engine.evaluate(classification, grant)
            if not verdict.allowed:
                target = tool_call.summary or what
                return ForgeVerdict(
                    False,
                    operations=tool_call.operations,
                    message=engine.message(verdict, classification, adapter, target),
                    code=verdict.code,
                )
            found.extend(tool_call.operations)
    return ForgeVerdict(True, operations=tuple(dict.fromkeys(found)))


def _mapping(arguments: Mapping[str, Any]) -> Mapping[str, object]:
    return dict(arguments)
