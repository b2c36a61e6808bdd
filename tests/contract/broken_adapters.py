"""A small, correct toy adapter and one broken variant per contract check.

``test_kit_catches_broken_adapters.py`` runs the kit on each variant and asserts the kit
fails exactly the check the variant breaks: proof that no check is vacuous.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from gitvow.adapter import Adapter
from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, PullRequest, Subject, answer_json
from gitvow.change import DELETED, Change, RefChange
from gitvow.contract import Inventory
from gitvow.request import Classification, Fixture, Request, Resolution, Target
from gitvow.targets import Fetch
from gitvow.vocabulary import OPERATIONS

HOST = "https://toy.example.test"
_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/pulls$"), "pr.create"),
    ("PUT", re.compile(r"^/repos/([^/]+/[^/]+)/pulls/\d+/merge$"), "pr.merge"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues$"), "issue.create"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/issues/bulk$"), "issue.create"),
    ("POST", re.compile(r"^/repos/([^/]+/[^/]+)/labels$"), "label.manage"),
)
_REPO = re.compile(r"^/repos/([^/]+/[^/]+)")
#: A branch deleted through the API: ``ref.write`` and ``ref.delete``, with the change that says which.
_BRANCH = re.compile(r"^/repos/([^/]+/[^/]+)/branches/([^/]+)$")
_BY_ID = re.compile(r"^/ids/(\d+)/comments$")
_COVERED = {"read", "pr.create", "pr.merge", "issue.create", "issue.comment", "label.manage", "unknown", "ref.write",
            "ref.delete"}

#: What the toy forge exposes (the kit's completeness check against an inventory).
INVENTORY = Inventory(routes=[
    ("GET", f"{HOST}/repos/{{owner}}/{{repo}}"),
    ("POST", f"{HOST}/repos/{{owner}}/{{repo}}/pulls"),
    ("PUT", f"{HOST}/repos/{{owner}}/{{repo}}/pulls/{{number}}/merge"),
    ("POST", f"{HOST}/repos/{{owner}}/{{repo}}/issues"),
    ("POST", f"{HOST}/repos/{{owner}}/{{repo}}/issues/bulk"),
    ("POST", f"{HOST}/repos/{{owner}}/{{repo}}/labels"),
    ("POST", f"{HOST}/ids/{{id}}/comments"),
    ("DELETE", f"{HOST}/repos/{{owner}}/{{repo}}/branches/{{branch}}"),
    ("DELETE", f"{HOST}/repos/{{owner}}/{{repo}}/issues/{{number}}"),
], reasons={("DELETE", f"{HOST}/repos/{{owner}}/{{repo}}/issues/{{number}}"): "refused: the toy never deletes"})


class ToyAdapter(Adapter):
    """Correct: the kit passes it (the control in the test)."""

    name = "toy"
    default_hosts = ("toy.example.test",)

    def classify(self, request: Request) -> Classification:
        repo = _REPO.match(request.path)
        if request.method in ("GET", "HEAD"):
            return Classification(("read",), repo=repo.group(1) if repo else None)
        branch = _BRANCH.match(request.path)
        if branch and request.method == "DELETE":
            change = Change(refs=(RefChange(f"refs/heads/{branch.group(2)}", "", "", DELETED),))
            return Classification(("ref.write", "ref.delete"), repo=branch.group(1), change=change)
        by_id = _BY_ID.match(request.path)
        if by_id and request.method == "POST":
            target = Target("thing", by_id.group(1), at=f"/ids/{by_id.group(1)}")
            return Classification(("issue.comment",), targets=(target,))
        for method, pattern, op in _ROUTES:
            match = pattern.match(request.path)
            if match and request.method == method:
                return Classification((op,), repo=match.group(1))
        return Classification.unknown("not a toy route")

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        answers = {}
        for target in targets:
            status, body = fetch("GET", target.at, b"")
            try:
                data = json.loads(body) if status == 200 else None
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("repo"), str):
                answers[target] = Resolution(data["repo"])
        return answers

    def fixtures(self) -> Sequence[Fixture]:
        return (
            Fixture("GET", f"{HOST}/repos/o/r", ("read",), repo="o/r"),
            Fixture("GET", f"{HOST}/search?q=x", ("read",), repo=""),
            Fixture("POST", f"{HOST}/repos/o/r/pulls", ("pr.create",), repo="o/r"),
            Fixture("PUT", f"{HOST}/repos/o/r/pulls/1/merge", ("pr.merge",), repo="o/r"),
            Fixture("POST", f"{HOST}/repos/o/r/issues", ("issue.create",), repo="o/r"),
            Fixture("POST", f"{HOST}/repos/o/r/issues/bulk", ("issue.create",), repo="o/r"),
            Fixture("POST", f"{HOST}/ids/5/comments", ("issue.comment",)),
            Fixture("DELETE", f"{HOST}/repos/o/r/branches/topic", ("ref.write", "ref.delete"), repo="o/r"),
            Fixture("POST", f"{HOST}/repos/o/r/labels", ("label.manage",), repo="o/r", near_miss=True),
        )

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return (Fixture("POST", f"{HOST}/repos/o/r/pulls/1/explode", ("unknown",)),)

    def unsupported(self) -> Mapping[str, str]:
        return {op: "the toy forge has no such thing" for op in OPERATIONS if op not in _COVERED}

    # the approval's context: the toy forge answers GET /repos/o/r/pulls/N, and its merge takes `head`
    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        match = re.match(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/merge$", request.path)
        return Subject("merge", repo=match.group(1), number=int(match.group(2))) if match else None

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        pull = answer_json(ask, f"/repos/{subject.repo}/pulls/{subject.number}")
        return ApprovalContext("merge", repo=subject.repo, number=subject.number, head_sha=str(pull["head"]),
                               pull=PullRequest(number=subject.number, title=str(pull["title"]), head_sha=str(pull["head"])))

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        data = json.loads(request.body or b"{}")
        return request.body if data.get("head") else json.dumps({**data, "head": head_sha}).encode()

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        staged = Fixture("PUT", f"{HOST}/repos/o/r/pulls/1/merge", ("pr.merge",), repo="o/r")
        return (ApprovalFixture(staged, {"GET /repos/o/r/pulls/1": {"head": "c" * 40, "title": "Toy"}},
                                head_sha="c" * 40, repo="o/r", number=1),)


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
        return (*super().fail_closed_fixtures(), Fixture("POST", f"{HOST}/repos/o/r/issues", ("unknown",)),
                Fixture("POST", f"{HOST}/repos/o/r/issues/bulk", ("unknown",)))

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


class ReadsWithoutRepo(ToyAdapter):
    """Breaks repositories: reads name no repository (the guide's first snippet did this), so
    ``[proxy] allowed_repos`` cannot limit them."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return Classification(("read",)) if got.operations == ("read",) else got


class NaiveReadsWithoutRepo(ReadsWithoutRepo):
    """Breaks repositories too, and asserts "no repository" where there is one: the round trip
    holds a fixture's NO_REPO to it."""

    def fixtures(self) -> Sequence[Fixture]:
        return [replace(f, repo="") if f.operations == ("read",) else f for f in super().fixtures()]


class TrailingSlashIsRead(ToyAdapter):
    """Breaks variants: a path with a trailing slash is taken for a listing (a read), so
    ``PUT …/merge/`` merges as a read."""

    def classify(self, request: Request) -> Classification:
        if request.path.endswith("/") and request.path != "/":
            return Classification(("read",))
        return super().classify(request)


class RaisesOnBadBody(ToyAdapter):
    """Breaks bodies: reads an issue's JSON without guarding against a malformed body."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        if got.operations == ("issue.create",) and request.body:
            json.loads(request.body)["title"]
        return got


class DroppedHost(ToyAdapter):
    """Breaks hosts: its fixtures use a host it does not serve (dropped from default_hosts)."""

    default_hosts = ()


class NoCredential(ToyAdapter):
    """Breaks credentials: the token never reaches the forge."""

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        return {}


class ResolvesWithoutAsking(ToyAdapter):
    """Breaks targets: settles every target to a repository whatever the forge answers."""

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        return {target: Resolution("o/r") for target in targets}


class NearMissLikeNeighbour(ToyAdapter):
    """Breaks near misses: its near miss (``…/merge/``) classifies exactly as the merge beside it."""

    def classify(self, request: Request) -> Classification:
        path = request.path.rstrip("/") or "/"
        return super().classify(Request(request.method, request.host, path, request.query, request.headers,
                                        request.body, request.port, request.scheme))

    def fixtures(self) -> Sequence[Fixture]:
        return (*super().fixtures(),
                Fixture("PUT", f"{HOST}/repos/o/r/pulls/1/merge/", ("pr.merge",), repo="o/r", near_miss=True))


class ForgottenRoute(ToyAdapter):
    """Breaks the inventory: ``POST …/issues/bulk`` was forgotten (its route and its fixture),
    while ``issue.create`` keeps a fixture, so completeness alone cannot see it."""

    def classify(self, request: Request) -> Classification:
        if request.path.endswith("/issues/bulk"):
            return Classification.unknown("not a toy route")
        return super().classify(request)

    def fixtures(self) -> Sequence[Fixture]:
        return [f for f in super().fixtures() if not f.url.endswith("/issues/bulk")]


class Unregistered(ToyAdapter):
    """Breaks registration: no installed plugin registers it (an entry point that does not load)."""


class Impostor(ToyAdapter):
    """Breaks registration: the plugin registers a different class under its name."""


class NoApprovalContext(ToyAdapter):
    """Breaks the approval context: it stages merges but neither reads a context nor says why not."""

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        return ()

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        return None


class PinOverridesTheAgent(ToyAdapter):
    """Breaks the pin: a head the agent's request already carries is replaced by the one seen."""

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        return json.dumps({**json.loads(request.body or b"{}"), "head": head_sha}).encode()


class DeclaresNoContext(ToyAdapter):
    """Correct: it reads no context and pins nothing, and says why."""

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        return ()

    def approval_unsupported(self) -> Mapping[str, str]:
        return {"context": "the toy forge has no API for pull requests", "pin": "its merge takes no head"}


class ForgetsTheChange(ToyAdapter):
    """Breaks changes: a branch deletion carries no change (what it deletes is not said), so the
    pipeline would refuse every one with change_unestablished."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return replace(got, change=None) if "ref.delete" in got.operations else got


class DeletionAsWrite(ToyAdapter):
    """Breaks changes and the round trip: its change deletes the branch, but the request is
    classified as ``ref.write`` alone, so a policy refusing ``ref.delete`` would not see it."""

    def classify(self, request: Request) -> Classification:
        got = super().classify(request)
        return replace(got, operations=("ref.write",)) if "ref.delete" in got.operations else got


#: variant → the adapters its (simulated) installed plugin registers; default: the variant itself.
REGISTERED: dict[str, list[Adapter]] = {"Unregistered": [], "Impostor": [ToyAdapter()]}

#: variant → the contract checks it must fail (and no others).
EXPECTED_FAILURES: dict[str, set[str]] = {
    "ToyAdapter": set(),
    # the inventory's POST …/issues then has no fixture either
    "Incomplete": {"test_completeness", "test_inventory"},
    # issue.edit and pr.edit are declared unsupported by the toy, so claiming them contradicts it
    # too; and a bad body on the route gives issue.edit, neither unknown nor the route's operation
    "Misclassifies": {"test_round_trip", "test_declared_operations_are_never_classified", "test_bodies"},
    "NoNearMiss": {"test_near_misses"},
    # (a merge no longer classified as one is no staged merge to read a context for, either)
    "UnrelayedMerge": {"test_round_trip", "test_relay_coverage", "test_declared_operations_are_never_classified",
                       "test_bodies", "test_approval_context"},
    # …and an upper-cased write, unmatched, is waved through as a read too
    "FailsOpen": {"test_fail_closed", "test_variants"},
    "Raises": {"test_classify_never_raises"},
    "RaisesOnMerge": {"test_round_trip", "test_relay_coverage", "test_bodies", "test_approval_context"},
    "CodelessDenial": {"test_denial_line", "test_unknown_is_denied_with_a_code"},
    "PendingIssues": set(),
    "PendingButClassified": {"test_fail_closed", "test_declared_operations_are_never_classified"},
    "UnsupportedAndPending": {"test_completeness"},
    "Unregistered": {"test_registered_by_its_plugin"},
    "Impostor": {"test_registered_by_its_plugin"},
    "ReadsWithoutRepo": {"test_repositories", "test_round_trip"},
    "NaiveReadsWithoutRepo": {"test_repositories"},
    "TrailingSlashIsRead": {"test_variants"},
    "RaisesOnBadBody": {"test_bodies"},
    "DroppedHost": {"test_hosts"},
    "NoCredential": {"test_credentials_and_resolve"},
    "ResolvesWithoutAsking": {"test_credentials_and_resolve"},
    "NearMissLikeNeighbour": {"test_near_misses"},
    "ForgottenRoute": {"test_inventory"},
    "NoApprovalContext": {"test_approval_context"},
    "PinOverridesTheAgent": {"test_approval_context"},
    "DeclaresNoContext": set(),
    "ForgetsTheChange": {"test_changes"},
    # (a bad body on the route gives ref.write too, neither unknown nor the route's operations)
    "DeletionAsWrite": {"test_changes", "test_round_trip", "test_bodies"},
}
