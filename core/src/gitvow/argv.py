"""Reading command lines the agent gate and the adapters' tool-call classifiers share.

Dependency-free on purpose: the agent hook imports it on its hot path.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def positionals(args: Sequence[str], value_options: Collection[str]) -> list[str]:
    """The arguments that are not options, skipping the value after each of ``value_options``
    (``git push --repo URL origin main`` → ``origin``, ``main``)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in value_options:
            skip = True
        elif not arg.startswith("-"):
            out.append(arg)
    return out
