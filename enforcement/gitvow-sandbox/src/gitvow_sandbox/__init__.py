"""gitvow-sandbox: ``gitvow run``, an agent in a bubblewrap sandbox whose only network is the proxy.

The proxy is gitvow's hard boundary only for traffic that reaches it. ``gitvow run`` makes
that all traffic: the agent gets a network namespace with loopback alone, the proxy through
a Unix socket bridged to a port inside, a home of its own, and none of the operator's
credentials or the proxy's files.
"""

from __future__ import annotations

__version__ = "1.0.0"
