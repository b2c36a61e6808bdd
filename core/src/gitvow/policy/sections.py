"""Sections of the policy file that an enforcement point (or any plugin) owns.

One file serves the proxy and the agent gate, yet the core reads only its own keys
(``hosts``, ``operations``, ``relays``, ``adapters``, ``agents``). Everything else is
contributed through the ``register_policy_sections`` hook, as tox plugins add configuration
with ``tox_add_core_config``: a plugin registers a pydantic model whose fields are top-level
keys of the file. ``gitvow policy check`` and ``gitvow policy schema`` therefore validate and
describe exactly what is installed.

Kept free of pydantic at import time: plugin discovery on the agent hook's path imports this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

    from gitvow.policy.load import Policy
    from gitvow.policy.selftest import PolicyTest

#: A section's cross-reference check: given the whole validated policy, one line per problem,
#: each ``key.path: what is wrong; what was expected``. Empty when the section is consistent.
Check = Callable[["Policy"], list[str]]

#: How a section's enforcement point judges a ``[[tests]]`` tool call: (verdict, reason).
ToolTest = Callable[["Policy", "PolicyTest"], tuple[str, str | None]]


@dataclass(frozen=True, slots=True)
class PolicySection:
    """Top-level keys of the policy file, validated by ``model``, read by ``distribution``.

    ``ignored`` are keys the model accepts without acting on them (gitvow 0.42's keys the gate
    does not implement); ``gitvow policy check`` lists them so nothing is silently dropped.
    """

    model: type[BaseModel]
    distribution: str
    ignored: tuple[str, ...] = ()
    #: Cross-references a model cannot see on its own (an agent named in this section but
    #: defined in the core's ``[agents]``, an adapter that must be installed): run by
    #: :func:`gitvow.policy.load.parse_policy` after every section validated, so ``gitvow
    #: policy check``, proxy start and reload reject the same files.
    check: Check | None = None
    #: Lines ``gitvow policy check`` prints about a valid file (a protection switched off).
    notes: Check | None = None
    #: The judge of ``[[tests]]`` tool calls (command, path, mcp): the agent gate registers one.
    tool_tests: ToolTest | None = None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.model.model_fields)


def owner_of(key: str) -> str | None:
    """The distribution of this project that reads top-level ``key`` when installed, if any
    (:mod:`gitvow.first_party`: consulted only for keys no installed plugin registered)."""
    from gitvow.first_party import owner_of_key

    return owner_of_key(key)


def install_hint(distribution: str) -> str:
    """How to install ``distribution`` (never PyPI's unrelated gitvow 0.42)."""
    from gitvow.first_party import install_hint as hint

    return hint(distribution)
