"""GitLab quick actions: the commands GitLab runs from a note or a description.

A note reading ``/merge`` merges the merge request it is posted on; ``/create_merge_request``
on an issue opens a merge request and a branch; ``/move`` moves an issue to another project.
So a comment is classified as the comment *and* every operation its quick actions carry,
and the evaluator's strictest-verdict rule decides. The commands and the operation each
carries per context are ``data/quick_actions.tsv``, derived from GitLab's own documentation
(``scripts/derive_quick_actions.py``; the file's header names the versions read).

Extraction follows GitLab's ``Gitlab::QuickActions::Extractor``:

- a command is ``/`` at the very start of a line, a name matched case-insensitively, then a
  space and arguments, or only whitespace to the end of the line;
- text inside fenced code blocks (```````` ``` ````````), inline code spans, HTML blocks and
  ``>>>`` quote blocks is not a command (the same exclusion expression, ported);
- ``\\r`` is removed first, as GitLab does.

Where this reader could disagree with GitLab it errs towards seeing a command: a line
``/name`` whose name has the shape of a command but is not in the table is ``unknown``
(a command of a newer GitLab, or a typo GitLab ignores: either way not allowed unread),
names are compared after Unicode case folding (``/MERGE``, ``/merge`` with a long s), and a
tab after the name counts as a separator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from gitvow.vocabulary import OPERATIONS, UNKNOWN

#: Where a note or description lives: each has its own column in the table.
CONTEXTS = ("issue", "merge_request", "commit")

# GitLab's EXCLUSION_REGEX (code blocks, inline code, HTML blocks, >>> quotes), then a command
# at line start. Ruby's /m is Python's DOTALL; $ is a line anchor in Ruby, MULTILINE here.
# GitLab's "^" is spelled as a look-behind *after* each alternative's first characters
# ("not preceded by anything but a newline"), so every alternative starts with a literal and
# :func:`command_names` jumps between those characters (``_CANDIDATE``) and tries the whole
# expression only there: the same matches as ``finditer``, without trying every position.
_EXTRACT = re.compile(
    r"""
      (?P<code>```(?<![^\n]```).+?\n```$)
    | (?P<inline_code>`\n*.+?\n*`)
    | (?P<html><(?<![^\n]<)[^>]+?>\n.+?\n</[^>]+?>$)
    | (?P<quote>>>>(?<![^\n]>>>).+?\n>>>$)
    | /(?<![^\n]/)(?P<cmd>[^\s/]+)(?=[ \t]|\s*\n|\s*\Z)
    """,
    re.DOTALL | re.MULTILINE | re.IGNORECASE | re.VERBOSE,
)
_CANDIDATE = re.compile(r"[`<>/]")
#: What a command name looks like; ``/usr/bin`` or ``/shrug!`` is text, ``/frobnicate`` is unknown.
_NAME = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True, slots=True)
class QuickAction:
    """One row of ``data/quick_actions.tsv``: per context, the operations or None (not run there)."""

    name: str
    aliases: tuple[str, ...]
    operations: Mapping[str, tuple[str, ...] | None]
    reason: str

    def in_context(self, context: str | None) -> tuple[str, ...]:
        """Operations in ``context``; an unknown context (None) takes every context's."""
        if context is not None:
            return self.operations.get(context) or ()
        return tuple(dict.fromkeys(op for ops in self.operations.values() if ops for op in ops))


@cache
def table() -> Mapping[str, QuickAction]:
    """Every name and alias → its row, read once from the packaged TSV."""
    text = resources.files("gitvow_gitlab").joinpath("data/quick_actions.tsv").read_text(encoding="utf-8")
    return parse_table(text)


def parse_table(text: str) -> dict[str, QuickAction]:
    """The TSV's rows by name and alias; a malformed row or an operation outside the vocabulary raises."""
    rows: dict[str, QuickAction] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if len(cells) != 3 + len(CONTEXTS):
            raise ValueError(f"quick_actions.tsv line {number}: expected {3 + len(CONTEXTS)} tab-separated cells")
        name, aliases, *columns, reason = cells
        operations: dict[str, tuple[str, ...] | None] = {}
        for context, cell in zip(CONTEXTS, columns, strict=True):
            ops = None if cell == "-" else tuple(cell.split(","))
            for op in ops or ():
                if op not in OPERATIONS:
                    raise ValueError(f"quick_actions.tsv line {number}: {op!r} is not an operation")
            operations[context] = ops
        action = QuickAction(name, () if aliases == "-" else tuple(aliases.split(",")), operations,
                             "" if reason == "-" else reason)
        for key in (action.name, *action.aliases):
            if key in rows:
                raise ValueError(f"quick_actions.tsv line {number}: /{key} is listed twice")
            rows[key] = action
    return rows


def command_names(text: str) -> list[str]:
    """The command names GitLab would see in ``text`` (case-folded), in order."""
    text = text.replace("\r", "")
    if not text.startswith("/") and "\n/" not in text:
        return []  # no line starts with "/": nothing to extract (the common case, and cheap)
    names: list[str] = []
    position = 0
    while (candidate := _CANDIDATE.search(text, position)) is not None:
        match = _EXTRACT.match(text, candidate.start())
        if match is None:
            position = candidate.start() + 1
            continue
        position = max(match.end(), candidate.start() + 1)
        raw = match.group("cmd")
        if raw is not None and _NAME.fullmatch(folded := raw.casefold()):
            names.append(folded)
    return names


@dataclass(frozen=True, slots=True)
class Found:
    """What the quick actions of some texts carry: operations, and why any is ``unknown``."""

    operations: tuple[str, ...]
    notes: tuple[str, ...]


def quick_actions(texts: Iterable[str], context: str | None) -> Found:
    """The operations the quick actions in ``texts`` carry in ``context`` (None: not known)."""
    rows = table()
    operations: list[str] = []
    notes: list[str] = []
    for text in texts:
        for name in command_names(text):
            action = rows.get(name)
            if action is None:
                operations.append(UNKNOWN)
                notes.append(f"the text carries /{name}, a GitLab quick action gitvow does not know")
                continue
            ops = action.in_context(context)
            operations.extend(ops)
            if UNKNOWN in ops:
                notes.append(f"quick action /{name}: {action.reason}")
    return Found(tuple(dict.fromkeys(operations)), tuple(dict.fromkeys(notes)))
