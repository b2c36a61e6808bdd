"""``[sandbox]``: what ``gitvow run`` adds to its defaults, from the policy file.

Keys, in one place::

    [sandbox]
    allow_write = ["~/.cache/pip"]     # writable inside besides the working tree (--allow-write adds)
    allow_read = ["~/.local/bin"]      # readable inside from your home, which is empty otherwise (--allow-read adds)
    hide = ["/srv/secrets"]            # unreadable inside, besides the built-in list
    pass_env = ["OLLAMA_HOST"]         # variables passed in besides the built-in safe list (not model keys)
    git_user_name = "Coding Agent"     # the sandbox's ~/.gitconfig (default: the operator's git's values)
    git_user_email = "agent@example.com"
    git_default_branch = "main"
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SandboxSettings(BaseModel):
    """``[sandbox]``: paths made writable, readable or hidden, and variables passed into the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_write: list[str] = Field(default_factory=list)
    allow_read: list[str] = Field(default_factory=list)
    hide: list[str] = Field(default_factory=list)
    pass_env: list[str] = Field(default_factory=list)
    git_user_name: str | None = None
    git_user_email: str | None = None
    git_default_branch: str | None = None

    @field_validator("allow_write", "allow_read", "hide")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        relative = [p for p in paths if not p.startswith(("/", "~"))]
        if relative:
            raise ValueError(f"paths must be absolute or start with ~, got {', '.join(map(repr, relative))}")
        return paths

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not n or "=" in n]
        if bad:
            raise ValueError(f"expected variable names, got {', '.join(map(repr, bad))}")
        return names


class SandboxPolicy(BaseModel):
    """Every top-level key the sandbox owns, registered through ``register_policy_sections``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
