"""gitvow's addons presented to mitmproxy as one addon, calling each in order and failing closed.

mitmproxy hands every hook of every request (request headers, request, response headers,
response, and an ``update`` after each) to each top-level addon it holds, each call a
coroutine inside a context manager, whether or not the addon implements the hook: ten
top-level addons of one concern each would cost more per request than the pipeline. The
chain is one addon; it looks each hook's implementations up once and calls them in order.

It also closes what mitmproxy leaves open: mitmproxy logs an exception from an addon and
carries on, so a request whose identity or enforcement addon raised would still be sent.
Here an exception while a request is decided refuses it (403 ``internal_error``), one while
its response is handled replaces the response (502), and one on a raw stream cuts it; the
addons after the one that raised still run (the audit addon records the refusal).
Lifecycle hooks (``load``, ``configure``, ``running``, ``done``) let exceptions through:
mitmproxy reports a bad option there.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

from mitmproxy import http

from gitvow.pipeline import INTERNAL_ERROR
from gitvow_proxy.refusals import plain_refusal

log = logging.getLogger("gitvow_proxy")

#: Hooks on a request before it is sent: an exception refuses it.
_DECIDING = frozenset({"http_connect", "requestheaders", "request"})
#: Hooks on what comes back: an exception replaces the response.
_ANSWERING = frozenset({"responseheaders", "response"})
#: Lifecycle hooks: called as they are, exceptions go to mitmproxy, which reports them.
_LIFECYCLE = frozenset({"load", "configure", "running", "done"})


def _refuse(subject: Any, hook: str, exc: Exception) -> None:
    """Fail closed on what ``hook`` was about after an addon raised in it."""
    if hook in _DECIDING and isinstance(subject, http.HTTPFlow):
        subject.response = plain_refusal(403, f"gitvow refused the request: internal error "
                                         f"({type(exc).__name__}). reason={INTERNAL_ERROR}", INTERNAL_ERROR)
    elif hook in _ANSWERING and isinstance(subject, http.HTTPFlow):
        subject.response = plain_refusal(502, "gitvow could not check the upstream response", INTERNAL_ERROR)
    elif getattr(subject, "killable", False):  # a raw stream or a websocket: cut it
        subject.kill()
    elif hook == "server_connect" and getattr(subject, "server", None) is not None:
        subject.server.error = f"gitvow: internal error ({type(exc).__name__})"  # the connection is not opened


def _hook_names() -> frozenset[str]:
    """Every hook mitmproxy defines (its layers register them as they are imported)."""
    import mitmproxy.addonmanager
    import mitmproxy.proxy.layers
    import mitmproxy.proxy.server_hooks  # noqa: F401
    from mitmproxy import hooks

    return frozenset(hooks.all_hooks)


class AddonChain:
    """One mitmproxy addon that runs ``addons`` in order for every hook they implement.

    The hooks it answers are exactly those its addons implement, found once: a hook none of
    them has costs mitmproxy a missing attribute, as it would for any addon."""

    def __init__(self, addons: Sequence[object]) -> None:
        self.chained = tuple(addons)
        for name in _hook_names():
            implementations = tuple(getattr(a, name) for a in self.chained if callable(getattr(a, name, None)))
            if not implementations:
                continue
            if name in _LIFECYCLE:
                setattr(self, name, self._lifecycle(name, implementations))
            else:
                setattr(self, name, self._flow_hook(name, implementations))

    @staticmethod
    def _lifecycle(name: str, implementations: tuple[Callable[..., Any], ...]) -> Callable[..., None]:
        def run(*args: Any) -> None:
            for hook in implementations:
                if name != "done":
                    hook(*args)
                    continue
                try:
                    hook(*args)
                except Exception as exc:  # every addon gets to release what it holds
                    log.error("gitvow: %s failed to stop: %s: %s", _owner(hook), type(exc).__name__, exc)

        return run

    @staticmethod
    def _flow_hook(name: str, implementations: tuple[Callable[..., Any], ...]) -> Callable[[Any], Any]:
        """One hook of every request: a plain function when no implementation is a coroutine
        function (mitmproxy then creates no coroutine for it), else a coroutine that awaits what
        an implementation returns (a coroutine function's coroutine, or the awaitable a plain
        one may hand back). In the plain function an implementation that hands back anything
        has nothing to await it: that fails closed like an exception."""
        if not any(inspect.iscoroutinefunction(hook) for hook in implementations):
            def run_sync(subject: Any) -> None:
                for hook in implementations:
                    try:
                        result = hook(subject)
                        if result is not None:
                            getattr(result, "close", _nothing)()  # never awaited: closed, not left to warn
                            raise TypeError(f"{name} returned an awaitable where the chain runs it synchronously")
                    except Exception as exc:
                        _failed(hook, name, subject, exc)

            return run_sync

        async def run(subject: Any) -> None:
            for hook in implementations:
                try:
                    result = hook(subject)
                    if result is not None:
                        await result
                except Exception as exc:
                    _failed(hook, name, subject, exc)

        return run


def _nothing() -> None:
    return None


def _failed(hook: Callable[..., Any], name: str, subject: Any, exc: Exception) -> None:
    log.error("gitvow: %s raised in %s: %s: %s", _owner(hook), name, type(exc).__name__, exc)
    _refuse(subject, name, exc)


def _owner(hook: Callable[..., Any]) -> str:
    return type(getattr(hook, "__self__", hook)).__name__


__all__ = ["AddonChain"]
