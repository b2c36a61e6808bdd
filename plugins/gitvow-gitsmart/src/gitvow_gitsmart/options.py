"""``[adapters.gitsmart]``. Imports pydantic: loaded only by
:meth:`GitSmartAdapter.options_model <gitvow_gitsmart.adapter.GitSmartAdapter.options_model>`."""

from __future__ import annotations

from gitvow.options import AdapterOptions, PositiveInt
from gitvow_gitsmart.pktline import COMMANDS_LIMIT


class GitSmartOptions(AdapterOptions):
    """``strip_prefix`` (a mount point such as ``/git``) and ``commands_limit`` (bytes)."""

    strip_prefix: str = ""
    commands_limit: PositiveInt = COMMANDS_LIMIT
