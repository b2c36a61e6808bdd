"""Gitea and Forgejo for gitvow: REST API v1 and git smart-HTTP classified into operations."""

from __future__ import annotations

from gitvow.routing import RouteTrie
from gitvow_gitea.adapter import GiteaAdapter
from gitvow_gitea.commands import classify_tea
from gitvow_gitea.routes import ROUTES, Route

__all__ = ["ROUTES", "GiteaAdapter", "Route", "RouteTrie", "classify_tea"]
