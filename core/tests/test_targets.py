"""The resolution cache (bounded, with a time to live, failures remembered briefly), settling
answers into a classification, and what ``repos`` / ``repo`` mean together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitvow.evaluator import Grant, evaluate
from gitvow.modes import Mode
from gitvow.request import Classification, Resolution, Target
from gitvow.targets import ResolutionCache, needs_type, settle

A, B, C = Target("node", "A"), Target("node", "B"), Target("node", "C")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_repo_and_repos_agree() -> None:
    assert Classification(("read",), repo="o/r").repos == ("o/r",)
    assert Classification(("read",), repos=("o/r",)).repo == "o/r"
    both = Classification(("read",), repos=("o/a", "o/b"))
    assert both.repo is None and both.repos == ("o/a", "o/b")
    assert Classification(("read",), repo="o/a", repos=("o/b",)).repos == ("o/a", "o/b")
    assert Classification(("read",), repo="o/r").repo_established
    assert not Classification(("read",), repo="o/r", targets=(A,)).repo_established
    assert not Classification(("read",)).repo_established


def test_the_cache_asks_once_and_remembers_failures_briefly() -> None:
    clock = Clock()
    cache = ResolutionCache(size=10, ttl=100, negative_ttl=5, clock=clock)
    asked: list[tuple[Target, ...]] = []

    def resolver(targets: Sequence[Target]) -> Mapping[Target, Resolution]:
        asked.append(tuple(targets))
        return {t: Resolution("o/r", "Repository") for t in targets if t is not C}

    cache.resolve("s", [A, C], resolver)
    cache.resolve("s", [A, B, C], resolver)
    assert asked == [(A, C), (B,)]
    found, missing = cache.lookup("s", [A, B, C])
    assert set(found) == {A, B} and missing == []  # C failed: neither found nor to be asked
    clock.now = 6
    assert cache.lookup("s", [C])[1] == [C]  # the failure expired
    clock.now = 101
    assert cache.lookup("s", [A])[1] == [A]
    assert cache.lookup("other", [B])[1] == [B]  # scopes are separate


def test_a_resolver_that_raises_is_a_failed_lookup_and_the_cache_stays_bounded() -> None:
    cache = ResolutionCache(size=2)

    def broken(targets: Sequence[Target]) -> Mapping[Target, Resolution]:
        raise OSError("forge down")

    cache.resolve("s", [A], broken)
    assert cache.lookup("s", [A]) == ({}, [])
    cache.store("s", [B, C], {B: Resolution("o/b"), C: Resolution("o/c")})
    assert len(cache) == 2 and cache.lookup("s", [A])[1] == [A]  # the oldest went


def test_settle_folds_answers_in() -> None:
    pr = Target("issue", "o/r#7", by_type=(("PullRequest", ("pr.edit",)),))
    c = Classification(("issue.edit",), repos=("o/r",), targets=(pr, A))
    assert needs_type(c) == (pr,)
    done = settle(c, {pr: Resolution("o/r", "PullRequest"), A: Resolution("o/x", "Repository")})
    assert done.operations == ("pr.edit",) and done.repos == ("o/r", "o/x") and done.repo_established
    partly = settle(c, {pr: Resolution("o/r", "Issue")})
    assert partly.operations == ("issue.edit",) and partly.targets == (A,) and not partly.repo_established
    user = settle(Classification(("issue.edit",), targets=(A,)), {A: Resolution(None, "User")})
    assert user.targets == () and not user.repo_established  # settled, but names no repository


def test_autonomy_over_several_repositories_and_unknown_ones() -> None:
    lowered = Grant(Mode.ISSUES_AND_PRS, autonomy={"o/prod": Mode.ADVISORY})
    raised = Grant(Mode.ADVISORY, autonomy={"o/dev": Mode.ISSUES_AND_PRS})
    comment = ("issue.comment",)
    assert evaluate(Classification(comment, repos=("o/dev",)), lowered).allowed
    assert evaluate(Classification(comment, repos=("o/dev", "o/prod")), lowered).code == "mode_denied"
    assert evaluate(Classification(comment, targets=(A,)), lowered).code == "repo_unresolved"
    assert evaluate(Classification(comment, targets=(A,)), raised).code == "mode_denied"
    assert evaluate(Classification(comment, repos=("o/dev",)), raised).allowed
    assert evaluate(Classification(("read",), targets=(A,)), lowered).allowed  # reads are not gated


def test_concurrent_lookups_of_one_target_ask_once() -> None:
    import threading

    cache = ResolutionCache()
    started, release = threading.Event(), threading.Event()
    calls: list[tuple[Target, ...]] = []

    def slow(targets: Sequence[Target]) -> Mapping[Target, Resolution]:
        calls.append(tuple(targets))
        started.set()
        release.wait(5)
        return {t: Resolution("o/r") for t in targets}

    first = threading.Thread(target=cache.resolve, args=("s", [A], slow))
    first.start()
    assert started.wait(5)
    second = threading.Thread(target=cache.resolve, args=("s", [A, B], slow))
    second.start()
    for _ in range(500):  # the second asks only about B, then waits for A
        if len(calls) == 2:
            break
        threading.Event().wait(0.01)
    release.set()
    first.join(5)
    second.join(5)
    assert calls == [(A,), (B,)]
    assert set(cache.lookup("s", [A, B])[0]) == {A, B}
