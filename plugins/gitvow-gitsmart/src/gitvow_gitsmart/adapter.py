"""The ``gitsmart`` adapter: plain git hosts mapped to it in ``[hosts]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.auth import basic_authorization
from gitvow.request import ZERO_OID, Classification, Fixture, Request, ToolCall
from gitvow.vocabulary import OPERATIONS
from gitvow_gitsmart.commands import classify_git_command
from gitvow_gitsmart.limits import COMMANDS_LIMIT, PACK_LIMIT

if TYPE_CHECKING:
    from gitvow_gitsmart.options import GitSmartOptions

FIXTURE_HOST = "https://git.example.test"
_OID_A = "a" * 40
_OID_B = "b" * 40


def pkt(line: bytes) -> bytes:
    """One pkt-line: four hex digits of length, then the payload."""
    return b"%04x" % (len(line) + 4) + line


def push_body(*commands: tuple[str, str, str], force: bool = False, files: dict[str, bytes] | None = None) -> bytes:
    """A receive-pack request body with these ref updates and a real pack.

    Every update that is not a deletion gets a commit holding ``files`` (default: one
    README) whose parent is the command's old id (none with ``force``: the update is then
    not a fast-forward); the command's new id is replaced by that commit's real id, so the
    body is what git itself would send. Deletions only: no pack, as git sends none."""
    from gitvow_gitsmart.packwrite import files_commit, pack  # fixtures only

    lines = []
    objects: list[tuple[int, bytes]] = []
    for i, (old, new, ref) in enumerate(commands):
        if new != ZERO_OID:
            parents = [] if force or old == ZERO_OID else [old]
            new, made = files_commit(files or {"README.md": f"{ref}\n".encode()}, parents)
            objects.extend(made)
        caps = b"\0report-status side-band-64k" if i == 0 else b""
        lines.append(pkt(f"{old} {new} {ref}".encode() + caps + b"\n"))
    return b"".join(lines) + b"0000" + (pack(objects) if objects else b"")


class GitSmartAdapter(Adapter):
    """git smart-HTTP on a host that speaks nothing else."""

    name = "gitsmart"
    example_hosts = ("git.example.test",)  # a plain git host the fixtures use
    commands = ("git",)

    def __init__(self) -> None:
        self.strip_prefix = ""
        self.commands_limit = COMMANDS_LIMIT
        self.pack_limit = PACK_LIMIT

    @classmethod
    def options_model(cls) -> type[GitSmartOptions]:
        from gitvow_gitsmart.options import GitSmartOptions

        return GitSmartOptions

    def configure(self, options: GitSmartOptions) -> None:
        self.strip_prefix = options.strip_prefix.rstrip("/")
        self.commands_limit = options.commands_limit
        self.pack_limit = options.pack_limit

    def classify(self, request: Request) -> Classification:
        # the wire reader (pack, hashlib, secrets) only for requests: the agent gate loads this
        # adapter for `git` commands, which classify_command reads
        from gitvow_gitsmart.classify import classify_git

        result = classify_git(request, strip_prefix=self.strip_prefix, limit=self.commands_limit,
                              pack_limit=self.pack_limit)
        return result if result is not None else Classification.unknown("not a git smart-HTTP path")

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """Basic auth; a token of the form ``user:password`` keeps its user."""
        return basic_authorization(token, user="x-access-token")

    def refusal_answer(self, request: Request, message: str, code: str, status: int = 403) -> refusal.Answer:
        """git's own refusal: a push's ``report-status`` (``remote:`` lines, ``[remote rejected]``),
        an ``info/refs`` ``ERR`` packet (:mod:`gitvow_gitsmart.refusals`)."""
        from gitvow_gitsmart.refusals import git_refusal

        return git_refusal(request, message, code, limit=self.commands_limit)

    def classify_command(self, argv: Sequence[str]) -> ToolCall | None:
        return classify_git_command(argv)

    def fixtures(self) -> Sequence[Fixture]:
        repo = f"{FIXTURE_HOST}/team/app.git"
        return (
            Fixture("GET", f"{repo}/info/refs?service=git-upload-pack", ("git.fetch",), repo="team/app"),
            Fixture("POST", f"{repo}/git-upload-pack", ("git.fetch",), body=pkt(b"want " + _OID_A.encode() + b"\n") + b"0000", repo="team/app"),
            Fixture("GET", f"{repo}/info/refs?service=git-receive-pack", ("git.push",), repo="team/app"),
            Fixture("POST", f"{repo}/git-receive-pack", ("git.push",), body=push_body((_OID_A, _OID_B, "refs/heads/main")), repo="team/app"),
            Fixture("POST", f"{FIXTURE_HOST}/group/sub/app/git-receive-pack", ("git.push",), body=push_body((ZERO_OID, _OID_B, "refs/heads/new")), repo="group/sub/app"),
            Fixture("POST", f"{repo}/git-receive-pack", ("git.push", "ref.force"), body=push_body((_OID_A, _OID_B, "refs/heads/main"), force=True), repo="team/app", note="not a fast-forward"),
            Fixture("POST", f"{repo}/git-receive-pack", ("git.push", "ref.delete"), body=push_body((_OID_A, ZERO_OID, "refs/heads/old")), repo="team/app"),
            Fixture("GET", f"{repo}/objects/info/packs", ("unknown",), near_miss=True, note="dumb HTTP is not smart-HTTP"),
            Fixture("GET", f"{repo}/info/refs", ("unknown",), near_miss=True, note="no service: dumb HTTP"),
            Fixture("POST", f"{repo}/info/refs?service=git-receive-pack", ("unknown",), near_miss=True, note="info/refs is GET only"),
        )

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        repo = f"{FIXTURE_HOST}/team/app.git"
        many = [(_OID_A, _OID_B, f"refs/heads/branch-{i:05d}") for i in range(COMMANDS_LIMIT // 90 + 10)]
        over_limit = push_body(*many)
        return (
            Fixture("POST", f"{repo}/git-receive-pack", ("unknown",), body=b"zzzz garbage", note="unparseable"),
            Fixture("POST", f"{repo}/git-receive-pack", ("unknown",), body=pkt(b"%s %s refs/heads/x\n" % (_OID_A.encode(), _OID_B.encode()))[:30], note="truncated"),
            Fixture("POST", f"{repo}/git-receive-pack", ("unknown",), body=over_limit, note="over the commands limit"),
            Fixture("POST", f"{repo}/git-receive-pack", ("unknown",), body=push_body((_OID_A, _OID_B, "refs/heads/x"))[:-30], note="truncated pack"),
            Fixture("POST", f"{repo}/git-receive-pack", ("unknown",), body=push_body((_OID_A, _OID_B, "refs/heads/x")) + b"junk", note="data after the pack"),
            Fixture("POST", f"{FIXTURE_HOST}/api/anything", ("unknown",), note="unmatched"),
        )

    def unsupported(self) -> Mapping[str, str]:
        covered = {"git.fetch", "git.push", "ref.force", "ref.delete", "unknown"}
        return {name: "git smart-HTTP carries only fetch and push" for name in OPERATIONS if name not in covered}
