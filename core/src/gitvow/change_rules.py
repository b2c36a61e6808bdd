"""``[branches]``, ``[paths]``, ``[size]`` and ``[secrets]`` compiled, and the one judge of a
:class:`~gitvow.change.Change` that the pipeline's ``change`` stage calls for every forge.

The judge is pure: the repository's default branch comes from the enforcement point (the
proxy asks the forge once and caches it; the agent gate does not know it), everything else
from the change and the policy. Its checks, in order, each with its own reason code:

1. ``change_unestablished``: the adapter could not establish what the write changes;
2. ``branch_not_allowed``: a ref outside the agent's (or the global) allowed patterns;
3. ``branch_protected``: the default branch or a listed protected branch;
4. ``change_too_large``: over ``[size]`` (files changed, bytes added, largest object);
5. ``secret_detected``: a credential of a known format (kind and fingerprint only);
6. ``path_protected``: a path whose ``[paths]`` verdict is ``refuse``; then, when every other
   check passed, a path whose verdict is ``stage`` is a relay to ``approval`` with the same code.

Force updates and deletions are operations (``ref.force``, ``ref.delete``) and are judged by
the policy stage before this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from gitvow.change import BRANCH_PREFIX, DEFAULT_BRANCH_REF, Change, RefChange
from gitvow.default_paths import DEFAULT_PROTECTED_PATHS
from gitvow.repos import compile_pattern, is_pattern
from gitvow.verdict import Outcome, Verdict

if TYPE_CHECKING:
    from typing import Any

CHANGE_UNESTABLISHED = "change_unestablished"
BRANCH_NOT_ALLOWED = "branch_not_allowed"
BRANCH_PROTECTED = "branch_protected"
CHANGE_TOO_LARGE = "change_too_large"
SECRET_DETECTED = "secret_detected"
PATH_PROTECTED = "path_protected"
CODES = (CHANGE_UNESTABLISHED, BRANCH_NOT_ALLOWED, BRANCH_PROTECTED, CHANGE_TOO_LARGE, SECRET_DETECTED, PATH_PROTECTED)

STAGE = "stage"
REFUSE = "refuse"
APPROVAL_RELAY = "approval"


DEFAULT_MAX_FILES = 5000
DEFAULT_MAX_ADDED_BYTES = 100 * 1024 * 1024
DEFAULT_MAX_OBJECT_BYTES = 50 * 1024 * 1024


def _matcher(pattern: str) -> tuple[bool, str]:
    """(whether the pattern matches a basename at any depth, the pattern)."""
    return ("/" not in pattern.strip("/"), pattern.strip("/"))


def path_matches(path: str, pattern: str) -> bool:
    """Whether ``path`` is named by ``pattern``: segments as :mod:`gitvow.repos` (``*`` within one,
    ``**`` any depth), case-insensitive (a case-folding checkout must not slip past); a pattern
    without ``/`` names a file or directory of that name at any depth. A pattern also names the
    directories its literal leading segments pass through (``.github``, ``.github/workflows``
    for ``.github/workflows/**``): an entry written at one of those paths replaces the
    directory and so everything under it. A path ending in ``/``
    is a directory whose content changed in a way not listed file by file (a deletion): it
    matches every pattern that could name something inside it."""
    anywhere, text = _matcher(pattern)
    if path.endswith("/"):
        return anywhere or _inside(path.strip("/").split("/"), text.split("/"))
    path = path.strip("/")
    if anywhere:
        return any(_one(part, text) for part in path.split("/"))
    if _one(path, text):
        return True
    if _on_the_way(path, text):
        # an entry at the path of a directory the pattern names things in (a blob, a link or a
        # deletion in its place) removes everything under it that the pattern protects
        return True
    # a directory named by the pattern covers everything under it
    return any(_one("/".join(path.split("/")[:i]), text) for i in range(1, path.count("/") + 1))


def _on_the_way(path: str, pattern: str) -> bool:
    """Whether ``path`` is a directory the pattern's literal leading segments pass through on the
    way to what it names (``.github`` and ``.github/workflows`` for ``.github/workflows/**``),
    compared case-insensitively. Segments after the first glob are not followed: an entry that
    only a glob could make a parent is judged by the pattern itself."""
    segments = pattern.split("/")
    literal: list[str] = []
    for segment in segments:
        if is_pattern(segment):
            break
        literal.append(segment.lower())
    parts = path.lower().split("/")
    return len(parts) < len(segments) and parts == literal[:len(parts)] and len(parts) <= len(literal)


def _inside(directory: list[str], pattern: list[str]) -> bool:
    """Whether ``pattern`` could name ``directory`` itself, an ancestor of it, or something in it."""
    for i, segment in enumerate(directory):
        if i >= len(pattern):
            return True  # the pattern names an ancestor directory
        if pattern[i] == "**":
            return True
        if not _one(segment, pattern[i]):
            return False
    return True


def _could_hide(directory: str, names: frozenset[str], pattern: str) -> bool:
    """Whether ``pattern`` could name something deleted from ``directory`` (which holds
    ``names`` now, lower-cased): the directory lies under the pattern's literal leading
    segments (a glob or the named path itself below it), or it is on their way and the next
    literal segment is missing from it (deleted, or never there: it cannot be told apart)."""
    anywhere, text = _matcher(pattern)
    if anywhere:
        return True
    literal: list[str] = []
    for segment in text.lower().split("/"):
        if is_pattern(segment):
            break
        literal.append(segment)
    parts = [part.lower() for part in directory.strip("/").split("/") if part]
    for i, segment in enumerate(parts):
        if i >= len(literal):
            return True
        if segment != literal[i]:
            return False
    return len(parts) == len(literal) or literal[len(parts)] not in names


def _one(value: str, pattern: str) -> bool:
    if not is_pattern(pattern):
        return value.lower() == pattern.lower()
    return compile_pattern(pattern).match(value.lower()) is not None


def branch_matches(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether a branch (or full ref) is named by one of ``patterns`` (segments, case-insensitive)."""
    return any(_one(name.strip("/"), pattern.strip("/")) for pattern in patterns)


@dataclass(frozen=True, slots=True)
class ChangeRules:
    """The change rules of a policy file. The defaults protect the default branch and the CI
    and ownership files, cap sizes and refuse known-format credentials."""

    allowed: tuple[str, ...] = ()
    agent_allowed: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    protected: tuple[str, ...] = ()
    default_branch: bool = True
    paths: tuple[tuple[str, str], ...] = tuple((p, STAGE) for p in DEFAULT_PROTECTED_PATHS)
    max_files: int | None = DEFAULT_MAX_FILES
    max_added_bytes: int | None = DEFAULT_MAX_ADDED_BYTES
    max_object_bytes: int | None = DEFAULT_MAX_OBJECT_BYTES
    secrets: bool = True
    secrets_allow: frozenset[str] = frozenset()

    def allowed_for(self, agent: str | None) -> tuple[str, ...]:
        """The agent's own allowed patterns if it has some, else the global ones (empty: any ref)."""
        if agent is not None and agent in self.agent_allowed:
            return self.agent_allowed[agent]
        return self.allowed

    def path_verdict(self, path: str) -> str | None:
        """``refuse``, ``stage`` or None for ``path``; the strictest rule that names it wins."""
        found = [verdict for pattern, verdict in self.paths if path_matches(path, pattern)]
        if not found:
            return None
        return REFUSE if REFUSE in found else STAGE

    def could_hide(self, change: Change) -> bool:
        """Whether a path rule could name something deleted unseen in a directory of
        ``change.read_alone`` (the new trees read without their parent's). Decided from the
        new trees alone, so a push that touches no rule costs no forge lookup: an anchored
        pattern is reached only through the directories it names, and a subtree the push does
        not carry is unchanged, so nothing under it was deleted. A pattern that names a file at
        any depth could name something in any deleted directory: every directory read alone."""
        return any(_could_hide(directory, names, pattern)
                   for directory, names in change.read_alone for pattern, _ in self.paths)

    def needs_default_branch(self, change: Change, agent: str | None) -> bool:
        """Whether judging ``change`` needs the forge's default branch: only when some branch it
        updates passes every other branch rule (so a push the listed rules settle asks nothing)."""
        if any(ref.ref == DEFAULT_BRANCH_REF for ref in change.refs):
            return True  # a write that names no branch: which one it moves is the forge's to say
        if not self.default_branch:
            return False
        return any(ref.branch is not None and self._branch_problem(ref, agent) is None for ref in change.refs)

    def _branch_problem(self, ref: RefChange, agent: str | None) -> Verdict | None:
        allowed = self.allowed_for(agent)
        if allowed and not branch_matches(ref.name, allowed):
            return Verdict.deny(BRANCH_NOT_ALLOWED, f"{ref.ref} is outside the branches this agent may write "
                                f"({', '.join(allowed)})", operation="git.push",
                                instead=f"push to a branch matching {allowed[0]}")
        if ref.branch is not None and self.protected and branch_matches(ref.branch, self.protected):
            return Verdict.deny(BRANCH_PROTECTED, f"{ref.ref} is a protected branch", operation="git.push",
                                instead="push to a branch of your own and open a pull request")
        return None


def judge(change: Change, rules: ChangeRules, agent: str | None, default_branch: str | None = None,
          operation: str = "git.push") -> Verdict | None:
    """The first rule ``change`` breaks (in the order of the module docstring), or None.
    ``operation`` is the write's own (``git.push``, ``contents.write``, ``ref.write``), named
    in the verdict."""
    verdict = _judge(change, rules, agent, default_branch)
    if verdict is not None and operation != verdict.operation:
        return replace(verdict, operation=operation)
    return verdict


def _judge(change: Change, rules: ChangeRules, agent: str | None, default_branch: str | None) -> Verdict | None:
    if change.unestablished:
        return Verdict.deny(CHANGE_UNESTABLISHED, f"what the write changes could not be established: "
                            f"{change.unestablished}", operation="git.push")
    if change.unread_refs and (rules.allowed_for(agent) or rules.protected):
        return Verdict.deny(CHANGE_UNESTABLISHED, f"the branches this push writes could not be read: "
                            f"{change.unread_refs}", operation="git.push",
                            instead="name the branch: git push origin HEAD:<branch>")
    for ref in change.refs:
        if ref.ref == DEFAULT_BRANCH_REF:
            if not default_branch:
                return Verdict.deny(CHANGE_UNESTABLISHED, "the write names no branch, so it goes to the repository's "
                                    "default branch, which could not be read from the forge", operation="git.push",
                                    instead="name a branch of your own in the request")
            ref = replace(ref, ref=BRANCH_PREFIX + default_branch)
        problem = rules._branch_problem(ref, agent)
        if problem is not None:
            return problem
        if rules.default_branch and default_branch and ref.branch is not None \
                and ref.branch.lower() == default_branch.lower():
            return Verdict.deny(BRANCH_PROTECTED, f"{ref.ref} is the repository's default branch",
                                operation="git.push", instead="push to a branch of your own and open a pull request")
    return _heads(change, rules, agent) or _size(change, rules) or _secrets(change, rules) or _paths(change, rules)


def _secrets(change: Change, rules: ChangeRules) -> Verdict | None:
    """A credential of a known format not listed in ``[secrets] allow`` (kind and fingerprint only)."""
    if not rules.secrets:
        return None
    secrets = [s for s in change.secrets if s.fingerprint not in rules.secrets_allow]
    if not secrets:
        return None
    first = secrets[0]
    where = f" in {first.path}" if first.path else ""
    return Verdict.deny(SECRET_DETECTED, f"a credential of kind {first.kind} (fingerprint {first.fingerprint})"
                        f"{where}" + (f" and {len(secrets) - 1} more" if len(secrets) > 1 else ""),
                        operation="git.push", instead="remove it from the commits; rotate it if it is real")


def _heads(change: Change, rules: ChangeRules, agent: str | None) -> Verdict | None:
    """A branch named as the agent's own (a pull request's head) outside its allowed patterns."""
    allowed = rules.allowed_for(agent)
    for head in change.heads:
        if allowed and not branch_matches(head, allowed):
            return Verdict.deny(BRANCH_NOT_ALLOWED, f"{head} is outside the branches this agent may write "
                                f"({', '.join(allowed)})", operation="git.push",
                                instead=f"use a branch matching {allowed[0]}")
    return None


def _size(change: Change, rules: ChangeRules) -> Verdict | None:
    checks = (
        (rules.max_files, change.files, "files changed"),
        (rules.max_added_bytes, change.added_bytes, "bytes added"),
        (rules.max_object_bytes, change.largest, "bytes in its largest object"),
    )
    for cap, value, what in checks:
        if cap is not None and value > cap:
            return Verdict.deny(CHANGE_TOO_LARGE, f"the write has {value} {what}; the cap is {cap}",
                                operation="git.push", instead="split it into smaller writes, or ask a human")
    return None


def _paths(change: Change, rules: ChangeRules) -> Verdict | None:
    staged: list[str] = []
    for path in change.paths:
        verdict = rules.path_verdict(path)
        if verdict == REFUSE:
            return Verdict.deny(PATH_PROTECTED, f"{path} is a protected path", operation="git.push",
                                instead="ask a human to change it")
        if verdict == STAGE:
            staged.append(path)
    if not staged:
        return None
    more = f" and {len(staged) - 1} more" if len(staged) > 1 else ""
    return Verdict(Outcome.RELAY, code=PATH_PROTECTED, operation="git.push", relay=APPROVAL_RELAY,
                   why=f"{staged[0]}{more} is a protected path: a human approves the change")


def compile_rules(core: Mapping[str, Any]) -> ChangeRules:
    """``ChangeRules`` from the validated plain form of the core's keys (``CorePolicy.model_dump()``
    or the agent gate's cached form)."""
    branches = core.get("branches") or {}
    paths = core.get("paths") or {}
    size = core.get("size") or {}
    secrets = core.get("secrets") or {}
    rules: dict[str, str] = dict.fromkeys(DEFAULT_PROTECTED_PATHS, STAGE) if paths.get("defaults", True) else {}
    rules.update(paths.get("rules") or {})
    agents = core.get("agents") or {}
    return ChangeRules(
        allowed=tuple(branches.get("allowed") or ()),
        agent_allowed=MappingProxyType({name: tuple(agent["branches"]) for name, agent in agents.items()
                                        if agent.get("branches") is not None}),
        protected=tuple(branches.get("protected") or ()),
        default_branch=bool(branches.get("default_branch", True)),
        paths=tuple(rules.items()),
        max_files=size.get("max_files", DEFAULT_MAX_FILES),
        max_added_bytes=size.get("max_added_bytes", DEFAULT_MAX_ADDED_BYTES),
        max_object_bytes=size.get("max_object_bytes", DEFAULT_MAX_OBJECT_BYTES),
        secrets=bool(secrets.get("enabled", True)),
        secrets_allow=frozenset(secrets.get("allow") or ()),
    )


DEFAULT_RULES = ChangeRules()

__all__ = [
    "APPROVAL_RELAY", "BRANCH_NOT_ALLOWED", "BRANCH_PROTECTED", "CHANGE_TOO_LARGE", "CHANGE_UNESTABLISHED", "CODES",
    "DEFAULT_PROTECTED_PATHS", "DEFAULT_RULES", "PATH_PROTECTED", "REFUSE", "SECRET_DETECTED", "STAGE", "ChangeRules",
    "branch_matches", "compile_rules", "judge", "path_matches",
]
