"""The quicker check of mitmproxy's HTTP messages decides exactly as mitmproxy's own, and raises nothing to pass."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
import typing
from collections.abc import Sequence
from typing import Any

import pytest
from mitmproxy import http
from mitmproxy.utils import typecheck

from gitvow_proxy import message_check, run
from gitvow_proxy.message_check import accepted_classes, checked_post_init

#: Values of every kind a message field could be given, right or wrong.
VALUES: tuple[Any, ...] = (None, b"", b"GET", "", "GET", 0, 443, 1.5, True, http.Headers(), [], (), object())


def _outcome(check: Any, name: str, value: Any, annotation: Any) -> str:
    try:
        check(name, value, annotation)
    except TypeError as exc:
        return f"TypeError: {exc}"
    return "passes"


def _quick_outcome(name: str, value: Any, annotation: Any) -> str:
    """The quicker check's outcome for one field of ``annotation`` holding ``value``."""
    one = object.__new__(dataclasses.make_dataclass("One", [(name, annotation)]))
    setattr(one, name, value)
    quick = checked_post_init(typecheck.check_option_type)
    return _outcome(lambda *_: quick(one), name, value, annotation)


@pytest.mark.parametrize("cls", [http.RequestData, http.ResponseData])
def test_every_field_of_every_message_is_decided_as_mitmproxy_decides(cls: type) -> None:
    for field in dataclasses.fields(cls):
        for value in VALUES:
            assert _quick_outcome(field.name, value, field.type) == \
                _outcome(typecheck.check_option_type, field.name, value, field.type), (cls.__name__, field.name, value)


@pytest.mark.parametrize("annotation", [Sequence[str], tuple[int, int], bytes | Sequence[str], typing.Any])
def test_an_annotation_isinstance_cannot_decide_goes_to_mitmproxys_check(annotation: Any) -> None:
    for value in (*VALUES, ["a"], (1, 2), ("a", "b")):
        assert _quick_outcome("field", value, annotation) == \
            _outcome(typecheck.check_option_type, "field", value, annotation), value


def test_a_message_read_off_the_wire_passes_without_calling_mitmproxys_check() -> None:
    calls: list[str] = []
    quick = checked_post_init(lambda name, value, annotation: calls.append(name))
    head = http.RequestData(host="h", port=443, method=b"GET", scheme=b"https", authority=b"", path=b"/",
                            http_version=b"HTTP/1.1", headers=http.Headers(), content=None, trailers=None,
                            timestamp_start=1.0, timestamp_end=None)
    answer = http.ResponseData(http_version=b"HTTP/1.1", status_code=200, reason=b"OK", headers=http.Headers(),
                               content=b"{}", trailers=None, timestamp_start=1.0, timestamp_end=2)
    quick(head)
    quick(answer)
    assert calls == []
    head.port = "443"  # type: ignore[assignment]
    quick(head)
    assert calls == ["port"]


def test_a_wrong_field_raises_mitmproxys_own_error_once_installed() -> None:
    assert message_check.install() is True
    assert message_check.install() is True  # once is enough, twice changes nothing
    assert getattr(http.MessageData.__post_init__, "gitvow_checked", False)
    with pytest.raises(TypeError, match=r"Expected bytes \| None for content, but got <class 'str'>"):
        http.RequestData(host="h", port=443, method=b"GET", scheme=b"https", authority=b"", path=b"/",
                         http_version=b"HTTP/1.1", headers=http.Headers(), content="text",  # type: ignore[arg-type]
                         trailers=None, timestamp_start=1.0, timestamp_end=None)
    request = http.Request.make("POST", "https://example.com/x", b"body")
    assert request.content == b"body" and request.data.trailers is None


@pytest.mark.parametrize(("annotation", "accepted"), [
    (bytes | None, (bytes, type(None))),
    (typing.Optional[http.Headers], (http.Headers, type(None))),  # noqa: UP045 (the spelling mitmproxy may use)
    (float, (float, int)),
    (float | None, (float, int, type(None))),
    (int, (int,)),
    (typing.Any, None),
    (Sequence[str], None),
    (tuple[int, int], None),
    (bytes | Sequence[str], None),
    ("bytes", None),
])
def test_only_what_isinstance_decides_exactly_is_decided_without_mitmproxys_check(
        annotation: Any, accepted: tuple[type, ...] | None) -> None:
    assert accepted_classes(annotation) == accepted


def test_someone_elses_check_and_no_check_are_left_as_they_are() -> None:
    code = """
import sys
from mitmproxy import http
from gitvow_proxy import message_check, run
def theirs(self): pass
http.MessageData.__post_init__ = theirs
assert message_check.install() is False and http.MessageData.__post_init__ is theirs
del http.MessageData.__post_init__
assert message_check.install() is False and "__post_init__" not in http.MessageData.__dict__
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gitvow_proxy_and_gitvows_mitmdump_script_install_it() -> None:
    code = """
from mitmproxy import http
import gitvow_proxy.run
assert not getattr(http.MessageData.__post_init__, "gitvow_checked", False)
import gitvow_proxy.mitmdump_script
assert http.MessageData.__post_init__.gitvow_checked
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert "message_check.install()" in inspect.getsource(run.serve)
