"""``git push -o OPTION``: what a push option asks the forge to do, as operations.

A push option is read by the forge's receive hooks, and some of them act: GitLab's
``merge_request.create`` opens a merge request (``pr.create``) and
``merge_request.merge_when_pipeline_succeeds`` / ``merge_request.auto_merge`` merge it when
its pipeline passes (``pr.merge``). Those become operations of the push, judged like the
same act through the API; ``ci.skip`` only skips a pipeline. Any other option is not read:
the push is refused (``unknown``), never forwarded with an effect nobody judged.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Options that change nothing on the forge beyond the push itself.
_INERT = frozenset({"ci.skip"})
_MERGES = frozenset({"merge_request.merge_when_pipeline_succeeds", "merge_request.auto_merge"})
_MERGE_REQUEST = "merge_request."


def option_operations(options: Iterable[str]) -> tuple[tuple[str, ...], str]:
    """The operations ``options`` add to ``git.push`` (each once), and the first option that is
    not read (``""`` when every one is)."""
    found: list[str] = []
    for option in options:
        name = option.split("=", 1)[0].strip()
        if name in _INERT:
            continue
        if name in _MERGES:
            found.extend(("pr.create", "pr.merge"))
        elif name.startswith(_MERGE_REQUEST) and len(name) > len(_MERGE_REQUEST):
            found.append("pr.create")
        else:
            return tuple(dict.fromkeys(found)), name or option
    return tuple(dict.fromkeys(found)), ""


__all__ = ["option_operations"]
