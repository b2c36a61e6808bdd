"""``gitvow check``: what the gate would decide, without an agent.

    gitvow check -- git push --force      DENY: force push
    gitvow check -- bash -c 'gh pr merge 3'
    gitvow check -- 'cd x && git push'    (one argument: a command line, as an agent's shell tool sends it)
    gitvow check --path src/authz.py      CONFIRM: edits an authorization or gate-bearing file: src/authz.py
    gitvow check --mcp mcp__gh__delete_repo

The words after ``--`` are the command's argv, each one word as the shell would pass it
(joined with shell quoting, so ``check -- bash -c 'gh pr merge 3'`` is judged as that very
command); a single argument is a whole command line, read as the hook reads the agent's.

The first line is ``ALLOW``, ``CONFIRM: <reason>`` or ``DENY: <reason>``; exit 0 for allow,
2 otherwise. ``--json`` prints the decision as an object instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from gitvow.errors import PolicyError
from gitvow_gate import gate_policy
from gitvow_gate.call import FileEdit, GateCall
from gitvow_gate.decide import DENY, GateDecision
from gitvow_gate.hook_client import AGENT_NAMES
from gitvow_gate.invocation import judge, policy_agent
from gitvow_gate.paths import repo_of


def add_parser(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--path", help="an edit to this file")
    what.add_argument("--mcp", metavar="TOOL", help="a call of this MCP tool (mcp__server__tool)")
    parser.add_argument("--agent", default=None,
                        help="the policy's agent name to judge as (default: what the hook uses: $GITVOW_AGENT, "
                             "else the --hook agent)")
    parser.add_argument("--hook", default="claude", choices=AGENT_NAMES,
                        help="answer as the hook installed for this agent would (default: claude)")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.add_argument("argv", nargs="*", metavar="CMD",
                        help="a command's argv after -- (each word one argument, as the shell passes them), "
                             "or a whole command line as one argument")


def command_line(argv: list[str]) -> str:
    """The line the hook would see: one argument is a line already; several are an argv, quoted
    so each stays one word (never joined bare: ``bash -c 'gh pr merge 3'`` is not ``bash -c gh …``)."""
    return argv[0] if len(argv) == 1 else shlex.join(argv)


def run(args: argparse.Namespace) -> int:
    cwd = os.getcwd()
    # the agent, the policy file and the forge stage are resolved as `gitvow hook` resolves them
    agent = args.agent or policy_agent(args.hook, os.environ)
    if args.path:
        call = GateCall("edit", "Edit", cwd, edits=(FileEdit(args.path),), tool_input={"file_path": args.path})
    elif args.mcp:
        call = GateCall.mcp(args.mcp, {}, cwd)
    elif args.argv:
        call = GateCall.shell(command_line(args.argv), cwd)
    else:
        print("gitvow: error: give a command after --, or --path FILE, or --mcp TOOL", file=sys.stderr)
        return 1
    try:
        decision = judge([call], agent, os.environ)
        where = call.cwd
        if call.edits:
            where = repo_of(call)
        source = gate_policy.locate(where)
    except PolicyError as exc:
        decision = GateDecision(DENY, f"the policy cannot be loaded: {exc}", "policy")
        source = ""
    if args.json:
        print(json.dumps({**decision.to_json(), "policy": source}, indent=2))
    else:
        print(decision.first_line())
        for line in decision.evidence:
            print(f"  - {line}")
        for reason in decision.observed:
            print(f"observed: {reason}")
    return 2 if decision.blocks else 0
