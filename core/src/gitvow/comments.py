"""Comment commands: text in a comment that a bot or the forge turns into an operation.

A comment is not only a comment when something reads it: Prow's ``/lgtm`` and ``/approve``,
bors' ``bors r+`` and Mergify's ``@Mergifyio queue`` merge pull requests on any forge. The
operator declares such patterns in ``[comment_commands]``; the pipeline applies them to the
comment bodies an adapter exposes (:meth:`gitvow.adapter.Adapter.comment_bodies`) and adds
the operations they mean to the request's, so a comment that merges is judged as a merge.

A pattern is a Python regular expression searched in every line of every body (leading and
trailing whitespace removed, case-insensitive unless the row says otherwise). Lines inside
code blocks are searched too: stricter than the bots, never looser. The table is empty by
default, and an empty table costs nothing.

:func:`bodies_of` is the generic reader every adapter gets by default: on a request whose
operations carry text (a comment, a review, an issue or pull request body), it returns every
string the request sends (JSON values, form values, query-string values and, for GraphQL,
every string literal of the document and every string in its variables). ``None`` means the
body could not be read (a ``Content-Encoding`` counts: what is read must be what the server
reads): with a non-empty table that request is refused, never guessed at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gitvow.request import Classification, Request
from gitvow.vocabulary import UNKNOWN

if TYPE_CHECKING:
    from typing import Any

#: Operations whose requests carry text a human or a bot reads as a comment or a body.
TEXT_OPERATIONS = frozenset({"issue.comment", "pr.review", "issue.create", "issue.edit", "pr.create", "pr.edit"})
#: Bodies larger than this are not read: the request is refused when a table is configured.
BODY_LIMIT = 256 * 1024
_GRAPHQL_TOKEN_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class CommentCommand:
    """One ``[comment_commands.NAME]`` row, compiled."""

    name: str
    pattern: re.Pattern[str]
    operations: tuple[str, ...]

    def matches(self, line: str) -> bool:
        return self.pattern.search(line) is not None


def compile_command(name: str, pattern: str, operations: Sequence[str], *, ignore_case: bool = True) -> CommentCommand:
    """A compiled row; raises ``re.error`` for a pattern that does not compile."""
    flags = re.IGNORECASE if ignore_case else 0
    return CommentCommand(name, re.compile(pattern, flags), tuple(operations))


def lines_of(bodies: Iterable[str]) -> Iterable[str]:
    """Every line of every body, stripped. ``\\r``, ``\\n`` and the Unicode line breaks all split."""
    for body in bodies:
        for line in body.splitlines():
            stripped = line.strip()
            if stripped:
                yield stripped


def commands_in(bodies: Iterable[str], table: Sequence[CommentCommand]) -> list[CommentCommand]:
    """The rows of ``table`` that some line of ``bodies`` matches, in table order."""
    lines = list(lines_of(bodies))
    return [command for command in table if any(command.matches(line) for line in lines)]


def apply_commands(
    classification: Classification, bodies: Sequence[str] | None, table: Sequence[CommentCommand]
) -> Classification:
    """``classification`` with the operations the comment commands in ``bodies`` carry added.

    ``bodies`` None (unreadable) makes the request ``unknown``: with a table configured, a
    comment gitvow cannot read might be a merge.
    """
    if bodies is None:
        return replace(
            classification,
            operations=_merged(classification.operations, (UNKNOWN,)),
            note="the comment body could not be read for [comment_commands]",
        )
    found = commands_in(bodies, table)
    if not found:
        return classification
    added = tuple(op for command in found for op in command.operations)
    details = {**classification.details, "comment_commands": tuple(command.name for command in found)}
    return replace(classification, operations=_merged(classification.operations, added), details=details)


def _merged(first: tuple[str, ...], more: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *more)))


def carries_text(classification: Classification) -> bool:
    """Whether the request's operations include one that carries comment text."""
    return any(op in TEXT_OPERATIONS for op in classification.operations)


def bodies_of(request: Request, classification: Classification) -> tuple[str, ...] | None:
    """Every string a text-carrying request sends; () for other requests; None if unreadable."""
    if not carries_text(classification):
        return ()
    from urllib.parse import parse_qsl  # urllib.parse (and ipaddress) cost the agent hook's forge path

    out: list[str] = [value for _, value in parse_qsl(request.query, keep_blank_values=True)]
    body = request.body
    if not body.strip():
        return tuple(out)
    if len(body) > BODY_LIMIT or not plain_encoding(request):
        return None
    content_type = request.header("content-type").split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if content_type == "application/x-www-form-urlencoded":
        out.extend(value for _, value in parse_qsl(text, keep_blank_values=True))
        return tuple(out)
    if content_type.startswith("multipart/"):
        return None
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(payload, dict) and isinstance(payload.get("query"), str):
        literals = graphql_strings(payload["query"])
        if literals is None:
            return None
        out.extend(literals)
        payload = {k: v for k, v in payload.items() if k != "query"}
    out.extend(strings_in(payload))
    return tuple(out)


def plain_encoding(request: Request) -> bool:
    """Whether the body is sent as is (no ``Content-Encoding`` a server would undo first)."""
    return request.header("content-encoding").strip().lower() in ("", "identity")


def strings_in(value: Any) -> Iterable[str]:
    """Every string in a JSON value (keys included: a key may be what a server reads as text)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                yield str(key)
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)


def graphql_strings(query: str) -> list[str] | None:
    """Every string literal in a GraphQL document (arguments, defaults, fragments), or None if it does not parse."""
    from graphql import GraphQLError, StringValueNode, parse, visit
    from graphql.language import Visitor

    try:
        document = parse(query, no_location=True, max_tokens=_GRAPHQL_TOKEN_LIMIT)
    except (GraphQLError, RecursionError):
        return None
    found: list[str] = []

    class _Strings(Visitor):
        def enter_string_value(self, node: StringValueNode, *_args: object) -> None:
            found.append(node.value)

    visit(document, _Strings())
    return found
