"""gitvow's addons as a mitmproxy script: ``gitvow proxy`` loads them itself, and so can mitmdump::

    mitmdump -s "$(python -c 'import gitvow_proxy.mitmdump_script as m; print(m.__file__)')" \\
        --set gitvow_policy=policy.toml

Run it under ``python -O`` (``PYTHONOPTIMIZE=1 mitmdump ...``), as ``gitvow proxy`` runs
itself (:mod:`gitvow_proxy.optimised`): mitmproxy then skips its type check of every HTTP
message. Without it the proxy decides the same, more slowly.

Options: ``gitvow_policy`` (the policy file, required), ``gitvow_state`` (overrides
``[proxy] state``) and ``gitvow_record`` (write the agents' flows, without secrets, to a
mitmproxy flow file: see :mod:`gitvow_proxy.record`). Without a valid policy every request
is refused: the proxy never fails open. The addons themselves are in :mod:`gitvow_proxy.addons`.
"""

from __future__ import annotations

from gitvow_proxy.addons import gitvow_addon

addons = [gitvow_addon()]

__all__ = ["addons"]
