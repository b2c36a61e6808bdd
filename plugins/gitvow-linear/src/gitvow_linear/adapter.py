"""The ``linear`` adapter: Linear's GraphQL API on ``api.linear.app``.

Linear has one endpoint, ``POST /graphql``; anything else on the host is refused. The body is
read by the core's :class:`~gitvow.graphql.GraphQLReader` (graphql-core, never regexes) under
Linear's own, tighter limits: 32 KiB and 32 top-level fields by default, the ceilings the
legacy gate had (``linearBodyLimit``, ``linearMaxOperations``). The official SDK's largest
document is under 9 KiB, so the limits cost real clients nothing.

Every refusal on this host — unreadable, over a limit, an unmapped mutation *or* a mode
denial — reports ``linear_policy``, the code Linear's refusals always had, kept unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from gitvow import refusal
from gitvow.adapter import Adapter
from gitvow.graphql import TOKEN_LIMIT, GraphQLReader, GraphQLRefused
from gitvow.request import Classification, Fixture, IssueDraft, Request, ToolCall
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_linear import fixtures
from gitvow_linear.limits import BODY_LIMIT, FIELD_LIMIT
from gitvow_linear.mcp import classify_linear_tool
from gitvow_linear.mutations import issue_draft, mutation_operations

if TYPE_CHECKING:
    from gitvow_linear.options import LinearOptions

LINEAR_POLICY = "linear_policy"
HOST = "api.linear.app"
ENDPOINT = "/graphql"
_NOTE_NAMES = 3


def _unknown(note: str) -> Classification:
    return Classification(
        operations=(UNKNOWN,),
        adapter="linear",
        unknown_code=LINEAR_POLICY,
        mode_code=LINEAR_POLICY,
        note=note,
    )


class LinearAdapter(Adapter):
    """Linear GraphQL: queries read, a fixed set of mutations map to operations."""

    name = "linear"
    default_hosts = (HOST,)
    #: Linear hosts no repositories: pause, auto-merge and allowed-repository gates do not apply.
    has_repositories = False

    def __init__(self) -> None:
        self.body_limit = BODY_LIMIT
        self.field_limit = FIELD_LIMIT
        self._reader = self._make_reader()

    def _make_reader(self) -> GraphQLReader:
        # The token limit only has to admit what fits in the body limit; graphql-core's lexer
        # then stops early on a document built to be slow.
        return GraphQLReader(
            body_limit=self.body_limit,
            field_limit=self.field_limit,
            token_limit=max(TOKEN_LIMIT, self.body_limit // 2),
        )

    @classmethod
    def options_model(cls) -> type[LinearOptions]:
        from gitvow_linear.options import LinearOptions

        return LinearOptions

    def configure(self, options: LinearOptions) -> None:
        self.body_limit, self.field_limit = options.body_limit, options.field_limit
        self._reader = self._make_reader()

    def refusal_body(self, request: Request, message: str, code: str) -> tuple[str, bytes]:
        """GraphQL ``errors`` as Linear sends them: the SDK shows ``userPresentableMessage``."""
        return refusal.graphql_errors(message, code, type="forbidden", userPresentableMessage=message)

    def classify(self, request: Request) -> Classification:
        if request.method != "POST" or request.path != ENDPOINT:
            return _unknown(f"Linear's API is only POST {ENDPOINT}")
        if request.query:
            return _unknown(f"POST {ENDPOINT} takes no query string")
        try:
            graphql = self._reader.read(request.body)
        except GraphQLRefused as exc:
            return _unknown(str(exc))
        fields = graphql.operation.fields
        if graphql.operation.kind == "query":
            return Classification((READ,), adapter=self.name, unknown_code=LINEAR_POLICY, mode_code=LINEAR_POLICY)
        operations: list[str] = []
        actions: list[str] = []
        issues: list[IssueDraft] = []
        unmapped: list[str] = []
        for field in fields:
            mapped = mutation_operations(field, graphql.variables)
            if mapped is None:
                unmapped.append(field.name)
                mapped = (UNKNOWN,)
            actions.extend(mapped)
            operations.extend(op for op in mapped if op not in operations)
            if field.name == "issueCreate":
                draft = issue_draft(field, graphql.variables)
                if draft is not None:
                    issues.append(draft)
        if not operations:
            return _unknown("the mutation selects no field")
        note = ""
        if unmapped:
            shown = list(dict.fromkeys(unmapped))
            names = ", ".join(shown[:_NOTE_NAMES]) + (f" and {len(shown) - _NOTE_NAMES} more" if len(shown) > _NOTE_NAMES else "")
            note = f"mutation {names} is not allowed through the Linear policy"
        return Classification(
            tuple(operations),
            adapter=self.name,
            unknown_code=LINEAR_POLICY,
            mode_code=LINEAR_POLICY,
            note=note,
            details={"fields": tuple(f.name for f in fields)},
            actions=tuple(actions) if len(actions) != len(operations) else (),
            issues=tuple(issues),
        )

    def credential_headers(self, request: Request, token: str) -> Mapping[str, str]:
        """Linear takes a personal API key bare (``Authorization: lin_api_…``), not as a Bearer
        token; an OAuth token configured as ``Bearer …`` is passed through as written."""
        return {"authorization": token}

    def classify_mcp_tool(self, tool: str, arguments: Mapping[str, object]) -> ToolCall | None:
        found = classify_linear_tool(tool, arguments)
        # refused with Linear's own code, as the GraphQL the server sends would be
        return None if found is None else replace(found, unknown_code=LINEAR_POLICY, mode_code=LINEAR_POLICY)

    def fixtures(self) -> Sequence[Fixture]:
        return fixtures.FIXTURES

    def fail_closed_fixtures(self) -> Sequence[Fixture]:
        return fixtures.fail_closed(self.body_limit, self.field_limit)

    def unsupported(self) -> Mapping[str, str]:
        return fixtures.UNSUPPORTED
