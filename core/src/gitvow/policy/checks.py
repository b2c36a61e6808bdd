"""Cross-reference checks: what each key's model cannot see alone, and what would silently do nothing.

A capability no table row grants, an ``autonomy`` key that can never equal a repository, a
``repos`` pattern without an owner: each loads fine under its own model and then quietly
never matches. :func:`core_problems` checks the core's keys; each
:class:`~gitvow.policy.sections.PolicySection` may bring a ``check`` for its own, and
:func:`gitvow.policy.load.parse_policy` runs them all, so ``gitvow policy check``, proxy start
and reload refuse the same files with the same lines.

The helpers here (repository shapes, operation patterns) are shared with the sections.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitvow.policy.load import Policy

_GLOB = frozenset("*?[")


def repo_shape(pattern: str, *, glob: bool) -> str | None:
    """What is wrong with a repository written as ``owner/name`` (GitLab: ``group/sub/name``), or None.

    ``glob`` says whether the key matches with patterns of whole segments (``team/*``,
    ``org/**``; :mod:`gitvow.repos`) or exactly.
    """
    expected = "owner/name (e.g. team/app" + (", or a pattern such as team/* or org/**)" if glob else "; matched exactly, no patterns)")
    if not pattern or pattern != pattern.strip() or any(c.isspace() for c in pattern):
        return f"{pattern!r} is not a repository; expected {expected}"
    if not glob and _GLOB & set(pattern):
        return f"{pattern!r} is a pattern, but this key is matched exactly; expected {expected}"
    if pattern == "**":
        return None  # every repository
    if glob and "/" not in pattern and _GLOB & set(pattern):
        return f"{pattern!r} matches within one segment, so no owner/name; expected {expected}"
    parts = pattern.split("/")
    if len(parts) < 2 or any(not part for part in parts):
        return f"{pattern!r} has no owner/name shape; expected {expected}"
    return None


def operation_pattern_problem(pattern: str) -> str | None:
    """A lane or cap pattern (``issue.*``) that matches no operation of the vocabulary, or None."""
    from gitvow.vocabulary import OPERATIONS

    if any(fnmatch.fnmatchcase(name, pattern) for name in OPERATIONS):
        return None
    return f"{pattern!r} matches no operation; expected an operation name or pattern (`gitvow ops`), e.g. issue.*"


def undefined_agents(names: Iterable[str], policy: Policy) -> list[str]:
    """The names among ``names`` that ``[agents]`` does not define."""
    return [name for name in names if name not in policy.model.agents]


def agents_expected(policy: Policy) -> str:
    known = ", ".join(sorted(policy.model.agents)) or "none"
    return f"expected an agent defined in [agents] (defined: {known})"


def core_problems(policy: Policy) -> list[str]:
    """The core's keys: capabilities the table grants, ``autonomy`` and ``repos`` shapes."""
    from gitvow.modes import CAPABILITIES

    problems: list[str] = []
    model = policy.model
    granted = set(CAPABILITIES) | {row.capability for row in policy.table.values() if row.capability}
    for name, agent in model.agents.items():
        for i, capability in enumerate(agent.capabilities):
            if capability not in granted:
                problems.append(
                    f"agents.{name}.capabilities.{i}: unknown capability {capability!r}; expected one of "
                    f"{', '.join(sorted(granted))} (or one an [operations] row names)"
                )
        for repo in agent.autonomy:
            why = repo_shape(repo, glob=True)  # exact keys, or patterns (the lowest matching mode applies)
            if why:
                problems.append(f"agents.{name}.autonomy.{repo!r}: {why}")
        for i, repo in enumerate(agent.repos or ()):
            why = repo_shape(repo, glob=True)
            if why:
                problems.append(f"agents.{name}.repos.{i}: {why}")
    return problems
