"""GitHub for gitvow: REST routes, GraphQL mutations, GHES hosts, ``gh`` and MCP tool calls."""

from __future__ import annotations
