"""``[adapters.linear]``. Imports pydantic: loaded only by
:meth:`LinearAdapter.options_model <gitvow_linear.adapter.LinearAdapter.options_model>`."""

from __future__ import annotations

from gitvow.options import AdapterOptions, PositiveInt
from gitvow_linear.limits import BODY_LIMIT, FIELD_LIMIT


class LinearOptions(AdapterOptions):
    """``body_limit`` (bytes) and ``field_limit`` (top-level fields per document); an option
    left out is back at its default, so reconfiguring never keeps a stale limit."""

    body_limit: PositiveInt = BODY_LIMIT
    field_limit: PositiveInt = FIELD_LIMIT
