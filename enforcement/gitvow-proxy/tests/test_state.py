"""The store (both implementations), the canary scanner, identities and the proxy settings."""

from __future__ import annotations

import base64
import gzip
import subprocess
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest

from gitvow.errors import PolicyError
from gitvow.policy.load import parse_policy
from gitvow_proxy.canary import CanaryScanner, ScanRefused
from gitvow_proxy.identity import Identities
from gitvow_proxy.store import AUTO_MERGE_OFF, PAUSED, Admission, MemoryStore, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "redis":
        from gitvow_proxy.store.redis_store import RedisStore

        # The caller's clock, as the other stores: these tests set the time (the server's clock,
        # the default, is tested in test_redis_store).
        return RedisStore(request.getfixturevalue("redis_server").url, server_clock=False)
    return MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "state.sqlite")


def test_take_is_a_sliding_window(store: Store) -> None:
    keys = [("a", 2)]
    assert store.take(keys, 100.0, 60) is None
    assert store.take(keys, 110.0, 60) is None
    assert store.take(keys, 120.0, 60) == pytest.approx(40.0)
    assert store.take(keys, 160.5, 60) is None  # the event at 100 left the window
    assert store.take(keys, 161.0, 60) == pytest.approx(9.0)


def test_what_a_failed_write_took_is_given_back(store: Store) -> None:
    keys = [("w", 2), ("op", 3)]
    assert store.take(keys, 100.0, 60, amounts=[2, 2]) is None
    assert store.take(keys, 101.0, 60) is not None  # the window of "w" is full
    store.give_back(["w", "op"], 100.0, [2, 2])  # the forge never performed those two
    assert store.usage("w", 102.0, 60) == 0 and store.usage("op", 102.0, 60) == 0
    assert store.take(keys, 102.0, 60) is None
    store.give_back(["w"], 100.0, [1])  # nothing of that moment is left: nothing else is touched
    assert store.usage("w", 103.0, 60) == 1


def test_take_is_all_or_nothing(store: Store) -> None:
    assert store.take([("op", 1), ("all", 5)], 0.0, 60) is None
    assert store.take([("op", 1), ("all", 5)], 1.0, 60) is not None
    # the refused take consumed nothing from "all": four more fit
    for i in range(4):
        assert store.take([("all", 5)], 2.0 + i, 60) is None
    assert store.take([("all", 5)], 10.0, 60) is not None
    assert store.take([("zero", 0)], 0.0, 60) == 60


def test_take_counts_amounts(store: Store) -> None:
    """A request that performs three writes takes three units, all or nothing."""
    assert store.take([("w", 5), ("op", 4)], 100.0, 60, amounts=[3, 3]) is None
    assert store.take([("w", 5), ("op", 4)], 110.0, 60, amounts=[3, 1]) == pytest.approx(50.0)  # w: 3 + 3 > 5
    assert store.take([("w", 5), ("op", 4)], 110.0, 60, amounts=[2, 1]) is None
    assert store.usage("w", 111.0, 60) == 5 and store.usage("op", 111.0, 60) == 4
    assert store.take([("w", 5)], 170.0, 60, amounts=[5]) is None  # the first five left the window
    assert store.take([("other", 2)], 0.0, 60, amounts=[3]) == 60  # can never fit


def test_used_counts_the_window(store: Store) -> None:
    for at in (0.0, 10.0, 20.0):
        assert store.take([("u", 10)], at, 60) is None
    assert store.usage("u", 30.0, 60) == 3
    assert store.usage("u", 65.0, 60) == 2  # the event at 0 left the window
    assert store.usage("nothing", 65.0, 60) == 0


def test_flags_counters_canaries(store: Store) -> None:
    store.set_flag(AUTO_MERGE_OFF, "Team/App", True)
    assert store.flags(AUTO_MERGE_OFF) == {"team/app"}
    store.set_flag(AUTO_MERGE_OFF, "team/app", False)
    assert store.flags(AUTO_MERGE_OFF) == frozenset()
    store.count("k")
    store.count("k", 2)
    assert store.counters() == {"k": 3}
    token = store.canary("bot")
    assert token.startswith("gvc_") and store.canary("bot") == token != store.canary("other")
    assert store.canaries()[token] == "bot"


def test_admit_takes_only_under_the_flags_seen(store: Store) -> None:
    """One round trip confirms the run-time flags the caller decided on and takes the budget;
    flags changed since (a pause) take nothing and come back as they are now."""
    seen = store.all_flags()
    assert seen == {PAUSED: frozenset(), AUTO_MERGE_OFF: frozenset()}
    assert store.admit(seen, [("w", 2)], 100.0, 60) == Admission(None)
    store.set_flag(PAUSED, "Team/App", True)
    changed = store.admit(seen, [("w", 2)], 101.0, 60)
    assert changed.flags == {PAUSED: frozenset({"team/app"}), AUTO_MERGE_OFF: frozenset()}
    assert store.usage("w", 102.0, 60) == 1  # nothing taken
    assert store.admit(changed.flags, [("w", 2)], 102.0, 60) == Admission(None)
    full = store.admit(changed.flags, [("w", 2)], 103.0, 60)
    assert full.flags is None and full.wait == pytest.approx(57.0)
    store.set_flag(AUTO_MERGE_OFF, "a/b", True)
    store.set_flag(AUTO_MERGE_OFF, "c/d", True)
    assert store.admit(changed.flags, [("x", 1)], 104.0, 60).flags == store.all_flags()
    assert store.admit(store.all_flags(), [("x", 1)], 104.0, 60) == Admission(None)


def test_sqlite_counts_a_window_from_before_the_counts(tmp_path: Path) -> None:
    """A state file written before the per-window counts existed is counted once when opened."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    db.executescript("DROP TRIGGER events_added; DROP TRIGGER events_removed; DROP TABLE windows;")
    db.executemany("INSERT INTO events (key, at) VALUES (?, ?)", [("w", 100.0), ("w", 101.0), ("w", 1.0)])
    db.commit()
    db.close()
    store = SQLiteStore(path)
    assert store.take([("w", 3)], 102.0, 60) is None  # the event at 1.0 left the window
    assert store.take([("w", 3)], 103.0, 60) == pytest.approx(57.0)
    store.give_back(["w"], 102.0, [1])
    assert store.take([("w", 3)], 104.0, 60) is None


def test_sqlite_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    first = SQLiteStore(path)
    assert first.take([("w", 1)], 0.0, 3600) is None
    token = first.canary("bot")
    first.close()
    second = SQLiteStore(path)
    assert second.take([("w", 1)], 10.0, 3600) == pytest.approx(3590.0)
    assert second.canary("bot") == token
    assert path.stat().st_mode & 0o077 == 0


def test_every_sqlite_file_is_private_from_its_creation(tmp_path: Path) -> None:
    """The database, its WAL (every recent write: staged bodies, canaries), its shared memory and
    any journal are 0600 however permissive the umask, and from before they hold data: SQLite
    gives them the database file's mode, which is 0600 before SQLite opens it."""
    import os

    old = os.umask(0o002)
    try:
        path = tmp_path / "state.sqlite"
        # an earlier run's companions, left readable, are made private too
        stale = tmp_path / "old.sqlite"
        SQLiteStore(stale).close()
        for suffix in ("-wal", "-shm", "-journal"):
            (tmp_path / f"old.sqlite{suffix}").write_bytes(b"")
            (tmp_path / f"old.sqlite{suffix}").chmod(0o644)
        stale.chmod(0o644)
        reopened = SQLiteStore(stale)
        store = SQLiteStore(path)
        store.canary("bot")
        assert store.take([("w", 1)], 0.0, 3600) is None
        files = sorted(p for p in tmp_path.iterdir() if p.name.startswith(("state.sqlite", "old.sqlite")))
        assert {p.name for p in files} >= {"state.sqlite", "state.sqlite-wal", "state.sqlite-shm", "old.sqlite-wal"}
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {p.name: "0o600" for p in files}
        store.close()
        reopened.close()
    finally:
        os.umask(old)


# -- canary scanner --------------------------------------------------------------------------

TOKEN = "gvc_0123456789abcdef0123456789abcdef"


def scanner(limit: int = 1 << 20) -> CanaryScanner:
    return CanaryScanner({TOKEN: "bot"}, limit=limit)


@pytest.mark.parametrize(
    "body",
    [
        TOKEN.encode(),
        ('{"body": "' + "".join(f"\\u{ord(c):04x}" for c in TOKEN) + '"}').encode(),
        quote(f"x={TOKEN}", safe="").encode(),
        ("%" + "%".join(f"{b:02X}" for b in TOKEN.encode())).encode(),
        base64.b64encode(TOKEN.encode()),
        base64.b64encode(b"a" + TOKEN.encode() + b"b"),
        base64.urlsafe_b64encode(b"ab" + TOKEN.encode()),
    ],
    ids=["plain", "json-escaped", "url", "url-all", "b64-0", "b64-1", "b64url-2"],
)
def test_canary_found_in_every_spelling(body: bytes) -> None:
    assert scanner().find(body) == "bot"


def test_canary_in_gzip_and_limits() -> None:
    assert scanner().find(gzip.compress(b"x" + TOKEN.encode()), content_encoding="gzip") == "bot"
    with pytest.raises(ScanRefused):
        scanner(limit=100).find(b"a" * 101)
    with pytest.raises(ScanRefused):  # a small gzip that inflates past the limit
        scanner(limit=10_000).find(gzip.compress(b"\0" * 100_000), content_encoding="gzip")
    with pytest.raises(ScanRefused):
        scanner().find(b"data", content_encoding="br")
    assert scanner().find(b"nothing to see here") is None
    assert not CanaryScanner({}, limit=10)


def _pkt(line: bytes) -> bytes:
    return b"%04x" % (len(line) + 4) + line


def _real_pack(tmp_path: Path, content: bytes) -> bytes:
    """A real pack from git pack-objects holding a blob with ``content`` and a delta against it."""
    env = {"GIT_DIR": str(tmp_path / "r.git"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "r.git")], check=True, env=env)
    base = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"line\n" * 500, capture_output=True,
                          check=True, env=env).stdout.strip()
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"line\n" * 500 + content,
                          capture_output=True, check=True, env=env).stdout.strip()
    pack = subprocess.run(["git", "pack-objects", "--stdout"], input=base + b"\n" + blob + b"\n",
                          capture_output=True, check=True, env=env).stdout
    return pack


def test_canary_inside_a_git_pack(tmp_path: Path) -> None:
    commands = _pkt(b"0" * 40 + b" " + b"1" * 40 + b" refs/heads/x\0report-status\n") + b"0000"
    leaking = commands + _real_pack(tmp_path / "a", b"secret " + TOKEN.encode() + b"\n")
    clean = commands + _real_pack(tmp_path / "b", b"nothing\n")
    assert TOKEN.encode() not in leaking  # compressed: only the inflated pack shows it
    assert scanner().find(leaking, git_push=True) == "bot"
    assert scanner().find(clean, git_push=True) is None
    with pytest.raises(ScanRefused):
        scanner().find(commands + b"PACK\0\0\0\2\0\0\0\1" + b"\x35" + b"garbage", git_push=True)
    with pytest.raises(ScanRefused):
        scanner().find(commands + clean[len(commands):-30], git_push=True)
    assert scanner().find(commands, git_push=True) is None  # a delete-only push has no pack
    bomb = commands + b"PACK\0\0\0\2\0\0\0\1" + bytes([0x3F, 0x7F]) + zlib.compress(b"\0" * 5_000_000)
    with pytest.raises(ScanRefused):
        scanner(limit=1_000_000).find(bomb, git_push=True)


# -- identities and settings -------------------------------------------------------------------

def test_identities(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BOT_SECRET", "s3cret:with:colons")
    (tmp_path / "control-plane").write_text("control-plane-secret\n")
    policy = parse_policy({
        "agents": {"bot": {"secret_env": "BOT_SECRET"}, "nosecret": {"secret_env": "UNSET_VAR_XYZ"}},
        "internal": {"name": "control-plane", "secret_file": str(tmp_path / "control-plane")},
    })
    ids = Identities.from_policy(policy)

    def header(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    bot = ids.authenticate(header("bot", "s3cret:with:colons"))
    assert bot is not None and bot.name == "bot" and not bot.internal
    plane = ids.authenticate(header("control-plane", "control-plane-secret"))
    assert plane is not None and plane.internal
    for bad in (header("bot", "nope"), header("nosecret", ""), header("ghost", "x"), "Bearer abc", "Basic !!!", ""):
        assert ids.authenticate(bad) is None


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"credentials": {"github": {}}}, "credentials"),
        ({"credentials": {"github": {"token_env": "A", "token_file": "b"}}}, "credentials"),
        ({"budget": {"operations": {"pr.creat": 1}}}, "budget"),
        ({"write_surface": {"lanes": {"a": ["issue.*"]}, "agents": {"bot": "b"}}}, "write_surface"),
        ({"canary": {"tokens": ["short"]}}, "canary"),
        ({"proxy": {"other_hosts": "allow"}}, "proxy.other_hosts"),
        ({"internal": {"name": "control-plane"}}, "internal"),
        ({"audit": {"paht": "x"}}, "audit.paht"),
    ],
)
def test_settings_errors_name_the_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(PolicyError, match=key.replace(".", r"\.")):
        parse_policy(data, source="policy.toml")
