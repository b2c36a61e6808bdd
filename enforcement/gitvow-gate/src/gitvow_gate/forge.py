"""Forge operations recognised in a tool call: classify, then ask the engine.

``gh pr merge 12`` typed in the agent's shell and the ``PUT …/pulls/12/merge`` it would send
are one operation, ``pr.merge``, and get one verdict with one denial line. The adapters
contribute the classifiers (``Adapter.classify_command`` / ``classify_mcp_tool``); the
verdict and the line are the kernel's (:meth:`gitvow.pipeline.Engine.decide_call`), built
from the compiled policy the gate caches (:meth:`gitvow.policy.compile.CompiledPolicy.from_plain`)
and the adapters the call needs. This module has no policy stage of its own.

This stage applies only when the policy names the hook's agent in ``[agents.NAME]``: with no
entry the gate behaves as gitvow 0.42 did. It is also the only stage that imports the
plugin machinery, and only for a call that may be a forge operation (an MCP tool, or a
program an installed adapter names in its ``commands``: ``gh``, ``glab``, a third party's
``bb``; ``git`` only for a subcommand that talks to a remote). Which programs those are comes
from the plugin index (:mod:`gitvow_gate.plugin_index`), built once by full discovery and read
from its cache after, so a plain shell command never pays for plugin discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitvow_gate.call import GateCall
from gitvow_gate.gate_policy import GatePolicy
from gitvow_gate.shell import Command

if TYPE_CHECKING:
    from gitvow.adapter import Adapter
    from gitvow.pipeline import AdapterSet
    from gitvow.request import ToolCall


def _log_error(message: str, *args: object) -> None:
    import logging  # only when an adapter misbehaves

    logging.getLogger("gitvow_gate.forge").error(message, *args)



#: git subcommands that talk to a remote; ``git status`` and friends never reach a forge, and
#: agents run them constantly, so they do not pay for loading the plugins. (This is git's own
#: command line, the same on every forge; which programs are forge programs at all is the
#: adapters' ``commands``, read from the plugin index.)
GIT_REMOTE_SUBCOMMANDS = frozenset({"push", "fetch", "pull", "clone", "ls-remote", "submodule", "lfs", "remote",
                                    "request-pull", "archive"})
_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"})


def _git_subcommand(args: Sequence[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTIONS else 1
    return args[i] if i < len(args) else None


def _may_reach_forge(command: Command, programs: frozenset[str] | None) -> bool:
    """Whether an adapter reads ``command``: its program is one some adapter names in
    ``commands`` (``programs``; None when a plugin failed and any program may be its)."""
    if command.indirect or (programs is not None and command.program not in programs):
        return False
    if command.program == "git":
        return _git_subcommand(command.args) in GIT_REMOTE_SUBCOMMANDS
    return True


def forge_programs(env: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """The programs installed adapters read, from the plugin index (built once by full discovery)."""
    import os

    from gitvow_gate import plugin_index

    return plugin_index.programs(os.environ if env is None else env)


@dataclass(frozen=True, slots=True)
class ForgeVerdict:
    """``allowed`` with the operations found, or a refusal with the proxy's one-line denial,
    its reason code and the engine's verdict (``deny`` or ``relay``)."""

    allowed: bool
    operations: tuple[str, ...] = ()
    message: str = ""
    code: str | None = None
    outcome: str = "allow"


def may_be_forge(call: GateCall, commands: Sequence[Command] | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether the call may be a forge operation: an MCP tool, or a shell command whose program
    an installed adapter reads."""
    if call.kind == "mcp":
        return True
    if call.kind == "shell" and commands:
        programs = forge_programs(env)
        return any(_may_reach_forge(c, programs) for c in commands)
    return False


def _refused(message: str) -> ForgeVerdict:
    return ForgeVerdict(False, message=f"gitvow refused the call: {message}. reason=internal_error", code="internal_error",
                        outcome="deny")


def _installed(call: GateCall, commands: Sequence[Command] | None, env: Mapping[str, str],
               programs: frozenset[str] | None) -> AdapterSet | str:
    """The adapters this call needs and the relay templates, or a failure line naming a broken plugin.

    A shell command loads only the adapters of its programs, through the cached plugin index
    (:mod:`gitvow_gate.plugin_index`); an MCP tool, or any doubt, takes full discovery.
    """
    from gitvow.pipeline import AdapterSet

    if call.kind == "shell" and commands:
        from gitvow_gate import plugin_index

        loaded = plugin_index.for_programs({c.program for c in commands if _may_reach_forge(c, programs)}, env)
        if loaded is not None:
            return AdapterSet(loaded.adapters, loaded.relays)
    from gitvow.plugins import installed

    plugins = installed()
    if plugins.failures:
        return f"forge operations cannot be checked because {plugins.failures[0]}; fix or uninstall it"
    return AdapterSet(plugins.adapters, plugins.relays, plugins.adapter_plugin)


def _tool_calls(call: GateCall, commands: Sequence[Command] | None, adapter: Adapter,
                programs: frozenset[str] | None) -> list[tuple[ToolCall, str]]:
    """What ``adapter`` recognises in the call, each with what the denial line names."""
    found: list[tuple[ToolCall | None, str]] = []
    if call.kind == "mcp":
        found.append((adapter.classify_mcp_tool(call.mcp_tool, dict(call.arguments)), call.mcp_tool))
    else:
        found.extend((adapter.classify_command(c.argv), c.program) for c in commands or ()
                     if _may_reach_forge(c, programs))
    return [(tool_call, what) for tool_call, what in found if tool_call is not None]


def behind_the_proxy(env: Mapping[str, str]) -> bool:
    """Whether this agent's traffic goes through a gitvow proxy, in the environment the gate
    was handed: ``gitvow env`` sets ``GITVOW_AGENT`` beside the proxy variables."""
    return bool(env.get("GITVOW_AGENT")) and bool(env.get("HTTPS_PROXY") or env.get("https_proxy"))


def evaluate(call: GateCall, commands: Sequence[Command] | None, agent: str, policy: GatePolicy,
             env: Mapping[str, str] | None = None) -> ForgeVerdict:
    """Classify the call with the adapters it needs, then ask the engine for each operation found.

    A relay the proxy stages for a human (the built-in ``approval``) is the proxy's to answer:
    behind the proxy the call goes on, and the proxy stages the request and answers with the
    approval's id; away from one the gate refuses, naming the approval path. Whether the
    relay may be staged at all is the engine's (every other operation must be allowed).
    """
    import os

    from gitvow.errors import PolicyError
    from gitvow.gates import Caller
    from gitvow.pipeline import Action, Engine

    env = os.environ if env is None else env
    try:
        compiled = policy.compiled()
    except PolicyError as exc:
        return _refused(str(exc))
    grant = compiled.grant_for(agent)
    if grant is None:
        return ForgeVerdict(True)
    programs = forge_programs(env) if call.kind == "shell" else None
    installed = _installed(call, commands, env, programs)
    if isinstance(installed, str):
        # the operation may be one the broken plugin would have refused: fail closed, by name
        return _refused(installed)
    try:
        engine = Engine(compiled.restricted_to(installed.adapters), installed)
    except PolicyError as exc:
        return _refused(str(exc))
    caller = Caller(agent, grant)
    found: list[str] = []
    for adapter in engine.adapters.values():
        try:
            tool_calls = _tool_calls(call, commands, adapter, programs)
        except Exception as exc:
            _log_error("adapter %r raised classifying a tool call: %s: %s", adapter.name, type(exc).__name__, exc)
            return _refused(f"adapter {adapter.name!r} failed to classify it ({type(exc).__name__}); ask a human")
        for tool_call, what in tool_calls:
            # An MCP tool's arguments are its whole request: a write without a change is refused
            # here as at the proxy. A shell command's body may be elsewhere (a file): the proxy's.
            decision = engine.decide_call(tool_call, adapter, caller, target=tool_call.summary or what,
                                          partial=call.kind != "mcp")
            if decision.action is Action.FORWARD or (decision.staged and behind_the_proxy(env)):
                found.extend(tool_call.operations)
                continue
            outcome = decision.verdict.outcome.label if decision.verdict is not None else "deny"
            return ForgeVerdict(False, operations=tool_call.operations, message=decision.message or "",
                                code=decision.reason, outcome=outcome)
    return ForgeVerdict(True, operations=tuple(dict.fromkeys(found)))
