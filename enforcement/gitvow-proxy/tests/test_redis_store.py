"""RedisStore against a real redis-server: atomic admission across clients, fail-closed while
the server is gone, recovery without a restart, the password kept out of the policy."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from gitvow.errors import PolicyError
from gitvow.policy.load import Policy, load_policy
from gitvow_proxy.runtime import open_state
from gitvow_proxy.store import PAUSED, StoreError, StoreUnavailable
from gitvow_proxy.testing import RedisServer

redis_store = pytest.importorskip("gitvow_proxy.store.redis_store")


def test_admission_is_atomic_across_clients(redis_server: RedisServer) -> None:
    """Two stores (two replicas' clients), eight threads each, racing for a budget of 25."""
    stores = [redis_store.RedisStore(redis_server.url) for _ in range(2)]
    taken: list[int] = []
    lock = threading.Lock()

    def race(store: redis_store.RedisStore) -> None:
        mine = 0
        for _ in range(10):
            if store.take([("budget:bot:writes", 25), ("budget:bot:op:pr.create", 1000)], time.time(), 3600) is None:
                mine += 1
        with lock:
            taken.append(mine)

    threads = [threading.Thread(target=race, args=(stores[i % 2],)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(taken) == 25
    assert stores[0].usage("budget:bot:writes", time.time(), 3600) == 25
    assert stores[1].usage("budget:bot:op:pr.create", time.time(), 3600) == 25  # all or nothing


def test_unavailable_then_back(redis_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    store = redis_store.RedisStore(redis_server.url, retry_interval=0.2)
    store.set_flag(PAUSED, "team/app", True)
    redis_server.stop()
    caplog.set_level(logging.INFO, logger="gitvow_proxy")
    for _ in range(5):
        with pytest.raises(StoreUnavailable):
            store.flags(PAUSED)
        with pytest.raises(StoreUnavailable):
            store.take([("k", 1)], time.time(), 60)
    assert not store.available and store.errors >= 1
    redis_server.start()  # same port, empty: it kept nothing on disk
    deadline = time.monotonic() + 10
    while not store.ping():
        assert time.monotonic() < deadline, "the store never came back"
        time.sleep(0.05)
    assert store.available
    assert store.flags(PAUSED) == frozenset()
    lines = [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in line for line in lines) == 1, lines  # each change logged once
    assert sum("reachable again" in line for line in lines) == 1, lines


def test_unreachable_fails_fast_between_retries(tmp_path: Path) -> None:
    store = redis_store.RedisStore(RedisServer(tmp_path).url, retry_interval=60)  # nothing listens there
    with pytest.raises(StoreUnavailable):
        store.count("k")
    errors = store.errors
    with pytest.raises(StoreUnavailable):
        store.count("k")
    assert store.errors == errors  # within the retry interval: refused without trying


def _policy(tmp_path: Path, state: str, extra: str = "") -> Policy:
    path = tmp_path / "policy.toml"
    path.write_text(f'[proxy]\nstate = "{state}"\n{extra}')
    return load_policy(path, absent="skip")


def test_password_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        import redis

        redis.Redis(port=server.port).config_set("requirepass", "s3cret-redis")
        policy = _policy(tmp_path, server.url, 'state_password_env = "TEST_REDIS_PASSWORD"\n')
        monkeypatch.setenv("TEST_REDIS_PASSWORD", "s3cret-redis")
        store = open_state(policy)
        assert store.canary("bot").startswith("gvc_")
        monkeypatch.setenv("TEST_REDIS_PASSWORD", "wrong")
        with pytest.raises(StoreUnavailable):
            open_state(policy).canary("bot")
    finally:
        server.stop()


def test_password_in_the_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="carries a password") as info:
        open_state(_policy(tmp_path, "redis://:hunter2@127.0.0.1:6379/0"))
    assert "hunter2" not in str(info.value)
    with pytest.raises(StoreError):
        redis_store.RedisStore("http://127.0.0.1:6379/0")


def test_rediss_with_a_private_ca(tmp_path: Path, tls_redis_server: RedisServer, ca_file: Path) -> None:
    """``rediss://`` checks the server's certificate against ``[proxy] state_ca``."""
    assert tls_redis_server.url.startswith("rediss://")
    store = open_state(_policy(tmp_path, tls_redis_server.url, f'state_ca = "{ca_file}"\n'))
    assert store.canary("bot").startswith("gvc_")
    untrusted = open_state(_policy(tmp_path, tls_redis_server.url))  # the system CAs do not know the test CA
    with pytest.raises(StoreUnavailable):
        untrusted.canary("bot")


def test_an_error_answer_is_not_an_outage(redis_server: RedisServer) -> None:
    """Redis answering with an error (here a key of the wrong type) is a store error, refused
    as any failing stage is, but not ``state_unavailable``: the server is there."""
    import redis

    redis.Redis(port=redis_server.port).set("gitvow:counters", "not a hash")
    store = redis_store.RedisStore(redis_server.url)
    with pytest.raises(StoreError) as info:
        store.count("k")
    assert not isinstance(info.value, StoreUnavailable) and "WRONGTYPE" in str(info.value)
    assert store.available and store.errors == 1


def test_budget_windows_use_the_stores_clock(redis_server: RedisServer) -> None:
    """Two replicas whose clocks disagree by hours share one window: the store's clock decides
    what is inside it, never the replica's ``now``."""
    slow, fast = (redis_store.RedisStore(redis_server.url) for _ in range(2))
    now = time.time()
    assert slow.take([("clock", 1)], now - 10_000, 60.0) is None
    assert fast.take([("clock", 1)], now + 10_000, 60.0) is not None  # the same window on the store's clock
    assert fast.usage("clock", now + 10_000, 60.0) == slow.usage("clock", now - 10_000, 60.0) == 1


def test_two_replicas_decisions_over_time_add_up_in_the_store(redis_server: RedisServer) -> None:
    """What each replica decided, counted by the slot it was decided in, is one chart for the
    cluster at every width the desk shows; a bucket outside its span has expired."""
    from gitvow_proxy.cluster_view import ClusterTally
    from gitvow_proxy.status import SPANS, cluster_over_time
    from gitvow_proxy.store.interface import TIMELINE

    stores = [redis_store.RedisStore(redis_server.url) for _ in range(2)]
    for store, n in zip(stores, (3, 2), strict=True):
        tally = ClusterTally(lambda store=store: store)  # type: ignore[misc]
        for _ in range(n):
            tally.record("allow", None)
        tally.record("deny: mode_denied", {"reason": "mode_denied"})
        tally.flush()
    now = time.time()
    for span in SPANS.values():
        chart = cluster_over_time(stores[0], span, now)
        assert chart is not None and chart["bucket_seconds"] * span.buckets == span.seconds
        assert chart["start"] <= now < chart["start"] + chart["bucket_seconds"] * span.buckets
        series = chart["series"]
        assert list(series) == ["allow", "deny: mode_denied"]  # allow first
        assert sum(series["allow"]) == 5 and sum(series["deny: mode_denied"]) == 2, series
        assert max(series["allow"]) == 5  # (one bucket: the last, or the one before it at a boundary)
    client = stores[0]._redis
    keys = client.keys("gitvow:tally:t:*")
    assert len(TIMELINE) <= len(keys) <= 2 * len(TIMELINE)
    assert all(0 < client.ttl(key) <= keep + width for key in keys
               for width, keep in TIMELINE if key.startswith(f"gitvow:tally:t:{width}:"))
