"""gitvow's addons as a mitmproxy script: ``gitvow proxy`` loads them itself, and so can mitmdump::

    mitmdump -s "$(python -c 'import gitvow_proxy.mitmdump_script as m; print(m.__file__)')" \\
        --set gitvow_policy=policy.toml

Options: ``gitvow_policy`` (the policy file, required), ``gitvow_state`` (overrides
``[proxy] state``) and ``gitvow_record`` (write the agents' flows, without secrets, to a
mitmproxy flow file: see :mod:`gitvow_proxy.record`). Without a valid policy every request
is refused: the proxy never fails open. The addons themselves are in :mod:`gitvow_proxy.addons`.
"""

from __future__ import annotations

from gitvow_proxy import message_check
from gitvow_proxy.addons import gitvow_addon

message_check.install()  # mitmdump's messages checked without raising to pass, as in gitvow proxy
addons = [gitvow_addon()]

__all__ = ["addons"]
