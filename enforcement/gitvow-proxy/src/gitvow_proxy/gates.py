"""The proxy's implementation of the pipeline's gates (``gitvow.gates.Gates``).

Each method sees classified operations and a repository, never a method and path, so every
forge (GraphQL included) gets the same run-state, write-surface, repository, body, counter
and budget rules. Reason codes are the pipeline's (docs/architecture.md).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gitvow.adapters.mcp import credential_name
from gitvow.evaluator import REPO_UNRESOLVED
from gitvow.gates import Context, Gates, Throttle
from gitvow.policy.load import Policy
from gitvow.repos import RepoPatterns, matches_any
from gitvow.request import Classification, IssueDraft, Request
from gitvow.targets import Pending, ResolutionCache, needs_type, settle
from gitvow.verdict import Verdict
from gitvow.vocabulary import UNKNOWN, writes
from gitvow_proxy.canary import CanaryScanner, ScanRefused
from gitvow_proxy.settings import IssueShape, ProxyPolicy
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, STATE_UNAVAILABLE, Store, StoreUnavailable

log = logging.getLogger("gitvow_proxy")

#: Operations the write-surface lanes never restrict: signing in and fetching change nothing on the forge.
WRITE_SURFACE_EXEMPT = frozenset({"auth.login", "git.fetch"})
_BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Most opaque ids one request may have resolved (GitHub answers this many in one query); a
#: request naming more stays unresolved, so an agent cannot make the proxy spend the forge's
#: rate limit on its behalf.
MAX_TARGETS = 100


def _matches(repo: str, patterns: list[str]) -> bool:
    return matches_any(repo, patterns)


def _unresolved(operation: str, constraint: str) -> Verdict:
    return Verdict.deny(REPO_UNRESOLVED, f"the repository of this write could not be established and {constraint}",
                        operation=operation, instead="name the repository by owner/name, or ask a human")


def resolution_scope(adapter: str, host: str, port: int) -> str:
    """The cache scope of a target: the same id on two hosts is two objects."""
    return f"{adapter}@{host.lower()}:{port}"


def _writes(ctx: Context) -> list[str]:
    return [op for op in ctx.operations if writes(op)]


def _performed_writes(ctx: Context) -> dict[str, int]:
    """Write operation → how many times the request performs it (once per action)."""
    counted: dict[str, int] = {}
    for op in ctx.classification.performed:
        if writes(op):
            counted[op] = counted.get(op, 0) + 1
    return counted


def counts_as_write(ctx: Context) -> bool:
    """Whether the request is a write on the wire: a write operation sent with a body-bearing
    method. A push's ``info/refs`` probe (a GET classified ``git.push`` so the gates can refuse
    it early) is refused like the push but counted only once, at the POST."""
    return ctx.request.method not in _BODYLESS and bool(_writes(ctx))


class ProxyGates(Gates):
    """Gates over one policy, one store, the issued canaries and the configured credentials."""

    def __init__(
        self,
        policy: Policy,
        store: Store,
        *,
        credentials: Mapping[str, str],
        canaries: Mapping[str, str],
        clock: Callable[[], float] = time.time,
        resolutions: ResolutionCache | None = None,
    ) -> None:
        self.settings = settings = policy.section(ProxyPolicy)
        self.agents = policy.model.agents
        self.store = store
        self.credentials = dict(credentials)
        self.clock = clock
        self.note: str | None = None
        #: What the last decision took from the budget (read by :meth:`take_taken`).
        self.taken: Taken | None = None
        #: A write's counters could not reach the store (set by record, read by budget).
        self.lost = False
        self._paused = RepoPatterns(settings.run_state.paused)
        self._auto_merge_off = RepoPatterns(settings.run_state.auto_merge_off)
        tokens = dict(canaries) if settings.canary.enabled else {}
        for token in settings.canary.tokens:
            tokens.setdefault(token, "(policy)")
        self.scanner = CanaryScanner(tokens, limit=settings.canary.scan_limit)
        self._memo: tuple[Request, dict[str, frozenset[str]]] | None = None
        proxy = settings.proxy
        self.resolutions = resolutions if resolutions is not None else ResolutionCache(
            size=proxy.resolve_cache_size, ttl=proxy.resolve_ttl)

    # -- targets: resolved only when a repository gate needs them ---------------------------

    def repo_gated(self, ctx: Context) -> bool:
        """Whether some repository gate depends on this request's repositories: a write, and
        a pause, auto-merge switch, allowed-repository list, agent scope or autonomy in force.
        An unconstrained deployment answers False and never resolves a target."""
        if not any(op != UNKNOWN for op in _writes(ctx)):
            return False  # reads are never refused for an unknown repository; ``unknown`` always is
        if self.settings.proxy.allowed_repos is not None or ctx.caller.grant.autonomy:
            return True
        agent = self.agents.get(ctx.caller.name or "")
        if agent is not None and agent.repos is not None:
            return True
        try:
            if self._paused or self._flags(ctx, PAUSED):
                return True
            return "pr.merge" in ctx.operations and bool(self._auto_merge_off or self._flags(ctx, AUTO_MERGE_OFF))
        except StoreUnavailable:
            return False  # nothing to look up: run_state refuses the write with state_unavailable

    def _flags(self, ctx: Context, kind: str) -> frozenset[str]:
        """The store's run-time flags, read once per decision (resolve and run_state both ask).

        Decisions run one at a time on the proxy's event loop; the memo holds the request
        it was read for and is dropped when the decision is recorded."""
        memo = self._memo
        if memo is None or memo[0] is not ctx.request:
            memo = self._memo = (ctx.request, {})
        found = memo[1].get(kind)
        if found is None:
            found = memo[1][kind] = self.store.flags(kind)
        return found

    def resolve(self, ctx: Context) -> Classification:
        classification = ctx.classification
        wanted = classification.targets if self.repo_gated(ctx) else needs_type(classification)
        if not wanted or len(wanted) > MAX_TARGETS:
            return classification  # more than one lookup's worth is not asked about: unresolved
        scope = resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)
        found, missing = self.resolutions.lookup(scope, wanted)
        if missing:
            self._memo = None  # the decision starts over after the lookup: read the flags afresh
            raise Pending(scope, missing)
        return settle(classification, found)

    # -- 2: run-state ---------------------------------------------------------------------

    def run_state(self, ctx: Context) -> Verdict | None:
        classification = ctx.classification
        written = _writes(ctx)
        if needs_type(classification):
            # The operation depends on what the forge says the object is, and it did not say.
            return _unresolved(ctx.operations[0], "what this request does depends on it")
        repos = [repo.lower() for repo in classification.repos]
        # ``unknown`` is denied at every mode by the policy stage, with a better reason.
        unresolved = not classification.repo_established and any(op != UNKNOWN for op in written)
        gated = ctx.adapter.has_repositories
        if written:
            # Every write reads the run-time pauses, so a store that cannot be reached refuses
            # every write here (state_unavailable); reads never touch the store.
            try:
                flagged = self._flags(ctx, PAUSED)
            except StoreUnavailable as exc:
                return _unavailable(exc, written[0])
            if self._paused or flagged:
                hit = next((repo for repo in repos if self._paused.matches(repo) or matches_any(repo, flagged)), None)
                if hit is not None:
                    return Verdict.deny("repo_paused", f"{hit} is paused", operation=written[0],
                                        instead="wait until a human resumes the repository")
                if unresolved and gated:
                    return _unresolved(written[0], "some repositories are paused")
        agent = self.agents.get(ctx.caller.name or "")
        if agent is not None and agent.repos is not None:
            outside = next((repo for repo in repos if not _matches(repo, agent.repos)), None)
            if outside is not None:
                return Verdict.deny("agent_repo_scope", f"this agent may not touch {outside}",
                                    operation=ctx.operations[0], instead="work only on the repositories assigned to you")
            if unresolved:
                return _unresolved(written[0], "this agent is limited to some repositories")
        if "pr.merge" in ctx.operations:
            try:
                flagged = self._flags(ctx, AUTO_MERGE_OFF)
            except StoreUnavailable as exc:
                return _unavailable(exc, "pr.merge")
            if self._auto_merge_off or flagged:
                hit = next((repo for repo in repos
                            if self._auto_merge_off.matches(repo) or matches_any(repo, flagged)), None)
                if hit is not None:
                    return Verdict.deny("repo_auto_merge_disabled", f"merging on {hit} is switched off",
                                        operation="pr.merge", instead="leave the merge to a human")
                if unresolved and gated:
                    return _unresolved("pr.merge", "merging is switched off on some repositories")
        return None

    # -- 3: write surface -----------------------------------------------------------------

    def write_surface(self, ctx: Context) -> Verdict | None:
        surface = self.settings.write_surface
        lane = surface.agents.get(ctx.caller.name or "")
        if lane is None:
            return None
        outside = [op for op in _writes(ctx) if op not in WRITE_SURFACE_EXEMPT and not surface.allows(lane, op)]
        if not outside:
            return None
        why = f"{outside[0]} is outside this agent's write surface (lane {lane})"
        if not surface.enforce:
            self.note = f"write_surface would refuse: {why}"
            return None
        return Verdict.deny("write_surface_enforce", why, operation=outside[0],
                            instead="stay within your lane or ask a human")

    # -- 5: allowed repositories ----------------------------------------------------------

    def repo_filter(self, ctx: Context) -> Verdict | None:
        allowed = self.settings.proxy.allowed_repos
        if allowed is None:
            return None
        classification = ctx.classification
        outside = next((repo for repo in classification.repos if not _matches(repo, allowed)), None)
        if outside is not None:
            return Verdict.deny("repo_not_in_config", f"{outside.lower()} is not a repository this proxy serves",
                                operation=ctx.operations[0], instead="ask a human to add the repository")
        written = [op for op in _writes(ctx) if op != UNKNOWN]
        if written and not classification.repo_established and ctx.adapter.has_repositories:
            return _unresolved(written[0], "this proxy serves only some repositories")
        return None

    # -- 6: body gates ----------------------------------------------------------------------

    def body(self, ctx: Context) -> Verdict | None:
        shape = self.settings.issue_shape
        if shape is not None and shape.enabled and "issue.create" in ctx.operations:
            problem = issue_shape_problem(ctx.classification, ctx.request, shape)
            if problem is not None:
                return Verdict.deny("issue_shape", problem, operation="issue.create",
                                    instead="fix the issue's title and body and send it again")
        if self.scanner:
            request = ctx.request
            try:
                owner = self.scanner.find(f"{request.path}?{request.query}".encode())
                if owner is None:
                    owner = self.scanner.find(
                        request.body,
                        content_encoding=request.header("content-encoding"),
                        git_push="git.push" in ctx.operations and request.method == "POST",
                    )
            except ScanRefused as exc:
                return Verdict.deny("canary_egress", f"the request could not be checked for secrets: {exc}",
                                    operation=ctx.operations[0], instead="send less at once")
            if owner is not None:
                return Verdict.deny("canary_egress", "the request carries a secret that must never leave",
                                    operation=ctx.operations[0], instead="remove the secret from what you send")
        return None

    # -- write counters, budget, credentials ------------------------------------------------

    def record(self, ctx: Context, verdict: Verdict) -> None:
        self.lost = False
        self._memo = None
        if not counts_as_write(ctx):
            return
        outcome = "allowed" if verdict.allowed else "refused"
        who = ctx.caller.name or "-"
        try:
            for op, times in _performed_writes(ctx).items():
                self.store.count(f"writes:{who}:{op}:{outcome}", times)
        except StoreUnavailable:
            # The count is lost; the write itself is refused by the budget stage (which
            # reaches the store for every allowed write) or was refused already.
            self.lost = True

    def budget(self, ctx: Context) -> Throttle | None:
        if ctx.caller.name is None or not counts_as_write(ctx):
            return None
        lost, self.lost = self.lost, False
        budget = self.settings.budget
        total, per_op = budget.limits_for(ctx.caller.name)
        # Each action counts, not each request: two aliased createIssue fields are two issues.
        performed = _performed_writes(ctx)
        keys: list[tuple[str, int]] = []
        amounts: list[int] = []
        if total is not None:
            keys.append((f"budget:{ctx.caller.name}:writes", total))
            amounts.append(sum(performed.values()))
        for op, times in performed.items():
            if op in per_op:
                keys.append((f"budget:{ctx.caller.name}:op:{op}", per_op[op]))
                amounts.append(times)
        try:
            if lost:
                raise StoreUnavailable("the write could not be counted")
            now = self.clock()
            wait = self.store.take(keys, now, float(budget.window_seconds), amounts=amounts) if keys else None
        except StoreUnavailable as exc:
            return Throttle(UNAVAILABLE_RETRY, f"the state store cannot be reached ({exc})", STATE_UNAVAILABLE)
        if wait is None:
            if keys:
                self.taken = Taken(tuple(key for key, _ in keys), now, tuple(amounts))
            return None
        return Throttle(math.ceil(wait), f"the write budget of {budget.window_seconds}s is used up")

    def credential(self, ctx: Context) -> str | None:
        # an MCP endpoint ([mcp.NAME]) carries its forge's token
        return self.credentials.get(credential_name(ctx.adapter))

    def take_note(self) -> str | None:
        note, self.note = self.note, None
        return note

    def take_taken(self) -> Taken | None:
        """What the last decision took from the budget (None: nothing), for a refund if the
        write is not performed; cleared by reading it."""
        taken, self.taken = self.taken, None
        return taken

    def give_back(self, taken: Taken) -> None:
        """A forwarded write the forge did not perform (no answer, or a refusal): its budget back."""
        try:
            self.store.give_back(taken.keys, taken.at, taken.amounts)
        except StoreUnavailable as exc:
            log.warning("gitvow: a failed write's budget could not be given back: %s", exc)


@dataclass(frozen=True, slots=True)
class Taken:
    """Budget units one forwarded write took: given back when the forge did not perform it."""

    keys: tuple[str, ...]
    at: float
    amounts: tuple[int, ...]


#: Seconds a client is told to wait when the state store cannot be reached.
UNAVAILABLE_RETRY = 5


def _unavailable(exc: StoreUnavailable, operation: str) -> Verdict:
    return Verdict.deny(STATE_UNAVAILABLE, f"{exc}; writes are refused until it is back", operation=operation,
                        instead="try again in a few seconds")


# -- issue shape --------------------------------------------------------------------------


def issue_shape_problem(classification: Classification, request: Request, shape: IssueShape) -> str | None:
    """What is wrong with the issues a request creates, or None. Unreadable counts as wrong.

    The issues are the adapter's :attr:`~gitvow.request.Classification.issues`, read from the
    fields the forge reads; every issue the request creates is checked, and a request that
    creates more issues than its adapter could read is refused.
    """
    if request.header("content-encoding").strip().lower() not in ("", "identity"):
        return "the issue body is compressed and cannot be checked"
    if len(request.body) > shape.scan_limit:
        return f"the request is larger than the issue-shape limit ({shape.scan_limit} bytes)"
    creates = max(1, classification.performed.count("issue.create"))
    drafts = classification.issues
    if len(drafts) < creates:
        if creates == 1:
            return "the issue's title and body could not be read"
        return f"{creates - len(drafts)} of the {creates} issues this request creates could not be read"
    for number, draft in enumerate(drafts, 1):
        problem = _draft_problem(draft, shape)
        if problem is not None:
            return problem if len(drafts) == 1 else f"issue {number} of {len(drafts)}: {problem}"
    return None


def _draft_problem(draft: IssueDraft, shape: IssueShape) -> str | None:
    title, text = draft.title, draft.body or ""
    if title is None:
        return "the issue has no readable title"
    if not title.strip():
        return "the issue title is empty"
    if len(title) > shape.title_max:
        return f"the issue title is longer than {shape.title_max} characters"
    if len(text) < shape.body_min:
        return f"the issue body is shorter than {shape.body_min} characters"
    if len(text) > shape.body_max:
        return f"the issue body is longer than {shape.body_max} characters"
    missing = [section for section in shape.required_sections if section not in text]
    if missing:
        return f"the issue body lacks the section(s) {', '.join(missing)}"
    return None
