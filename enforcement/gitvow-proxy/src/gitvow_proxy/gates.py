"""The proxy's implementation of the pipeline's gates (``gitvow.gates.Gates``).

Each method sees classified operations and a repository, never a method and path, so every
forge (GraphQL included) gets the same run-state, write-surface, repository, body, counter
and budget rules. Reason codes are the pipeline's (docs/architecture.md).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import quote

from gitvow.adapter import Adapter
from gitvow.adapters.mcp import credential_name
from gitvow.change import Change
from gitvow.evaluator import REPO_UNRESOLVED
from gitvow.gates import Context, Gates, Throttle
from gitvow.githead import api_head_target, git_path, head_target, is_git_path, trees_target
from gitvow.policy.load import Policy
from gitvow.repos import RepoPatterns, matches_any
from gitvow.request import Classification, IssueDraft, Request
from gitvow.targets import Pending, ResolutionCache, needs_type, settle
from gitvow.verdict import Verdict
from gitvow.vocabulary import UNKNOWN, writes
from gitvow_proxy.canary import CanaryScanner, ScanRefused
from gitvow_proxy.settings import IssueShape, ProxyPolicy
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, STATE_UNAVAILABLE, Admission, Flags, Store, StoreUnavailable

D = TypeVar("D")

#: Operations the write-surface lanes never restrict: signing in and fetching change nothing on the forge.
WRITE_SURFACE_EXEMPT = frozenset({"auth.login", "git.fetch"})
_BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Most opaque ids one request may have resolved (GitHub answers this many in one query); a
#: request naming more stays unresolved, so an agent cannot make the proxy spend the forge's
#: rate limit on its behalf.
MAX_TARGETS = 100
#: Longest text whose clean canary scan is remembered, and how many are (:meth:`ProxyGates._scanned`).
_SCAN_MEMO_TEXT = 4096
_SCAN_MEMO_SIZE = 1024


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


#: How many (caller, operations) a gates object keeps the budget plan of (:meth:`ProxyGates._plan`).
_PLANS = 1024
#: How many adapters' credential names a gates object keeps (:meth:`ProxyGates.credential`).
_CREDENTIAL_NAMES = 64


def counts_as_write(ctx: Context) -> bool:
    """Whether the request is a write on the wire: a write operation sent with a body-bearing
    method. A push's ``info/refs`` probe (a GET classified ``git.push`` so the gates can refuse
    it early) is refused like the push but counted only once, at the POST."""
    return ctx.request.method not in _BODYLESS and bool(_writes(ctx))


log = logging.getLogger("gitvow_proxy")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a request counts and takes from the budget, a function of the caller, whether the
    method carries a body, the operations and the actions (:meth:`ProxyGates._plan`)."""

    #: A write on the wire (:func:`counts_as_write`): counted, and budgeted if ``keys``.
    counted: bool
    #: Write operation → times performed, for the counters.
    performed: tuple[tuple[str, int], ...]
    #: The budget windows it takes from, ``(key, limit)``, how much from each, and the keys alone.
    keys: tuple[tuple[str, int], ...]
    amounts: tuple[int, ...]
    names: tuple[str, ...]


_NOT_COUNTED = _Plan(False, (), (), (), ())


@dataclass(frozen=True, slots=True)
class Taken:
    """Budget units one forwarded write took: given back when the forge did not perform it."""

    keys: tuple[str, ...]
    at: float
    amounts: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DeferredAdmission:
    """A budgeted write decided on the event loop, its admission not yet made: the store
    round trip :meth:`ProxyGates.judge_deferred` left for the enforcement point to await
    (:meth:`Store.admit_async`, or :meth:`Store.admit` on the store's worker), then
    :meth:`ProxyGates.settle`. Until it is settled the write is neither counted nor sent."""

    request: Request
    seen: Flags
    keys: tuple[tuple[str, int], ...]
    amounts: tuple[int, ...]
    now: float
    window: float
    #: The allowed write to count once admitted (None: not counted, an internal caller's).
    counted: Context | None
    #: The keys alone (what :class:`Taken` holds).
    names: tuple[str, ...]


class StoreNeeded(Pending):
    """A decision on the event loop reached the state store (flags never read, or a refusal
    decided on flags its admission did not confirm): it is decided again on the store's
    worker thread, where the store may be waited for. Nothing was counted or taken."""

    def __init__(self) -> None:
        super().__init__("the state store", ())


class _DecisionState(threading.local):
    """One thread's decision in progress: flags read once, an allowed write not yet counted, the note."""

    memo: tuple[Request, Flags] | None = None
    #: An allowed write waiting for the budget stage to say whether it is counted allowed or throttled.
    pending: Context | None = None
    note: str | None = None
    #: Inside :meth:`ProxyGates.judge`: a budgeted write may be decided on the flags read last.
    optimistic: bool = False
    #: The flags this decision used without reading them (the last read's): the budget's
    #: admission confirms them; None when read afresh or confirmed.
    unconfirmed: Flags | None = None
    #: Inside :meth:`ProxyGates.judge_deferred`: the store is never reached; the admission is
    #: left in ``deferred`` (or ``needs_store`` set when the decision cannot do without it).
    defer: bool = False
    deferred: DeferredAdmission | None = None
    needs_store: bool = False
    #: The allowed write the budget stage is admitting, for a deferred admission to count.
    counting: Context | None = None


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
        counts: Counter[tuple[str, str, str]] | None = None,
    ) -> None:
        self.settings = settings = policy.section(ProxyPolicy)
        self.agents = policy.model.agents
        self.store = store
        self.credentials = dict(credentials)
        self.clock = clock
        #: What one decision carries from gate to gate, per thread: the proxy decides reads on
        #: its event loop and writes (which reach the store) on a worker thread, at once.
        self._decision = _DecisionState()
        #: Writes by (agent, operation, outcome: allowed, refused, throttled), since start
        #: (carried over from the previous policy's gates on a reload).
        self.counts: Counter[tuple[str, str, str]] = counts if counts is not None else Counter()
        self._counts_lock = threading.Lock()
        #: What each decided request took from the budget, by the request's identity, until the
        #: enforcement point reads it (:meth:`take_taken`): decisions run on several threads.
        self._taken: dict[int, Taken] = {}
        self._taken_lock = threading.Lock()
        #: Budget plans by (caller, internal, bodyless method, operations, actions) (:meth:`_plan`);
        #: the gates belong to one policy load, so a reload starts with none.
        self._plans: dict[tuple[object, ...], _Plan] = {}
        #: The ``[credentials.NAME]`` of each adapter seen (:meth:`credential`).
        self._credential_names: dict[Adapter, str] = {}
        #: The run-time flags as last read from the store (None: never read): a budgeted write is
        #: decided on them and its admission confirms them in the same round trip.
        self._last_flags: Flags | None = None
        self._paused = RepoPatterns(settings.run_state.paused)
        self._auto_merge_off = RepoPatterns(settings.run_state.auto_merge_off)
        tokens = dict(canaries) if settings.canary.enabled else {}
        for token in settings.canary.tokens:
            tokens.setdefault(token, "(policy)")
        self.scanner = CanaryScanner(tokens, limit=settings.canary.scan_limit)
        #: (text, content encoding) the scanner found clean (:meth:`_scanned`).
        self._clean: tuple[CanaryScanner, set[tuple[bytes, str]]] = (self.scanner, set())
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
        change = ctx.classification.change
        if change is not None and change.refs and change.default_branch_at:
            return True  # the change stage's branch rules ask the forge about the repository
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

        The memo holds the request it was read for (per thread) and is dropped when the
        decision is recorded. Within :meth:`judge`, a write that will take from a budget uses
        the flags read last instead of reading them: its admission (:meth:`Store.admit`)
        confirms them in the round trip that takes the budget."""
        memo = self._decision.memo
        if memo is None or memo[0] is not ctx.request:
            memo = self._decision.memo = (ctx.request, self._flags_for(ctx))
        return memo[1].get(kind, frozenset())

    def _flags_for(self, ctx: Context) -> Flags:
        decision = self._decision
        last = self._last_flags
        if decision.optimistic and last is not None and self._plan(ctx).keys:
            decision.unconfirmed = last
            return last
        if decision.defer:
            raise StoreNeeded()
        found = self.store.all_flags()
        self._last_flags = found
        return found

    def judge(self, decide: Callable[[], D]) -> D:
        """``decide()`` (a decision through these gates), made so that a budgeted write costs
        the store one round trip: it is decided on the run-time flags read last, and the
        budget's admission confirms them as it takes. When they changed, or the decision ended
        without an admission confirming them (a refusal, a store that cannot be reached), it
        is decided again with the flags read afresh: what is decided on flags the store no
        longer holds is never applied, so a pause stops every write admitted after it."""
        state = self._decision
        state.memo, state.unconfirmed, state.optimistic = None, None, True
        try:
            decision = decide()
        except BaseException:  # Pending, or a failure: nothing of this attempt outlives it
            state.unconfirmed = None
            raise
        finally:
            state.optimistic = False
        if state.unconfirmed is None:
            return decision
        state.memo, state.pending, state.unconfirmed, state.note = None, None, None, None
        return decide()

    def judge_deferred(self, decide: Callable[[], D]) -> tuple[D, DeferredAdmission | None]:
        """``decide()`` as :meth:`judge` makes it, without reaching the store, for the event
        loop: a budgeted write is decided on the flags read last and its admission returned
        for the caller to await and :meth:`settle`. Raises :class:`StoreNeeded` when the
        decision cannot be made so (the flags never read, a write decided on flags no
        admission will confirm): the caller then decides it with :meth:`judge` off the loop."""
        state = self._decision
        state.memo, state.unconfirmed, state.deferred, state.needs_store = None, None, None, False
        state.optimistic = state.defer = True
        try:
            decision = decide()
            deferred, needs_store, unconfirmed = state.deferred, state.needs_store, state.unconfirmed
        finally:
            state.optimistic = state.defer = False
            state.memo, state.pending, state.unconfirmed, state.deferred = None, None, None, None
        if needs_store or (unconfirmed is not None and deferred is None):
            state.note = None
            raise StoreNeeded()
        return decision, deferred

    def settle(self, deferred: DeferredAdmission, admission: Admission) -> bool:
        """What a deferred admission answered: True when the budget was taken (the write is
        counted allowed and may be sent); False when nothing was taken (the flags changed, now
        remembered, or no room), and the write must be decided again with :meth:`judge`."""
        if admission.flags is not None:
            self._last_flags = admission.flags
            return False
        if admission.wait is not None:
            return False  # decided again: the budget stage throttles it with the store's wait, and counts it
        taken = Taken(deferred.names, deferred.now, deferred.amounts)
        with self._taken_lock:
            self._taken[id(deferred.request)] = taken
        if deferred.counted is not None:
            self._count(deferred.counted, "allowed")
        return True

    def resolve(self, ctx: Context) -> Classification:
        classification = ctx.classification
        wanted = classification.targets if self.repo_gated(ctx) else needs_type(classification)
        if not wanted or len(wanted) > MAX_TARGETS:
            return classification  # more than one lookup's worth is not asked about: unresolved
        scope = resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)
        found, missing = self.resolutions.lookup(scope, wanted)
        if missing:
            self._decision.memo = None  # the decision starts over after the lookup: read the flags afresh
            raise Pending(scope, missing)
        return settle(classification, found)

    # -- 5b: the default branch the change stage asks for ----------------------------------

    knows_default_branch = True

    def default_branch(self, ctx: Context) -> str | None:
        """The forge's default branch of a pushed repository, from git's own advertisement
        (:mod:`gitvow.githead`), cached like every lookup (and filled for free when the agent's
        clone or fetch advertisement passes through). A write through the API reads the same
        advertisement at the path its adapter names (:meth:`~gitvow.adapter.Adapter.git_repository_path`),
        or, where git is served on another host, the API's description of the repository
        (``Change.default_branch_at``). None, so refused, when it cannot be read."""
        repo = self._changed_repo(ctx)
        if repo is None:
            return None
        where = git_path(ctx.request.path) if is_git_path(ctx.request.path) else \
            ctx.adapter.git_repository_path(ctx.request, repo)
        change = ctx.classification.change
        if where is not None:
            target = head_target(repo, where)
        elif change is not None and change.default_branch_at:
            # git is served on another host (api.github.com): the forge's API describes the repository
            at = change.default_branch_at.replace("{repo}", repo).replace("{repo_quoted}", quote(repo, safe=""))
            target = api_head_target(repo, at)
        else:
            return None
        scope = resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)
        found, missing = self.resolutions.lookup(scope, (target,))
        if missing:
            self._decision.memo = None
            raise Pending(scope, missing)
        answer = found.get(target)
        return answer.type if answer is not None else None

    knows_old_trees = True

    def exact_change(self, ctx: Context) -> Change | None:
        """The push's change diffed against its parents' trees, fetched from the forge with
        git's own upload-pack (:data:`gitvow.githead.TREES_KIND`, cached like every lookup;
        the trees land in the adapter's store of known trees), then the push read again. None,
        so refused, when they could not be fetched."""
        change = ctx.classification.change
        if change is None or not change.old_commits or not is_git_path(ctx.request.path):
            return None
        where = git_path(ctx.request.path)
        targets = [trees_target(commit, where) for commit in change.old_commits]
        if len(targets) > MAX_TARGETS:
            return None
        scope = resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)
        found, missing = self.resolutions.lookup(scope, targets)
        if missing:
            self._decision.memo = None
            raise Pending(scope, missing)
        if len(found) != len(targets):
            return None
        return ctx.adapter.classify(ctx.request).change

    def _changed_repo(self, ctx: Context) -> str | None:
        """The repository whose default branch decides a write. Named by an opaque id
        (GitLab's ``/projects/42``) it is asked of the forge now, even where no repository gate
        asked before: the branch rules need its name."""
        classification = ctx.classification
        if classification.repo is not None or not classification.targets or len(classification.targets) > MAX_TARGETS:
            return classification.repo
        scope = resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)
        found, missing = self.resolutions.lookup(scope, classification.targets)
        if missing:
            self._decision.memo = None
            raise Pending(scope, missing)
        return settle(classification, found).repo

    # -- 2: run-state ---------------------------------------------------------------------

    def run_state(self, ctx: Context) -> Verdict | None:
        """Paused repositories, then the agent's repository scope, then merges switched off:
        every repository the request names, and a write whose repository is not established
        refused wherever one of them could have caught it (``repo_unresolved``)."""
        classification = ctx.classification
        if classification.targets and needs_type(classification):  # most requests name no target
            # The operation depends on what the forge says the object is, and it did not say.
            return _unresolved(ctx.operations[0], "what this request does depends on it")
        written = _writes(ctx)
        repos = [repo.lower() for repo in classification.repos]
        # ``unknown`` is denied at every mode by the policy stage, with a better reason.
        unresolved = not classification.repo_established and any(op != UNKNOWN for op in written)
        return (self._paused_gate(ctx, written, repos, unresolved)
                or self._scope_gate(ctx, written, repos, unresolved)
                or self._merge_gate(ctx, repos, unresolved))

    def _flagged_hit(self, ctx: Context, kind: str, patterns: RepoPatterns, repos: list[str]) -> str | None:
        """The first of ``repos`` the policy (``patterns``) or the store's run-time flags mark;
        ``""`` when none is but some repository is marked; None when nothing is marked at all.
        Raises StoreUnavailable."""
        flagged = self._flags(ctx, kind)
        if not patterns and not flagged:
            return None
        return next((repo for repo in repos if patterns.matches(repo) or matches_any(repo, flagged)), "")

    def _paused_gate(self, ctx: Context, written: list[str], repos: list[str], unresolved: bool) -> Verdict | None:
        if not written:
            return None  # reads never touch the store
        # Every write reads the run-time pauses, so a store that cannot be reached refuses
        # every write here (state_unavailable).
        try:
            hit = self._flagged_hit(ctx, PAUSED, self._paused, repos)
        except StoreUnavailable as exc:
            return _unavailable(exc, written[0])
        if hit:
            return Verdict.deny("repo_paused", f"{hit} is paused", operation=written[0],
                                instead="wait until a human resumes the repository")
        if hit == "" and unresolved and ctx.adapter.has_repositories:
            return _unresolved(written[0], "some repositories are paused")
        return None

    def _scope_gate(self, ctx: Context, written: list[str], repos: list[str], unresolved: bool) -> Verdict | None:
        agent = self.agents.get(ctx.caller.name or "")
        if agent is None or agent.repos is None:
            return None
        outside = next((repo for repo in repos if not _matches(repo, agent.repos)), None)
        if outside is not None:
            return Verdict.deny("agent_repo_scope", f"this agent may not touch {outside}",
                                operation=ctx.operations[0], instead="work only on the repositories assigned to you")
        if unresolved:
            return _unresolved(written[0], "this agent is limited to some repositories")
        return None

    def _merge_gate(self, ctx: Context, repos: list[str], unresolved: bool) -> Verdict | None:
        if "pr.merge" not in ctx.operations:
            return None
        try:
            hit = self._flagged_hit(ctx, AUTO_MERGE_OFF, self._auto_merge_off, repos)
        except StoreUnavailable as exc:
            return _unavailable(exc, "pr.merge")
        if hit:
            return Verdict.deny("repo_auto_merge_disabled", f"merging on {hit} is switched off",
                                operation="pr.merge", instead="leave the merge to a human")
        if hit == "" and unresolved and ctx.adapter.has_repositories:
            return _unresolved("pr.merge", "merging is switched off on some repositories")
        return None

    # -- the stages the engine may remember (Engine._steady) ----------------------------------

    #: Pure in the policy, the caller, the operations and the repositories (and the adapter).
    steady_stages = frozenset({"write_surface", "repo_filter"})

    def steady_key(self, ctx: Context) -> Hashable | None:
        """The write surface reads the caller's lane and the operations; the repository filter
        the repositories, the operations, whether the repositories are established and whether
        the adapter has any. The engine's key holds all of it but the adapter. A lane that only
        reports (``enforce = false``) leaves a note on the decision: never remembered."""
        surface = self.settings.write_surface
        if not surface.enforce and ctx.caller.name in surface.agents:
            return None
        return ctx.adapter

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
            self._decision.note = f"write_surface would refuse: {why}"
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
                owner = self._scanned(f"{request.path}?{request.query}".encode(), "")
                if owner is None and request.body:  # nothing to scan: no header to read either
                    encoding = request.header("content-encoding")
                    if "git.push" in ctx.operations and request.method == "POST":
                        owner = self.scanner.find(request.body, content_encoding=encoding, git_push=True)
                    else:
                        owner = self._scanned(request.body, encoding)
            except ScanRefused as exc:
                return Verdict.deny("canary_egress", f"the request could not be checked for secrets: {exc}",
                                    operation=ctx.operations[0], instead="send less at once")
            if owner is not None:
                return Verdict.deny("canary_egress", "the request carries a secret that must never leave",
                                    operation=ctx.operations[0], instead="remove the secret from what you send")
        return None

    def _scanned(self, text: bytes, content_encoding: str) -> str | None:
        """``self.scanner.find(text, content_encoding=...)``, remembered for short texts.

        Agents send the same paths and GraphQL documents over and over. The answer depends on
        the bytes, the content encoding and the scanner's tokens, nothing else (no pack is
        read: pushes are scanned apart). The memo belongs to one scanner (a new one, as
        replay's gates set, starts an empty memo), so (text, encoding) is the whole key. Only
        what passed is kept: a text refused or found is scanned again each time. Raises
        ScanRefused."""
        scanner = self.scanner
        if len(text) > _SCAN_MEMO_TEXT:
            return scanner.find(text, content_encoding=content_encoding)
        for_scanner, clean = self._clean
        if for_scanner is not scanner:
            clean = set()
            self._clean = (scanner, clean)
        key = (text, content_encoding)
        if key in clean:
            return None
        owner = scanner.find(text, content_encoding=content_encoding)
        if owner is None:
            if len(clean) >= _SCAN_MEMO_SIZE:
                clean.clear()
            clean.add(key)
        return owner

    # -- write counters, budget, credentials ------------------------------------------------

    def record(self, ctx: Context, verdict: Verdict) -> None:
        """The write counters: counted in this process, with each write's final outcome.

        A refused write counts ``refused`` here; an allowed one waits for the budget stage,
        which counts it ``allowed`` or ``throttled``, so a throttled write never counts as
        allowed. No store round trip: ``/metrics`` serves them (``gitvow_writes_total``)."""
        state = self._decision
        state.memo = None
        state.pending = None
        if not self._plan(ctx).counted:
            return
        if verdict.allowed and not ctx.caller.internal:
            state.pending = ctx
            return
        if state.unconfirmed is not None:
            return  # decided again on flags read afresh, and counted then (:meth:`judge`)
        self._count(ctx, "allowed" if verdict.allowed else "refused")

    def _count(self, ctx: Context, outcome: str) -> None:
        who = ctx.caller.name or "-"
        performed = self._plan(ctx).performed
        with self._counts_lock:
            for op, times in performed:
                self.counts[(who, op, outcome)] += times

    def budget(self, ctx: Context) -> Throttle | None:
        pending, self._decision.pending = self._decision.pending, None
        self._decision.counting = pending
        throttle = self._admit(ctx)
        state = self._decision
        if state.defer and (state.deferred is not None or state.needs_store):
            return throttle  # counted when the admission is settled, or when decided again
        if pending is not None and state.unconfirmed is None:
            self._count(pending, "allowed" if throttle is None else "throttled")
        return throttle

    def _plan(self, ctx: Context) -> _Plan:
        """What the request counts and takes from the budget, worked out once per (caller,
        bodyless method, operations, actions) under this policy load: the flags, the counters
        and the budget stage all ask, on every write. A new policy is new gates, with no plans."""
        classification, caller = ctx.classification, ctx.caller
        key = (caller.name, caller.internal, ctx.request.method in _BODYLESS, classification.operations,
               classification.actions)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan_of(ctx)
            if len(self._plans) >= _PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _plan_of(self, ctx: Context) -> _Plan:
        if not counts_as_write(ctx):
            return _NOT_COUNTED
        # Each action counts, not each request: two aliased createIssue fields are two issues.
        performed = _performed_writes(ctx)
        name = ctx.caller.name
        if name is None or ctx.caller.internal:
            return _Plan(True, tuple(performed.items()), (), (), ())
        total, per_op = self.settings.budget.limits_for(name)
        keys: list[tuple[str, int]] = []
        amounts: list[int] = []
        if total is not None:
            keys.append((f"budget:{name}:writes", total))
            amounts.append(sum(performed.values()))
        for op, times in performed.items():
            if op in per_op:
                keys.append((f"budget:{name}:op:{op}", per_op[op]))
                amounts.append(times)
        return _Plan(True, tuple(performed.items()), tuple(keys), tuple(amounts), tuple(key for key, _ in keys))

    def _admit(self, ctx: Context) -> Throttle | None:
        plan = self._plan(ctx)
        keys, amounts = plan.keys, plan.amounts
        if not keys:
            return None
        budget = self.settings.budget
        seen = self._decision.unconfirmed
        if self._decision.defer:
            self._defer(ctx, seen, plan)
            return None
        try:
            now = self.clock()
            if seen is None:
                wait = self.store.take(keys, now, float(budget.window_seconds), amounts=amounts)
            else:
                admission = self.store.admit(seen, keys, now, float(budget.window_seconds), amounts=amounts)
                if admission.flags is not None:  # changed since: nothing taken, decided again (judge)
                    self._last_flags = admission.flags
                    return Throttle(UNAVAILABLE_RETRY, "the run-time flags changed while deciding", STATE_UNAVAILABLE)
                self._decision.unconfirmed, wait = None, admission.wait
        except StoreUnavailable as exc:
            return Throttle(UNAVAILABLE_RETRY, f"the state store cannot be reached ({exc})", STATE_UNAVAILABLE)
        if wait is None:
            taken = Taken(plan.names, now, amounts)
            with self._taken_lock:
                self._taken[id(ctx.request)] = taken
            return None
        return Throttle(math.ceil(wait), f"the write budget of {budget.window_seconds}s is used up")

    def _defer(self, ctx: Context, seen: Flags | None, plan: _Plan) -> None:
        """In :meth:`judge_deferred`: leave the admission for the caller (no store round trip)."""
        state = self._decision
        if seen is None:  # flags read afresh (none to confirm): only the store's worker may take
            state.needs_store = True
            return
        state.deferred = DeferredAdmission(ctx.request, seen, plan.keys, plan.amounts, self.clock(),
                                           float(self.settings.budget.window_seconds), state.counting, plan.names)
        state.counting = None

    def credential(self, ctx: Context) -> str | None:
        """The token of the request's adapter: an MCP endpoint (``[mcp.NAME]``) carries its
        forge's. Which ``[credentials.NAME]`` an adapter takes is fixed with the adapter (its
        name, or its forge's), so it is worked out once per adapter object."""
        adapter = ctx.adapter
        name = self._credential_names.get(adapter)
        if name is None:
            if len(self._credential_names) >= _CREDENTIAL_NAMES:
                self._credential_names.clear()
            name = self._credential_names[adapter] = credential_name(adapter)
        return self.credentials.get(name)

    def take_taken(self, request: Request) -> Taken | None:
        """What the decision of ``request`` took from the budget (None: nothing), for a refund
        if the write is not performed; forgotten once read."""
        with self._taken_lock:
            return self._taken.pop(id(request), None)

    def give_back(self, taken: Taken) -> None:
        """A forwarded write the forge did not perform (no answer, or a refusal): its budget back."""
        try:
            self.store.give_back(taken.keys, taken.at, taken.amounts)
        except StoreUnavailable as exc:
            log.warning("gitvow: a failed write's budget could not be given back: %s", exc)

    def take_note(self) -> str | None:
        note, self._decision.note = self._decision.note, None
        return note


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
