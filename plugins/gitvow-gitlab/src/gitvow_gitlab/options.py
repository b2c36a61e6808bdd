"""``[adapters.gitlab]``. Imports pydantic: loaded only by
:meth:`GitLabAdapter.options_model <gitvow_gitlab.adapter.GitLabAdapter.options_model>`."""

from __future__ import annotations

from gitvow.options import GraphQLLimits, PositiveInt, field_validator, mount_path
from gitvow_gitsmart.pktline import COMMANDS_LIMIT


class GitLabOptions(GraphQLLimits):
    """GraphQL reader limits, the git push commands limit (bytes) and the relative URL root
    of a self-managed instance served under a sub-path (``/gitlab``)."""

    commands_limit: PositiveInt = COMMANDS_LIMIT
    relative_url_root: str = ""

    @field_validator("relative_url_root")
    @classmethod
    def _root(cls, value: str) -> str:
        return mount_path(value)
