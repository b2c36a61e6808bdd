"""The pipeline (docs/architecture.md, "The pipeline"), in its order, as the one engine every enforcement point drives.

    0 host → adapter          no adapter: tunnel untouched
    1 canonical path          path_not_canonical (before any adapter reads the path)
      classify                unreadable: ``unknown``; [comment_commands] add what a
                              comment's chat-ops commands mean
      internal caller         skips 2-5
      resolve targets         only when a gate needs them, and only once the policy stage
                              could not refuse the request whatever they name
    2 run-state gates         repo_paused / agent_repo_scope / repo_auto_merge_disabled
    3 write surface           write_surface_enforce
    4 policy                  relay → hard_deny; mode_denied / graphql_* / linear_policy
                              (a staged relay, the built-in ``approval``, runs 5-6 too: a
                              request a later gate refuses is never staged for a human)
    5 allowed-repo filter     repo_not_in_config
    5b change                 change_unestablished (first: a write of git.push, ref.*,
                              contents.write that carries no change, on any adapter) /
                              branch_not_allowed / branch_protected / change_too_large /
                              secret_detected / path_protected (refuse, or staged for
                              approval like a staged relay)
    6 body gates              issue_shape / canary_egress
      the first deny above → one-line 403
    7 write budget            429 with Retry-After
      write counters          once, with the final outcome
    8 credential injection    adapter-owned headers
      forward

The engine is sans-IO (:mod:`gitvow.needs`): :meth:`Engine.judge` is a generator that yields
what a gate needs from outside (the forge, the state store), is sent the answer, and returns
one immutable :class:`Decision` carrying everything the enforcement point and its audit use
(the verdict, the message, the headers, the note, the budget taken). :func:`drive` runs it to
the end with a function that answers; :meth:`Engine.decide` does so with the gates' own
answers. Nothing is kept between decisions, nothing is decided twice.

The order is a contract: reason codes make it observable. A request with targets the forge
must name is first put to the policy stage under every operation those targets could make:
when every one is refused (and no per-repository autonomy could change that), the forge is
never asked and the refusal is the policy stage's. Anything that raises inside a stage or an
adapter is a deny (``internal_error``) naming the stage or plugin — never a crash, never a
forward.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import GeneratorType, MappingProxyType
from typing import Any, Protocol, cast

from gitvow import denial
from gitvow.adapter import Adapter, configure_adapters
from gitvow.adapters.mcp import endpoints
from gitvow.change import READ_ELSEWHERE, Change, needs_change
from gitvow.change_rules import CHANGE_UNESTABLISHED, judge
from gitvow.comments import apply_commands, carries_text
from gitvow.evaluator import Grant, evaluate, operation_verdicts
from gitvow.gates import NO_GATES, Caller, Context, Gates, Taken, Throttle
from gitvow.hosts import HostRegistry
from gitvow.memo import Memo
from gitvow.needs import Step
from gitvow.paths import PATH_NOT_CANONICAL, PathRefused, canonical_path
from gitvow.policy.compile import CompiledPolicy
from gitvow.relay import RelayTemplate
from gitvow.request import Classification, Request, ToolCall
from gitvow.verdict import ALLOW, Outcome, Verdict
from gitvow.vocabulary import UNKNOWN

log = logging.getLogger("gitvow.pipeline")

INTERNAL_ERROR = "internal_error"


class Installed(Protocol):
    """What the engine needs of discovery (:class:`gitvow.plugins.Plugins` is one; the
    agent gate's plugin index builds another with only the adapters a call needs)."""

    @property
    def adapters(self) -> Mapping[str, Adapter]: ...

    @property
    def relays(self) -> Mapping[str, RelayTemplate]: ...

    @property
    def adapter_plugin(self) -> Mapping[str, str]: ...


class Action(Enum):
    """What the enforcement point does with the request."""

    FORWARD = "forward"
    DENY = "deny"
    THROTTLE = "throttle"
    TUNNEL = "tunnel"


@dataclass(frozen=True, slots=True)
class Decision:
    """The pipeline's answer: everything the enforcement point applies and its audit records.

    ``headers`` are to be set on the forwarded request (credentials) or on the refusal
    (``X-Gitvow-Reason``, ``Retry-After``)."""

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
    #: What a gate saw and let pass for the audit (a write-surface lane that only reports).
    note: str | None = None
    #: The write budget this decision took: given back if the write is not performed.
    taken: Taken | None = None

    @property
    def reason(self) -> str | None:
        return self.verdict.code if self.verdict is not None and not self.verdict.allowed else None


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
_TUNNEL = Decision(Action.TUNNEL, stage="host")
_AGENT_STAGES: tuple[str, ...] = ("run_state", "write_surface", "policy", "repo_filter", "change", "body")
_APPROVED_STAGES: tuple[str, ...] = ("run_state", "write_surface", "repo_filter", "change", "body")
_INTERNAL_STAGES: tuple[str, ...] = ("body",)
_INTERNAL_UNKNOWN_STAGES: tuple[str, ...] = ("policy", "body")

#: The request of a tool call's context: the agent gate has no HTTP request, and its stages
#: (no run-state, no bodies) read none; the denial line names the call instead.
_NO_REQUEST = Request(method="", host="", path="")


def drive(judging: Generator[object, Any, Decision], answer: Callable[[object], object]) -> Decision:
    """Run a decision to its end, answering each need it yields with ``answer(need)``.

    What ``answer`` raises is thrown into the stage that asked, which judges it as a failure
    (a deny, never a forward)."""
    reply: object = None
    failure: Exception | None = None
    while True:
        try:
            need = judging.send(reply) if failure is None else judging.throw(failure)
        except StopIteration as done:
            decision: Decision = done.value
            return decision
        try:
            reply, failure = answer(need), None
        except Exception as exc:
            reply, failure = None, exc


@dataclass(frozen=True, slots=True)
class _Stages:
    """What the stage loop found: the first refusal and where, a staged relay that stood, the notes."""

    refusal: Verdict | None = None
    stage: str = ""
    staged: Verdict | None = None
    #: The stage that staged it: ``policy`` (a relay to ``approval``) or ``change`` (a protected path).
    staged_at: str = ""
    note: str | None = None


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

    It judges a request (the proxy, ``gitvow explain``, replay: :meth:`judge`, or
    :meth:`decide` to run it with the gates' own answers) and a tool call an adapter
    classified (the agent gate: :meth:`decide_call`) with one stage loop. It holds nothing
    that a decision changes, imports neither pydantic nor pluggy: loading and discovery
    produce its inputs (``core/tests/test_kernel_boundary.py`` holds it to that)."""

    def __init__(self, policy: CompiledPolicy, plugins: Installed, *, memo: bool | None = None) -> None:
        self.policy = policy
        self.plugins = plugins
        #: The one cache of this policy load (:mod:`gitvow.memo`): the enforcement point's to
        #: use; the engine itself keeps nothing between decisions. ``memo``: on, off, or as
        #: ``GITVOW_MEMO`` says.
        self.memo = Memo(enabled=memo)
        adapters = configure_adapters(plugins.adapters, policy.adapter_options, source=policy.source)
        mcp = endpoints(policy.mcp, adapters, source=policy.source)
        #: Every adapter by name, the MCP endpoints' (``mcp.NAME``) included.
        self.adapters: dict[str, Adapter] = {**adapters, **mcp}
        self.hosts = HostRegistry(adapters, policy.hosts, source=policy.source, mcp=tuple(mcp.values()))
        self.relays: dict[str, RelayTemplate] = {**plugins.relays, **policy.relays}

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
                log.error("adapter %r raised in relay_hints: %s: %s", adapter.name, type(exc).__name__, exc)
        return denial.render(verdict, target=target, repo=classification.repo, relays=self.relays, hints=hints,
                             approval=approval)

    def is_staged(self, verdict: Verdict) -> bool:
        """Whether ``verdict`` is a relay to a staged template (the built-in ``approval``)."""
        if verdict.outcome is not Outcome.RELAY or verdict.relay is None:
            return False
        template = self.relays.get(verdict.relay)
        return template is not None and template.staged

    # -- the pipeline -------------------------------------------------------------------

    def judge(self, request: Request, caller: Caller, gates: Gates = NO_GATES) -> Step[Decision]:
        """Every stage in order: yields the needs of the gates (:mod:`gitvow.needs`) and
        returns what to do with ``request``."""
        adapter = self.hosts.route(request)
        if adapter is None:
            return _TUNNEL
        return (yield from self.judge_classified(request, adapter, self._classify(adapter, request), caller, gates))

    def decide(self, request: Request, caller: Caller, gates: Gates = NO_GATES) -> Decision:
        """:meth:`judge`, its needs answered by ``gates`` (:meth:`Gates.answer`)."""
        return drive(self.judge(request, caller, gates), gates.answer)

    def decide_classified(
        self, request: Request, adapter: Adapter, classification: Classification, caller: Caller, gates: Gates = NO_GATES
    ) -> Decision:
        """:meth:`judge_classified`, its needs answered by ``gates``.

        ``gitvow replay`` re-decides audit-log lines this way: they hold the operations and
        the repository the adapter found, not the body it found them in."""
        return drive(self.judge_classified(request, adapter, classification, caller, gates), gates.answer)

    def decide_call(self, call: ToolCall, adapter: Adapter, caller: Caller, *, target: str = "",
                    partial: bool = False) -> Decision:
        """The verdict on a tool call ``adapter`` classified (``gh pr merge 3``, a forge MCP
        tool): the stages a tool call has — policy, with the staged-relay rule — through the
        same loop as a request, so the gate and the proxy cannot disagree. A staged refusal
        comes back with ``staged`` set: the gate lets it go on to the proxy, which stages it.

        ``partial``: the call does not carry the whole request (a shell command whose body is
        in a file, ``gh pr create`` on the current branch): a write of
        :data:`~gitvow.change.CHANGING_OPERATIONS` without a change is then the proxy's to read,
        as everything else the command line cannot show, instead of refused. An MCP tool call's
        arguments are the whole request: such a call without a change is refused here exactly
        as the proxy refuses the request (``change_unestablished``)."""
        change = call.change
        if change is None and partial and needs_change(call.operations) is not None:
            change = READ_ELSEWHERE
        classification = Classification(operations=call.operations, repo=call.repo, repos=call.repos,
                                        adapter=call.adapter or adapter.name, unknown_code=call.unknown_code,
                                        mode_code=call.mode_code, note=call.note, targets=call.targets,
                                        change=change)
        ctx = Context(_NO_REQUEST, adapter, classification, caller)
        found = drive(self._stages_decision(ctx, _AGENT_STAGES, target or call.summary), NO_GATES.answer)
        return found

    def _stages_decision(self, ctx: Context, stages: tuple[str, ...], target: str) -> Step[Decision]:
        found = yield from self._run_stages(ctx, stages, NO_GATES)
        refusal = found.refusal or found.staged
        if refusal is None:
            return Decision(Action.FORWARD, "policy", ctx.adapter.name, ctx.classification, ALLOW)
        return self._refused(found.stage or found.staged_at, refusal, ctx, target=target,
                             staged=refusal is found.staged)

    def judge_classified(
        self, request: Request, adapter: Adapter, classification: Classification, caller: Caller, gates: Gates = NO_GATES
    ) -> Step[Decision]:
        """Stages 2-8 for a request classified already."""
        ctx = Context(request, adapter, classification, caller)
        if classification.unknown_code == PATH_NOT_CANONICAL:
            refused = Verdict.deny(PATH_NOT_CANONICAL, classification.note, operation=UNKNOWN)
            return self._finish(ctx, gates, _Stages(refused, "path"))
        if classification.targets and not caller.internal:
            early = self._refused_whatever_the_targets(ctx)
            if early is not None:  # the forge is not asked about a request the policy refuses anyway
                return self._finish(ctx, gates, _Stages(early, "policy"))
            try:
                asked = gates.resolve(ctx)
                settled = cast(Classification, (yield from asked) if isinstance(asked, GeneratorType) else asked)
            except Exception as exc:
                return self._finish(ctx, gates, _Stages(self._stage_failed("resolve", exc, ctx), "resolve"))
            if settled is not classification:
                ctx = Context(request, adapter, settled, caller)
        found = yield from self._run_stages(ctx, _stages_for(caller, ctx.classification), gates)
        if found.refusal is not None or found.staged is not None or caller.internal:
            return self._finish(ctx, gates, found)
        try:
            budgeted = gates.budget(ctx)
            if isinstance(budgeted, GeneratorType):
                budgeted = yield from budgeted
        except Exception as exc:
            budgeted = self._stage_failed("budget", exc, ctx)
        return self._finish(ctx, gates, found, budgeted)

    # -- the stages ---------------------------------------------------------------------

    def _refused_whatever_the_targets(self, ctx: Context) -> Verdict | None:
        """The policy stage's refusal when it refuses the request under every operation its
        targets could make, whatever repository they name (no per-repository autonomy), else
        None. A relay is not such a refusal: a staged request must pass the later gates."""
        caller, classification = ctx.caller, ctx.classification
        if caller.approved or caller.grant.autonomy:
            return None
        table = self.policy.table
        first = evaluate(classification, caller.grant, table=table)
        if first.outcome is not Outcome.DENY:
            return None
        for target in classification.targets:
            for _, operations in target.by_type:
                other = evaluate(replace(classification, operations=operations), caller.grant, table=table)
                if other.outcome is not Outcome.DENY:
                    return None
        return first

    def _run_stages(self, ctx: Context, stages: tuple[str, ...], gates: Gates) -> Step[_Stages]:
        """Stages in order up to the first refusal. A staged relay (``approval``) lets the
        later gates run, so a request one of them refuses is never staged for a human."""
        staged: Verdict | None = None
        staged_at = ""
        note: str | None = None
        for stage in stages:
            try:
                if stage == "policy":
                    verdict: Any = evaluate(ctx.classification, ctx.caller.grant, table=self.policy.table)
                elif stage == "change":
                    if ctx.classification.change is None:  # the common case: no generator for it
                        verdict = _without_change(ctx)
                    else:
                        verdict = yield from self._change_stage(ctx, gates)
                else:
                    verdict = getattr(gates, stage)(ctx)
                    if isinstance(verdict, GeneratorType):
                        verdict = yield from verdict
            except Exception as exc:
                verdict = self._stage_failed(stage, exc, ctx)
            if verdict is None:
                continue
            if verdict.outcome is Outcome.ALLOW:
                if verdict.why:  # a gate that saw something and let it pass: a note for the audit
                    note = verdict.why if note is None else f"{note}; {verdict.why}"
                continue
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
            return _Stages(verdict, stage, staged, staged_at, note)
        if staged is None and note is None:
            return _PASSED
        return _Stages(staged=staged, staged_at=staged_at, note=note)

    def _change_stage(self, ctx: Context, gates: Gates) -> Step[Verdict | None]:
        """Stage 5b: what the write changes, judged by ``[branches]``, ``[paths]``, ``[size]``,
        ``[secrets]`` (:mod:`gitvow.change_rules`). The default branch is asked of the gates
        only when a ref update passes every listed branch rule."""
        change = ctx.classification.change
        if change is None:
            return _without_change(ctx)
        if change is READ_ELSEWHERE:
            return None
        rules = self.policy.change_rules
        agent = ctx.caller.name
        operation = ctx.operations[0] if ctx.operations else UNKNOWN
        if change.read_alone and gates.knows_old_trees and rules.could_hide(change):
            # the first push on top of a clone: a path rule could name a deletion the new trees
            # alone do not show, so the parent's trees are asked of the forge
            asked = gates.exact_change(ctx)
            exact = cast(Change | None, (yield from asked) if isinstance(asked, GeneratorType) else asked)
            if exact is None or (exact.read_alone and rules.could_hide(exact)):
                return Verdict.deny(CHANGE_UNESTABLISHED, "the paths this push changes could not be established: "
                                    "the forge did not give the parent commit's trees", operation=operation)
            change = exact
        default: str | None = None
        if gates.knows_default_branch and rules.needs_default_branch(change, agent):
            branch = gates.default_branch(ctx)
            default = cast(str | None, (yield from branch) if isinstance(branch, GeneratorType) else branch)
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

    def _finish(self, ctx: Context, gates: Gates, found: _Stages, budgeted: object = None) -> Decision:
        """The decision: the refusal found (or the budget's answer), counted once with its outcome."""
        refusal, stage, staged = found.refusal, found.stage, False
        if refusal is None and found.staged is not None:
            refusal, stage, staged = found.staged, found.staged_at, True
        taken = budgeted if isinstance(budgeted, Taken) else None
        throttle = budgeted if isinstance(budgeted, Throttle) else None
        if refusal is None and isinstance(budgeted, Verdict) and not budgeted.allowed:
            # refused by the budget stage itself, or by the run-state gate judged again on the
            # flags the admission found changed (nothing was taken)
            refusal, stage = budgeted, "budget" if budgeted.code == INTERNAL_ERROR else "run_state"
        outcome = "refused" if refusal is not None else "throttled" if throttle is not None else "allowed"
        try:
            gates.record(ctx, outcome)
        except Exception as exc:
            refusal, stage, staged, throttle = self._stage_failed("record", exc, ctx), "record", False, None
        if refusal is not None:
            return self._refused(stage, refusal, ctx, staged=staged, note=found.note, taken=taken)
        if throttle is not None:
            return self._throttled(throttle, ctx, found.note)
        try:
            token = gates.credential(ctx)
            headers = dict(ctx.adapter.credential_headers(ctx.request, token)) if token else _NO_HEADERS
        except Exception as exc:
            return self._refused("credentials", self._stage_failed("credentials", exc, ctx), ctx, note=found.note,
                                 taken=taken)
        return Decision(Action.FORWARD, "forward", ctx.adapter.name, ctx.classification, ALLOW, None, 0, headers,
                        note=found.note, taken=taken)

    def _throttled(self, throttle: Throttle, ctx: Context, note: str | None) -> Decision:
        wait = max(1, throttle.retry_after)
        frees = time.strftime("%H:%M:%S", time.gmtime(time.time() + wait))
        verdict = Verdict.deny(throttle.code, throttle.why, operation=ctx.classification.operations[0],
                               instead=f"wait {wait}s: the window frees at {frees} UTC")
        return self._refused("budget", verdict, ctx, status=429, retry_after=wait, note=note)

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
        note: str | None = None,
        taken: Taken | None = None,
    ) -> Decision:
        request = ctx.request
        where = f"{request.method} {request.path}" if target is None else target
        message = self.message(verdict, ctx.classification, ctx.adapter, where)
        headers = {denial.REASON_HEADER: verdict.code or INTERNAL_ERROR}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        action = Action.THROTTLE if status == 429 else Action.DENY
        return Decision(action, stage, ctx.adapter.name, ctx.classification, verdict, message, status, headers,
                        staged=staged, note=note, taken=taken)

    def _stage_failed(self, stage: str, exc: Exception, ctx: Context) -> Verdict:
        log.error(
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
            log.error("adapter %r (plugin %r) raised while classifying: %s: %s", adapter.name,
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
        if not carries_text(result):
            return result
        try:
            bodies = adapter.comment_bodies(request, result)
        except Exception as exc:
            log.error("adapter %r raised while reading comment bodies: %s: %s", adapter.name,
                      type(exc).__name__, exc)
            bodies = None
        return apply_commands(result, None if bodies is None else tuple(bodies), self.policy.comment_commands)


def _without_change(ctx: Context) -> Verdict | None:
    """The invariant: a request of an operation that moves a ref or changes content
    (:data:`~gitvow.change.CHANGING_OPERATIONS`) whose adapter gave no :class:`Change` is
    refused, whatever the transport or adapter, before any change rule could pass it unread."""
    operation = needs_change(ctx.operations)
    if operation is None:
        return None
    return Verdict.deny(CHANGE_UNESTABLISHED, f"{operation} moves a ref or changes content, but adapter "
                        f"{ctx.adapter.name!r} established no change for it (the refs it moves and the paths "
                        "it writes are missing)", operation=operation,
                        instead="use a route or tool whose change gitvow reads")


def _stages_for(caller: Caller, classification: Classification) -> tuple[str, ...]:
    if caller.approved:
        return _APPROVED_STAGES
    if not caller.internal:
        return _AGENT_STAGES
    # Internal callers skip the agent gates, not fail-closed classification.
    return _INTERNAL_UNKNOWN_STAGES if classification.is_unknown else _INTERNAL_STAGES


__all__ = ["INTERNAL_ERROR", "Action", "AdapterSet", "Decision", "Engine", "Installed", "drive"]
