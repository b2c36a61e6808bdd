"""The adapter interface: what a forge plugin implements to be classified and enforced.

One instance per forge. Only :meth:`Adapter.classify` is required; everything else has a
default that is safe (no fixtures fails the contract kit, no hints adds none, no tool-call
classifier recognises nothing). Adapters must never raise out of ``classify`` for a bad
request — return :meth:`Classification.unknown` with a note — but if one does, the pipeline
turns it into a deny naming the adapter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.errors import PluginError
from gitvow.request import Classification, Fixture, Request, Resolution, Target, ToolCall

if TYPE_CHECKING:
    from typing import Any, ClassVar

    from pydantic import BaseModel

    from gitvow.approval_context import ApprovalContext, ApprovalFixture, Ask, Subject
    from gitvow.targets import Fetch


class Adapter(ABC):
    """Maps one forge's wire shapes to operations of the vocabulary."""

    #: Adapter name as used in ``[hosts]`` and ``[credentials.NAME]``.
    name: ClassVar[str]
    #: Hosts (``host`` or ``host:port``) this adapter serves without any configuration.
    default_hosts: ClassVar[tuple[str, ...]] = ()
    #: Hosts of a self-hosted instance the adapter's fixtures use (``ghe.example.test``): never
    #: served by default, a policy maps them in ``[hosts]``. The contract kit's host check
    #: accepts them beside ``default_hosts``, so a host dropped from ``default_hosts`` still fails.
    example_hosts: ClassVar[tuple[str, ...]] = ()
    #: Programs (basenames) whose command lines :meth:`classify_command` reads, so the agent
    #: gate loads only the adapter a command needs (its plugin index maps program → adapter).
    commands: ClassVar[tuple[str, ...]] = ()

    #: Whether this forge's writes act on repositories. A tracker without any (Linear) sets
    #: False: pause, auto-merge and allowed-repository gates then have nothing to check on
    #: its requests, rather than refusing every one as ``repo_unresolved``.
    has_repositories: ClassVar[bool] = True

    #: Whether the forge keeps a percent-encoded slash inside one path segment (GitLab's
    #: ``projects/group%2Fproject``). False (the default) refuses ``%2F`` in a path before
    #: the adapter sees it (``path_not_canonical``), as for forges that decode it to a separator.
    encoded_slash: ClassVar[bool] = False

    #: Whether this API answers with event streams (``text/event-stream``) a client reads as they
    #: come (a model's tokens): the proxy then passes them on one scrubbed event at a time, and
    #: asks for them uncompressed, instead of holding the whole answer back.
    streams_events: ClassVar[bool] = False

    @classmethod
    def options_model(cls) -> type[BaseModel] | None:
        """The pydantic model of ``[adapters.NAME]``, or None if the adapter takes no options.

        Import the model *inside* this method: the agent hook's forge stage imports adapter
        modules and must not import pydantic unless the policy gives an adapter options.
        The model must forbid unknown keys (subclass :class:`gitvow.options.AdapterOptions`);
        ``gitvow policy schema`` shows it under ``adapters.NAME``.
        """
        return None

    def configure(self, options: Any) -> None:  # noqa: B027 - optional, like the other defaults
        """Apply ``[adapters.NAME]`` options, already validated: an instance of :meth:`options_model`.

        Called only by :func:`configure_adapters`, on a shallow copy of the discovered
        instance, so assign new attributes (a new reader, a new limit) rather than mutating
        shared ones. Raise :class:`~gitvow.errors.PluginError` for what the model cannot check.
        """

    def intercepts(self, host: str) -> bool:
        """Whether TLS to ``host`` must be intercepted so requests can be classified."""
        return True

    @abstractmethod
    def classify(self, request: Request) -> Classification:
        """Map a request to operations and a repository; unreadable input is ``unknown``."""

    def resolve(self, targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
        """What the forge says each of ``targets`` (from this adapter's classifications) is.

        ``fetch(method, path, body)`` sends one request to the host the classified request
        went to, with the injected credential, and returns ``(status, body)``. Ask as few
        times as the forge allows (GitHub's ``nodes(ids:)`` answers many ids at once). Leave
        out what the forge did not answer plainly: an unanswered target stays unresolved
        and repository gates refuse the write (``repo_unresolved``). Raising is the same as
        answering nothing. Called only by an enforcement point that needs the answer, off
        its event loop, and never twice for a target within the cache's time to live.
        """
        return {}

    def comment_bodies(self, request: Request, classification: Classification) -> Sequence[str] | None:
        """The comment text ``request`` sends, for ``[comment_commands]``; None if it cannot be read.

        Called only when the policy declares comment commands. The default
        (:func:`gitvow.comments.bodies_of`) returns every string of a request whose operations
        carry text (comments, reviews, issue and pull-request bodies), which is never less
        than the forge stores; override it only to read a body the default cannot parse.
        """
        from gitvow.comments import bodies_of

        return bodies_of(request, classification)

    def fixtures(self) -> Sequence[Fixture]:
        """Wire examples: at least one per supported operation, plus near misses."""
        return ()

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        """Requests that must be denied at every mode: unparseable, over-limit, unmatched."""
        return ()

    def unsupported(self) -> Mapping[str, str]:
        """Operations this forge cannot express at all, each with the reason (no request can be one)."""
        return {}

    def not_implemented(self) -> Mapping[str, str]:
        """Operations the forge has but this adapter does not classify yet, each with a note.

        Distinct from :meth:`unsupported` so an adapter never claims "the forge cannot do
        this" when it means "not written yet": such requests come back ``unknown`` and are
        denied at every mode, and the contract kit checks that nothing is classified as one.
        """
        return {}

    def relay_hints(self, operation: str) -> Sequence[str]:
        """Forge tools an agent must not use for ``operation`` when the policy relays it
        (``pr.merge`` → ``gh pr merge``). Keyed by operation, not by relay name, so a relay
        renamed in the policy keeps its hints."""
        return ()

    def git_repository_path(self, request: Request, repo: str) -> str | None:
        """The smart-HTTP path of ``repo`` on ``request``'s host (``/team/app.git``), where the
        enforcement point reads its default branch from git's own advertisement
        (:mod:`gitvow.githead`) for a write through the API that moves it or names no branch.
        None (the default) when the forge serves git elsewhere: such a write is then refused
        (``change_unestablished``) wherever the default branch decides it."""
        return None

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """Headers that carry ``token`` upstream; they replace whatever the agent sent."""
        return {"authorization": f"Bearer {token}"}

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """A refusal of ``request`` in the error format this forge's clients print to their
        user: ``(content type, body)``. ``message`` is the one-line denial, ``code`` its reason.

        The default is the line as ``text/plain`` (git prints it as ``remote:`` lines where
        it prints the body of a failed request at all: see :meth:`refusal_answer`). An
        API adapter answers as its forge does (a JSON ``message``, GraphQL ``errors``; see
        :mod:`gitvow.refusal`), so ``gh``, PyGithub or python-gitlab show the line rather than
        "403 Forbidden". The status code and ``X-Gitvow-Reason`` header are the caller's."""
        return refusal.plain(message)

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """The whole refusal of ``request`` as its client's protocol carries it: what the
        enforcement point answers. ``status`` is the enforcement point's own (403 for a
        refusal, 429 for a throttle, 503 when its state store is unreachable). The default is
        :meth:`refusal_body` at that status.

        Override it where the client prints only what a successful answer carries: git smart-HTTP
        (``gitvow_gitsmart.git_refusal``, which every forge adapter hands its git paths) answers
        a refused push with 200 and a ``report-status`` whose every ref is ``ng``, so git prints
        ``remote:`` lines and ``! [remote rejected]``; a refused ``info/refs`` with git's ``ERR``
        packet. Or where the forge itself answers a refusal with another status (GitHub's
        GraphQL: 200 with ``errors``, which ``gh pr merge`` prints as one line). An answer with
        a 2xx status must never read as a success to its client."""
        content_type, body = self.refusal_body(request, message, code)
        return refusal.Answer(content_type, body)

    # -- the approval's context: what the forge says about a staged merge or creation --------

    def approval_subject(self, request: Request, operations: Sequence[str]) -> Subject | None:
        """What a staged ``pr.merge`` or ``pr.create`` acts on, read where the forge reads it
        (:class:`gitvow.approval_context.Subject`); None when the request does not say which
        pull request or branches (the human is told so). No I/O. The default reads nothing:
        declare ``"context"`` in :meth:`approval_unsupported` then."""
        return None

    def approval_context(self, request: Request, subject: Subject, ask: Ask) -> ApprovalContext:
        """What the forge says about ``subject`` now, for the human approving ``request``: a
        merge's pull request (title, author, branches, head sha, mergeability, checks, reviews)
        and its changes, a creation's comparison of base and head.

        ``ask(method, path, body=b"", accept="application/json")`` sends one request to the
        staged request's host with the injected credential. Raise
        :class:`~gitvow.approval_context.ContextError` with a line for the human when the forge
        does not say; any other exception is shown as the forge's answer lacking something. The
        enforcement point cuts the diff (:meth:`ApprovalContext.bounded`), calls this off its
        event loop, and never lets the answer decide anything but whether the head moved."""
        from gitvow.approval_context import ContextError

        raise ContextError(f"adapter {self.name!r} reads no approval context")

    def pin_head(self, request: Request, head_sha: str) -> bytes | None:
        """The staged merge's body with ``head_sha`` (the head the human saw) as the head the
        forge must merge, so the forge refuses it if the head moved; a value the agent set is
        kept (the forge checks that one). None when this request cannot carry one (the default):
        the proxy then asks :meth:`approval_context` for the head right before it sends, and
        does not send when the forge cannot say."""
        return None

    def approval_fixtures(self) -> Sequence[ApprovalFixture]:
        """Staged merges and creations with the forge's recorded answers, for the contract kit's
        check of :meth:`approval_context` and :meth:`pin_head`."""
        return ()

    def approval_unsupported(self) -> Mapping[str, str]:
        """``"context"`` and/or ``"pin"`` → why this adapter provides no approval context or no
        pin for its ``pr.merge`` and ``pr.create`` (a forge whose merge takes no expected head).
        The kit requires either these or an implementation with :meth:`approval_fixtures`."""
        return {}

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        """Operations a shell command (already split, wrappers removed) performs, or None."""
        return None

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        """Operations an MCP tool call performs, or None if the tool is not this forge's."""
        return None


def configure_adapters(
    adapters: Mapping[str, Adapter], options: Mapping[str, Mapping[str, object]], *, source: str | None = None
) -> dict[str, Adapter]:
    """The adapters with ``[adapters.NAME]`` options validated and applied, each to a shallow copy.

    The one place options are validated and applied, for the proxy, ``explain`` and the agent
    gate alike: each adapter's :meth:`Adapter.options_model` checks its table (an error names
    the file and ``adapters.NAME.KEY``), then :meth:`Adapter.configure` gets the validated
    object. pydantic is imported only when some adapter is given options. The discovered
    instances are shared by every engine in the process and stay untouched.
    """
    from gitvow.errors import PolicyError

    result = dict(adapters)
    for name, values in options.items():
        if name not in result:
            known = ", ".join(sorted(result)) or "none"
            raise PolicyError(f"adapter {name!r} is not installed (installed: {known})", source=source,
                              key=f"adapters.{name}")
        key = f"adapters.{name}"
        try:
            validated = validate_options(result[name], values, source=source)
            import copy  # only when options are given

            configured = copy.copy(result[name])
            configured.configure(validated)
        except PolicyError:
            raise
        except PluginError as exc:
            raise PolicyError(str(exc), source=source, key=key) from None
        except Exception as exc:
            raise PolicyError(f"adapter {name!r} rejected its options ({type(exc).__name__}: {exc})", source=source,
                              key=key) from None
        result[name] = configured
    return result


def configured[A: Adapter](adapter: A, options: Mapping[str, object], *, source: str | None = None) -> A:
    """A copy of ``adapter`` with ``options`` validated and applied, as ``[adapters.NAME]`` would be."""
    done = configure_adapters({adapter.name: adapter}, {adapter.name: options}, source=source)[adapter.name]
    if not isinstance(done, type(adapter)):
        raise TypeError("internal error: done is not type(adapter)")
    return done


def validate_options(adapter: Adapter, values: Mapping[str, object], *, source: str | None = None) -> object:
    """``values`` checked by the adapter's options model (None if it takes none and got none).

    Raises :class:`~gitvow.errors.PolicyError` naming ``source`` and ``adapters.NAME.KEY``,
    with the first problem (and how many more).
    """
    from gitvow.errors import PolicyError

    model = adapter.options_model()
    if model is None:
        if values:
            raise PolicyError(f"adapter {adapter.name!r} takes no options, got {', '.join(sorted(values))}",
                              source=source, key=f"adapters.{adapter.name}.{sorted(values)[0]}")
        return None
    if model.model_config.get("extra") != "forbid":
        raise PluginError(adapter.name, f"options model {model.__name__} must forbid unknown keys (extra='forbid')")
    from pydantic import ValidationError

    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        problems = exc.errors()
        first = problems[0]
        message = "unknown option (typo?)" if first["type"] == "extra_forbidden" else first["msg"]
        if first["type"] == "extra_forbidden":
            message += f"; expected one of {', '.join(model.model_fields)}"
        if len(problems) > 1:
            message += f" (and {len(problems) - 1} more)"
        where = ".".join(["adapters", adapter.name, *(str(part) for part in first["loc"])])
        raise PolicyError(message, source=source, key=where) from None
