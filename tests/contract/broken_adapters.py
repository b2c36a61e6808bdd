"""A small, correct toy adapter and one broken variant per contract check.

``test_kit_catches_broken_adapters.py`` runs the kit on each variant and asserts the kit
fails exactly the check the variant breaks: proof that no check is vacuous.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gitvow.adapter import Adapter
from gitvow.request import Classification, Fixture, Request
from gitvow.vocabulary import OPERATIONS

HOST = "https://toy.example.test"
_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/pulls$"), "pr.create"),
    ("PUT", re.compile(r"^/repos/([^/]+/[^/]+)/pulls/\d+/merge$"), "pr.merge"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues$"), "issue.create"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/labels$"), "label.manage"),
)
_COVERED = {"read", "pr.create", "pr.merge", "issue.create", "label.manage", "unknown"}


class ToyAdapter(Adapter):
    """Correct: the kit passes it (the control in the test)."""

    name = "toy"

    def classify(self, request: Request) -> Classification:
        if request.method in ("GET", "HEAD"):
            return Classification(("read",))
        for method, pattern, op in _ROUTES:
            match = pattern.match(request.path)
            if match and request.method == method:
                return Classification((op,), repo=match.group(1))
        return Classification.unknown("not a toy route")

    def fixtures(self) -> Sequence[Fixture]:
        return (
            Fixture("GET", f"{HOST}/repos/o/r", ("read",)),
            Fixture("POST", f"{HOST}/repos/o/r/pulls", ("pr.create",), repo="o/r"),
            Fixture("PUT", f"{HOST}/repos/o/r/pulls/1/merge", ("pr.merge",), repo="o/r"),
            Fixture("POST", f"{HOST}/repos/o/r/issues", ("issue.create",), repo="o/r"),
            Fixture("POST", f"{HOST}/repos/o/r/labels", ("label.manage",), repo="o/r", near_miss=True),
        )

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return (Fixture("POST", f"{HOST}/repos/o/r/pulls/1/explode", ("unknown",)),)

    def unsupported(self) -> Mapping[str, str]:
        return {op: "the toy forge has no such thing" for op in OPERATIONS if op not in _COVERED}


class Incomplete(ToyAdapter):
    """Breaks completeness: issue.create has neither a fixture nor an unsupported entry."""

    def fixtures(self) -> Sequence[Fixture]:
        return [f for f in super().fixtures() if f.operations != ("issue.create",)]


class Misclassifies(ToyAdapter):
    """Breaks the round trip: issues are classified as issue.edit."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification(("issue.edit",), repo=got.repo) if got.operations == ("issue.create",) else got


class NoNearMiss(ToyAdapter):
    """Breaks near misses: ships none (its look-alike is not marked as one)."""

    def fixtures(self) -> Sequence[Fixture]:
        return [replace(f, near_miss=False) for f in super().fixtures()]


class UnrelayedMerge(ToyAdapter):
    """Breaks relay coverage: a merge arrives as a plain pull-request edit."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification(("pr.edit",), repo=got.repo) if got.operations == ("pr.merge",) else got


class FailsOpen(ToyAdapter):
    """Breaks fail closed: an unmatched write is waved through as a read."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification(("read",)) if got.is_unknown else got


class Raises(ToyAdapter):
    """Breaks never-raise: odd input crashes it."""

    def classify(self, request: Request) -> Classification:
        if request.path == "/":
            raise RuntimeError("boom")
        return super().classify(request)


class RaisesOnMerge(ToyAdapter):
    """Breaks the round trip and relay coverage: a merge crashes it (the pipeline then denies it
    as internal_error, not with the relay line)."""

    def classify(self, request: Request) -> Classification:
        if request.path.endswith("/merge"):
            raise KeyError("merge_method")
        return super().classify(request)


class CodelessDenial(ToyAdapter):
    """Breaks the denial line: unknown requests carry no reason code."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification(("unknown",), unknown_code="", note="") if got.is_unknown else got


class PendingIssues(ToyAdapter):
    """Correct: issues exist on the forge but are not classified yet, and say so (the second control)."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification.unknown("issues are not implemented yet") if got.operations == ("issue.create",) else got

    def fixtures(self) -> Sequence[Fixture]:
        return [f for f in super().fixtures() if f.operations != ("issue.create",)]

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return (*super().fail_closed_fixtures(), Fixture("POST", f"{HOST}/repos/o/r/issues", ("unknown",)))

    def not_implemented(self) -> Mapping[str, str]:
        return {"issue.create": "not written yet"}


class PendingButClassified(PendingIssues):
    """Breaks the declaration: says issue.create is not implemented, yet classifies (and forwards) it."""

    def classify(self, request: Request) -> Classification:
        return ToyAdapter.classify(self, request)


class UnsupportedAndPending(PendingIssues):
    """Breaks completeness: issue.create is declared both impossible on this forge and not written yet."""

    def unsupported(self) -> Mapping[str, str]:
        return {**super().unsupported(), "issue.create": "the toy forge has no issues"}


class Unregistered(ToyAdapter):
    """Breaks registration: no installed plugin registers it (an entry point that does not load)."""


class Impostor(ToyAdapter):
    """Breaks registration: the plugin registers a different class under its name."""


#: variant → the adapters its (simulated) installed plugin registers; default: the variant itself.
REGISTERED: dict[str, list[Adapter]] = {"Unregistered": [], "Impostor": [ToyAdapter()]}

#: variant → the contract checks it must fail (and no others).
EXPECTED_FAILURES: dict[str, set[str]] = {
    "ToyAdapter": set(),
    "Incomplete": {"test_completeness"},
    # issue.edit and pr.edit are declared unsupported by the toy, so claiming them contradicts it too
    "Misclassifies": {"test_round_trip", "test_declared_operations_are_never_classified"},
    "NoNearMiss": {"test_near_misses"},
    "UnrelayedMerge": {"test_round_trip", "test_relay_coverage", "test_declared_operations_are_never_classified"},
    "FailsOpen": {"test_fail_closed"},
    "Raises": {"test_classify_never_raises"},
    "RaisesOnMerge": {"test_round_trip", "test_relay_coverage"},
    "CodelessDenial": {"test_denial_line", "test_unknown_is_denied_with_a_code"},
    "PendingIssues": set(),
    "PendingButClassified": {"test_fail_closed", "test_declared_operations_are_never_classified"},
    "UnsupportedAndPending": {"test_completeness"},
    "Unregistered": {"test_registered_by_its_plugin"},
    "Impostor": {"test_registered_by_its_plugin"},
}
