"""GitLab for gitvow: REST v4, GraphQL, ``glab`` and GitLab MCP tools mapped to operations."""

from __future__ import annotations

from gitvow_gitlab.adapter import GitLabAdapter, split_path

__all__ = ["GitLabAdapter", "split_path"]
