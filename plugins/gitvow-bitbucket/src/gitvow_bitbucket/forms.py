"""Form bodies as Bitbucket reads them: ``application/x-www-form-urlencoded`` and
``multipart/form-data``, each field's name and raw value, in order.

Bitbucket Cloud's ``POST …/src`` and Data Center's ``PUT …/browse/{path}`` take their commit as a
form, so what the write changes is read from one. The reading is strict: a body a server could
read another way than this module (a part named through RFC 2231 ``name*=``, a transfer
encoding, a header folded over lines, a missing closing boundary, a name that is not UTF-8) is
:class:`~gitvow.api_change.WriteUnreadable`, so the write is refused, never guessed at.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from gitvow.api_change import WriteUnreadable
from gitvow.comments import plain_encoding
from gitvow.request import Request

#: A form over this is not read: the write is unestablished (refused).
FORM_LIMIT = 64 * 1024 * 1024
_PARTS_LIMIT = 10_000
_BOUNDARY = re.compile(r'(?i)(?:^|;)\s*boundary=(?:"([^"\\\r\n]{1,70})"|([^\s;"]{1,70}))\s*(?:;|$)')
_DISPOSITION_PARAM = re.compile(r'\s*;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"([^"\\\r\n]*)"|([^\s;"]+))')


def content_type(request: Request) -> str:
    return request.header("content-type").split(";", 1)[0].strip().lower()


def form_fields(request: Request) -> list[tuple[str, bytes]]:
    """Every field of a form body, in order (names decoded as UTF-8, values as sent)."""
    if len(request.body) > FORM_LIMIT or not plain_encoding(request):
        raise WriteUnreadable("the form is over the read limit or content-encoded")
    kind = content_type(request)
    if kind == "application/x-www-form-urlencoded":
        return urlencoded(request.body)
    if kind == "multipart/form-data":
        return multipart(request.body, request.header("content-type"))
    raise WriteUnreadable("the body is not a form (application/x-www-form-urlencoded or multipart/form-data)")


def urlencoded(body: bytes) -> list[tuple[str, bytes]]:
    """``name=value&…`` (``+`` is a space, ``%XX`` a byte); an empty piece is skipped, as servers do."""
    fields: list[tuple[str, bytes]] = []
    for piece in body.split(b"&"):
        if not piece:
            continue
        name, _, value = piece.partition(b"=")
        fields.append((_name(unquote_to_bytes(name.replace(b"+", b" "))), unquote_to_bytes(value.replace(b"+", b" "))))
        if len(fields) > _PARTS_LIMIT:
            raise WriteUnreadable("the form has too many fields")
    return fields


def query_fields(query: str) -> list[tuple[str, bytes]]:
    """The query string's fields, read as a form."""
    return urlencoded(query.encode("utf-8", "surrogateescape"))


def _name(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise WriteUnreadable("a form field's name is not UTF-8") from None


def multipart(body: bytes, header: str) -> list[tuple[str, bytes]]:
    """Each part of a ``multipart/form-data`` body: its ``name`` and its bytes."""
    found = _BOUNDARY.search(header.split(";", 1)[1] if ";" in header else "")
    if found is None:
        raise WriteUnreadable("the multipart body names no boundary")
    delimiter = b"--" + (found.group(1) or found.group(2)).encode("ascii", "strict")
    chunks = body.split(b"\r\n" + delimiter)
    first = chunks[0]
    if first.startswith(delimiter):
        chunks[0] = first[len(delimiter):]
    else:  # a preamble before the first delimiter line: servers skip it, but it is not worth a guess
        raise WriteUnreadable("the multipart body does not start with its boundary")
    if len(chunks) < 2 or not chunks[-1].startswith(b"--"):
        raise WriteUnreadable("the multipart body has no closing boundary")
    if len(chunks) > _PARTS_LIMIT:
        raise WriteUnreadable("the form has too many parts")
    fields: list[tuple[str, bytes]] = []
    for chunk in chunks[:-1]:
        if not chunk.startswith(b"\r\n"):
            raise WriteUnreadable("a multipart boundary is followed by something other than a line break")
        head, separator, value = chunk[2:].partition(b"\r\n\r\n")
        if not separator:
            raise WriteUnreadable("a multipart part has no end of headers")
        fields.append((_part_name(head), value))
    return fields


def _part_name(head: bytes) -> str:
    name: str | None = None
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t"):
            raise WriteUnreadable("a multipart header is folded over lines")
        key, colon, value = line.partition(b":")
        if not colon:
            raise WriteUnreadable("a multipart header line is not a header")
        key_text = key.strip().lower()
        if key_text == b"content-transfer-encoding" and value.strip().lower() not in (b"7bit", b"8bit", b"binary"):
            raise WriteUnreadable("a multipart part has a transfer encoding")
        if key_text != b"content-disposition":
            continue
        if name is not None:
            raise WriteUnreadable("a multipart part has two Content-Disposition headers")
        name = _disposition_name(_name(value))
    if name is None:
        raise WriteUnreadable("a multipart part has no Content-Disposition name")
    return name


def _disposition_name(value: str) -> str:
    kind, _, params = value.strip().partition(";")
    if kind.strip().lower() != "form-data":
        raise WriteUnreadable("a multipart part is not form-data")
    names: list[str] = []
    rest = ";" + params
    while rest.strip():
        param = _DISPOSITION_PARAM.match(rest)
        if param is None:
            raise WriteUnreadable("a multipart part's Content-Disposition could not be read")
        key = param.group(1).lower()
        if key.endswith("*"):
            raise WriteUnreadable("a multipart part is named with RFC 2231 encoding")
        if key == "name":
            names.append(param.group(2) if param.group(2) is not None else param.group(3))
        rest = rest[param.end():]
    if len(names) != 1 or not names[0] or "%" in names[0]:
        raise WriteUnreadable("a multipart part has no single plain name")
    return names[0]


__all__ = ["FORM_LIMIT", "content_type", "form_fields", "multipart", "query_fields", "urlencoded"]
