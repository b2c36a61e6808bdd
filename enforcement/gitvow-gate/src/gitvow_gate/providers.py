"""Providers: external commands the gate asks factual questions about an edit.

A provider is run once per question with one JSON object on stdin and must print one JSON
object on stdout and exit 0. No shell is involved: the policy's ``command`` is split like a
shell would split it and executed directly, in the repository's top level. Anything else —
a crash, a non-zero exit, a timeout, output that is not one valid answer object, output
over the size limit — is a provider *failure*, and a failure becomes ``confirm``: a gate
that could not find out does not wave the edit through.

Questions for an edit: ``gate_bearing`` for each edited file, ``route_gate`` for each route
literal the edit introduces, ``route_callers`` for each one it removes. Every question goes
to every provider that declares it, all at once (a thread per question and provider, each
with its own process group and deadline), so three providers that each hang cost one
timeout, not three. docs/gate.md ("Providers") specifies the protocol.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from gitvow_gate import process
from gitvow_gate.call import FileEdit, GateCall
from gitvow_gate.gate_policy import Provider
from gitvow_gate.paths import relative

PROTOCOL = 1
ANSWERS = frozenset({"yes", "no", "unknown"})
#: Evidence is shown verbatim, but bounded: at most this many strings of at most this many characters.
MAX_EVIDENCE = 8
MAX_EVIDENCE_CHARS = 300
#: A provider printing more than this has failed (and is killed): an answer is a few lines.
MAX_OUTPUT = 256 * 1024
#: Questions asked for one call at most; an edit with more route literals is confirmed outright.
MAX_QUESTIONS = 32
#: Files larger than this are not read to find the routes a whole-file write removes.
MAX_FILE_BYTES = 2 * 1024 * 1024
ROUTE_RE = re.compile(r"""["'`](/[A-Za-z0-9_\-./{}:*$]*)["'`]""")


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    subject: str
    path: str


@dataclass(frozen=True, slots=True)
class Answer:
    """One provider's answer to one question. ``answer`` is yes, no, unknown or failed."""

    provider: str
    question: str
    subject: str
    answer: str
    evidence: tuple[str, ...] = ()
    confidence: float | None = None
    failure: str = ""

    @property
    def failed(self) -> bool:
        return self.answer == "failed"

    @property
    def requires_confirm(self) -> bool:
        return self.answer in ("yes", "failed")

    def line(self) -> str:
        """``name: answer — evidence; evidence`` as ``gitvow ask`` prints it."""
        if self.failed:
            return f"{self.provider}: failed ({self.failure})"
        tail = " — " + "; ".join(self.evidence) if self.evidence else ""
        return f"{self.provider}: {self.answer}{tail}"

    def reason(self) -> str:
        if self.failed:
            return f"provider {self.provider} failed for {self.question} {self.subject} ({self.failure})"
        tail = ": " + "; ".join(self.evidence[:4]) if self.evidence else ""
        return f"provider {self.provider}: {self.question} {self.subject}{tail}"


def route_literals(text: str) -> list[str]:
    """Quoted strings that look like routes: start with one ``/``, no file extension at the end."""
    out: list[str] = []
    for match in ROUTE_RE.finditer(text or ""):
        route = match.group(1)
        if len(route) > 1 and not route.startswith("//") and "." not in os.path.basename(route) and route not in out:
            out.append(route)
    return out


def _current(path: str, repo: str) -> str:
    full = path if os.path.isabs(path) else os.path.join(repo, path)
    try:
        if os.path.getsize(full) > MAX_FILE_BYTES:
            return ""
        with open(full, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def questions_for(edit: FileEdit, repo: str) -> list[Question]:
    """gate_bearing for the file, route_gate per literal introduced, route_callers per literal removed."""
    path = relative(edit.path, repo)
    old = _current(edit.path, repo) if edit.replaces_file else edit.old
    before, after = route_literals(old), route_literals(edit.new)
    found = [Question("gate_bearing", path, path)]
    found += [Question("route_gate", r, path) for r in after if r not in before]
    found += [Question("route_callers", r, path) for r in before if r not in after]
    return found


def ask_one(provider: Provider, question: Question, repo: str, tool: str) -> Answer:
    """Run one provider for one question; never raises."""
    request = {
        "protocol": PROTOCOL,
        "question": question.question,
        "subject": question.subject,
        "repo": repo,
        "path": question.path,
        "tool_name": tool,
    }
    done = process.run(
        provider.argv, json.dumps(request).encode(), cwd=repo, timeout=provider.timeout, max_output=MAX_OUTPUT
    )
    if done.failure:
        return Answer(provider.name, question.question, question.subject, "failed", failure=done.failure)
    return parse_answer(provider.name, question, done.stdout)


def parse_answer(name: str, question: Question, output: bytes) -> Answer:
    """A provider's stdout as an :class:`Answer`; anything but one valid object is a failure."""

    def failed(why: str) -> Answer:
        return Answer(name, question.question, question.subject, "failed", failure=why)

    try:
        data = json.loads(output.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return failed("output is not one JSON object")
    if not isinstance(data, dict):
        return failed("output is not a JSON object")
    answer = data.get("answer")
    if answer not in ANSWERS:
        return failed(f"answer must be yes, no or unknown, got {str(answer)[:40]!r}")
    evidence = data.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        return failed("evidence must be a list of strings")
    confidence = data.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1
    ):
        return failed("confidence must be a number from 0 to 1")
    bounded = tuple(e[:MAX_EVIDENCE_CHARS] for e in evidence[:MAX_EVIDENCE])
    if len(evidence) > MAX_EVIDENCE:
        bounded += (f"(and {len(evidence) - MAX_EVIDENCE} more)",)
    return Answer(name, question.question, question.subject, str(answer), bounded,
                  float(confidence) if confidence is not None else None)


def ask(providers: Sequence[Provider], questions: Sequence[Question], repo: str, tool: str) -> list[Answer]:
    """Every question to every provider that declares it, in parallel; answers in a stable order."""
    jobs = [(p, q) for q in questions for p in providers if q.question in p.questions]
    results: list[Answer | None] = [None] * len(jobs)

    def run(index: int, provider: Provider, question: Question) -> None:
        try:
            results[index] = ask_one(provider, question, repo, tool)
        except Exception as exc:  # never let one question take the gate down
            results[index] = Answer(provider.name, question.question, question.subject, "failed",
                                    failure=f"{type(exc).__name__}")

    if len(jobs) == 1:
        run(0, *jobs[0])
    else:
        threads = [threading.Thread(target=run, args=(i, p, q), daemon=True) for i, (p, q) in enumerate(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return [a for a in results if a is not None]


def questions_for_call(call: GateCall, repo: str) -> list[Question]:
    found: list[Question] = []
    for edit in call.edits:
        for question in questions_for(edit, repo):
            if question not in found:
                found.append(question)
    return found
