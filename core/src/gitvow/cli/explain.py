"""``gitvow explain``: classification and verdict for one request (or a JSON-lines stream), offline.

Only the adapter and the policy table decide here: run-state, body gates and budgets need
the proxy's live state, so explain shows what the policy says, not what a paused repo does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gitvow.cli.common import engine, error, print_json
from gitvow.errors import GitvowError
from gitvow.evaluator import Grant
from gitvow.gates import Caller
from gitvow.modes import MODE_NAMES, Mode
from gitvow.pipeline import Action, Engine
from gitvow.request import Request


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", metavar="FILE", help="policy file (TOML or JSON); defaults to the built-in table")
    parser.add_argument("--mode", choices=MODE_NAMES, help="agent mode (default: advisory, or the agent's)")
    parser.add_argument("--capability", action="append", default=[], metavar="C", help="grant a capability (repeatable)")
    parser.add_argument("--agent", metavar="NAME", help="take mode and capabilities from [agents.NAME]")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--jsonl", action="store_true", help="read JSON lines on stdin, answer one line each")
    parser.add_argument("--data", "-d", metavar="BODY", help="request body, or @FILE")
    parser.add_argument("--header", "-H", action="append", default=[], metavar="K:V", help="request header (repeatable)")
    parser.add_argument("method", nargs="?", help="HTTP method")
    parser.add_argument("url", nargs="?", help="full URL, e.g. https://api.github.com/repos/o/r/pulls")


def grant_for(eng: Engine, agent: str | None, mode: str | None, capabilities: list[str]) -> Grant:
    base = eng.policy.grant_for(agent) if agent else None
    if agent and base is None:
        raise GitvowError(f"agent {agent!r} is not in the policy's [agents] table")
    base = base or Grant()
    return Grant(
        mode=Mode.parse(mode) if mode else base.mode,
        capabilities=base.capabilities | frozenset(capabilities),
        autonomy=base.autonomy,
    )


def explain(eng: Engine, request: Request, grant: Grant, agent: str | None = None) -> dict[str, Any]:
    """The answer for one request, as ``--json`` and ``--jsonl`` print it. ``agent`` is whom it is
    judged as: the agent's own rules beyond its grant (``[agents.NAME] branches``) apply."""
    decision = eng.decide(request, Caller(agent or "explain", grant))
    classification = decision.classification
    if decision.action is Action.TUNNEL:
        verdict = "tunnel"
    elif decision.verdict is not None:
        verdict = decision.verdict.outcome.label
    else:
        verdict = "allow"
    return {
        "adapter": decision.adapter,
        "operations": list(classification.operations) if classification else [],
        "repo": classification.repo if classification else None,
        "repos": list(classification.repos) if classification else [],
        # Opaque ids the proxy would resolve through the forge when a repository gate needs them.
        "targets": [f"{t.kind} {t.value}" for t in classification.targets] if classification else [],
        "verdict": verdict,
        "reason": decision.reason,
        "relay": decision.verdict.relay if decision.verdict is not None else None,
        "message": decision.message,
        "note": classification.note or None if classification else None,
    }


def _headers(items: list[str]) -> dict[str, str]:
    headers = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep:
            raise GitvowError(f"--header {item!r}: expected K:V")
        headers[key.strip().lower()] = value.strip()
    return headers


def _body(data: str | None) -> bytes:
    if data is None:
        return b""
    if data.startswith("@"):
        try:
            return Path(data[1:]).read_bytes()
        except OSError as exc:
            raise GitvowError(f"--data {data}: {exc.strerror}") from None
    return data.encode()


def _line_request(obj: Mapping[str, Any]) -> tuple[Request, str | None, list[str], str | None]:
    method, url = obj.get("method"), obj.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise ValueError("each line needs string fields 'method' and 'url'")
    headers = obj.get("headers") or {}
    body = obj.get("body") or ""
    capabilities = obj.get("capabilities") or []
    if not isinstance(headers, dict) or not isinstance(body, str) or not isinstance(capabilities, list):
        raise ValueError("'headers' must be an object, 'body' a string, 'capabilities' a list")
    raw = body.encode()
    if "body_base64" in obj:  # a binary body (a git push with its pack)
        import base64
        import binascii

        try:
            raw = base64.b64decode(str(obj["body_base64"]), validate=True)
        except binascii.Error:
            raise ValueError("'body_base64' is not base64") from None
    mode = obj.get("mode")
    agent = obj.get("agent")
    request = Request.from_url(method, url, headers={str(k): str(v) for k, v in headers.items()}, body=raw)
    return request, mode, [str(c) for c in capabilities], agent


def run_jsonl(eng: Engine) -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("each line must be a JSON object")
            request, mode, capabilities, agent = _line_request(obj)
            answer = explain(eng, request, grant_for(eng, agent, mode, capabilities), agent)
        except json.JSONDecodeError as exc:
            answer = {"error": f"line is not JSON: {exc.msg} at column {exc.colno}"}
        except (ValueError, GitvowError) as exc:
            answer = {"error": str(exc)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        eng = engine(args.policy)
        if args.jsonl:
            return run_jsonl(eng)
        if not args.method or not args.url:
            return error("explain needs METHOD and URL (or --jsonl)")
        request = Request.from_url(args.method, args.url, headers=_headers(args.header), body=_body(args.data))
        answer = explain(eng, request, grant_for(eng, args.agent, args.mode, args.capability), args.agent)
    except (GitvowError, ValueError) as exc:
        return error(str(exc))
    if args.json:
        print_json(answer)
        return 0
    keys = ["adapter", "operations", "repo", "verdict", "reason", "relay", "note", "message"]
    if answer["targets"]:
        keys.insert(3, "targets")
    for key in keys:
        value = answer[key]
        if isinstance(value, list):
            value = ", ".join(value) or "-"
        print(f"{key + ':':<12}{value if value is not None else '-'}")
    return 0
