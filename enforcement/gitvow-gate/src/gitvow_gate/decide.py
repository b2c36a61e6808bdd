"""The gate's decision for one tool call, stage by stage, in the order the design fixes.

1. regular-expression rules — ``bash_deny``, ``bash_confirm``, ``path_confirm``,
   ``mcp_deny``/``mcp_allow``, and commands the gate cannot read (``eval``, ``$CMD``);
2. forge operations recognised in the call, judged by the proxy's table for this agent
   (only with ``[agents.NAME]`` in the policy);
3. providers (seed 000), for edits;
4. the optional classifier command, for calls nothing above stopped.

A deny ends the decision at once. A confirm from the rules still lets the forge stage run,
because a forge refusal is final and asking a human first would only waste their yes; it
skips providers and the classifier, as gitvow 0.42 did. ``when: observe`` rules never stop
anything: they are recorded and the call goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow_gate import rules, shell
from gitvow_gate.call import GateCall
from gitvow_gate.policy import GatePolicy
from gitvow_gate.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitvow_gate.providers import Answer

ALLOW, CONFIRM, DENY = "allow", "confirm", "deny"
_RANK = {ALLOW: 0, CONFIRM: 1, DENY: 2}
INDIRECT = "runs a command the gate cannot read"
UNREADABLE = "a command line the gate cannot parse"


@record
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


def decide(policy: GatePolicy, call: GateCall, agent: str = "", env: Mapping[str, str] | None = None) -> GateDecision:
    """The decision for one act; ``env`` supplies ``HOME`` and friends (default: this process's)."""
    observed: list[str] = []
    pending: GateDecision | None = None
    commands: list[shell.Command] | None = None

    # 1. rules: regular expressions on the text, and checks on the parsed command
    if call.kind == "shell":
        line = call.command
        commands = shell.commands(line)
        hit = rules.first_command_match(policy.bash_deny, line, commands, call.cwd, env)
        if hit is not None and hit.certain:
            return GateDecision(DENY, hit.describe(), "bash_deny", observed=tuple(observed))
        if hit is not None:
            pending = GateDecision(CONFIRM, f"{hit.rule.reason}? the gate cannot tell what this reaches: "
                                            f"{hit.target}", "bash_deny")
        for found in rules.all_command_matches(policy.bash_confirm, line, commands, call.cwd, env):
            if found.rule.when == "observe":
                observed.append(found.describe())
            else:
                pending = pending or GateDecision(CONFIRM, found.describe(), "bash_confirm")
                break
        if pending is None and commands is None:
            pending = GateDecision(CONFIRM, f"{UNREADABLE} (an unbalanced quote, or nesting deeper than the gate "
                                            "reads)", "unreadable")
        if pending is None:
            for command in commands or ():
                if command.indirect:
                    pending = GateDecision(CONFIRM, f"{INDIRECT}: {command.indirect}", "indirect")
                    break
                if shell.reads_stdin(command):
                    pending = GateDecision(CONFIRM, f"{INDIRECT}: {command.program} reading commands from its "
                                                    "standard input", "indirect")
                    break
                script = shell.runs_script(command)
                if script:
                    observed.append(f"{INDIRECT}: {script}")
    elif call.kind == "edit":
        if not call.edits:
            # an edit (an apply_patch body, say) whose files cannot be read is asked about
            pending = GateDecision(CONFIRM, "an edit whose files the gate cannot read", "edit")
        repo = None
        for edit in call.edits:
            spellings = [edit.path]
            if edit.path.startswith("/"):
                from gitvow_gate.paths import relative, repo_of

                repo = repo or repo_of(call)
                spellings.append(relative(edit.path, repo))
            for path_rule in rules.match_paths(policy.path_confirm, *spellings):
                if path_rule.when == "observe":
                    observed.append(f"{path_rule.reason}: {spellings[-1]}")
                elif pending is None:
                    pending = GateDecision(CONFIRM, f"{path_rule.reason}: {spellings[-1]}", "path_confirm")
    elif call.kind == "mcp":
        if rules.mcp_listed(policy.mcp_deny, call.mcp_tool):
            return GateDecision(DENY, f"MCP tool {call.mcp_tool} is on the deny list", "mcp_deny")
        if policy.mcp_allow and not rules.mcp_listed(policy.mcp_allow, call.mcp_tool):
            pending = GateDecision(CONFIRM, f"MCP tool {call.mcp_tool} is not on the allow list", "mcp_allow")

    # 2. forge operations, for agents the policy names
    operations: tuple[str, ...] = ()
    if agent and agent in policy.agents:
        from gitvow_gate import forge

        if forge.may_be_forge(call, commands):
            verdict = forge.evaluate(call, commands, agent, policy, env)
            if not verdict.allowed:
                return GateDecision(DENY, verdict.message, "forge", observed=tuple(observed),
                                    operations=verdict.operations)
            operations = verdict.operations

    if pending is not None:
        return GateDecision(pending.outcome, pending.reason, pending.stage, observed=tuple(observed),
                            operations=operations)

    # 3. providers, for edits
    answers: tuple[Answer, ...] = ()
    if call.kind == "edit" and policy.providers and call.edits:
        from gitvow_gate import providers
        from gitvow_gate.paths import repo_of

        repo = repo_of(call)
        questions = providers.questions_for_call(call, repo)
        if len(questions) > providers.MAX_QUESTIONS:
            return GateDecision(
                CONFIRM,
                f"the edit raises {len(questions)} provider questions, more than the "
                f"{providers.MAX_QUESTIONS} the gate asks per call",
                "providers",
                observed=tuple(observed),
            )
        answers = tuple(providers.ask(policy.providers, questions, repo, call.tool))
        concerns = [a for a in answers if a.requires_confirm]
        if concerns:
            failed = [a for a in concerns if a.failed]
            chosen = failed or concerns
            reason = "; ".join(a.reason() for a in chosen[:3])
            if len(chosen) > 3:
                reason += f"; and {len(chosen) - 3} more"
            evidence = tuple(f"{a.provider} ({a.question} {a.subject}): {e}" for a in concerns for e in a.evidence)
            return GateDecision(CONFIRM, reason, "providers", evidence, tuple(observed), operations, answers)

    # 4. the classifier, for what nothing above stopped
    if policy.classifier is not None:
        from gitvow_gate import classifier

        outcome, reason = classifier.classify(policy.classifier, call, agent)
        if outcome != ALLOW:
            return GateDecision(outcome, reason, "classifier", observed=tuple(observed), operations=operations,
                                answers=answers)
    return GateDecision(ALLOW, observed=tuple(observed), operations=operations, answers=answers)
