"""``[adapters.github]``: the GraphQL reader's limits. Imports pydantic: loaded only by
:meth:`GitHubAdapter.options_model <gitvow_github.adapter.GitHubAdapter.options_model>`."""

from __future__ import annotations

from gitvow.graphql import CACHE_SIZE
from gitvow.options import GraphQLLimits, PositiveInt


class GitHubOptions(GraphQLLimits):
    """Limits of the GraphQL reader (``graphql_body_limit`` in bytes) and its document cache."""

    graphql_cache_size: PositiveInt = CACHE_SIZE
