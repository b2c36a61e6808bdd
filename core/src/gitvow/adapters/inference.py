"""The inference adapter: model endpoints produce ``inference.call`` (allowed at every mode).

It exists so model traffic gets the same verdict type and denial format as forge traffic;
routing and budgets for inference are not the pipeline's business. Only the known model API
paths classify; anything else on an inference host is ``unknown`` and denied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

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
    default_hosts = ("api.githubcopilot.com", "api.individual.githubcopilot.com")

    def classify(self, request: Request) -> Classification:
        if request.method in _READ_METHODS:
            return Classification((READ,), adapter=self.name)
        if request.method == "POST" and request.path.rstrip("/").endswith(MODEL_PATHS):
            return Classification(("inference.call",), adapter=self.name)
        return Classification.unknown("not a model API call")

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        return {"authorization": f"Bearer {token}"}

    def fixtures(self) -> Sequence[Fixture]:
        host = "https://api.githubcopilot.com"
        return (
            Fixture("POST", f"{host}/chat/completions", ("inference.call",), body=b'{"model":"x","messages":[]}'),
            Fixture("POST", f"{host}/v1/messages", ("inference.call",), body=b"{}"),
            Fixture("GET", f"{host}/models", ("read",)),
            Fixture("POST", f"{host}/models", ("unknown",), near_miss=True, note="listing is GET; POST is nothing known"),
        )

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return (Fixture("DELETE", "https://api.githubcopilot.com/chat/completions", ("unknown",)),)

    def unsupported(self) -> Mapping[str, str]:
        return {name: "a model endpoint performs no forge operations" for name in OPERATIONS if name not in _SUPPORTED}


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(InferenceAdapter())
