"""``gitvow.frozen.dataclass`` builds the class ``dataclasses`` would: each behaviour side by side.

The kernel's value types use it so the agent hook never imports :mod:`dataclasses`; plugins
still call :func:`dataclasses.replace` and friends on them, and a real dataclass subclasses
one (``gitvow.policy.load.Policy``).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import pytest

from gitvow import frozen
from gitvow.request import Classification

_EMPTY: Mapping[str, str] = MappingProxyType({})


def _define(decorate: Callable[..., Any], make_field: Callable[..., Any]) -> type:
    @decorate(frozen=True, slots=True)
    class Point:
        """A value."""

        x: int
        y: str = "y"
        tags: tuple[str, ...] = ()
        extra: dict[str, int] = make_field(default_factory=dict)
        meta: Mapping[str, str] = make_field(default=_EMPTY)

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("negative")

        @property
        def double(self) -> int:
            return self.x * 2

    return Point


OURS = _define(frozen.dataclass, frozen.field)
REAL = _define(dataclasses.dataclass, dataclasses.field)
CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}), ((1, "a"), {}), ((1,), {"tags": ("t",)}), ((), {"x": 2, "extra": {"a": 1}}),
    ((1, "b", ("c",), {"d": 2}, {"e": "f"}), {}),
]
BAD_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}), ((1, 2, 3, 4, 5, 6), {}), ((1,), {"x": 2}), ((1,), {"nope": 1}), ((), {"y": "a", "tags": ()}),
]


def _outcome(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    try:
        made = cls(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc).replace(cls.__qualname__, "Point")
    return repr(made).replace(cls.__qualname__, "Point")


@pytest.mark.parametrize("rounds", [1, frozen._GENERATE_AFTER + 2])  # the general __init__, then the generated one
def test_construction_matches_dataclasses(rounds: int) -> None:
    cls = _define(frozen.dataclass, frozen.field)
    for _ in range(rounds):
        for args, kwargs in [*CALLS, *BAD_CALLS, ((-1,), {})]:
            assert _outcome(cls, args, kwargs) == _outcome(REAL, args, kwargs), (args, kwargs)
    assert cls.__init__.__code__.co_filename.endswith("frozen.py") == (rounds == 1)
    values = {"extra": None, "meta": None}
    assert cls(1, **values) == cls(1, **values) and cls(1, **values) != cls(2, **values)
    assert cls(1, **values).__eq__(REAL(1, **values)) is NotImplemented
    assert hash(cls(1, **values)) == hash(REAL(1, **values))


def test_value_semantics_match_dataclasses() -> None:
    for args, kwargs in CALLS:
        ours, real = OURS(*args, **kwargs), REAL(*args, **kwargs)
        assert ours == OURS(*args, **kwargs) and ours != real  # equal within a class only
        with pytest.raises(TypeError, match="unhashable type: 'dict'"):
            hash(ours)  # as hash(real): the extra field is a dict
        assert ours.double == real.double
    assert OURS(1) != OURS(2) and OURS(1).__eq__(object()) is NotImplemented
    hashable = _define(frozen.dataclass, frozen.field)
    values = {"extra": None, "meta": None}
    assert hash(hashable(1, **values)) == hash(REAL(1, **values)) == hash((1, "y", (), None, None))
    assert OURS.__match_args__ == REAL.__match_args__
    assert OURS.__slots__ == REAL.__slots__ and not hasattr(OURS(1), "__dict__")
    assert OURS.__doc__ == "A value." and OURS.__qualname__ == REAL.__qualname__
    match OURS(3, "z"):
        case OURS(x, y):
            assert (x, y) == (3, "z")


def test_assignment_is_refused_as_dataclasses_refuses_it() -> None:
    point = OURS(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'y'"):
        del point.y  # type: ignore[misc]


def test_dataclasses_functions_work_on_them() -> None:
    point = OURS(1, tags=("a",), meta={})  # asdict copies values deeply, and a mappingproxy cannot be
    assert dataclasses.is_dataclass(OURS) and dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == [f.name for f in dataclasses.fields(REAL)]
    assert dataclasses.asdict(point) == dataclasses.asdict(REAL(1, tags=("a",), meta={}))
    assert dataclasses.replace(point, y="b") == OURS(1, "b", ("a",), meta={})
    assert frozen.replace(point, y="b") == OURS(1, "b", ("a",), meta={})
    with pytest.raises(ValueError, match="negative"):
        frozen.replace(point, x=-1)
    with pytest.raises(TypeError):
        frozen.replace(point, nope=1)


def test_pickle_and_copy_round_trip() -> None:
    classification = Classification(("pr.merge",), repo="o/r", details={"a": 1})
    assert pickle.loads(pickle.dumps(classification)) == classification
    assert copy.copy(classification) == classification and copy.deepcopy(classification) == classification


def test_a_real_dataclass_may_subclass_one() -> None:
    from gitvow.policy.compile import CompiledPolicy
    from gitvow.policy.load import Policy

    names = [f.name for f in dataclasses.fields(Policy)]
    assert names[: len(dataclasses.fields(CompiledPolicy))] == [f.name for f in dataclasses.fields(CompiledPolicy)]
    policy = Policy()
    assert dataclasses.replace(policy).source == policy.source


def test_what_it_does_not_build_is_left_to_dataclasses() -> None:
    @frozen.dataclass(frozen=True)
    class Unslotted:
        x: int = 0

    @frozen.dataclass(frozen=True, slots=True)
    class Keyed:
        x: int = frozen.field(default=0, repr=False)

    for cls in (Unslotted, Keyed):
        assert "__dataclass_fields__" in cls.__dict__ and isinstance(cls.__dict__["__dataclass_fields__"], dict)
    assert repr(Keyed()) == "test_what_it_does_not_build_is_left_to_dataclasses.<locals>.Keyed()"
    with pytest.raises(ValueError, match="mutable default"):
        @frozen.dataclass(frozen=True, slots=True)
        class Mutable:
            x: list[int] = []
