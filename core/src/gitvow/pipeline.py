"""The pipeline (docs/architecture.md, "The pipeline"), in its order, as the one function every enforcement point calls.

    0 host → adapter          no adapter: tunnel untouched
    1 canonical path          path_not_canonical (before any adapter reads the path)
      classify                unreadable: ``unknown``; [comment_commands] add what a
                              comment's chat-ops commands mean
      internal caller         skips 2-5
      resolve targets         only when a gate needs them (gates.resolve; may raise Pending)
    2 run-state gates         repo_paused / agent_repo_scope / repo_auto_merge_disabled
    3 write surface           write_surface_enforce
    4 policy                  relay → hard_deny; mode_denied / graphql_* / linear_policy
                              (a staged relay, the built-in ``approval``, runs 5-6 too: a
                              request a later gate refuses is never staged for a human)
    5 allowed-repo filter     repo_not_in_config
    5b change                 change_unestablished / branch_not_allowed / branch_protected /
                              change_too_large / secret_detected / path_protected (refuse,
                              or staged for approval like a staged relay)
    6 body gates              issue_shape / canary_egress
      write counters; the first deny above → one-line 403
    7 write budget            429 with Retry-After
    8 credential injection    adapter-owned headers
      forward

``Pending`` (raised by ``gates.resolve`` when a lookup is needed and not cached) is the one
exception that leaves :meth:`Engine.decide`: nothing was counted yet, and the enforcement
point resolves the targets off its event loop and calls ``decide`` again.

The order is a contract: reason codes make it observable. Anything that raises inside a
stage or an adapter is a deny (``internal_error``) naming the stage or plugin — never a
crash, never a forward.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING

from gitvow import denial
from gitvow.adapter import Adapter, configure_adapters
from gitvow.change_rules import CHANGE_UNESTABLISHED, judge
from gitvow.evaluator import Grant, evaluate, operation_verdicts
from gitvow.gates import NO_GATES, Caller, Context, Gates
from gitvow.hosts import HostRegistry
from gitvow.paths import PATH_NOT_CANONICAL, PathRefused, canonical_path
from gitvow.policy.compile import CompiledPolicy
from gitvow.relay import RelayTemplate
from gitvow.request import Classification, Request, ToolCall
from gitvow.targets import Pending
from gitvow.verdict import ALLOW, Outcome, Verdict
from gitvow.vocabulary import UNKNOWN

if TYPE_CHECKING:
    from typing import Protocol

    class Installed(Protocol):
        """What the engine needs of discovery (:class:`gitvow.plugins.Plugins` is one; the
        agent gate's plugin index builds another with only the adapters a call needs)."""

        @property
        def adapters(self) -> Mapping[str, Adapter]: ...

        @property
        def relays(self) -> Mapping[str, RelayTemplate]: ...

        @property
        def adapter_plugin(self) -> Mapping[str, str]: ...


def _log_error(message: str, *args: object) -> None:
    import logging  # only when something misbehaves: logging costs the agent hook's forge path

    logging.getLogger("gitvow.pipeline").error(message, *args)

INTERNAL_ERROR = "internal_error"


class Action(Enum):
    """What the enforcement point does with the request."""

    FORWARD = "forward"
    DENY = "deny"
    THROTTLE = "throttle"
    TUNNEL = "tunnel"


@dataclass(frozen=True, slots=True)
class Decision:
    """The pipeline's answer. ``headers`` are to be set on the forwarded request (credentials)
    or on the refusal (``X-Gitvow-Reason``, ``Retry-After``)."""

    action: Action
    stage: str
    adapter: str | None = None
    classification: Classification | None = None
    verdict: Verdict | None = None
    message: str | None = None
    status: int = 0
    headers: Mapping[str, str] = field(default_factory=lambda: _NO_HEADERS)
    #: Refused by a staged relay (``approval``) and by nothing else: the enforcement point may
    #: keep the request for a human (the proxy does; see gitvow_proxy.approvals).
    staged: bool = False

    @property
    def reason(self) -> str | None:
        return self.verdict.code if self.verdict is not None and not self.verdict.allowed else None


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_TUNNEL = Decision(Action.TUNNEL, stage="host")
_AGENT_STAGES: tuple[str, ...] = ("run_state", "write_surface", "policy", "repo_filter", "change", "body")
_APPROVED_STAGES: tuple[str, ...] = ("run_state", "write_surface", "repo_filter", "change", "body")
_INTERNAL_STAGES: tuple[str, ...] = ("body",)
_INTERNAL_UNKNOWN_STAGES: tuple[str, ...] = ("policy", "body")
#: The engine's own stages that are pure for a request with no target and no change (:meth:`Engine._steady`).
_ENGINE_STEADY = frozenset({"policy", "change"})
#: Steady keys an engine remembers before it starts over.
STEADY_SIZE = 1024


#: The request of a tool call's context: the agent gate has no HTTP request, and its stages
#: (no run-state, no bodies) read none; the denial line names the call instead.
_NO_REQUEST = Request(method="", host="", path="")


@dataclass(frozen=True, slots=True)
class _Stages:
    """What the stage loop found: the first refusal and where, and a staged relay that stood."""

    refusal: Verdict | None = None
    stage: str = ""
    staged: Verdict | None = None
    #: The stage that staged it: ``policy`` (a relay to ``approval``) or ``change`` (a protected path).
    staged_at: str = ""


#: Every stage passed and nothing was staged (the loop's common answer, built once).
_PASSED = _Stages()


class AdapterSet:
    """Adapters and relay templates handed to the engine without plugin discovery (the agent
    gate's plugin index): the same three attributes :class:`gitvow.plugins.Plugins` has."""

    __slots__ = ("adapter_plugin", "adapters", "relays")

    def __init__(self, adapters: Mapping[str, Adapter], relays: Mapping[str, RelayTemplate] | None = None,
                 adapter_plugin: Mapping[str, str] | None = None) -> None:
        self.adapters = adapters
        self.relays: Mapping[str, RelayTemplate] = relays or {}
        self.adapter_plugin: Mapping[str, str] = adapter_plugin or {}


class Engine:
    """The kernel: a compiled policy and the adapters, hosts resolved and adapters configured.

    It judges a request (the proxy, ``gitvow explain``, replay: :meth:`decide`) and a tool
    call an adapter classified (the agent gate: :meth:`decide_call`) with one stage loop.
    It imports neither pydantic nor pluggy: loading and discovery produce its inputs
    (``core/tests/test_kernel_boundary.py`` holds it to that)."""

    def __init__(self, policy: CompiledPolicy, plugins: Installed) -> None:
        self.policy = policy
        self.plugins = plugins
        from gitvow.adapters.mcp import endpoints  # its JSON-RPC reader only where an engine is built

        adapters = configure_adapters(plugins.adapters, policy.adapter_options, source=policy.source)
        mcp = endpoints(policy.mcp, adapters, source=policy.source)
        #: Every adapter by name, the MCP endpoints' (``mcp.NAME``) included.
        self.adapters: dict[str, Adapter] = {**adapters, **mcp}
        self.hosts = HostRegistry(adapters, policy.hosts, source=policy.source, mcp=tuple(mcp.values()))
        self.relays: dict[str, RelayTemplate] = {**plugins.relays, **policy.relays}
        #: Steady keys whose pure stages passed → (the caller's grant, the stages left to run) (:meth:`_steady`).
        self._steadied: dict[Hashable, tuple[Grant, tuple[str, ...]]] = {}

    # -- pieces `gitvow explain` and the proxy reuse -------------------------------------

    def classify(self, request: Request) -> tuple[Adapter | None, Classification | None]:
        """Stages 0 and 1 alone. An adapter that raises yields an ``unknown`` classification."""
        adapter = self.hosts.route(request)
        if adapter is None:
            return None, None
        return adapter, self._classify(adapter, request)

    def evaluate(self, classification: Classification, grant: Grant) -> Verdict:
        """Stage 4 alone: the policy verdict."""
        return evaluate(classification, grant, table=self.policy.table)

    def message(
        self,
        verdict: Verdict,
        classification: Classification,
        adapter: Adapter | None,
        target: str = "",
        *,
        approval: str | None = None,
    ) -> str:
        """The one-line denial, with the adapter's do-not-use hints for a relay (and the
        approval id of a staged request)."""
        hints: tuple[str, ...] = ()
        if verdict.outcome is Outcome.RELAY and verdict.operation and adapter is not None:
            try:
                hints = tuple(adapter.relay_hints(verdict.operation))
            except Exception as exc:
                _log_error("adapter %r raised in relay_hints: %s: %s", adapter.name, type(exc).__name__, exc)
        return denial.render(verdict, target=target, repo=classification.repo, relays=self.relays, hints=hints,
                             approval=approval)

    def is_staged(self, verdict: Verdict) -> bool:
        """Whether ``verdict`` is a relay to a staged template (the built-in ``approval``)."""
        if verdict.outcome is not Outcome.RELAY or verdict.relay is None:
            return False
        template = self.relays.get(verdict.relay)
        return template is not None and template.staged

    # -- the pipeline -------------------------------------------------------------------

    def decide(self, request: Request, caller: Caller, gates: Gates = NO_GATES) -> Decision:
        """Run every stage in order and say what to do with ``request``."""
        adapter = self.hosts.route(request)
        if adapter is None:
            return _TUNNEL
        return self.decide_classified(request, adapter, self._classify(adapter, request), caller, gates)

    def decide_call(self, call: ToolCall, adapter: Adapter, caller: Caller, *, target: str = "") -> Decision:
        """The verdict on a tool call ``adapter`` classified (``gh pr merge 3``, a forge MCP
        tool): the stages a tool call has — policy, with the staged-relay rule — through the
        same loop as a request, so the gate and the proxy cannot disagree. A staged refusal
        comes back with ``staged`` set: the gate lets it go on to the proxy, which stages it."""
        classification = Classification(operations=call.operations, repo=call.repo, repos=call.repos,
                                        adapter=call.adapter or adapter.name, unknown_code=call.unknown_code,
                                        mode_code=call.mode_code, note=call.note, targets=call.targets,
                                        change=call.change)
        ctx = Context(_NO_REQUEST, adapter, classification, caller)
        found = self._run_stages(ctx, _AGENT_STAGES, NO_GATES)
        refusal = found.refusal or found.staged
        if refusal is None:
            return Decision(Action.FORWARD, "policy", adapter.name, classification, ALLOW)
        return self._refused(found.stage or found.staged_at, refusal, ctx, target=target or call.summary,
                             staged=refusal is found.staged)

    def decide_classified(
        self, request: Request, adapter: Adapter, classification: Classification, caller: Caller, gates: Gates = NO_GATES
    ) -> Decision:
        """Stages 2-8 for a request classified already.

        ``gitvow replay`` re-decides audit-log lines this way: they hold the operations and
        the repository the adapter found, not the body it found them in."""
        ctx = Context(request, adapter, classification, caller)
        if classification.unknown_code == PATH_NOT_CANONICAL:
            return self._not_canonical(ctx, gates)
        if classification.targets and not caller.internal:
            try:
                ctx = self._settled(ctx, gates)
            except Pending:
                raise
            except Exception as exc:
                return self._refused("resolve", self._stage_failed("resolve", exc, ctx), ctx)
        stages, steady = self._steady(ctx, gates)
        found = self._run_stages(ctx, stages, gates)
        if steady is not None and found is _PASSED:
            self._remember_steady(steady, caller, gates)
        refusal, refused_at = found.refusal, found.stage
        if refusal is None and found.staged is not None:
            refusal, refused_at = found.staged, found.staged_at
        try:
            gates.record(ctx, refusal or ALLOW)
        except Exception as exc:
            refusal, refused_at = self._stage_failed("record", exc, ctx), "record"
        if refusal is not None:
            return self._refused(refused_at, refusal, ctx, staged=refusal is found.staged)
        if not caller.internal:
            throttled = self._throttled(ctx, gates)
            if throttled is not None:
                return throttled
        return self._forward(ctx, gates)

    # -- the stages ---------------------------------------------------------------------

    def _steady(self, ctx: Context, gates: Gates) -> tuple[tuple[str, ...], Hashable | None]:
        """The stages to run for ``ctx``, and the key to remember they passed under (None: not
        remembered). An agent's request that names no target and carries no change has
        stages whose verdict is a pure function of the policy, the caller and the
        classification: the policy stage, the change stage (nothing to judge) and the gates'
        :attr:`~gitvow.gates.Gates.steady_stages`. Once they all passed for a key, the next
        request with the same key runs only the others (run-state flags, bodies; the budget
        and the counters after them run as always). The memo belongs to this engine (one
        policy load) and holds the gates and the caller's grant it was made with."""
        classification = ctx.classification
        if ctx.caller.internal or ctx.caller.approved or classification.change is not None or classification.targets:
            return _stages_for(ctx.caller, classification), None
        key = gates.steady_key(ctx)
        if key is None:
            return _AGENT_STAGES, None
        # Only a pass is remembered, and whether a stage passes never depends on the reason codes or the note.
        steady = (gates, key, ctx.caller.name, classification.operations, classification.repos)
        known = self._steadied.get(steady)
        if known is not None and (known[0] is ctx.caller.grant or known[0] == ctx.caller.grant):
            return known[1], None
        return _AGENT_STAGES, steady

    def _remember_steady(self, steady: Hashable, caller: Caller, gates: Gates) -> None:
        """Every stage passed for ``steady``: the next request with this key runs only the others."""
        left = tuple(stage for stage in _AGENT_STAGES
                     if stage not in _ENGINE_STEADY and stage not in gates.steady_stages)
        if len(self._steadied) >= STEADY_SIZE:
            self._steadied.clear()  # bounded; starting over costs one full decision per key
        self._steadied[steady] = (caller.grant, left)

    def _not_canonical(self, ctx: Context, gates: Gates) -> Decision:
        """Refused before every gate, internal callers included: no stage may judge a path
        the forge would route elsewhere, and its code must not be masked by one."""
        refused = Verdict.deny(PATH_NOT_CANONICAL, ctx.classification.note, operation=UNKNOWN)
        try:
            gates.record(ctx, refused)
        except Exception as exc:
            return self._refused("record", self._stage_failed("record", exc, ctx), ctx)
        return self._refused("path", refused, ctx)

    @staticmethod
    def _settled(ctx: Context, gates: Gates) -> Context:
        settled = gates.resolve(ctx)
        if settled is ctx.classification:
            return ctx
        return Context(ctx.request, ctx.adapter, settled, ctx.caller)

    def _run_stages(self, ctx: Context, stages: tuple[str, ...], gates: Gates) -> _Stages:
        """Stages in order up to the first refusal. A staged relay (``approval``) lets the
        later gates run, so a request one of them refuses is never staged for a human."""
        staged: Verdict | None = None
        staged_at = ""
        for stage in stages:
            try:
                if stage == "policy":
                    verdict: Verdict | None = self._policy_stage(ctx)
                elif stage == "change":
                    verdict = self._change_stage(ctx, gates)
                else:
                    verdict = getattr(gates, stage)(ctx)
            except Pending:
                raise  # the change stage needs the default branch: nothing was counted yet
            except Exception as exc:
                verdict = self._stage_failed(stage, exc, ctx)
            if verdict is None or verdict.outcome is Outcome.ALLOW:
                continue  # the common case, told apart before anything else is asked of it
            if stage == "change" and self.is_staged(verdict):
                if not ctx.caller.approved and staged is None:
                    staged, staged_at = verdict, stage  # a protected path: a human approves it once 5b-6 pass
                continue
            if stage == "policy" and self.is_staged(verdict):
                blocking = self._unstageable(ctx.classification, ctx.caller.grant)
                if blocking is None:
                    staged, staged_at = verdict, stage
                    continue
                verdict = blocking
            if verdict.outcome is not Outcome.ALLOW:
                return _Stages(verdict, stage, staged, staged_at)
        return _PASSED if staged is None else _Stages(staged=staged, staged_at=staged_at)

    def _policy_stage(self, ctx: Context) -> Verdict:
        return evaluate(ctx.classification, ctx.caller.grant, table=self.policy.table)

    def _change_stage(self, ctx: Context, gates: Gates) -> Verdict | None:
        """Stage 5b: what the write changes, judged by ``[branches]``, ``[paths]``, ``[size]``,
        ``[secrets]`` (:mod:`gitvow.change_rules`). The default branch is asked of the gates
        only when a ref update passes every listed branch rule."""
        change = ctx.classification.change
        if change is None:
            return None
        rules = self.policy.change_rules
        agent = ctx.caller.name
        operation = ctx.operations[0] if ctx.operations else UNKNOWN
        if change.read_alone and gates.knows_old_trees and rules.could_hide(change):
            # the first push on top of a clone: a path rule could name a deletion the new trees
            # alone do not show, so the parent's trees are asked of the forge
            exact = gates.exact_change(ctx)
            if exact is None or (exact.read_alone and rules.could_hide(exact)):
                return Verdict.deny(CHANGE_UNESTABLISHED, "the paths this push changes could not be established: "
                                    "the forge did not give the parent commit's trees", operation=operation)
            change = exact
        default: str | None = None
        if gates.knows_default_branch and rules.needs_default_branch(change, agent):
            default = gates.default_branch(ctx)
            if not default:
                return Verdict.deny(CHANGE_UNESTABLISHED, "the repository's default branch could not be read from "
                                    "the forge", operation=operation)
        return judge(change, rules, agent, default, operation=operation)

    def _unstageable(self, classification: Classification, grant: Grant) -> Verdict | None:
        """The first operation of a request that a human's approval would not cover (denied,
        or relayed elsewhere), or None when every refused operation is a staged relay.

        Judged with exactly the policy stage's inputs (:func:`gitvow.evaluator.operation_verdicts`):
        every repository of the request and whether they were established, so an approval
        never covers more than the policy stage would allow."""
        for verdict in operation_verdicts(classification, grant, table=self.policy.table):
            if not verdict.allowed and not self.is_staged(verdict):
                return verdict
        return None

    def _throttled(self, ctx: Context, gates: Gates) -> Decision | None:
        try:
            throttle = gates.budget(ctx)
        except Exception as exc:
            return self._refused("budget", self._stage_failed("budget", exc, ctx), ctx)
        if throttle is None:
            return None
        import time

        wait = max(1, throttle.retry_after)
        frees = time.strftime("%H:%M:%S", time.gmtime(time.time() + wait))
        verdict = Verdict.deny(throttle.code, throttle.why, operation=ctx.classification.operations[0],
                               instead=f"wait {wait}s: the window frees at {frees} UTC")
        return self._refused("budget", verdict, ctx, status=429, retry_after=wait)

    def _forward(self, ctx: Context, gates: Gates) -> Decision:
        try:
            token = gates.credential(ctx)
            headers = dict(ctx.adapter.credential_headers(ctx.request, token)) if token else _NO_HEADERS
        except Exception as exc:
            return self._refused("credentials", self._stage_failed("credentials", exc, ctx), ctx)
        return Decision(Action.FORWARD, "forward", ctx.adapter.name, ctx.classification, ALLOW, None, 0, headers)

    def _refused(
        self,
        stage: str,
        verdict: Verdict,
        ctx: Context,
        *,
        status: int = 403,
        retry_after: int | None = None,
        staged: bool = False,
        target: str | None = None,
    ) -> Decision:
        request = ctx.request
        where = f"{request.method} {request.path}" if target is None else target
        message = self.message(verdict, ctx.classification, ctx.adapter, where)
        headers = {denial.REASON_HEADER: verdict.code or INTERNAL_ERROR}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        action = Action.THROTTLE if status == 429 else Action.DENY
        return Decision(action, stage, ctx.adapter.name, ctx.classification, verdict, message, status, headers,
                        staged=staged)

    def _stage_failed(self, stage: str, exc: Exception, ctx: Context) -> Verdict:
        _log_error(
            "stage %r raised for %s %s (adapter %r): %s: %s",
            stage, ctx.request.method, ctx.request.path, ctx.adapter.name, type(exc).__name__, exc,
        )
        operation = ctx.operations[0] if ctx.operations else UNKNOWN
        return Verdict.deny(INTERNAL_ERROR, f"the {stage} stage failed ({type(exc).__name__})", operation=operation)

    def _classify(self, adapter: Adapter, request: Request) -> Classification:
        try:
            path = canonical_path(request.path, encoded_slash=adapter.encoded_slash)
        except PathRefused as exc:
            return Classification(
                operations=(UNKNOWN,),
                adapter=adapter.name,
                unknown_code=PATH_NOT_CANONICAL,
                mode_code=PATH_NOT_CANONICAL,
                note=f"{exc}: a front end would route it elsewhere than it reads",
            )
        if path != request.path:
            # The adapter reads the canonical spelling (``te%61m`` as ``team``); what is
            # forwarded stays as sent, which the forge decodes to the same thing.
            request = replace(request, path=path)
        try:
            result = adapter.classify(request)
        except Exception as exc:
            _log_error("adapter %r (plugin %r) raised while classifying: %s: %s", adapter.name,
                       self.plugins.adapter_plugin.get(adapter.name, adapter.name), type(exc).__name__, exc)
            return Classification(
                operations=(UNKNOWN,),
                adapter=adapter.name,
                unknown_code=INTERNAL_ERROR,
                note=f"adapter {adapter.name!r} failed to classify the request ({type(exc).__name__})",
            )
        if not result.adapter:
            result = replace(result, adapter=adapter.name)
        if self.policy.comment_commands:
            result = self._with_comment_commands(adapter, request, result)
        return result

    def _with_comment_commands(self, adapter: Adapter, request: Request, result: Classification) -> Classification:
        """``[comment_commands]``: the operations a comment's chat-ops commands perform, added."""
        from gitvow.comments import apply_commands, carries_text

        if not carries_text(result):
            return result
        try:
            bodies = adapter.comment_bodies(request, result)
        except Exception as exc:
            _log_error("adapter %r raised while reading comment bodies: %s: %s", adapter.name,
                       type(exc).__name__, exc)
            bodies = None
        return apply_commands(result, None if bodies is None else tuple(bodies), self.policy.comment_commands)


def _stages_for(caller: Caller, classification: Classification) -> tuple[str, ...]:
    if caller.approved:
        return _APPROVED_STAGES
    if not caller.internal:
        return _AGENT_STAGES
    # Internal callers skip the agent gates, not fail-closed classification.
    return _INTERNAL_UNKNOWN_STAGES if classification.is_unknown else _INTERNAL_STAGES
