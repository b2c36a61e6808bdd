"""``[adapters.gitsmart]``. Imports pydantic: loaded only by
:meth:`GitSmartAdapter.options_model <gitvow_gitsmart.adapter.GitSmartAdapter.options_model>`."""

from __future__ import annotations

from gitvow.options import AdapterOptions, PositiveInt
from gitvow_gitsmart.pack import PACK_LIMIT
from gitvow_gitsmart.pktline import COMMANDS_LIMIT


class GitSmartOptions(AdapterOptions):
    """``strip_prefix`` (a mount point such as ``/git``), ``commands_limit`` (bytes of ref-update
    commands) and ``pack_limit`` (bytes of pushed pack read; a larger push is refused unread)."""

    strip_prefix: str = ""
    commands_limit: PositiveInt = COMMANDS_LIMIT
    pack_limit: PositiveInt = PACK_LIMIT
