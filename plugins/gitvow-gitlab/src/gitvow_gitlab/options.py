"""``[adapters.gitlab]``. Imports pydantic: loaded only by
:meth:`GitLabAdapter.options_model <gitvow_gitlab.adapter.GitLabAdapter.options_model>`."""

from __future__ import annotations

from gitvow.graphql import BODY_LIMIT, FIELD_LIMIT, TOKEN_LIMIT
from gitvow.options import AdapterOptions, PositiveInt, field_validator, mount_path
from gitvow_gitsmart.pktline import COMMANDS_LIMIT


class GitLabOptions(AdapterOptions):
    """GraphQL reader limits, the git push commands limit (bytes) and the relative URL root
    of a self-managed instance served under a sub-path (``/gitlab``)."""

    graphql_body_limit: PositiveInt = BODY_LIMIT
    graphql_token_limit: PositiveInt = TOKEN_LIMIT
    graphql_field_limit: PositiveInt = FIELD_LIMIT
    commands_limit: PositiveInt = COMMANDS_LIMIT
    relative_url_root: str = ""

    @field_validator("relative_url_root")
    @classmethod
    def _root(cls, value: str) -> str:
        return mount_path(value)
