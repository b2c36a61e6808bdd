"""The inference adapters: model endpoints produce ``inference.call`` (allowed at every mode).

They exist so model traffic gets the same verdict type, audit and denial format as forge
traffic, and so the model API key is the proxy's to hold: ``[credentials.anthropic]``,
``[credentials.openai]`` (and ``[credentials.inference]`` for Copilot's hosts) are injected
like forge tokens, in the header each API reads, while the agent holds a placeholder. Only
the known model API paths classify; anything else on a model host is ``unknown`` and denied.

- ``inference``: GitHub Copilot's model hosts (``Authorization: Bearer``).
- ``anthropic``: ``api.anthropic.com`` (``x-api-key``, the header its SDKs and Claude Code send).
- ``openai``: ``api.openai.com`` (``Authorization: Bearer``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from gitvow.adapter import Adapter
from gitvow.hookspecs import hookimpl
from gitvow.request import Classification, Fixture, Request
from gitvow.vocabulary import OPERATIONS, READ

#: Path suffixes of the OpenAI-, Anthropic- and Copilot-style model APIs.
MODEL_PATHS: tuple[str, ...] = (
    "/chat/completions",
    "/completions",
    "/embeddings",
    "/responses",
    "/messages",
    "/messages/count_tokens",
)
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_SUPPORTED = frozenset({"read", "inference.call", "unknown"})


class InferenceAdapter(Adapter):
    """Model endpoints: GitHub Copilot's by default, others mapped in ``[hosts]``."""

    name = "inference"
    default_hosts: ClassVar[tuple[str, ...]] = ("api.githubcopilot.com", "api.individual.githubcopilot.com")
    streams_events = True

    def classify(self, request: Request) -> Classification:
        if request.method in _READ_METHODS:
            return Classification((READ,), adapter=self.name)
        if request.method == "POST" and request.path.rstrip("/").endswith(MODEL_PATHS):
            return Classification(("inference.call",), adapter=self.name)
        return Classification.unknown("not a model API call")

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        return {"authorization": f"Bearer {token}"}

    def fixtures(self) -> Sequence[Fixture]:
        host = f"https://{self.default_hosts[0]}"
        return (
            Fixture("POST", f"{host}/chat/completions", ("inference.call",), body=b'{"model":"x","messages":[]}'),
            Fixture("POST", f"{host}/v1/messages", ("inference.call",), body=b"{}"),
            Fixture("GET", f"{host}/models", ("read",)),
            Fixture("POST", f"{host}/models", ("unknown",), near_miss=True, note="listing is GET; POST is nothing known"),
        )

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return (Fixture("DELETE", f"https://{self.default_hosts[0]}/v1/chat/completions", ("unknown",)),)

    def unsupported(self) -> Mapping[str, str]:
        return {name: "a model endpoint performs no forge operations" for name in OPERATIONS if name not in _SUPPORTED}


class AnthropicAdapter(InferenceAdapter):
    """Anthropic's API: its key travels in ``x-api-key`` (an agent's ``Authorization`` is dropped too)."""

    name = "anthropic"
    default_hosts = ("api.anthropic.com",)

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        return {"x-api-key": token}


class OpenAIAdapter(InferenceAdapter):
    """OpenAI's API (``Authorization: Bearer``)."""

    name = "openai"
    default_hosts = ("api.openai.com",)


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(InferenceAdapter())
    register(AnthropicAdapter())
    register(OpenAIAdapter())
