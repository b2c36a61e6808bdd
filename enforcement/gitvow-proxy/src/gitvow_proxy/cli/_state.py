"""What the run-time commands share: the policy file, the store the proxy reads, the audit log."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gitvow.policy.load import Policy, load_policy
from gitvow_proxy.audit import AuditLog
from gitvow_proxy.settings import ProxyPolicy
from gitvow_proxy.store import Store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True, type=Path, help="the proxy's policy file (TOML or JSON)")
    parser.add_argument("--state", help="the proxy's state store, if not [proxy] state")


def add_by(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--by", default=None, help="who decides, for the audit log (default: your user name)")


def who(args: argparse.Namespace) -> str:
    return str(args.by or getpass.getuser())


@dataclass
class State:
    policy: Policy
    store: Store

    def audit(self) -> AuditLog:
        return AuditLog(self.policy.section(ProxyPolicy).audit.path)


@contextmanager
def opened(args: argparse.Namespace) -> Iterator[State]:
    """The policy and the proxy's store (raises GitvowError, one line naming the file)."""
    from gitvow_proxy.runtime import open_state

    policy = load_policy(args.policy, absent="skip")
    store = open_state(policy, args.state)
    try:
        yield State(policy, store)
    finally:
        store.close()
