"""``[adapters.gitea]``. Imports pydantic: loaded only by
:meth:`GiteaAdapter.options_model <gitvow_gitea.adapter.GiteaAdapter.options_model>`."""

from __future__ import annotations

from gitvow.options import AdapterOptions, field_validator


class GiteaOptions(AdapterOptions):
    """``prefix``: the sub-path the instance is served under (``/gitea``); default none."""

    prefix: str = ""

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value and not value.startswith("/"):
            raise ValueError(f"must be a path starting with '/', got {value!r}")
        return value.rstrip("/")
