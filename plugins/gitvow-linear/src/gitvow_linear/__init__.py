"""Linear for gitvow: ``POST /graphql`` on ``api.linear.app`` classified into operations."""

from __future__ import annotations

from gitvow_linear.adapter import LINEAR_POLICY, LinearAdapter
from gitvow_linear.mcp import classify_linear_tool
from gitvow_linear.mutations import MUTATIONS, mutation_operations

__all__ = ["LINEAR_POLICY", "MUTATIONS", "LinearAdapter", "classify_linear_tool", "mutation_operations"]
