"""mitmproxy's type check of every HTTP message, with the same outcome and without raising to pass.

mitmproxy checks each field of every request and response it builds (``MessageData.__post_init__``,
defined under ``__debug__``) with ``mitmproxy.utils.typecheck.check_option_type``. That function
formats a ``TypeError`` before it checks anything, and tries the members of a union by raising and
catching: a request head read off the wire (no body yet, no trailers, no end time: three ``X |
None`` fields holding ``None``) raises three. Each caught exception holds the frame that raised it,
and that frame holds the exception: a reference cycle only the garbage collector frees. In a
running proxy this check and the collections it causes are about a tenth of mitmproxy's CPU time
per request (docs/benchmarks.md, issue 22's "Where it stands": "What changed").

:func:`install` gives ``MessageData`` a check that decides the same: each field's annotation is
turned once per class into the classes ``isinstance`` accepts (a union's members; ``float`` also
takes ``int``, as mitmproxy's check does), and any value outside them, or any annotation that is
not a class or a union of classes, goes to mitmproxy's own check, which raises the ``TypeError``
it always raised. Only the path where every field is of its type is quicker. It is installed in
the process that runs gitvow's addons (``gitvow proxy``, or mitmdump with gitvow's script), and
only over mitmproxy's own ``__post_init__``: a mitmproxy without it (``python -O``, or a later
version) is left as it is.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

#: Per message class: each field's name, its annotation, and the classes it accepts (``None``
#: when only mitmproxy's check can decide).
_Plan = tuple[tuple[str, Any, tuple[type, ...] | None], ...]


def accepted_classes(annotation: Any) -> tuple[type, ...] | None:
    """The classes whose instances ``check_option_type`` passes for ``annotation``, when
    ``isinstance`` can say it exactly; ``None`` otherwise (generics, ``Any``, strings)."""
    if annotation is None or annotation is type(None):
        return (type(None),)
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        accepted: tuple[type, ...] = ()
        for member in typing.get_args(annotation):
            classes = accepted_classes(member)
            if classes is None:
                return None
            accepted += classes
        return accepted
    if origin is None and isinstance(annotation, type) and annotation is not typing.Any:
        return (float, int) if annotation is float else (annotation,)
    return None


def _plan(cls: type) -> _Plan:
    return tuple((field.name, field.type, accepted_classes(field.type)) for field in dataclasses.fields(cls))


def checked_post_init(check: Callable[[str, Any, Any], None]) -> Callable[[Any], None]:
    """A ``__post_init__`` that passes a message whose every field is of its type and hands
    any other field to ``check`` (mitmproxy's ``check_option_type``), which raises."""
    plans: dict[type, _Plan] = {}

    def __post_init__(self: Any) -> None:
        cls = type(self)
        plan = plans.get(cls)
        if plan is None:
            plan = plans[cls] = _plan(cls)
        for name, annotation, accepted in plan:
            value = getattr(self, name)
            if accepted is None or not isinstance(value, accepted):
                check(name, value, annotation)

    __post_init__.gitvow_checked = True  # type: ignore[attr-defined]
    return __post_init__


def install() -> bool:
    """Put the quicker check in place of mitmproxy's; ``True`` when it is (now or already)."""
    from mitmproxy import http
    from mitmproxy.utils import typecheck

    current = http.MessageData.__dict__.get("__post_init__")
    if current is None:  # ``python -O``: mitmproxy defines no check at all
        return False
    if getattr(current, "gitvow_checked", False):
        return True
    if getattr(current, "__module__", None) != "mitmproxy.http":  # someone else's: leave it
        return False
    http.MessageData.__post_init__ = checked_post_init(typecheck.check_option_type)  # type: ignore[method-assign]
    return True


__all__ = ["accepted_classes", "checked_post_init", "install"]
