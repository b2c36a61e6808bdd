"""The pipeline's hook points for stages whose state lives outside the core.

The proxy subclasses :class:`Gates` with its run-state store, write-surface lanes, allowed
repositories, body scanners, counters, budget and credentials. Every method receives the
classified request, never a raw method and path, so each gate is written once for every
forge. The defaults pass, so ``gitvow explain`` evaluates policy alone.

A gate never does I/O. One that needs something from outside (the forge, the state store)
returns a generator instead of its answer: it yields a need (:mod:`gitvow.needs`), is sent
the answer by whoever drives the engine, and returns its answer at the end. A gate with
nothing to ask returns its answer directly, so the common request costs no generator.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitvow.evaluator import Grant
from gitvow.needs import Lookup
from gitvow.request import Classification, Request
from gitvow.verdict import Verdict

if TYPE_CHECKING:
    from gitvow.adapter import Adapter
    from gitvow.change import Change

#: A gate's answer, or a generator that yields needs and then returns it (:mod:`gitvow.needs`).
type Asked[T] = T | Generator[object, Any, T]


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


@dataclass(frozen=True, slots=True)
class Taken:
    """Budget units one allowed write took: the enforcement point gives them back when the
    forge did not perform the write (no answer, or a refusal)."""

    keys: tuple[str, ...]
    at: float
    amounts: tuple[int, ...]


#: What the budget stage answers: nothing to take, what was taken, a 429, or a refusal of an
#: earlier stage judged again on state the admission found changed.
Budgeted = Taken | Throttle | Verdict | None


class Gates:
    """Default hook points: every gate passes, nothing is counted, no credential is injected."""

    def resolve(self, ctx: Context) -> Asked[Classification]:
        """The classification with the targets settled that the gates need (see
        :mod:`gitvow.targets`), asking the forge with :class:`gitvow.needs.Lookup`. Called
        before stage 2 only for an agent's request that has targets, and only when the
        policy stage did not refuse it already. The default resolves nothing: targets stay
        unknown."""
        return ctx.classification

    def run_state(self, ctx: Context) -> Asked[Verdict | None]:
        """Repo paused → agent repo scope → auto-merge off (``repo_paused``, ``agent_repo_scope``, ``repo_auto_merge_disabled``)."""
        return None

    def write_surface(self, ctx: Context) -> Asked[Verdict | None]:
        """Write-surface lanes (``write_surface_enforce``); auth.login and git.fetch are exempt.
        An allowing verdict with a ``why`` is a note for the audit (a lane that only reports)."""
        return None

    def repo_filter(self, ctx: Context) -> Asked[Verdict | None]:
        """Allowed-repository filter (``repo_not_in_config``)."""
        return None

    #: Whether :meth:`default_branch` asks the forge. When it does, a default branch it cannot
    #: tell is refused (``change_unestablished``); when it does not (``gitvow explain``, the
    #: agent gate), the default-branch rule is left to the enforcement point that can.
    knows_default_branch: bool = False

    def default_branch(self, ctx: Context) -> Asked[str | None]:
        """The repository's default branch as the forge says, or None if it could not be read.
        Asked by the ``change`` stage only when a ref update passes every listed branch rule."""
        return None

    #: Whether :meth:`exact_change` asks the forge for the trees a push's diff lacks. When it
    #: does, a change it cannot make exact is refused where a path rule could be touched.
    knows_old_trees: bool = False

    def exact_change(self, ctx: Context) -> Asked[Change | None]:
        """The request's change diffed against the trees of ``change.old_commits`` as the forge
        holds them, or None if they could not be read. Asked by the ``change`` stage only when
        a path rule could name something deleted unseen
        (:meth:`gitvow.change_rules.ChangeRules.could_hide`)."""
        return None

    def body(self, ctx: Context) -> Asked[Verdict | None]:
        """Body gates: issue shape, then canary egress (``issue_shape``, ``canary_egress``)."""
        return None

    def budget(self, ctx: Context) -> Asked[Budgeted]:
        """Per-agent write budget of an allowed write; a :class:`Throttle` becomes a 429."""
        return None

    def record(self, ctx: Context, outcome: str) -> None:
        """The write counters: called once per classified request, with its final outcome
        (``allowed``, ``refused``, ``throttled``)."""

    def credential(self, ctx: Context) -> str | None:
        """The token to inject for this request's adapter, or None to forward without one."""
        return None

    def answer(self, need: object) -> object:
        """The answer to a need, for a caller that drives the engine synchronously
        (:meth:`gitvow.pipeline.Engine.decide`). The default knows nothing: a lookup finds no
        answer. A need the gates do not know raises, which the stage that asked judges as
        a failure (a deny)."""
        if isinstance(need, Lookup):
            return {}
        raise LookupError(f"no answer for {type(need).__name__}")


NO_GATES = Gates()

__all__ = ["NO_GATES", "Asked", "Budgeted", "Caller", "Context", "Gates", "Taken", "Throttle"]
