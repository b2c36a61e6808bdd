"""``gitvow ask QUESTION SUBJECT [--path FILE]``: test the configured providers (docs/gate.md).

    gitvow ask gate_bearing src/auth/Whitelist.java
    gitvow ask route_gate /v1/orders/export --path src/api/Orders.java

One line per provider answer (``name: answer — evidence``), then the decision the gate would
make: ``decision: ALLOW`` or ``decision: CONFIRM: <reason>``. Exit 0 for allow, 2 for confirm.
"""

from __future__ import annotations

import argparse
import os
import sys

from gitvow.errors import PolicyError
from gitvow_gate import gate_policy, providers
from gitvow_gate.paths import relative

QUESTIONS = ("gate_bearing", "route_gate", "route_callers")


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", choices=QUESTIONS)
    parser.add_argument("subject", help="a repo-relative file (gate_bearing) or a route literal")
    parser.add_argument("--path", default="", help="the file being edited (default: the subject for gate_bearing)")


def run(args: argparse.Namespace) -> int:
    cwd = os.getcwd()
    try:
        policy = gate_policy.load(cwd)
    except PolicyError as exc:
        print(f"gitvow: error: {exc}", file=sys.stderr)
        return 2
    if not policy.providers:
        print(f"gitvow: no providers are configured in {policy.source}", file=sys.stderr)
        return 1
    repo = gate_policy.find_repo_root(cwd) or cwd
    path = args.path or (args.subject if args.question == "gate_bearing" else "")
    question = providers.Question(args.question, args.subject, relative(path, repo))
    answers = providers.ask(policy.providers, [question], repo, "Edit")
    if not answers:
        print(f"gitvow: no configured provider answers {args.question}", file=sys.stderr)
        return 1
    for answer in answers:
        print(answer.line())
    concerns = [a for a in answers if a.requires_confirm]
    if not concerns:
        print("decision: ALLOW")
        return 0
    chosen = [a for a in concerns if a.failed] or concerns
    print("decision: CONFIRM: " + "; ".join(a.reason() for a in chosen[:3]))
    return 2
