"""``@dataclass(frozen=True, slots=True)`` without importing :mod:`dataclasses`.

The agent hook is a fresh process on every tool call, and its forge path builds the kernel's
value types (:class:`~gitvow.request.Classification`, :class:`~gitvow.verdict.Verdict`…).
Importing :mod:`dataclasses` pulls in :mod:`inspect`, :mod:`ast`, :mod:`dis` and
:mod:`tokenize`, and each decorated class costs six generated functions: together a third of
that path's time. The kernel's modules therefore import ``dataclass``, ``field`` and
``replace`` from here. Type checkers see the real ones (the ``TYPE_CHECKING`` branch), so a
class is checked exactly as a dataclass.

At run time :func:`dataclass` builds the same class a frozen, slotted dataclass is: the
``__init__`` (with defaults, ``default_factory`` and ``__post_init__``), ``__repr__``,
``__eq__``, ``__hash__``, ``__match_args__``, ``__slots__``, pickling, and assignment refused
with :class:`dataclasses.FrozenInstanceError`. ``__dataclass_fields__`` is computed on first
use, so :func:`dataclasses.replace`, :func:`dataclasses.fields`, :func:`dataclasses.asdict`
and :func:`dataclasses.is_dataclass` work on these classes as on any dataclass (plugins call
them), and a real dataclass may subclass one. Anything beyond ``frozen=True, slots=True``
(other options, ``ClassVar``/``InitVar`` fields, dataclass bases, ``field`` options other
than a default) is handed to :mod:`dataclasses` itself: the result is never a different class,
only sometimes a slower one to build.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: this module exists to keep the hook's imports small
if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
    from dataclasses import field as field
    from dataclasses import replace as replace
else:
    from operator import attrgetter

    _MISSING = object()
    _FACTORY = object()  # the default of a field with a default_factory, as dataclasses writes it

    class _Field:
        """What :func:`field` returns for the options built here: a default or a default factory."""

        __slots__ = ("default", "default_factory", "options")

        def __init__(self, default, default_factory, options):
            self.default = default
            self.default_factory = default_factory
            self.options = options

    def field(*, default=_MISSING, default_factory=_MISSING, **options):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        return _Field(default, default_factory, options)

    class _Lazy:
        """``__dataclass_fields__`` / ``__dataclass_params__``: built by :mod:`dataclasses` on first use."""

        def __init__(self, cls, spec, attr):
            self.cls, self.spec, self.attr = cls, spec, attr

        def __get__(self, instance, owner=None):
            built = _dataclass_twin(self.cls, self.spec)
            type.__setattr__(self.cls, "__dataclass_fields__", built.__dataclass_fields__)
            type.__setattr__(self.cls, "__dataclass_params__", built.__dataclass_params__)
            return getattr(built, self.attr)

    def _dataclass_twin(cls, spec):
        """A real dataclass with ``cls``'s fields, whose ``Field`` objects ``cls`` adopts."""
        import dataclasses

        namespace = {"__annotations__": dict(spec.annotations), "__module__": cls.__module__,
                     "__qualname__": cls.__qualname__}
        for name, value in spec.declared.items():
            if isinstance(value, _Field):
                value = dataclasses.field(default=value.default if value.default is not _MISSING else dataclasses.MISSING,
                                          default_factory=(value.default_factory if value.default_factory is not _MISSING
                                                           else dataclasses.MISSING))
            namespace[name] = value
        return dataclasses.dataclass(frozen=True)(type(cls.__name__, (), namespace))

    class _Spec:
        __slots__ = ("annotations", "declared", "names")

        def __init__(self, annotations, declared):
            self.annotations = annotations
            self.declared = declared  # name -> default value or _Field, as written in the class
            self.names = tuple(annotations)

    def _simple_spec(cls):
        """The fields of ``cls`` when this module can build it alone, else None."""
        if cls.__bases__ != (object,) or "__slots__" in cls.__dict__:
            return None
        annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - inspect is what this module avoids importing
        declared = {}
        seen_default = False
        for name, annotation in annotations.items():
            if isinstance(annotation, str):
                if annotation.startswith(("ClassVar", "InitVar", "typing.", "dataclasses.", "KW_ONLY")):
                    return None  # what dataclasses reads as a pseudo-field: left to it
            elif type(annotation).__module__ in ("typing", "dataclasses") or annotation.__class__ is type(None):
                return None
            if name in cls.__dict__:
                value = cls.__dict__[name]
                if isinstance(value, _Field) and (value.options or (value.default is _MISSING
                                                                    and value.default_factory is _MISSING)):
                    return None
                default = value.default if isinstance(value, _Field) else value
                if default is not _MISSING and type(default).__hash__ is None:
                    raise ValueError(f"mutable default {type(default)} for field {name} is not allowed: use default_factory")
                declared[name] = value
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        return _Spec(annotations, declared)

    def _init(cls, spec):
        """The generated ``__init__``, ``__eq__`` and ``__hash__``: one ``exec``, as
        :mod:`dataclasses` generates them."""
        scope = {"__set": object.__setattr__, "__FACTORY": _FACTORY}
        params, body = [], []
        for name in spec.names:
            value = spec.declared.get(name, _MISSING)
            if value is _MISSING:
                params.append(name)
                body.append(f"    __set(self, {name!r}, {name})\n")
            elif isinstance(value, _Field) and value.default_factory is not _MISSING:
                scope[f"__factory_{name}"] = value.default_factory
                params.append(f"{name}=__FACTORY")
                body.append(f"    __set(self, {name!r}, __factory_{name}() if {name} is __FACTORY else {name})\n")
            else:
                scope[f"__default_{name}"] = value.default if isinstance(value, _Field) else value
                params.append(f"{name}=__default_{name}")
                body.append(f"    __set(self, {name!r}, {name})\n")
        if "__post_init__" in cls.__dict__:
            body.append("    self.__post_init__()\n")
        mine = "".join(f"self.{name}," for name in spec.names)
        theirs = "".join(f"other.{name}," for name in spec.names)
        source = (f"def __init__(self, {', '.join(params)}):\n{''.join(body) or '    pass\n'}"
                  "def __eq__(self, other):\n"
                  f"    if other.__class__ is self.__class__:\n        return ({mine}) == ({theirs})\n"
                  "    return NotImplemented\n"
                  f"def __hash__(self):\n    return hash(({mine}))\n")
        exec(source, scope)
        for name in ("__init__", "__eq__", "__hash__"):
            scope[name].__qualname__ = f"{cls.__qualname__}.{name}"
        return scope["__init__"], scope["__eq__"], scope["__hash__"]

    #: Instances built by the general ``__init__`` before the class gets a generated one.
    _GENERATE_AFTER = 64

    def _first_init(cls, spec):
        """The ``__init__`` a class starts with: it binds arguments as the generated one would,
        and after :data:`_GENERATE_AFTER` instances puts the generated one (one ``exec``, faster
        per instance) in its place. The agent hook builds a few instances of a few classes and
        never compiles one; the proxy compiles those it builds per request, once."""
        names, declared = spec.names, spec.declared
        qualname = f"{cls.__qualname__}.__init__"
        post_init = "__post_init__" in cls.__dict__
        required = len(names) - len(declared)
        takes = f"{len(names) + 1}" if required == len(names) else f"from {required + 1} to {len(names) + 1}"
        built = 0

        def __init__(self, *args, **kwargs):
            nonlocal built
            built += 1
            if built > _GENERATE_AFTER:
                init, eq, hash_ = _init(cls, spec)  # eq and hash as fast as dataclasses' too
                type.__setattr__(cls, "__init__", init)
                type.__setattr__(cls, "__eq__", eq)
                type.__setattr__(cls, "__hash__", hash_)
                init(self, *args, **kwargs)
                return
            if len(args) > len(names):
                raise TypeError(f"{qualname}() takes {takes} positional arguments but {len(args) + 1} were given")
            values = dict(zip(names, args, strict=False))
            for name, value in kwargs.items():
                if name in values:
                    raise TypeError(f"{qualname}() got multiple values for argument {name!r}")
                if name not in declared and name not in names:
                    raise TypeError(f"{qualname}() got an unexpected keyword argument {name!r}")
                values[name] = value
            missing = []
            for name in names:
                if name in values:
                    object.__setattr__(self, name, values[name])
                    continue
                default = declared.get(name, _MISSING)
                if default is _MISSING:
                    missing.append(name)
                elif isinstance(default, _Field):
                    object.__setattr__(self, name, default.default if default.default_factory is _MISSING
                                       else default.default_factory())
                else:
                    object.__setattr__(self, name, default)
            if missing:
                quoted = [repr(m) for m in missing]
                listed = quoted[0] if len(quoted) == 1 else (
                    f"{quoted[0]} and {quoted[1]}" if len(quoted) == 2 else f"{', '.join(quoted[:-1])}, and {quoted[-1]}")
                raise TypeError(f"{qualname}() missing {len(missing)} required positional argument"
                                f"{'s' if len(missing) > 1 else ''}: {listed}")
            if post_init:
                self.__post_init__()

        __init__.__qualname__ = qualname
        return __init__

    def _methods(spec):
        names = spec.names
        key = attrgetter(*names) if len(names) > 1 else (lambda self: (getattr(self, names[0]),)) if names else (
            lambda self: ())

        def __repr__(self):
            return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

        def __eq__(self, other):
            if other.__class__ is self.__class__:
                return key(self) == key(other)
            return NotImplemented

        def __hash__(self):
            return hash(key(self))

        def __getstate__(self):
            return [getattr(self, n) for n in names]

        def __setstate__(self, state):
            for name, value in zip(names, state, strict=True):
                object.__setattr__(self, name, value)

        return {"__repr__": __repr__, "__eq__": __eq__, "__hash__": __hash__, "__getstate__": __getstate__,
                "__setstate__": __setstate__}

    def _frozen(cls, names):
        def __setattr__(self, name, value):
            if type(self) is cls or name in names:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self, name):
            if type(self) is cls or name in names:
                from dataclasses import FrozenInstanceError

                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        return __setattr__, __delattr__

    def _build(cls, spec):
        namespace = {k: v for k, v in cls.__dict__.items()
                     if k not in spec.names and k not in ("__dict__", "__weakref__")}
        namespace["__slots__"] = spec.names
        built = type(cls)(cls.__name__, cls.__bases__, namespace)
        built.__qualname__ = cls.__qualname__
        built.__init__ = _first_init(built, spec)
        for name, method in _methods(spec).items():
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(built, name, method)
        built.__setattr__, built.__delattr__ = _frozen(built, frozenset(spec.names))
        built.__match_args__ = spec.names
        built.__dataclass_fields__ = _Lazy(built, spec, "__dataclass_fields__")
        built.__dataclass_params__ = _Lazy(built, spec, "__dataclass_params__")
        built.__gitvow_fields__ = spec.names
        return built

    #: Methods a class may define itself, which dataclasses would then keep or refuse: such a
    #: class is left to dataclasses.
    _GENERATED = frozenset({"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__",
                            "__getstate__", "__setstate__", "__match_args__"})

    def _by_dataclasses(cls, options):
        import dataclasses

        for name, value in list(cls.__dict__.items()):
            if isinstance(value, _Field):
                setattr(cls, name, dataclasses.field(
                    default=value.default if value.default is not _MISSING else dataclasses.MISSING,
                    default_factory=value.default_factory if value.default_factory is not _MISSING else dataclasses.MISSING,
                    **value.options))
        return dataclasses.dataclass(cls, **options)

    def dataclass(cls=None, /, **options):
        """``@dataclass(frozen=True, slots=True)``, built here; anything else by :mod:`dataclasses`."""

        def wrap(cls):
            simple = options == {"frozen": True, "slots": True} and not _GENERATED & cls.__dict__.keys()
            spec = _simple_spec(cls) if simple else None
            if spec is None:
                return _by_dataclasses(cls, options)
            return _build(cls, spec)

        return wrap if cls is None else wrap(cls)

    def replace(obj, /, **changes):
        """:func:`dataclasses.replace`, without importing it for the classes built here."""
        names = getattr(type(obj), "__gitvow_fields__", None)
        if names is None or type(obj).__dict__.get("__gitvow_fields__") is not names:
            import dataclasses

            return dataclasses.replace(obj, **changes)
        for name in names:
            if name not in changes:
                changes[name] = getattr(obj, name)
        return obj.__class__(**changes)


__all__ = ["dataclass", "field", "replace"]
