"""The adapter interface: what a forge plugin implements to be classified and enforced.

One instance per forge. Only :meth:`Adapter.classify` is required; everything else has a
default that is safe (no fixtures fails the contract kit, no hints adds none, no tool-call
classifier recognises nothing). Adapters must never raise out of ``classify`` for a bad
request — return :meth:`Classification.unknown` with a note — but if one does, the pipeline
turns it into a deny naming the adapter.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar

from gitvow.errors import PluginError
from gitvow.request import Classification, Fixture, Request, ToolCall


class Adapter(ABC):
    """Maps one forge's wire shapes to operations of the vocabulary."""

    #: Adapter name as used in ``[hosts]`` and ``[credentials.NAME]``.
    name: ClassVar[str]
    #: Hosts (``host`` or ``host:port``) this adapter serves without any configuration.
    default_hosts: ClassVar[tuple[str, ...]] = ()
    #: Programs (basenames) whose command lines :meth:`classify_command` reads, so the agent
    #: gate loads only the adapter a command needs (its plugin index maps program → adapter).
    commands: ClassVar[tuple[str, ...]] = ()

    def configure(self, options: Mapping[str, object]) -> None:
        """Apply ``[adapters.NAME]`` options from the policy file; unknown keys are an error.

        The engine calls this on a shallow copy of the discovered instance, so assign new
        attributes (a new reader, a new limit) rather than mutating shared ones.
        """
        if options:
            raise PluginError(self.name, f"takes no options, got {', '.join(sorted(options))}")

    def intercepts(self, host: str) -> bool:
        """Whether TLS to ``host`` must be intercepted so requests can be classified."""
        return True

    @abstractmethod
    def classify(self, request: Request) -> Classification:
        """Map a request to operations and a repository; unreadable input is ``unknown``."""

    def fixtures(self) -> Sequence[Fixture]:
        """Wire examples: at least one per supported operation, plus near misses."""
        return ()

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        """Requests that must be denied at every mode: unparseable, over-limit, unmatched."""
        return ()

    def unsupported(self) -> Mapping[str, str]:
        """Operations this forge cannot express, each with the reason."""
        return {}

    def relay_hints(self, command: str) -> Sequence[str]:
        """Forge tools an agent must not use instead of relay ``command`` (``gh pr create``)."""
        return ()

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """Headers that carry ``token`` upstream; they replace whatever the agent sent."""
        return {"authorization": f"Bearer {token}"}

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        """Operations a shell command (already split, wrappers removed) performs, or None."""
        return None

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        """Operations an MCP tool call performs, or None if the tool is not this forge's."""
        return None


def configure_adapters(
    adapters: Mapping[str, Adapter], options: Mapping[str, Mapping[str, object]], *, source: str | None = None
) -> dict[str, Adapter]:
    """The adapters with ``[adapters.NAME]`` options applied, each to a shallow copy.

    The one place options are applied, for the proxy, ``explain`` and the agent gate alike.
    The discovered instances are shared by every engine in the process and stay untouched.
    """
    from gitvow.errors import PolicyError

    result = dict(adapters)
    for name, values in options.items():
        if name not in result:
            known = ", ".join(sorted(result)) or "none"
            raise PolicyError(f"adapter {name!r} is not installed (installed: {known})", source=source,
                              key=f"adapters.{name}")
        result[name] = configured = copy.copy(result[name])
        try:
            configured.configure(values)
        except PluginError as exc:
            raise PolicyError(str(exc), source=source, key=f"adapters.{name}") from None
        except Exception as exc:
            raise PolicyError(f"adapter {name!r} rejected its options ({type(exc).__name__}: {exc})", source=source,
                              key=f"adapters.{name}") from None
    return result
