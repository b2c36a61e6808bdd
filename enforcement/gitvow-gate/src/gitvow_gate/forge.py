"""Forge operations recognised in a tool call, judged by the proxy's own policy table.

``gh pr merge 12`` typed in the agent's shell and the ``PUT …/pulls/12/merge`` it would send
are one operation, ``pr.merge``, and get one verdict with one denial line. The adapters
contribute the classifiers (``Adapter.classify_command`` / ``classify_mcp_tool``); the
evaluator, the table and the message are :class:`gitvow.pipeline.Engine`'s.

This stage applies only when the policy names the hook's agent in ``[agents.NAME]``: with no
entry the gate behaves as gitvow 0.42 did. It is also the only stage that imports the
plugin machinery, and only for a call that may be a forge operation (a forge CLI talking to
a remote, or an MCP tool), so a plain shell command never pays for plugin discovery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow_gate.call import GateCall
from gitvow_gate.policy import GatePolicy
from gitvow_gate.records import record
from gitvow_gate.shell import Command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _log_error(message: str, *args: object) -> None:
    import logging  # only when an adapter misbehaves

    logging.getLogger("gitvow_gate.forge").error(message, *args)

#: Programs whose commands adapters classify (git, GitHub, GitLab, Gitea/Forgejo CLIs; curl, which
#: gitvow-bitbucket reads because Bitbucket has no CLI).
FORGE_PROGRAMS = frozenset({"git", "gh", "glab", "tea", "hub", "fj", "berg", "curl"})
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


@record
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


def _refused(message: str) -> ForgeVerdict:
    return ForgeVerdict(False, message=f"gitvow refused the call: {message}. reason=internal_error", code="internal_error")


def _adapters_and_relays(call: GateCall, commands: Sequence[Command] | None, options: Mapping[str, Any],
                         env: Mapping[str, str]) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], str]:
    """The adapters this call needs and the relay templates; a failure line when a plugin is broken.

    A shell command loads only the adapters of its programs, through the cached plugin index
    (:mod:`gitvow_gate.plugin_index`); an MCP tool, or any doubt, takes full discovery.
    """
    if call.kind == "shell" and commands:
        from gitvow_gate import plugin_index

        programs = {c.program for c in commands if _may_reach_forge(c)}
        loaded = plugin_index.for_programs(programs, env)
        if loaded is not None and set(options) <= set(loaded.adapters) | _indexed(env):
            # options of installed adapters this command does not need are not applied here
            needed = {name: values for name, values in options.items() if name in loaded.adapters}
            return loaded.adapters, loaded.relays, needed, ""
    from gitvow.plugins import installed

    plugins = installed()
    if plugins.failures:
        return {}, {}, {}, f"forge operations cannot be checked because {plugins.failures[0]}; fix or uninstall it"
    return plugins.adapters, plugins.relays, options, ""


def _indexed(env: Mapping[str, str]) -> set[str]:
    from gitvow_gate import plugin_index

    index = plugin_index.read(env)
    return set(index["adapters"]) if index else set()


def evaluate(call: GateCall, commands: Sequence[Command] | None, agent: str, policy: GatePolicy,
             env: Mapping[str, str] | None = None) -> ForgeVerdict:
    """Classify the call with every installed adapter and evaluate each operation for ``agent``.

    The table, grant and relays are built by :mod:`gitvow.policy.compile` from the policy's
    cached plain form, exactly as the loader builds them, so this path imports neither
    pydantic nor the pipeline; the verdict is :func:`gitvow.evaluator.evaluate`'s and the
    line :func:`gitvow.denial.render`'s, with the adapter's hints, as ``Engine.message``.
    """
    from gitvow import denial
    from gitvow.adapter import configure_adapters
    from gitvow.errors import PolicyError
    from gitvow.evaluator import evaluate as evaluate_operations
    from gitvow.policy import compile as build
    from gitvow.request import Classification, ToolCall
    from gitvow.verdict import Outcome

    forge = policy.forge
    rule = forge["agents"].get(agent)
    if rule is None:
        return ForgeVerdict(True)
    import os

    found_adapters, found_relays, options, failure = _adapters_and_relays(call, commands, forge["adapters"],
                                                                          os.environ if env is None else env)
    if failure:
        # the operation may be one the broken plugin would have refused: fail closed, by name
        return _refused(failure)
    try:
        adapters = configure_adapters(found_adapters, options, source=policy.source)
    except PolicyError as exc:
        return _refused(str(exc))
    # The same functions the policy loader compiles with (gitvow.policy.compile), over the
    # validated plain form cached by gitvow_gate.policy: no pydantic on this path.
    relays = build.relay_templates(forge["relays"], found_relays)
    table = build.policy_table(forge["operations"], relays, source=policy.source)
    grant = build.grant(rule)

    found: list[str] = []
    for adapter in adapters.values():
        calls: list[tuple[ToolCall | None, str]] = []
        try:
            if call.kind == "mcp":
                calls.append((adapter.classify_mcp_tool(call.mcp_tool, _mapping(call.arguments)), call.mcp_tool))
            else:
                for command in commands or ():
                    if _may_reach_forge(command):
                        calls.append((adapter.classify_command(command.argv), command.program))
        except Exception as exc:
            _log_error("adapter %r raised classifying a tool call: %s: %s", adapter.name, type(exc).__name__, exc)
            return _refused(f"adapter {adapter.name!r} failed to classify it ({type(exc).__name__}); ask a human")
        for tool_call, what in calls:
            if tool_call is None:
                continue
            classification = Classification(
                operations=tool_call.operations, repo=tool_call.repo, adapter=tool_call.adapter or adapter.name
            )
            verdict = evaluate_operations(classification, grant, table=table)
            if verdict.allowed or _staged_by_the_proxy(verdict, classification, grant, table, relays):
                found.extend(tool_call.operations)
                continue
            hints: tuple[str, ...] = ()
            if verdict.outcome is Outcome.RELAY and verdict.operation:
                try:
                    hints = tuple(adapter.relay_hints(verdict.operation))
                except Exception as exc:
                    _log_error("adapter %r raised in relay_hints: %s: %s", adapter.name, type(exc).__name__, exc)
            message = denial.render(verdict, target=tool_call.summary or what, repo=classification.repo,
                                    relays=relays, hints=hints)
            return ForgeVerdict(False, operations=tool_call.operations, message=message, code=verdict.code)
    return ForgeVerdict(True, operations=tuple(dict.fromkeys(found)))


def behind_the_proxy(env: Mapping[str, str] | None = None) -> bool:
    """Whether this agent's traffic goes through a gitvow proxy: ``gitvow env`` sets
    ``GITVOW_AGENT`` beside the proxy variables."""
    import os

    env = os.environ if env is None else env
    return bool(env.get("GITVOW_AGENT")) and bool(env.get("HTTPS_PROXY") or env.get("https_proxy"))


def _staged_by_the_proxy(verdict: Any, classification: Any, grant: Any, table: Any, relays: Mapping[str, Any]) -> bool:
    """A relay the proxy stages for a human (the built-in ``approval``) is its to answer.

    Refusing it here would leave the agent no way to ask: behind the proxy, the call goes on
    and the proxy stages the request and answers with the approval's id. Every other
    operation of the call must be allowed on its own; away from a proxy the gate refuses,
    naming the approval path.
    """
    from dataclasses import replace

    from gitvow.evaluator import evaluate as evaluate_operations
    from gitvow.verdict import Outcome

    if verdict.outcome is not Outcome.RELAY or not behind_the_proxy():
        return False
    template = relays.get(verdict.relay or "")
    if template is None or not template.staged:
        return False
    rest = tuple(op for op in classification.operations
                 if not ((row := table[op]).relay and (t := relays.get(row.relay)) is not None and t.staged))
    return not rest or bool(evaluate_operations(replace(classification, operations=rest), grant, table=table).allowed)


def _mapping(arguments: Mapping[str, Any]) -> Mapping[str, object]:
    return dict(arguments)
