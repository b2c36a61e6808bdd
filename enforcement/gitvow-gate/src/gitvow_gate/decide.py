"""The gate's decision for one tool call, stage by stage, in a fixed order (docs/gate.md).

1. regular-expression rules — ``bash_deny``, ``bash_confirm``, ``path_confirm``,
   ``mcp_deny``/``mcp_allow``, and commands the gate cannot read (``eval``, ``$CMD``);
2. forge operations recognised in the call, judged by the proxy's table for this agent
   (only with ``[agents.NAME]`` in the policy);
   2b. ``[paths]`` over the files an edit or a shell line writes (only with ``[agents.NAME]``:
   refuse denies with ``path_protected``, stage asks);
3. providers (:mod:`~gitvow_gate.providers`, docs/gate.md "Providers"), for edits;
4. the optional classifier command, for calls nothing above stopped.

A deny ends the decision at once. A confirm from the rules still lets the forge stage run,
because a forge refusal is final and asking a human first would only waste their yes; it
skips providers and the classifier, as gitvow 0.42 did. ``when: observe`` rules never stop
anything: they are recorded and the call goes on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitvow_gate import classifier, forge, protected_paths, providers, rules, shell
from gitvow_gate.call import GateCall
from gitvow_gate.gate_policy import GatePolicy, find_repo_root
from gitvow_gate.paths import relative, repo_of
from gitvow_gate.providers import Answer

ALLOW, CONFIRM, DENY = "allow", "confirm", "deny"
_RANK = {ALLOW: 0, CONFIRM: 1, DENY: 2}
INDIRECT = "runs a command the gate cannot read"
UNREADABLE = "a command line the gate cannot parse"


@dataclass(frozen=True, slots=True)
class GateDecision:
    """``outcome`` is allow, confirm or deny; ``stage`` names what decided.

    ``evidence`` holds provider evidence, verbatim and bounded; ``observed`` the reasons of
    observe-tier rules that fired (recorded, nobody asked). For a forge refusal ``reason``
    is the proxy's one-line denial itself.
    """

    outcome: str
    reason: str = ""
    stage: str = ""
    evidence: tuple[str, ...] = ()
    observed: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    answers: tuple[Answer, ...] = ()

    @property
    def blocks(self) -> bool:
        return self.outcome != ALLOW

    def message(self) -> str:
        """What the agent (and the person) reads."""
        if self.outcome == ALLOW:
            return ""
        if self.outcome == DENY:
            if self.stage == "forge":
                return self.reason
            return f"gitvow: BLOCKED by policy ({self.reason})."
        text = (
            f"gitvow: CONFIRMATION REQUIRED ({self.reason}). Ask the user explicitly before doing this; "
            "go ahead only if they agree."
        )
        if self.evidence:
            text += "\n" + "\n".join(f"  - {line}" for line in self.evidence)
        return text

    def first_line(self) -> str:
        """``ALLOW``, ``CONFIRM: <reason>`` or ``DENY: <reason>`` (``gitvow check``)."""
        if self.outcome == ALLOW:
            return "ALLOW"
        return f"{self.outcome.upper()}: {self.reason}"

    def to_json(self) -> dict[str, object]:
        return {
            "decision": self.outcome,
            "reason": self.reason,
            "stage": self.stage,
            "evidence": list(self.evidence),
            "observed": list(self.observed),
            "operations": list(self.operations),
            "answers": [
                {"provider": a.provider, "question": a.question, "subject": a.subject, "answer": a.answer,
                 "evidence": list(a.evidence), "failure": a.failure}
                for a in self.answers
            ],
        }


def strictest(decisions: Sequence[GateDecision]) -> GateDecision:
    """The decision to report for several calls (a patch touching several files)."""
    if not decisions:
        return GateDecision(ALLOW)
    if len(decisions) == 1:
        return decisions[0]
    worst = max(decisions, key=lambda d: _RANK[d.outcome])
    observed = tuple(dict.fromkeys(o for d in decisions for o in d.observed))
    if worst.outcome == ALLOW:
        return GateDecision(ALLOW, observed=observed)
    return GateDecision(worst.outcome, worst.reason, worst.stage, worst.evidence, observed, worst.operations,
                        worst.answers)


@dataclass(frozen=True, slots=True)
class RuleFindings:
    """What the rules found in one call: a refusal that ends the decision (``final``), a
    confirmation still to ask (``pending``), observe-tier findings, and the parsed commands."""

    final: GateDecision | None = None
    pending: GateDecision | None = None
    observed: tuple[str, ...] = ()
    commands: tuple[shell.Command, ...] | None = None


def _shell_rules(policy: GatePolicy, call: GateCall, env: Mapping[str, str] | None) -> RuleFindings:
    """``bash_deny``, ``bash_confirm``, then commands the gate cannot read or that run others."""
    line = call.command
    parsed = shell.commands(line)
    commands = None if parsed is None else tuple(parsed)
    hit = rules.first_command_match(policy.bash_deny, line, parsed, call.cwd, env)
    if hit is not None and hit.certain:
        return RuleFindings(final=GateDecision(DENY, hit.describe(), "bash_deny"), commands=commands)
    pending: GateDecision | None = None
    if hit is not None:
        pending = GateDecision(CONFIRM, f"{hit.rule.reason}? the gate cannot tell what this reaches: {hit.target}",
                               "bash_deny")
    observed: list[str] = []
    for found in rules.all_command_matches(policy.bash_confirm, line, parsed, call.cwd, env):
        if found.rule.when == "observe":
            observed.append(found.describe())
        else:
            pending = pending or GateDecision(CONFIRM, found.describe(), "bash_confirm")
            break
    if pending is None:
        pending = _unreadable(commands, observed)
    return RuleFindings(pending=pending, observed=tuple(observed), commands=commands)


def _unreadable(commands: tuple[shell.Command, ...] | None, observed: list[str]) -> GateDecision | None:
    """A line the gate cannot parse, or a command that runs what the gate cannot read, is asked about."""
    if commands is None:
        return GateDecision(CONFIRM, f"{UNREADABLE} (an unbalanced quote, or nesting deeper than the gate reads)",
                            "unreadable")
    for command in commands:
        if command.indirect:
            return GateDecision(CONFIRM, f"{INDIRECT}: {command.indirect}", "indirect")
        if shell.reads_stdin(command):
            return GateDecision(CONFIRM, f"{INDIRECT}: {command.program} reading commands from its standard input",
                                "indirect")
        script = shell.runs_script(command)
        if script:
            observed.append(f"{INDIRECT}: {script}")
    return None


def _edit_rules(policy: GatePolicy, call: GateCall, env: Mapping[str, str] | None) -> RuleFindings:
    """``path_confirm`` on each edited file, as given and relative to its repository."""
    # an edit (an apply_patch body, say) whose files cannot be read is asked about
    pending = None if call.edits else GateDecision(CONFIRM, "an edit whose files the gate cannot read", "edit")
    observed: list[str] = []
    repo = None
    for edit in call.edits:
        spellings = [edit.path]
        if edit.path.startswith("/"):
            repo = repo or repo_of(call)
            spellings.append(relative(edit.path, repo))
        for path_rule in rules.match_paths(policy.path_confirm, *spellings):
            if path_rule.when == "observe":
                observed.append(f"{path_rule.reason}: {spellings[-1]}")
            elif pending is None:
                pending = GateDecision(CONFIRM, f"{path_rule.reason}: {spellings[-1]}", "path_confirm")
    return RuleFindings(pending=pending, observed=tuple(observed))


def _mcp_rules(policy: GatePolicy, call: GateCall, env: Mapping[str, str] | None) -> RuleFindings:
    """``mcp_deny``, then ``mcp_allow`` (a tool off a non-empty allow list is asked about)."""
    if rules.mcp_listed(policy.mcp_deny, call.mcp_tool):
        return RuleFindings(final=GateDecision(DENY, f"MCP tool {call.mcp_tool} is on the deny list", "mcp_deny"))
    if policy.mcp_allow and not rules.mcp_listed(policy.mcp_allow, call.mcp_tool):
        return RuleFindings(pending=GateDecision(CONFIRM, f"MCP tool {call.mcp_tool} is not on the allow list",
                                                 "mcp_allow"))
    return RuleFindings()


def _no_rules(policy: GatePolicy, call: GateCall, env: Mapping[str, str] | None) -> RuleFindings:
    return RuleFindings()


#: The rules of each kind of call: one small function per kind.
RULES_BY_KIND = {"shell": _shell_rules, "edit": _edit_rules, "mcp": _mcp_rules}


def _forge_stage(policy: GatePolicy, call: GateCall, agent: str, found: RuleFindings,
                 env: Mapping[str, str] | None) -> GateDecision | tuple[str, ...]:
    """The engine's refusal of a forge operation in the call, or the operations it allowed."""
    if not agent or agent not in policy.agents:
        return ()
    if not forge.may_be_forge(call, found.commands, env):
        return ()
    verdict = forge.evaluate(call, found.commands, agent, policy, env)
    if not verdict.allowed:
        return GateDecision(DENY, verdict.message, "forge", observed=found.observed, operations=verdict.operations)
    return verdict.operations


def _paths_stage(policy: GatePolicy, call: GateCall, agent: str, found: RuleFindings) -> GateDecision | None:
    """``[paths]`` over the files an edit (or a shell line, as far as it shows them) writes, for
    agents the policy names (:mod:`gitvow_gate.protected_paths`): refuse denies, stage asks."""
    if not agent or agent not in policy.agents or call.kind not in ("edit", "shell"):
        return None
    if call.kind == "edit":
        if not call.edits:
            return None
        repo = repo_of(call)
        start = call.cwd or os.getcwd()
        fulls = [(os.path.join(start, e.path), e.path.endswith("/")) for e in call.edits]
    else:
        if not found.commands or not protected_paths.may_write(found.commands, call.command):
            return None
        start = call.cwd or os.getcwd()
        repo = find_repo_root(start) or os.path.abspath(start)
        fulls = protected_paths.shell_writes(found.commands, call.command, start)
        if not fulls:
            return None
    hit = protected_paths.judge_paths(policy.core, fulls, repo)
    if hit is None:
        return None
    return GateDecision(DENY if hit.verdict == "refuse" else CONFIRM, hit.reason(), "paths", observed=found.observed)


def _provider_stage(policy: GatePolicy, call: GateCall, observed: tuple[str, ...],
                    operations: tuple[str, ...]) -> GateDecision | tuple[Answer, ...]:
    """Providers' answers about an edit: any concern (or failure) asks the human."""
    repo = repo_of(call)
    questions = providers.questions_for_call(call, repo)
    if len(questions) > providers.MAX_QUESTIONS:
        return GateDecision(CONFIRM, f"the edit raises {len(questions)} provider questions, more than the "
                                     f"{providers.MAX_QUESTIONS} the gate asks per call", "providers", observed=observed)
    answers = tuple(providers.ask(policy.providers, questions, repo, call.tool))
    concerns = [a for a in answers if a.requires_confirm]
    if not concerns:
        return answers
    chosen = [a for a in concerns if a.failed] or concerns
    reason = "; ".join(a.reason() for a in chosen[:3])
    if len(chosen) > 3:
        reason += f"; and {len(chosen) - 3} more"
    evidence = tuple(f"{a.provider} ({a.question} {a.subject}): {e}" for a in concerns for e in a.evidence)
    return GateDecision(CONFIRM, reason, "providers", evidence, observed, operations, answers)


def decide(policy: GatePolicy, call: GateCall, agent: str = "", env: Mapping[str, str] | None = None) -> GateDecision:
    """The decision for one act; ``env`` supplies ``HOME`` and friends (default: this process's)."""
    found = RULES_BY_KIND.get(call.kind, _no_rules)(policy, call, env)  # 1. rules
    if found.final is not None:
        return found.final
    forged = _forge_stage(policy, call, agent, found, env)  # 2. forge operations, for agents the policy names
    if isinstance(forged, GateDecision):
        return forged
    observed, operations = found.observed, forged
    protected = _paths_stage(policy, call, agent, found)  # 2b. [paths], for agents the policy names
    if protected is not None and (protected.outcome == DENY or found.pending is None):
        return GateDecision(protected.outcome, protected.reason, protected.stage, observed=observed,
                            operations=operations)
    if found.pending is not None:
        return GateDecision(found.pending.outcome, found.pending.reason, found.pending.stage, observed=observed,
                            operations=operations)
    answers: tuple[Answer, ...] = ()
    if call.kind == "edit" and policy.providers and call.edits:  # 3. providers, for edits
        asked = _provider_stage(policy, call, observed, operations)
        if isinstance(asked, GateDecision):
            return asked
        answers = asked
    if policy.classifier is not None:  # 4. the classifier, for what nothing above stopped
        outcome, reason = classifier.classify(policy.classifier, call, agent)
        if outcome != ALLOW:
            return GateDecision(outcome, reason, "classifier", observed=observed, operations=operations,
                                answers=answers)
    return GateDecision(ALLOW, observed=observed, operations=operations, answers=answers)
