"""gitvow adapter for Bitbucket Cloud (api.bitbucket.org, bitbucket.org) and Bitbucket Data Center."""

from __future__ import annotations

from gitvow_bitbucket.adapter import BitbucketAdapter

__all__ = ["BitbucketAdapter"]
