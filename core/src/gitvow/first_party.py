"""What this project's own enforcement points register, kept as data for when one is missing.

The core names no enforcement point in its code: their policy keys come from the sections
they register (``register_policy_sections``) and their commands from ``register_commands``.
When one is *not* installed, nothing registers its keys or commands, and a file naming
``[proxy]`` or a user typing ``gitvow proxy`` deserves better than "unknown": this table says
which distribution to install. It is a copy of what those distributions register, and
``tests/packaging/test_install_sets.py`` checks it against them, so it cannot drift.
"""

from __future__ import annotations

#: distribution → (extra of the core that installs it, its top-level policy keys, its commands)
FIRST_PARTY: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "gitvow-proxy": (
        "proxy",
        ("proxy", "credentials", "internal", "run_state", "write_surface", "budget", "canary", "issue_shape", "egress",
         "audit", "approvals", "admin"),
        ("proxy", "env", "replay", "approvals", "pause", "resume", "status"),
    ),
    "gitvow-gate": (
        "gate",
        ("builtin_rules", "bash_deny", "bash_confirm", "path_confirm", "mcp_allow", "mcp_deny", "providers",
         "llm_classifier", "decisions", "intent", "outcomes", "sync", "runtime", "snapshots", "pricing"),
        ("hook", "check", "ask", "install", "uninstall"),
    ),
    "gitvow-sandbox": ("sandbox", ("sandbox",), ("run",)),
}


def owner_of_key(key: str) -> str | None:
    """The first-party distribution that reads top-level policy ``key``, if any."""
    return next((dist for dist, (_extra, keys, _commands) in FIRST_PARTY.items() if key in keys), None)


def owner_of_command(name: str) -> str | None:
    """The first-party distribution that adds ``gitvow NAME``, if any."""
    return next((dist for dist, (_extra, _keys, commands) in FIRST_PARTY.items() if name in commands), None)


def install_hint(distribution: str) -> str:
    """How to install ``distribution``, pinned so PyPI's unrelated gitvow 0.42 never answers."""
    hint = f'pip install "{distribution}>=1"'
    known = FIRST_PARTY.get(distribution)
    return f'{hint} (or pip install "gitvow[{known[0]}]>=1")' if known else hint
