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

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType

from gitvow import denial
from gitvow.adapter import Adapter, configure_adapters
from gitvow.adapters.mcp import endpoints
from gitvow.comments import apply_commands, carries_text
from gitvow.evaluator import Grant, evaluate, evaluate_operation
from gitvow.gates import NO_GATES, Caller, Context, Gates
from gitvow.hosts import HostRegistry
from gitvow.paths import PATH_NOT_CANONICAL, PathRefused, canonical_path
from gitvow.plugins import Plugins
from gitvow.policy.load import Policy
from gitvow.relay import RelayTemplate
from gitvow.request import Classification, Request
from gitvow.targets import Pending
from gitvow.verdict import ALLOW, Outcome, Verdict
from gitvow.vocabulary import UNKNOWN

log = logging.getLogger("gitvow.pipeline")

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
_AGENT_STAGES: tuple[str, ...] = ("run_state", "write_surface", "policy", "repo_filter", "body")
_APPROVED_STAGES: tuple[str, ...] = ("run_state", "write_surface", "repo_filter", "body")
_INTERNAL_STAGES: tuple[str, ...] = ("body",)
_INTERNAL_UNKNOWN_STAGES: tuple[str, ...] = ("policy", "body")


class Engine:
    """Installed plugins + a validated policy: hosts resolved, adapters configured."""

    def __init__(self, policy: Policy, plugins: Plugins) -> None:
        self.policy = policy
        self.plugins = plugins
        adapters = configure_adapters(plugins.adapters, policy.adapter_options, source=policy.source)
        mcp = endpoints(policy.mcp, adapters, source=policy.source)
        #: Every adapter by name, the MCP endpoints' (``mcp.NAME``) included.
        self.adapters: dict[str, Adapter] = {**adapters, **mcp}
        self.hosts = HostRegistry(adapters, policy.hosts, source=policy.source, mcp=tuple(mcp.values()))
        self.relays: dict[str, RelayTemplate] = {**plugins.relays, **policy.relays}

    # -- pieces the agent gate and `gitvow explain` reuse --------------------------------

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
            except Exception:
                log.exception("adapter %r raised in relay_hints", adapter.name)
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

    def decide_classified(
        self, request: Request, adapter: Adapter, classification: Classification, caller: Caller, gates: Gates = NO_GATES
    ) -> Decision:
        """Stages 2-8 for a request classified already.

        ``gitvow replay`` re-decides audit-log lines this way: they hold the operations and
        the repository the adapter found, not the body it found them in."""
        ctx = Context(request, adapter, classification, caller)
        if classification.unknown_code == PATH_NOT_CANONICAL:
            # Refused before every gate, internal callers included: no stage may judge a
            # path the forge would route elsewhere, and its code must not be masked by one.
            refused = Verdict.deny(PATH_NOT_CANONICAL, classification.note, operation=UNKNOWN)
            try:
                gates.record(ctx, refused)
            except Exception as exc:
                return self._refused("record", self._stage_failed("record", exc, ctx), ctx)
            return self._refused("path", refused, ctx)
        if classification.targets and not caller.internal:
            try:
                settled = gates.resolve(ctx)
            except Pending:
                raise
            except Exception as exc:
                return self._refused("resolve", self._stage_failed("resolve", exc, ctx), ctx)
            if settled is not classification:
                classification = settled
                ctx = Context(request, adapter, classification, caller)
        if caller.approved:
            stages = _APPROVED_STAGES
        elif not caller.internal:
            stages = _AGENT_STAGES
        elif classification.is_unknown:
            # Internal callers skip the agent gates, not fail-closed classification.
            stages = _INTERNAL_UNKNOWN_STAGES
        else:
            stages = _INTERNAL_STAGES

        refusal: Verdict | None = None
        refused_at = ""
        staged: Verdict | None = None
        for stage in stages:
            try:
                if stage == "policy":
                    verdict: Verdict | None = evaluate(classification, caller.grant, table=self.policy.table)
                else:
                    verdict = getattr(gates, stage)(ctx)
            except Exception as exc:
                verdict = self._stage_failed(stage, exc, ctx)
            if verdict is not None and stage == "policy" and self.is_staged(verdict):
                blocking = self._unstageable(classification, caller.grant)
                if blocking is None:
                    staged = verdict
                    continue  # the later gates still decide whether it may be staged at all
                verdict = blocking
            if verdict is not None and verdict.outcome is not Outcome.ALLOW:
                refusal, refused_at = verdict, stage
                break
        if refusal is None and staged is not None:
            refusal, refused_at = staged, "policy"
        try:
            gates.record(ctx, refusal or ALLOW)
        except Exception as exc:
            refusal, refused_at = self._stage_failed("record", exc, ctx), "record"
        if refusal is not None:
            return self._refused(refused_at, refusal, ctx, staged=refusal is staged)
        if not caller.internal:
            try:
                throttle = gates.budget(ctx)
            except Exception as exc:
                return self._refused("budget", self._stage_failed("budget", exc, ctx), ctx)
            if throttle is not None:
                wait = max(1, throttle.retry_after)
                frees = time.strftime("%H:%M:%S", time.gmtime(time.time() + wait))
                verdict = Verdict.deny(throttle.code, throttle.why, operation=classification.operations[0],
                                       instead=f"wait {wait}s: the window frees at {frees} UTC")
                return self._refused("budget", verdict, ctx, status=429, retry_after=wait)
        try:
            token = gates.credential(ctx)
            headers = dict(adapter.credential_headers(request, token)) if token else _NO_HEADERS
        except Exception as exc:
            return self._refused("credentials", self._stage_failed("credentials", exc, ctx), ctx)
        return Decision(Action.FORWARD, "forward", adapter.name, classification, ALLOW, None, 0, headers)

    def _refused(
        self,
        stage: str,
        verdict: Verdict,
        ctx: Context,
        *,
        status: int = 403,
        retry_after: int | None = None,
        staged: bool = False,
    ) -> Decision:
        request = ctx.request
        message = self.message(verdict, ctx.classification, ctx.adapter, f"{request.method} {request.path}")
        headers = {denial.REASON_HEADER: verdict.code or INTERNAL_ERROR}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        action = Action.THROTTLE if status == 429 else Action.DENY
        return Decision(action, stage, ctx.adapter.name, ctx.classification, verdict, message, status, headers,
                        staged=staged)

    def _unstageable(self, classification: Classification, grant: Grant) -> Verdict | None:
        """The first operation of a request that a human's approval would not cover (denied,
        or relayed elsewhere), or None when every refused operation is a staged relay."""
        for operation in classification.operations:
            verdict = evaluate_operation(
                operation, grant, repo=classification.repo, table=self.policy.table,
                mode_code=classification.mode_code, unknown_code=classification.unknown_code, note=classification.note,
            )
            if not verdict.allowed and not self.is_staged(verdict):
                return verdict
        return None

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
            result = _with_adapter(result, adapter.name)
        if self.policy.comment_commands and carries_text(result):
            try:
                bodies = adapter.comment_bodies(request, result)
            except Exception as exc:
                log.error("adapter %r raised while reading comment bodies: %s: %s", adapter.name,
                          type(exc).__name__, exc)
                bodies = None
            result = apply_commands(result, None if bodies is None else tuple(bodies), self.policy.comment_commands)
        return result


def _with_adapter(classification: Classification, name: str) -> Classification:
    return replace(classification, adapter=name)
