"""The optional classifier (``llm_classifier``): the last word on calls nothing else stopped.

It is a command like a provider: the hook's call as JSON on stdin, one line out —
``ALLOW <reason>``, ``CONFIRM <reason>`` or ``DENY <reason>``. Unlike gitvow 0.42, which read
empty output as ALLOW, anything that is not one of the three (empty output, garbage, a
crash, a timeout) is ``confirm``: a classifier that did not answer has not allowed anything.
"""

from __future__ import annotations

import json

from gitvow_gate import process
from gitvow_gate.call import GateCall
from gitvow_gate.gate_policy import Classifier

MAX_OUTPUT = 64 * 1024
VERDICTS = {"ALLOW": "allow", "CONFIRM": "confirm", "DENY": "deny"}


def classify(classifier: Classifier, call: GateCall, agent: str) -> tuple[str, str]:
    """(outcome, reason) with outcome allow, confirm or deny; never raises."""
    payload = {"tool_name": call.tool, "tool_input": dict(call.tool_input), "cwd": call.cwd, "agent": agent}
    done = process.run(
        classifier.argv,
        json.dumps(payload).encode(),
        cwd=call.cwd or None,
        timeout=classifier.timeout,
        max_output=MAX_OUTPUT,
    )
    if done.failure:
        return "confirm", f"classifier unavailable ({done.failure})"
    try:
        text = done.stdout.decode("utf-8").strip()
    except UnicodeDecodeError:
        return "confirm", "classifier printed something that is not text"
    first = text.splitlines()[0] if text else ""
    word, _, reason = first.partition(" ")
    outcome = VERDICTS.get(word.upper())
    if outcome is None:
        return "confirm", "classifier gave no ALLOW, CONFIRM or DENY answer"
    return outcome, f"classifier: {reason.strip()[:300]}" if reason.strip() else "classifier"
