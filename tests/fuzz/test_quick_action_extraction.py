"""GitLab quick-action extraction: the fast expression agrees with the plain port of GitLab's.

``gitvow_gitlab.quick_actions`` spells GitLab's line-start anchors as look-behinds so the
regex engine can skip to candidate characters. This checks, over text built from the
characters that matter (backticks, ``<``, ``>``, ``/``, newlines, carriage returns), that it
finds exactly the commands the straightforward port of ``Gitlab::QuickActions::Extractor``
finds.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

quick_actions = pytest.importorskip("gitvow_gitlab.quick_actions")

# The plain port: GitLab's EXCLUSION_REGEX and command expression, anchors as written there.
REFERENCE = re.compile(
    r"""
      (?P<code>^```.+?\n```$)
    | (?P<inline_code>`\n*.+?\n*`)
    | (?P<html>^<[^>]+?>\n.+?\n</[^>]+?>$)
    | (?P<quote>^>>>.+?\n>>>$)
    | ^/(?P<cmd>[^\s/]+)(?=[ \t]|\s*\n|\s*\Z)
    """,
    re.DOTALL | re.MULTILINE | re.IGNORECASE | re.VERBOSE,
)
PIECES = st.sampled_from(["/", "merge", "close", "`", "```", "\n", "\r\n", " ", "\t", "<b>", "</b>", ">>>", "x", "/ ",
                          "MERGE", "label ~a", "é", "<", ">"])


def reference(text: str) -> list[str]:
    text = text.replace("\r", "")
    return [m.group("cmd").casefold() for m in REFERENCE.finditer(text)
            if m.group("cmd") is not None and re.fullmatch(r"[a-z0-9_]+", m.group("cmd").casefold())]


@settings(max_examples=1000)  # cheap: many more than the profile's default
@given(st.lists(PIECES, max_size=30).map("".join))
def test_the_fast_expression_finds_what_gitlabs_finds(text: str) -> None:
    assert quick_actions.command_names(text) == reference(text)
