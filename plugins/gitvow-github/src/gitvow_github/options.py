"""``[adapters.github]``: the GraphQL reader's limits. Imports pydantic: loaded only by
:meth:`GitHubAdapter.options_model <gitvow_github.adapter.GitHubAdapter.options_model>`."""

from __future__ import annotations

from gitvow.graphql import BODY_LIMIT, CACHE_SIZE, FIELD_LIMIT, TOKEN_LIMIT
from gitvow.options import AdapterOptions, PositiveInt


class GitHubOptions(AdapterOptions):
    """Limits of the GraphQL reader (``graphql_body_limit`` in bytes) and its document cache."""

    graphql_body_limit: PositiveInt = BODY_LIMIT
    graphql_token_limit: PositiveInt = TOKEN_LIMIT
    graphql_field_limit: PositiveInt = FIELD_LIMIT
    graphql_cache_size: PositiveInt = CACHE_SIZE
