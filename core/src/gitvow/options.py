"""Building blocks of adapter options models (``[adapters.NAME]`` in the policy file).

Imports pydantic: import this module only inside :meth:`gitvow.adapter.Adapter.options_model`
(or from a module that method imports), never at an adapter module's top level, so the agent
hook's forge stage stays free of pydantic when the policy gives no adapter options.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gitvow.graphql import BODY_LIMIT, FIELD_LIMIT, TOKEN_LIMIT, GraphQLReader
from gitvow.paths import PathRefused, split_path

#: A positive integer, strictly: ``true`` and ``"64k"`` are refused, not coerced.
PositiveInt = Annotated[int, Field(strict=True, gt=0)]


class AdapterOptions(BaseModel):
    """Base of an adapter's options: an unknown key is an error, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphQLLimits(AdapterOptions):
    """The GraphQL reader's limits, as every GraphQL forge spells them (``graphql_body_limit``
    in bytes, ``graphql_token_limit``, ``graphql_field_limit`` top-level fields)."""

    graphql_body_limit: PositiveInt = BODY_LIMIT
    graphql_token_limit: PositiveInt = TOKEN_LIMIT
    graphql_field_limit: PositiveInt = FIELD_LIMIT

    def reader(self, **more: int) -> GraphQLReader:
        """A reader with these limits (``more``: other reader arguments, e.g. ``cache_size``)."""
        return GraphQLReader(body_limit=self.graphql_body_limit, token_limit=self.graphql_token_limit,
                             field_limit=self.graphql_field_limit, **more)


def mount_path(value: str) -> str:
    """A sub-path a forge is served under (``/gitlab``): empty, or ``/`` + clean segments."""
    if not value:
        return ""
    if not value.startswith("/"):
        raise ValueError(f"must be a path starting with '/', got {value!r}")
    try:
        split_path(value)
    except PathRefused as exc:
        raise ValueError(f"{value!r}: {exc}") from None
    return value


__all__ = ["AdapterOptions", "GraphQLLimits", "PositiveInt", "field_validator", "mount_path"]
