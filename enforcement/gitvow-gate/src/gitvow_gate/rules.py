"""The regular-expression rules of gitvow 0.42: shell commands, edited paths, MCP tool names.

Semantics are the old tool's, so existing rules mean what they meant: a ``pattern`` rule is a
regex searched in the whole command line; a ``{program, verbs}`` rule matches only a program
in command position (after wrappers, inside ``sh -c``), with options allowed between the
program and the verb, and — when it names a ``target`` — only where the command's target
matches, an unreadable target matching. A line that cannot be tokenised falls back to the
whole-line regex, which errs toward matching.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gitvow_gate import command_targets as targets
from gitvow_gate import protections, shell
from gitvow_gate.gate_policy import CommandRule, PathRule, command_rule_pattern, verb_pattern


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """A rule that fired, with the program and target it fired on (for messages)."""

    rule: CommandRule
    program: str = ""
    target: str | None = None
    #: False when a ``check`` rule could not resolve the target: the call is asked about.
    certain: bool = True

    def describe(self) -> str:
        where = f" @ {self.target}" if self.target else ""
        return f"{self.rule.reason}{where}"


def match_command(
    rule: CommandRule, line: str, commands: Sequence[shell.Command] | None, cwd: str | None,
    env: Mapping[str, str] | None = None,
) -> RuleMatch | None:
    if rule.check is not None:
        if commands is None:
            return None  # a line that cannot be read is confirmed by the caller as such
        found = protections.run(rule.check, commands, cwd, os.environ if env is None else env)
        return None if found is None else RuleMatch(rule, target=found.target, certain=found.certain)
    if rule.pattern is not None:
        return RuleMatch(rule) if re.search(rule.pattern, line) else None
    if commands is None:  # untokenisable: the whole-line form, target unknown (matches)
        pattern = command_rule_pattern(rule.programs, rule.verbs)
        return RuleMatch(rule) if re.search(pattern, line) else None
    for command in commands:
        if command.indirect or command.program not in rule.programs:
            continue
        if not _verb_follows(rule.verbs, command.args):
            continue
        if rule.target is None:
            return RuleMatch(rule, command.program)
        target = targets.resolve(command.program, command.args, cwd)
        if target is None or re.search(rule.target, target):
            return RuleMatch(rule, command.program, target)
    return None


_OPTION_WITH_VALUE = r"-{1,2}[\w.-]+=\S*"
_FLAG = r"-{1,2}[\w.-]+"
_VALUE = r"[^-\s|;&<>()]"


def _verb_follows(verbs: tuple[str, ...], args: tuple[str, ...]) -> bool:
    """Whether a verb follows the options after the program: gitvow 0.42's ``OPTS`` semantics.

    The same answer as matching :func:`~gitvow_gate.gate_policy.verb_pattern` against the joined
    arguments, without compiling that large pattern on every hook call: the options are
    stepped over word by word (``--k=v``; ``--k v`` where ``v`` is not an option or shell
    metacharacter; a bare ``-k``, each option taking its value or not), and the small verb
    pattern is tried after every prefix the options can make. Arguments holding whitespace
    (or empty ones) are matched with the whole pattern, as before.
    """
    if any(not arg or any(c.isspace() for c in arg) for arg in args):
        return re.match(verb_pattern(verbs), " " + " ".join(args)) is not None
    starts = {0}
    for i, arg in enumerate(args):
        if i not in starts:
            continue
        if re.fullmatch(_OPTION_WITH_VALUE, arg) or re.fullmatch(_FLAG, arg):
            starts.add(i + 1)
        if re.fullmatch(_FLAG, arg) and i + 1 < len(args) and re.match(_VALUE, args[i + 1]):
            starts.add(i + 2)
    head = rf"(?:{'|'.join(verbs)})\b"
    return any(re.match(head, " ".join(args[i:])) for i in sorted(starts) if i < len(args))


def first_command_match(
    rules: Sequence[CommandRule], line: str, commands: Sequence[shell.Command] | None, cwd: str | None,
    env: Mapping[str, str] | None = None,
) -> RuleMatch | None:
    """The first rule that fires for certain, else the first that fired uncertain."""
    uncertain: RuleMatch | None = None
    for rule in rules:
        found = match_command(rule, line, commands, cwd, env)
        if found is not None and found.certain:
            return found
        uncertain = uncertain or found
    return uncertain


def all_command_matches(
    rules: Sequence[CommandRule], line: str, commands: Sequence[shell.Command] | None, cwd: str | None,
    env: Mapping[str, str] | None = None,
) -> list[RuleMatch]:
    return [m for m in (match_command(r, line, commands, cwd, env) for r in rules) if m is not None]


def match_path(rules: Sequence[PathRule], *paths: str) -> PathRule | None:
    """The first ``path_confirm`` rule matching any spelling of the path (as given, repo-relative)."""
    found = match_paths(rules, *paths)
    return found[0] if found else None


def match_paths(rules: Sequence[PathRule], *paths: str) -> list[PathRule]:
    """Every ``path_confirm`` rule matching any spelling of the path: with the built-in rules
    layered under a file's, an ``observe`` rule of one must not hide a confirming rule of the other."""
    return [rule for rule in rules if any(p and re.search(rule.pattern, p) for p in paths)]


def mcp_listed(patterns: Sequence[str], tool: str) -> bool:
    """MCP lists are full matches on the tool name (``mcp__server__tool``)."""
    return any(re.fullmatch(p, tool) for p in patterns)
