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


def option_at(arg: str, following: str | None, names: Sequence[str]) -> tuple[str | None, int] | None:
    """If ``arg`` spells one of the options ``names``, its value and how many arguments it takes.

    The spellings Go's flag parsers accept (pflag in ``gh``, ``glab``, ``kubectl``; the
    standard ``flag`` package in ``terraform``, ``tea``): ``-X V`` and ``--method V`` (value
    ``following``, 2 arguments; None when nothing follows), ``--method=V``, and for a
    single-dash name ``-XV`` or ``-X=V`` (``-chdir=DIR``), 1 argument. None if ``arg`` is not
    one of ``names``.
    """
    for name in names:
        if arg == name:
            return following, 2
        if name.startswith("--"):
            if arg.startswith(name + "="):
                return arg[len(name) + 1 :], 1
        elif arg.startswith(name) and len(arg) > len(name):
            value = arg[len(name) :]
            return (value[1:] if value.startswith("=") else value), 1
    return None


def option_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the first of the options ``names`` in ``args``, in any spelling of
    :func:`option_at` (``-R x``, ``-Rx``, ``--repo x``, ``--repo=x``), or None."""
    for i, arg in enumerate(args):
        taken = option_at(arg, args[i + 1] if i + 1 < len(args) else None, names)
        if taken is not None and taken[0] is not None:
            return taken[0]
    return None
