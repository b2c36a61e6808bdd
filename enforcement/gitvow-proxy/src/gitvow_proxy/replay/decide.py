"""Re-deciding recorded requests with the proxy's own engine and gates, off the live state.

A :class:`Replayer` is one policy file loaded the way the proxy loads it (``Engine`` and
``ProxyGates``) over a :class:`ReplayStore`, a memory store the live proxy never sees. It
reads no secret: identity comes from the recording, and no credential is injected.

Stages that need live state:

- ``budget``: replayed from the recording's time. Requests are decided in time order with
  the gates' clock set to each request's time, so the windows fill as they did, starting
  empty at the first recorded request.
- run-time flags (a repository paused or its auto-merge switched off at run time): an audit
  log's pause and resume lines are replayed at their time (:meth:`Replayer.act`); otherwise
  skipped, as they live in the proxy's store, not in the recording. The policy file's
  ``[run_state]`` applies.
- ``body`` for audit-log lines: not re-run; the log holds no bodies. A line refused at the
  body stage keeps that refusal there (the body has not changed, only the policy); the
  others pass it. Operations and repository come from the line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from gitvow.adapter import Adapter
from gitvow.change import READ_ELSEWHERE, needs_change
from gitvow.evaluator import Grant
from gitvow.gates import Caller, Context
from gitvow.pipeline import Action, Decision, Engine
from gitvow.plugins import Plugins, installed
from gitvow.policy.load import Policy, load_policy
from gitvow.request import Classification
from gitvow.verdict import Verdict
from gitvow_proxy.canary import CanaryScanner
from gitvow_proxy.gates import ProxyGates
from gitvow_proxy.record import canary_placeholder, token_placeholder
from gitvow_proxy.refusals import HOST_NOT_SERVED
from gitvow_proxy.replay.inputs import Outcome, Recorded
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.store import PAUSED, MemoryStore

_VERDICTS = {Action.FORWARD: "allow", Action.DENY: "deny", Action.THROTTLE: "throttle", Action.TUNNEL: "tunnel"}
PROXY_AUTH = "proxy_auth"


class ReplayStore(MemoryStore):
    """A memory store whose canary for an agent is the placeholder a recording holds instead."""

    def canary(self, agent: str) -> str:
        return canary_placeholder(agent)

    def canaries(self) -> dict[str, str]:
        return {}


class _Clock:
    """The recorded time of the request being decided, for the budget windows."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ReplayGates(ProxyGates):
    """The proxy's gates, with the literal canaries' placeholders also refused; with
    ``skip_body`` (no body to look at) the body stage answers what was recorded there.

    Offline, the forge's default branch is not known (replay asks the forge nothing): a push
    is judged by the listed branch rules only, as a proxy whose gates cannot read it would.
    Nor are a first push's parent trees: its paths are read from the pushed trees alone."""

    knows_default_branch = False
    knows_old_trees = False

    def __init__(self, policy: Policy, store: ReplayStore, clock: Callable[[], float], *, skip_body: bool = False) -> None:
        agents = list(policy.model.agents)
        super().__init__(policy, store, credentials={}, canaries={store.canary(a): a for a in agents}, clock=clock)
        settings = self.settings
        if settings.canary.enabled or settings.canary.tokens:
            tokens = {store.canary(a): a for a in agents} if settings.canary.enabled else {}
            for token in settings.canary.tokens:
                tokens.setdefault(token, "(policy)")
                tokens.setdefault(token_placeholder(token), "(policy)")
            self.scanner = CanaryScanner(tokens, limit=settings.canary.scan_limit)
        self.skip_body = skip_body
        #: The body stage's recorded refusal of the line being decided (replay is sequential).
        self.recorded_body: Verdict | None = None
        #: The operations the recording found for the line being decided, when it says.
        self.recorded_operations: tuple[str, ...] = ()

    def body(self, ctx: Context) -> Verdict | None:
        return self.recorded_body if self.skip_body else super().body(ctx)

    def resolve(self, ctx: Context) -> Classification:
        """Offline there is no forge to ask. What the recording says settles a route whose
        operation depends on the object (``PATCH …/issues/7`` recorded as ``pr.edit`` was a
        pull request); objects named by opaque ids stay unresolved, so a write on them under a
        repository gate replays as ``repo_unresolved`` (fail closed)."""
        classification = ctx.classification
        recorded = set(self.recorded_operations)
        if not recorded:
            return classification
        operations, left = classification.operations, []
        for target in classification.targets:
            answer = next((ops for _type, ops in target.by_type if set(ops) == recorded), None)
            if answer is not None:
                operations = answer
            elif not (target.by_type and set(classification.operations) == recorded):
                left.append(target)
        return replace(classification, operations=operations, targets=tuple(left))


class Replayer:
    """One policy, re-deciding recorded requests in the order they are given."""

    def __init__(self, path: str | Path, plugins: Plugins | None = None) -> None:
        plugins = plugins if plugins is not None else installed()
        self.path = str(path)
        self.policy = policy = load_policy(path, relays=plugins.relays, sections=plugins.sections, absent="skip")
        self.engine = Engine(policy, plugins)
        settings = policy.section(ProxyPolicy)
        self.internal = settings.internal.name if settings.internal is not None else None
        self.refuse_other_hosts = settings.proxy.other_hosts == "refuse"
        self.clock = _Clock()
        store = ReplayStore()
        self.gates = ReplayGates(policy, store, self.clock)
        self.headless = ReplayGates(policy, store, self.clock, skip_body=True)
        self.grants: Mapping[str, Grant] = {
            name: grant for name in policy.model.agents if (grant := policy.grant_for(name)) is not None
        }

    def _caller(self, agent: str | None) -> Caller | None:
        if agent is None:
            return None
        if agent == self.internal:
            return Caller(agent, internal=True)
        grant = self.grants.get(agent)
        return None if grant is None else Caller(agent, grant)

    def act(self, repo: str, paused: bool) -> None:
        """An operator's pause or resume, as the audit log holds it, from now on."""
        self.gates.store.set_flag(PAUSED, repo, paused)

    def decide(self, item: Recorded) -> Outcome:
        """What this policy decides for ``item``, as an audit line would say it."""
        self.clock.now = item.time
        operations = item.recorded.operations if item.recorded is not None else ()
        self.gates.recorded_operations = self.headless.recorded_operations = operations
        request = item.request
        caller = self._caller(item.agent)
        if caller is None:  # unauthenticated, or an agent this policy does not name: a 407
            return Outcome("refuse", PROXY_AUTH, "identity")
        adapter = self.engine.hosts.route(request)
        if adapter is None or request.method == "CONNECT":
            if adapter is None and self.refuse_other_hosts:
                return Outcome("deny", HOST_NOT_SERVED, "host")
            return Outcome("tunnel" if adapter is None else "allow", None, "host")
        if item.classified is not None:
            recorded = item.recorded
            self.headless.recorded_body = (
                Verdict.deny(recorded.reason, "refused at the body stage when recorded",
                             operation=item.classified[0][0])
                if recorded is not None and recorded.stage == "body" and recorded.reason else None
            )
            decision = self.engine.decide_classified(
                request, adapter, _classification(adapter, item), caller, self.headless
            )
        else:
            decision = self.engine.decide(request, caller, self.gates)
        return _outcome(decision)


def _classification(adapter: Adapter, item: Recorded) -> Classification:
    """An audit line's operations and repository; its reason code stands in for the adapter's
    codes for unreadable requests when the line was refused by policy."""
    if item.classified is None:
        raise RuntimeError("internal error: item.classified unset")
    operations, repo = item.classified
    recorded = item.recorded
    code = "mode_denied"
    if recorded is not None and recorded.stage == "policy" and recorded.reason not in (None, "hard_deny"):
        code = recorded.reason or code
    # The line holds no body: a write's change was judged when it was recorded, not here
    # (the report's limits say so), so the invariant's refusal of a change-less write is not replayed.
    change = READ_ELSEWHERE if needs_change(operations) is not None else None
    return Classification(operations=operations, repo=repo, adapter=adapter.name, unknown_code=code, mode_code=code,
                          change=change)


def _outcome(decision: Decision) -> Outcome:
    classification = decision.classification
    return Outcome(
        _VERDICTS[decision.action],
        decision.reason,
        decision.stage,
        classification.operations if classification is not None else (),
        classification.repo if classification is not None else None,
        held=decision.staged,
    )
