"""Building blocks of adapter options models (``[adapters.NAME]`` in the policy file).

Imports pydantic: import this module only inside :meth:`gitvow.adapter.Adapter.options_model`
(or from a module that method imports), never at an adapter module's top level, so the agent
hook's forge stage stays free of pydantic when the policy gives no adapter options.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gitvow.paths import PathRefused, split_path

#: A positive integer, strictly: ``true`` and ``"64k"`` are refused, not coerced.
PositiveInt = Annotated[int, Field(strict=True, gt=0)]


class AdapterOptions(BaseModel):
    """Base of an adapter's options: an unknown key is an error, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


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


__all__ = ["AdapterOptions", "PositiveInt", "field_validator", "mount_path"]
