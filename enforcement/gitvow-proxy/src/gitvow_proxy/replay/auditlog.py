"""Reading gitvow's audit log for replay: every kind of line the proxy and its commands write.

The log holds more than one line per request (:mod:`gitvow_proxy.audit`):

- a **decision** line for each request the proxy decided (``allow``, ``deny``, ``throttle``,
  ``tunnel``, ``refuse``): a request to replay;
- the **steps of an approval** (``approval`` names it; stage ``approval``): ``staged`` is
  written with the refused request's own decision line, a human's ``approved`` or
  ``rejected``, ``expired``, then the proxy's send of the approved request — which passes the
  addon again and so has a decision line of its own — and ``sent`` or ``send_failed``. All of
  that is one request: the agent's, with the approval's final outcome (``sent``,
  ``send_failed``, ``rejected``, ``expired``, or still ``pending``);
- ``answered``: an identical retry after the send, answered with the recorded response. A
  request of its own, whose outcome is ``answered`` (it passed: a human had approved it);
- an **operator's act** (``paused``, ``resumed``; method ``-``): not a request, but replayed:
  the repository is paused (or resumed) for both sides from that time on, as it was;
- a refused **non-HTTP stream** (method ``STREAM``): refused under any policy, not replayed.

A line that is none of these, or is not JSON, stops the replay with its file and line number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from gitvow.relay import APPROVAL_EXPIRED, APPROVAL_REJECTED
from gitvow.request import Request
from gitvow_proxy.replay.inputs import APPROVAL_REASONS, InputError, Outcome, Recorded

#: The verdicts of an approval's step lines.
STEPS = frozenset({"staged", "approved", "rejected", "expired", "sent", "send_failed", "answered"})
#: Steps after which the approval's outcome is settled.
FINAL = frozenset({"rejected", "expired", "sent", "send_failed"})
#: The verdicts of an operator's lines (``gitvow pause``/``resume``, the desk).
OPERATOR = frozenset({"paused", "resumed"})
#: The verdicts of decision lines.
DECISIONS = frozenset({"allow", "deny", "throttle", "tunnel", "refuse"})
#: What an operator's act stands on: it is no request.
_NO_REQUEST = Request(method="-", host="-", path="-")
#: Reasons a refused request is staged under, or that an approved send never has.
_NOT_A_SEND = frozenset({"hard_deny", *APPROVAL_REASONS})


@dataclass
class _Approval:
    """One approval as its lines tell it."""

    key: tuple[Any, ...]
    request: int | None = None  # the index of the agent's request among the file's items
    approved: bool = False
    send_seen: bool = False
    final: Outcome | None = None


@dataclass
class _Reader:
    """The file's requests so far and the approvals still open."""

    path: Path
    items: list[Recorded] = field(default_factory=list)
    approvals: dict[str, _Approval] = field(default_factory=dict)
    #: Approvals staged whose request line has not come yet, by the request's key.
    unbound: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def line(self, where: str, data: dict[str, Any]) -> None:
        verdict = data["verdict"]
        if not isinstance(verdict, str):
            raise TypeError(f"verdict is {type(verdict).__name__}, not text")
        if data.get("approval") is not None and verdict in STEPS:
            self.step(where, data, verdict)
        elif verdict in OPERATOR or data["method"] == "-":
            self.operator(where, data, verdict)
        elif verdict in DECISIONS:
            if data["method"] != "STREAM":
                self.decision(where, data, verdict)
        else:
            raise ValueError(f"unknown verdict {verdict!r}")

    def operator(self, where: str, data: dict[str, Any], verdict: str) -> None:
        repo = data.get("repo")
        if verdict in OPERATOR and isinstance(repo, str) and repo:
            self.items.append(Recorded(where, _time(data["time"]), None, _NO_REQUEST, None,
                                       act=(repo.lower(), verdict == "paused")))

    def decision(self, where: str, data: dict[str, Any], verdict: str) -> None:
        item = _recorded(where, data, verdict)
        key = _key(data)
        named = data.get("approval")
        sending = self._sending(key, named, item.recorded)
        if sending is not None:  # the proxy's own send of an approved request: part of it
            sending.send_seen = True
            return
        ident = self.unbound.pop(key, None) if item.recorded is not None and not item.recorded.allowed else None
        if ident is not None:
            self.approvals[ident].request = len(self.items)
        self.items.append(item)

    def _sending(self, key: tuple[Any, ...], named: object, outcome: Outcome | None) -> _Approval | None:
        if isinstance(named, str) and named in self.approvals:
            return self.approvals[named]
        if outcome is None or outcome.reason in _NOT_A_SEND:
            return None
        return next((a for a in self.approvals.values()
                     if a.key == key and a.approved and not a.send_seen and a.final is None), None)

    def step(self, where: str, data: dict[str, Any], verdict: str) -> None:
        ident = str(data["approval"])
        if verdict == "answered":
            item = _recorded(where, data, verdict)
            if item.recorded is None:
                raise RuntimeError("internal error: item.recorded unset")
            self.items.append(replace(item, recorded=replace(item.recorded, held=True)))
            return
        if verdict == "staged":
            key = _key(data)
            self.approvals[ident] = _Approval(key)
            self.unbound[key] = ident
            return
        approval = self.approvals.get(ident)
        if approval is None:  # staged before this file begins: its request is not here
            return
        if verdict == "approved":
            approval.approved = True
        elif verdict in FINAL:
            approval.final = Outcome(verdict, _final_reason(verdict, data.get("reason")), "approval",
                                     _operations(data), _repo(data), held=True)

    def requests(self) -> list[Recorded]:
        """Every request, each staged one with its approval's final outcome."""
        items = self.items
        for approval in self.approvals.values():
            if approval.request is None:
                continue
            item = items[approval.request]
            if item.recorded is None:
                raise RuntimeError("internal error: item.recorded unset")
            final = approval.final or Outcome("pending", "hard_deny", "approval", item.recorded.operations,
                                              item.recorded.repo, held=True)
            items[approval.request] = replace(item, recorded=final)
        return items


def _final_reason(verdict: str, reason: object) -> str | None:
    """The reason code of an approval's final step (a rejection's line holds the human's words)."""
    if verdict == "rejected":
        return APPROVAL_REJECTED
    if verdict == "expired":
        return APPROVAL_EXPIRED
    if verdict == "send_failed":
        return reason if isinstance(reason, str) else None
    return None  # sent: the upstream's status is not a decision


def _key(data: dict[str, Any]) -> tuple[Any, ...]:
    return data.get("agent"), data["method"], str(data["host"]).lower(), data["path"]


def _operations(data: dict[str, Any]) -> tuple[str, ...]:
    operations = data.get("operations") or []
    if not isinstance(operations, list):
        raise TypeError("operations is not a list")
    return tuple(str(op) for op in operations)


def _repo(data: dict[str, Any]) -> str | None:
    repo = data.get("repo")
    return repo if isinstance(repo, str) else None


def _time(stamp: object) -> float:
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def _recorded(where: str, data: dict[str, Any], verdict: str) -> Recorded:
    host, _, port = str(data["host"]).rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"host {data['host']!r} is not HOST:PORT")
    request = Request(method=str(data["method"]), host=host.lower(), path=str(data["path"]),
                      port=int(port), scheme="https" if port != "80" else "http")
    operations = _operations(data)
    reason = data.get("reason")
    reason = reason if isinstance(reason, str) else None
    recorded = Outcome(verdict, reason, str(data.get("stage", "")), operations, _repo(data),
                       held=reason in APPROVAL_REASONS)
    agent = data.get("agent")  # an unauthenticated line stays unauthenticated
    classified = (operations, recorded.repo) if operations else None
    return Recorded(where, _time(data["time"]), agent if isinstance(agent, str) else None, request, recorded,
                    classified=classified)


def read_audit(path: Path) -> Iterator[Recorded]:
    """gitvow's audit log: its requests, without bodies or headers; raises InputError."""
    reader = _Reader(path)
    try:
        with path.open(encoding="utf-8") as fo:
            for number, text in enumerate(fo, 1):
                if not text.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    data = json.loads(text)
                    if not isinstance(data, dict):
                        raise TypeError(f"a JSON {type(data).__name__}, not an object")
                    reader.line(where, data)
                except RecursionError:
                    raise InputError(f"{where}: not an audit line: nested deeper than an audit line is") from None
                except (ValueError, KeyError, TypeError) as exc:
                    raise InputError(f"{where}: not an audit line: {type(exc).__name__}: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text: {exc.reason}") from None
    yield from reader.requests()
