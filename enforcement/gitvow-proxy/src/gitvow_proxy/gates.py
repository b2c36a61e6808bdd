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
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gitvow.adapters.mcp import credential_name
from gitvow.change import Change
from gitvow.evaluator import REPO_UNRESOLVED
from gitvow.gates import Asked, Budgeted, Context, Gates, Taken, Throttle
from gitvow.githead import api_head_target, git_path, head_target, is_git_path, trees_target
from gitvow.needs import Lookup
from gitvow.policy.load import Policy
from gitvow.repos import RepoPatterns, matches_any
from gitvow.request import Classification, IssueDraft, Request, Resolution, Target
from gitvow.targets import ResolutionCache, needs_type, settle
from gitvow.verdict import Outcome, Verdict
from gitvow.vocabulary import UNKNOWN, writes
from gitvow_proxy.canary import CanaryScanner, ScanRefused
from gitvow_proxy.needs import Admit, ReadFlags, SeenFlags
from gitvow_proxy.settings import IssueShape, ProxyPolicy
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, STATE_UNAVAILABLE, Admission, Flags, Store, StoreUnavailable

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


class ProxyGates(Gates):
    """Gates over one policy, one store, the issued canaries and the configured credentials.

    They hold the policy and nothing a decision changes, but the write counters: what a gate
    needs from the store or the forge it asks with a need (:mod:`gitvow_proxy.needs`,
    :class:`gitvow.needs.Lookup`), answered by whoever drives the engine."""

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
        #: Writes by (agent, operation, outcome: allowed, refused, throttled), since start
        #: (carried over from the previous policy's gates on a reload).
        self.counts: Counter[tuple[str, str, str]] = counts if counts is not None else Counter()
        self._counts_lock = threading.Lock()
        self._paused = RepoPatterns(settings.run_state.paused)
        self._auto_merge_off = RepoPatterns(settings.run_state.auto_merge_off)
        tokens = dict(canaries) if settings.canary.enabled else {}
        for token in settings.canary.tokens:
            tokens.setdefault(token, "(policy)")
        self.scanner = CanaryScanner(tokens, limit=settings.canary.scan_limit)
        proxy = settings.proxy
        #: What the forge said opaque ids name: the enforcement point's, which answers the
        #: lookups (the gates never read it).
        self.resolutions = resolutions if resolutions is not None else ResolutionCache(
            size=proxy.resolve_cache_size, ttl=proxy.resolve_ttl)

    # -- needs answered synchronously (replay, tests; the proxy answers them off its loop) ---

    def answer(self, need: object) -> object:
        """The answer to a need from the store and the cache of the forge's answers (a target
        not cached stays unresolved: nothing here asks the forge)."""
        if isinstance(need, ReadFlags):
            return SeenFlags(self.store.all_flags())
        if isinstance(need, Admit):
            return Admission(self.store.take(need.keys, need.now, need.window, amounts=need.amounts))
        if isinstance(need, Lookup):
            found, _ = self.resolutions.lookup(need.scope, need.targets)
            return found
        return super().answer(need)

    # -- targets: resolved only when a repository gate needs them ---------------------------

    def _repo_gated(self, ctx: Context) -> Asked[bool]:
        """Whether some repository gate depends on this request's repositories: a write, and
        a pause, auto-merge switch, allowed-repository list, agent scope or autonomy in force.
        An unconstrained deployment answers False and never resolves a target."""
        if not any(op != UNKNOWN for op in _writes(ctx)):
            return False  # reads are never refused for an unknown repository; ``unknown`` always is
        change = ctx.classification.change
        if change is not None and change.refs and change.default_branch_at:
            return True  # the change stage's branch rules ask the forge about the repository
        if self.settings.proxy.allowed_repos is not None or ctx.caller.grant.autonomy or self._paused:
            return True
        agent = self.agents.get(ctx.caller.name or "")
        if agent is not None and agent.repos is not None:
            return True
        return self._flagged(ctx)

    def _flagged(self, ctx: Context) -> Generator[object, Any, bool]:
        try:
            flags = (yield ReadFlags()).flags
        except StoreUnavailable:
            return False  # nothing to look up: run_state refuses the write with state_unavailable
        if flags.get(PAUSED):
            return True
        return "pr.merge" in ctx.operations and bool(self._auto_merge_off or flags.get(AUTO_MERGE_OFF))

    def resolve(self, ctx: Context) -> Asked[Classification]:
        return self._resolve(ctx)

    def _resolve(self, ctx: Context) -> Generator[object, Any, Classification]:
        classification = ctx.classification
        gated = self._repo_gated(ctx)
        if not isinstance(gated, bool):
            gated = yield from gated
        wanted = classification.targets if gated else needs_type(classification)
        if not wanted or len(wanted) > MAX_TARGETS:
            return classification  # more than one lookup's worth is not asked about: unresolved
        found = yield Lookup(self._scope(ctx), wanted)
        return settle(classification, found)

    @staticmethod
    def _scope(ctx: Context) -> str:
        return resolution_scope(ctx.adapter.name, ctx.request.host, ctx.request.port)

    def _looked_up(self, ctx: Context, targets: tuple[Target, ...]) -> Generator[object, Any, dict[Target, Resolution]]:
        found: dict[Target, Resolution] = yield Lookup(self._scope(ctx), targets)
        return found

    # -- 5b: the default branch the change stage asks for ----------------------------------

    knows_default_branch = True

    def default_branch(self, ctx: Context) -> Asked[str | None]:
        """The forge's default branch of a pushed repository, from git's own advertisement
        (:mod:`gitvow.githead`), cached like every lookup (and filled for free when the agent's
        clone or fetch advertisement passes through). A write through the API reads the same
        advertisement at the path its adapter names (:meth:`~gitvow.adapter.Adapter.git_repository_path`),
        or, where git is served on another host, the API's description of the repository
        (``Change.default_branch_at``). None, so refused, when it cannot be read."""
        return self._default_branch(ctx)

    def _default_branch(self, ctx: Context) -> Generator[object, Any, str | None]:
        repo = yield from self._changed_repo(ctx)
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
        found = yield from self._looked_up(ctx, (target,))
        answer = found.get(target)
        return answer.type if answer is not None else None

    knows_old_trees = True

    def exact_change(self, ctx: Context) -> Asked[Change | None]:
        """The push's change diffed against its parents' trees, fetched from the forge with
        git's own upload-pack (:data:`gitvow.githead.TREES_KIND`, cached like every lookup;
        the trees land in the adapter's store of known trees), then the push read again. None,
        so refused, when they could not be fetched."""
        change = ctx.classification.change
        if change is None or not change.old_commits or not is_git_path(ctx.request.path):
            return None
        where = git_path(ctx.request.path)
        targets = tuple(trees_target(commit, where) for commit in change.old_commits)
        if len(targets) > MAX_TARGETS:
            return None
        return self._exact_change(ctx, targets)

    def _exact_change(self, ctx: Context, targets: tuple[Target, ...]) -> Generator[object, Any, Change | None]:
        found = yield from self._looked_up(ctx, targets)
        if len(found) != len(targets):
            return None
        return ctx.adapter.classify(ctx.request).change

    def _changed_repo(self, ctx: Context) -> Generator[object, Any, str | None]:
        """The repository whose default branch decides a write. Named by an opaque id
        (GitLab's ``/projects/42``) it is asked of the forge now, even where no repository gate
        asked before: the branch rules need its name."""
        classification = ctx.classification
        if classification.repo is not None or not classification.targets or len(classification.targets) > MAX_TARGETS:
            return classification.repo
        found = yield from self._looked_up(ctx, classification.targets)
        return settle(classification, found).repo

    # -- 2: run-state ---------------------------------------------------------------------

    def run_state(self, ctx: Context) -> Asked[Verdict | None]:
        """Paused repositories, then the agent's repository scope, then merges switched off:
        every repository the request names, and a write whose repository is not established
        refused wherever one of them could have caught it (``repo_unresolved``). Reads never
        reach the store."""
        classification = ctx.classification
        if classification.targets and needs_type(classification):  # most requests name no target
            # The operation depends on what the forge says the object is, and it did not say.
            return _unresolved(ctx.operations[0], "what this request does depends on it")
        if not _writes(ctx):
            return self._scope_gate(ctx, [], [repo.lower() for repo in classification.repos], False)
        return self._run_state_of_write(ctx)

    def _run_state_of_write(self, ctx: Context) -> Generator[object, Any, Verdict | None]:
        try:
            seen: SeenFlags = yield ReadFlags(confirmable=bool(self._plan(ctx).keys))
            verdict = self._run_state_on(ctx, seen.flags)
            if verdict is not None and not seen.confirmed:
                # never refused on flags the store may no longer hold: read afresh and judge again
                seen = yield ReadFlags()
                verdict = self._run_state_on(ctx, seen.flags)
        except StoreUnavailable as exc:
            # Every write reads the run-time pauses, so a store that cannot be reached refuses
            # every write here (state_unavailable).
            return _unavailable(exc, _writes(ctx)[0])
        return verdict

    def _run_state_on(self, ctx: Context, flags: Flags) -> Verdict | None:
        """The run-state gate of a write on ``flags``."""
        classification = ctx.classification
        written = _writes(ctx)
        repos = [repo.lower() for repo in classification.repos]
        # ``unknown`` is denied at every mode by the policy stage, with a better reason.
        unresolved = not classification.repo_established and any(op != UNKNOWN for op in written)
        return (self._paused_gate(ctx, flags, written, repos, unresolved)
                or self._scope_gate(ctx, written, repos, unresolved)
                or self._merge_gate(ctx, flags, repos, unresolved))

    @staticmethod
    def _flagged_hit(flagged: frozenset[str], patterns: RepoPatterns, repos: list[str]) -> str | None:
        """The first of ``repos`` the policy (``patterns``) or the store's run-time flags mark;
        ``""`` when none is but some repository is marked; None when nothing is marked at all."""
        if not patterns and not flagged:
            return None
        return next((repo for repo in repos if patterns.matches(repo) or matches_any(repo, flagged)), "")

    def _paused_gate(self, ctx: Context, flags: Flags, written: list[str], repos: list[str],
                     unresolved: bool) -> Verdict | None:
        hit = self._flagged_hit(flags.get(PAUSED, frozenset()), self._paused, repos)
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

    def _merge_gate(self, ctx: Context, flags: Flags, repos: list[str], unresolved: bool) -> Verdict | None:
        if "pr.merge" not in ctx.operations:
            return None
        hit = self._flagged_hit(flags.get(AUTO_MERGE_OFF, frozenset()), self._auto_merge_off, repos)
        if hit:
            return Verdict.deny("repo_auto_merge_disabled", f"merging on {hit} is switched off",
                                operation="pr.merge", instead="leave the merge to a human")
        if hit == "" and unresolved and ctx.adapter.has_repositories:
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
            return Verdict(Outcome.ALLOW, operation=outside[0], why=f"write_surface would refuse: {why}")
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
                if owner is None and request.body:  # nothing to scan: no header to read either
                    encoding = request.header("content-encoding")
                    pushed = "git.push" in ctx.operations and request.method == "POST"
                    owner = self.scanner.find(request.body, content_encoding=encoding, git_push=pushed)
            except ScanRefused as exc:
                return Verdict.deny("canary_egress", f"the request could not be checked for secrets: {exc}",
                                    operation=ctx.operations[0], instead="send less at once")
            if owner is not None:
                return Verdict.deny("canary_egress", "the request carries a secret that must never leave",
                                    operation=ctx.operations[0], instead="remove the secret from what you send")
        return None

    # -- write counters, budget, credentials ------------------------------------------------

    def record(self, ctx: Context, outcome: str) -> None:
        """The write counters: counted in this process, once per write with its final outcome
        (allowed, refused, throttled). No store round trip: ``/metrics`` serves them
        (``gitvow_writes_total``)."""
        plan = self._plan(ctx)
        if not plan.counted:
            return
        who = ctx.caller.name or "-"
        with self._counts_lock:
            for op, times in plan.performed:
                self.counts[(who, op, outcome)] += times

    def budget(self, ctx: Context) -> Asked[Budgeted]:
        plan = self._plan(ctx)
        if not plan.keys:
            return None
        return self._admit(ctx, plan)

    def _admit(self, ctx: Context, plan: _Plan) -> Generator[object, Any, Budgeted]:
        """Take the write's budget. When the admission finds the run-time flags changed since
        the ones this write was judged on (nothing taken), the run-state gate judges it on the
        store's flags, and a write it still passes is admitted on them."""
        budget = self.settings.budget
        window = float(budget.window_seconds)
        now = self.clock()
        try:
            admission: Admission = yield Admit(plan.keys, plan.amounts, now, window)
            if admission.flags is not None:
                refused = self._run_state_on(ctx, admission.flags)
                if refused is not None:
                    return refused
                admission = yield Admit(plan.keys, plan.amounts, now, window)
                if admission.flags is not None:  # changed again at once: come back in a moment
                    return Throttle(UNAVAILABLE_RETRY, "the run-time flags changed while deciding", STATE_UNAVAILABLE)
        except StoreUnavailable as exc:
            return Throttle(UNAVAILABLE_RETRY, f"the state store cannot be reached ({exc})", STATE_UNAVAILABLE)
        if admission.wait is None:
            return Taken(plan.names, now, plan.amounts)
        return Throttle(math.ceil(admission.wait), f"the write budget of {budget.window_seconds}s is used up")

    def _plan(self, ctx: Context) -> _Plan:
        """What the request counts and takes from the budget."""
        if not counts_as_write(ctx):
            return self._capped(ctx)
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

    def _capped(self, ctx: Context) -> _Plan:
        """A request that writes nothing takes from the budget only where ``[budget] operations``
        caps one of its operations (a model's ``inference.call``): never counted as a write."""
        name = ctx.caller.name
        if name is None or ctx.caller.internal:
            return _NOT_COUNTED
        _, per_op = self.settings.budget.limits_for(name)
        if not per_op:
            return _NOT_COUNTED
        performed = [op for op in ctx.classification.performed if op in per_op]
        if not performed:
            return _NOT_COUNTED
        keys = tuple((f"budget:{name}:op:{op}", per_op[op]) for op in dict.fromkeys(performed))
        amounts = tuple(performed.count(op) for op in dict.fromkeys(performed))
        return _Plan(False, (), keys, amounts, tuple(key for key, _ in keys))

    def credential(self, ctx: Context) -> str | None:
        """The token of the request's adapter: an MCP endpoint (``[mcp.NAME]``) carries its forge's."""
        return self.credentials.get(credential_name(ctx.adapter))

    def give_back(self, taken: Taken) -> None:
        """A forwarded write the forge did not perform (no answer, or a refusal): its budget back."""
        try:
            self.store.give_back(taken.keys, taken.at, taken.amounts)
        except StoreUnavailable as exc:
            log.warning("gitvow: a failed write's budget could not be given back: %s", exc)


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
