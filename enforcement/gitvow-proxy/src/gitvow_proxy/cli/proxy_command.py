"""``gitvow proxy``: run the proxy (mitmproxy embedded) with a policy file."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("The policy file is reloaded when it changes; a bad edit keeps the last good policy. "
                     "SIGTERM or SIGINT stops the proxy cleanly.")
    parser.add_argument("--policy", required=True, type=Path, help="policy file (TOML or JSON)")
    parser.add_argument("--listen-host", help="address to listen on (default: [proxy] listen_host)")
    parser.add_argument("--listen-port", type=int, help="port to listen on (default: [proxy] listen_port)")
    parser.add_argument("--confdir", help="mitmproxy's directory, where its CA lives (default: [proxy] confdir)")
    parser.add_argument("--state", help="state store: a SQLite path or :memory: (default: [proxy] state)")
    parser.add_argument("--record", metavar="FILE",
                        help="write the agents' flows to a mitmproxy flow file, without credentials, canaries or "
                             "cookies, for `gitvow replay` (+FILE appends)")
    parser.add_argument("--allow-unset-secrets", action="store_true",
                        help="start although a forge credential or agent secret the policy names by an environment "
                             "variable is not set (refused otherwise): writes then go out without that token, "
                             "or that agent cannot authenticate")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="OPTION=VALUE",
                        help="a mitmproxy option, as with mitmdump --set (repeatable)")


def run(args: argparse.Namespace) -> int:
    from gitvow_proxy.optimised import run_optimised

    run_optimised()  # python -O: mitmproxy's per-message type checks off (returns when already, or not possible)
    from gitvow_proxy.run import ProxyOptions, main

    extra: dict[str, str] = {}
    for item in args.extra:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"gitvow proxy: --set expects OPTION=VALUE, got {item!r}")
            return 2
        extra[key] = value
    options = ProxyOptions(
        policy=args.policy,
        listen_host=args.listen_host,
        listen_port=args.listen_port,
        confdir=args.confdir,
        state=args.state,
        record=args.record,
        extra=extra,
        allow_unset_secrets=args.allow_unset_secrets,
    )
    return main(options)
