"""A small stand-in for ``@dataclass(frozen=True, slots=True)`` on the hook's hot path.

The hook runs as a fresh process on every tool call, and importing :mod:`dataclasses` pulls
in :mod:`inspect` and friends — a large share of the hook's start-up. ``record`` generates
``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` from the class annotations and
defaults, which is all the gate's value types use. Type checkers see a real frozen dataclass.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import dataclass_transform

    @dataclass_transform(frozen_default=True)
    def record[T](cls: type[T]) -> type[T]: ...

else:

    def record(cls):
        names = [n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("_")]  # noqa: RUF063
        defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
        params = ", ".join(f"{n}=__d[{n!r}]" if n in defaults else n for n in names)
        body = "".join(f"    __s(self, {n!r}, {n})\n" for n in names) or "    pass\n"
        scope = {"__d": defaults, "__s": object.__setattr__}
        exec(f"def __init__(self, {params}):\n{body}", scope)  # the same technique dataclasses uses

        def __repr__(self):
            return f"{cls.__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

        def _key(self):
            return tuple(getattr(self, n) for n in names)

        def __eq__(self, other):
            return other.__class__ is self.__class__ and _key(self) == _key(other)

        def __hash__(self):
            return hash(_key(self))

        def __setattr__(self, name, value):
            raise AttributeError(f"{cls.__name__} is immutable")

        cls.__init__ = scope["__init__"]
        cls.__repr__, cls.__eq__, cls.__hash__, cls.__setattr__ = __repr__, __eq__, __hash__, __setattr__
        cls.__match_args__ = tuple(names)
        return cls
