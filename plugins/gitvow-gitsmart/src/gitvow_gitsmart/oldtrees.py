"""A commit's trees as the forge holds them, fetched with git's own upload-pack.

The first push on top of a clone carries new trees whose parent's trees this process never
saw: a file deleted in a directory that also gains new content is invisible in the new trees
alone. Where a path rule could name such a deletion, the enforcement point asks the forge for
the parent's trees the way ``git clone --filter=blob:none --depth=1`` does — protocol v2
``fetch`` with ``want <commit>``, ``deepen 1``, ``filter blob:none`` — reads the answer with
the push's own pack reader (ids computed here, so the answer cannot lie about content) and
remembers it in :data:`gitvow_gitsmart.classify.KNOWN_TREES`; the push, read again, is then
an exact diff. GitHub, GitLab, Gitea and Forgejo serve filters; a forge that does not answers
an error, and the push is refused (``change_unestablished``) rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow.githead import TREES_KIND
from gitvow.request import Resolution, Target
from gitvow.targets import Fetch
from gitvow_gitsmart.adapter import pkt
from gitvow_gitsmart.changes import commit_links
from gitvow_gitsmart.pack import PackError, read_pack

#: Most bytes of trees fetched for one commit (the store of known trees holds 32 MiB).
TREES_LIMIT = 32 * 1024 * 1024
#: The headers of git's own upload-pack request, protocol v2.
UPLOAD_HEADERS = {
    "Content-Type": "application/x-git-upload-pack-request",
    "Accept": "application/x-git-upload-pack-result",
    "Git-Protocol": "version=2",
}


def fetch_request(commit: str) -> bytes:
    """The protocol v2 ``fetch`` of ``commit`` and its trees, no blobs, no history."""
    return (pkt(b"command=fetch\n") + b"0001" + pkt(b"no-progress\n") + pkt(f"want {commit}\n".encode())
            + pkt(b"deepen 1\n") + pkt(b"filter blob:none\n") + pkt(b"done\n") + b"0000")


def _pkt_lines(answer: bytes) -> list[bytes | None]:
    """The pkt-lines of an answer; None for the special packets (flush, delim, end)."""
    lines: list[bytes | None] = []
    pos = 0
    while pos < len(answer):
        try:
            size = int(answer[pos: pos + 4], 16)
        except ValueError:
            raise PackError("the forge's upload-pack answer is not pkt-lines") from None
        if size < 4:
            lines.append(None)
            pos += 4
            continue
        if pos + size > len(answer):
            raise PackError("the forge's upload-pack answer is truncated")
        lines.append(answer[pos + 4: pos + size])
        pos += size
    return lines


def answer_pack(answer: bytes) -> bytes:
    """The pack of a protocol v2 ``fetch`` answer: the side-band data after ``packfile``."""
    data: list[bytes] = []
    in_pack = False
    for line in _pkt_lines(answer):
        if line is None:
            continue
        if line.startswith(b"ERR "):
            raise PackError("the forge refused the fetch")
        if not in_pack:
            in_pack = line == b"packfile\n"
            continue
        band, payload = line[:1], line[1:]
        if band == b"\x01":
            data.append(payload)
        elif band == b"\x03":
            raise PackError("the forge refused the fetch")
    if not in_pack:
        raise PackError("the forge's answer carries no pack (filters not served?)")
    return b"".join(data)


def resolve_trees(targets: Sequence[Target], fetch: Fetch) -> Mapping[Target, Resolution]:
    """Fetch each target commit's trees (``POST target.at`` with :data:`UPLOAD_HEADERS`) into
    the store of known trees; a commit whose root tree did not come stays unresolved."""
    from gitvow_gitsmart.classify import KNOWN_TREES

    answers: dict[Target, Resolution] = {}
    for target in targets:
        if target.kind != TREES_KIND:
            continue
        status, body = fetch("POST", target.at, fetch_request(target.value))
        if status != 200:
            continue
        pack = read_pack(answer_pack(body), limit=TREES_LIMIT)
        raw = pack.commits.get(target.value)
        if raw is None or commit_links(raw)[0] not in pack.trees:
            continue
        KNOWN_TREES.learn(pack)
        answers[target] = Resolution(repo=None, type="trees")
    return answers


__all__ = ["TREES_LIMIT", "UPLOAD_HEADERS", "answer_pack", "fetch_request", "resolve_trees"]
