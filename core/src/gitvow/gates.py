"""The pipeline's hook points for stages whose state lives outside the core.

The proxy subclasses :class:`Gates` with its run-state store, write-surface lanes, allowed
repositories, body scanners, counters, budget and credentials. Every method receives the
classified request, never a raw method and path, so each gate is written once for every
forge. The defaults pass, so ``gitvow explain`` evaluates policy alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gitvow.evaluator import Grant
from gitvow.request import Classification, Request
from gitvow.verdict import Verdict

if TYPE_CHECKING:
    from collections.abc import Hashable

    from gitvow.adapter import Adapter
    from gitvow.change import Change


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent the request. ``internal`` callers (the control plane) skip the agent gates.

    ``approved``: a human approved this exact request (the approval relay), so the policy
    stage is satisfied; every other gate (run-state, write surface, repositories, bodies,
    budget) still applies when the proxy sends it."""

    name: str | None = None
    grant: Grant = field(default_factory=Grant)
    internal: bool = False
    approved: bool = False


@dataclass(frozen=True, slots=True)
class Context:
    """What every stage sees: the request, its adapter and classification, and the caller."""

    request: Request
    adapter: Adapter
    classification: Classification
    caller: Caller

    @property
    def repo(self) -> str | None:
        return self.classification.repo

    @property
    def operations(self) -> tuple[str, ...]:
        return self.classification.operations


@dataclass(frozen=True, slots=True)
class Throttle:
    """A write-budget refusal: answered 429 with ``Retry-After``."""

    retry_after: int
    why: str
    code: str = "write_budget"


class Gates:
    """Default hook points: every gate passes, nothing is counted, no credential is injected."""

    def resolve(self, ctx: Context) -> Classification:
        """The classification with the targets settled that the gates need (see
        :mod:`gitvow.targets`). Called before stage 2 only for an agent's request that has
        targets. May raise :class:`gitvow.targets.Pending` for the enforcement point to
        resolve them and decide again. The default resolves nothing: targets stay unknown."""
        return ctx.classification

    #: Gate stages whose verdict is a function of the policy these gates hold and of
    #: :meth:`steady_key` alone (no store, no clock, no body): the engine remembers that they
    #: passed (with the policy stage) and skips them for the next request with the same key.
    steady_stages: frozenset[str] = frozenset()

    def steady_key(self, ctx: Context) -> Hashable | None:
        """What :attr:`steady_stages` read of ``ctx`` besides what the engine's key holds
        already (the caller's name and grant, the operations and the repositories of the
        classification; only a pass is remembered, and no reason code or note decides one), or
        None when their verdicts for this request must be worked out afresh (a stage would
        leave a note, for one). The default: always afresh."""
        return None

    def run_state(self, ctx: Context) -> Verdict | None:
        """Repo paused → agent repo scope → auto-merge off (``repo_paused``, ``agent_repo_scope``, ``repo_auto_merge_disabled``)."""
        return None

    def write_surface(self, ctx: Context) -> Verdict | None:
        """Write-surface lanes (``write_surface_enforce``); auth.login and git.fetch are exempt."""
        return None

    def repo_filter(self, ctx: Context) -> Verdict | None:
        """Allowed-repository filter (``repo_not_in_config``)."""
        return None

    #: Whether :meth:`default_branch` asks the forge. When it does, a default branch it cannot
    #: tell is refused (``change_unestablished``); when it does not (``gitvow explain``, the
    #: agent gate), the default-branch rule is left to the enforcement point that can.
    knows_default_branch: bool = False

    def default_branch(self, ctx: Context) -> str | None:
        """The repository's default branch as the forge says, or None if it could not be read.
        Asked by the ``change`` stage only when a ref update passes every listed branch rule.
        May raise :class:`gitvow.targets.Pending` for the enforcement point to ask the forge."""
        return None

    #: Whether :meth:`exact_change` asks the forge for the trees a push's diff lacks. When it
    #: does, a change it cannot make exact is refused where a path rule could be touched.
    knows_old_trees: bool = False

    def exact_change(self, ctx: Context) -> Change | None:
        """The request's change diffed against the trees of ``change.old_commits`` as the forge
        holds them, or None if they could not be read. Asked by the ``change`` stage only when
        a path rule could name something deleted unseen
        (:meth:`gitvow.change_rules.ChangeRules.could_hide`). May raise
        :class:`gitvow.targets.Pending` for the enforcement point to ask the forge."""
        return None

    def body(self, ctx: Context) -> Verdict | None:
        """Body gates: issue shape, then canary egress (``issue_shape``, ``canary_egress``)."""
        return None

    def record(self, ctx: Context, verdict: Verdict) -> None:
        """Write counters, called once per classified request after the 403 stages."""

    def budget(self, ctx: Context) -> Throttle | None:
        """Per-agent write budget; a :class:`Throttle` becomes a 429."""
        return None

    def credential(self, ctx: Context) -> str | None:
        """The token to inject for this request's adapter, or None to forward without one."""
        return None


NO_GATES = Gates()

__all__ = ["NO_GATES", "Caller", "Context", "Gates", "Throttle"]
