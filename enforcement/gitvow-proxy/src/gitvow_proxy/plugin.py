"""gitvow-proxy's hook implementations: the policy-file sections the proxy reads, and its commands."""

from __future__ import annotations

from collections.abc import Callable

from gitvow.cli.command import Command
from gitvow.hookspecs import hookimpl
from gitvow.policy.sections import PolicySection


@hookimpl
def register_policy_sections(register: Callable[[PolicySection], None]) -> None:
    """``[proxy]``, ``[credentials.*]``, ``[internal]``, ``[run_state]``, ``[write_surface]``, ``[budget]``, ``[canary]``, ``[issue_shape]``, ``[egress]``, ``[audit]``, ``[approvals]``, ``[admin]``."""
    from gitvow_proxy.settings import ProxyPolicy, proxy_problems  # pydantic: only when a policy is validated

    register(PolicySection(ProxyPolicy, "gitvow-proxy", check=proxy_problems))


@hookimpl
def register_commands(register: Callable[[Command], None]) -> None:
    """``gitvow proxy``, ``gitvow env``, ``gitvow replay``, ``gitvow approvals``, ``gitvow pause``, ``gitvow resume``, ``gitvow status``."""
    register(Command("proxy", "gitvow_proxy.cli.proxy_command",
                     "run the proxy: the whole pipeline on the agents' traffic"))
    register(Command("env", "gitvow_proxy.cli.env_command",
                     "print an agent's shell environment for the proxy"))
    register(Command("replay", "gitvow_proxy.cli.replay_command",
                     "re-decide recorded traffic under a new policy; list what changes"))
    register(Command("approvals", "gitvow_proxy.cli.approvals_command",
                     "list, show, approve, reject or wait for requests the proxy staged"))
    register(Command("pause", "gitvow_proxy.cli.pause_command",
                     "refuse agent writes to a repository from the next request on"))
    register(Command("resume", "gitvow_proxy.cli.resume_command",
                     "undo `gitvow pause` for a repository"))
    register(Command("status", "gitvow_proxy.cli.status_command",
                     "agents' modes and budgets, paused repositories, approvals, refusals"))
