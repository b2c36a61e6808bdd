"""The evaluator: classified operations + the agent's grant + the policy table → one verdict.

Pure and small on purpose: the proxy and the agent hook both call it, so a ``gh pr merge``
in a shell and the ``PUT …/merge`` it sends get the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gitvow.modes import Mode
from gitvow.policy.table import DEFAULT_TABLE, PolicyTable
from gitvow.repos import is_pattern, matches
from gitvow.request import Classification
from gitvow.verdict import ALLOW, Outcome, Verdict, strictest
from gitvow.vocabulary import UNKNOWN, writes

HARD_DENY = "hard_deny"
MODE_DENIED = "mode_denied"
#: A gate that depends on the repository could not establish it (opaque id not resolved).
REPO_UNRESOLVED = "repo_unresolved"
#: Operations refused with a code of their own rather than the request's mode code, so a
#: force push or a deletion says what it was in ``X-Gitvow-Reason``.
OWN_CODES = {"ref.force": "ref_force", "ref.delete": "ref_delete"}


@dataclass(frozen=True, slots=True)
class Grant:
    """What one agent may do: a mode, capabilities, and per-repository mode overrides (autonomy)."""

    mode: Mode = Mode.ADVISORY
    capabilities: frozenset[str] = frozenset()
    autonomy: Mapping[str, Mode] = field(default_factory=lambda: MappingProxyType({}))

    def mode_for(self, repo: str | None) -> Mode:
        """The mode on ``repo``: an exact ``autonomy`` key first; else, of the keys that are
        patterns matching it (:mod:`gitvow.repos`, whole segments), the lowest mode — two
        overlapping patterns never grant more than either does alone; else the agent's mode."""
        if repo is None or not self.autonomy:
            return self.mode
        key = repo.lower()
        exact = self.autonomy.get(key)
        if exact is not None:
            return exact
        found = [mode for pattern, mode in self.autonomy.items() if is_pattern(pattern) and matches(key, pattern)]
        return min(found) if found else self.mode

    def mode_for_repos(self, repos: tuple[str, ...], *, established: bool = True) -> Mode | None:
        """The mode for a request on every one of ``repos``: the lowest of theirs.

        With repositories not established, the agent's own mode stands in for the unknown
        ones, which is safe only if no autonomy entry lowers a repository below it: then
        the answer is None (``repo_unresolved``). Without autonomy this costs nothing.
        """
        autonomy = self.autonomy
        if not autonomy:
            return self.mode
        if not established and any(mode < self.mode for mode in autonomy.values()):
            return None
        modes = [self.mode_for(repo) for repo in repos]
        if not established or not modes:
            modes.append(self.mode)
        return min(modes)


#: The allow verdict of each operation, built once (:func:`evaluate_operation`).
_ALLOWED: dict[str, Verdict] = {}


def evaluate_operation(
    operation: str,
    grant: Grant,
    *,
    repo: str | None = None,
    table: PolicyTable = DEFAULT_TABLE,
    mode_code: str = MODE_DENIED,
    unknown_code: str = MODE_DENIED,
    note: str = "",
    repos: tuple[str, ...] | None = None,
    established: bool = True,
) -> Verdict:
    """The verdict for one operation."""
    row = table[operation]
    mode_code = OWN_CODES.get(operation, mode_code)
    if row.relay:
        return Verdict(Outcome.RELAY, code=HARD_DENY, operation=operation, relay=row.relay, why=f"{operation} is relayed")
    if row.deny:
        if operation == UNKNOWN:
            why = note or "the request is not a known operation"
            # no mode allows what gitvow cannot classify: never tell the agent to seek a higher one
            instead = "ask a human to do it; no agent mode allows a request gitvow cannot classify"
            return Verdict.deny(unknown_code, why, operation=operation, instead=instead if unknown_code == MODE_DENIED else "")
        return Verdict.deny(mode_code, f"{operation} is denied at every mode", operation=operation,
                            instead="ask a human to do it; no agent mode allows it")
    if repos is None:
        repos = (repo,) if repo is not None else ()
    mode = grant.mode_for_repos(repos, established=established)
    if mode is None:
        return Verdict.deny(REPO_UNRESOLVED, "the repository of this request could not be established and this "
                            "agent's mode differs by repository", operation=operation,
                            instead="name the repository by owner/name, or ask a human")
    if mode >= row.min_mode or (row.capability is not None and row.capability in grant.capabilities):
        allowed = _ALLOWED.get(operation)
        if allowed is None:  # one per operation of the table (only those are ever allowed): frozen, shared
            allowed = _ALLOWED[operation] = Verdict.allow(operation)
        return allowed
    needs = row.min_mode.label + (f" or capability {row.capability}" if row.capability else "")
    return Verdict.deny(mode_code, f"{operation} needs mode {needs}; agent has {mode.label}", operation=operation)


def operation_verdicts(classification: Classification, grant: Grant, *, table: PolicyTable = DEFAULT_TABLE) -> list[Verdict]:
    """The verdict of each operation of ``classification``, with exactly the policy stage's
    inputs: every repository of the request, whether they were established (a write's only),
    and the classification's reason codes. :func:`evaluate` and the engine's check of what an
    approval may cover both use it, so the two can never judge an operation differently."""
    return [
        evaluate_operation(
            op,
            grant,
            repos=classification.repos,
            established=classification.repo_established or not writes(op),
            table=table,
            mode_code=classification.mode_code,
            unknown_code=classification.unknown_code,
            note=classification.note,
        )
        for op in classification.operations
    ]


def evaluate(
    classification: Classification,
    grant: Grant,
    *,
    table: PolicyTable = DEFAULT_TABLE,
) -> Verdict:
    """Allowed only if every operation is; otherwise the strictest verdict (relay > deny)."""
    if not classification.operations:
        return Verdict.deny(classification.unknown_code, "the adapter found no operation", operation=UNKNOWN)
    verdicts = operation_verdicts(classification, grant, table=table)
    if len(verdicts) == 1:
        return verdicts[0]
    if all(v.allowed for v in verdicts):
        return ALLOW
    return strictest(verdicts)
