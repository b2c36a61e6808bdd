#!/usr/bin/env python3
"""Derive the GraphQL schemas (SDL) the fuzz suite generates documents from.

    python scripts/derive_fuzz_schemas.py            # rewrite tests/fuzz/schemas/*.graphql
    python scripts/derive_fuzz_schemas.py --check    # exit 1 if the committed files are stale

The plugins do not commit their forges' full schemas (GitHub's is ~6 MB; Linear's ships only
inside its SDK), but they commit what classification depends on: the name of every mutation
field. GitHub: ``plugins/gitvow-github/src/gitvow_github/data/graphql_mutations.txt`` (every
field of the Mutation type, derived from ``@octokit/graphql-schema``). Linear: every mutation
the official SDK sends (``plugins/gitvow-linear/tests/data/linear_sdk_documents.json``, derived
from ``@linear/sdk``) plus the adapter's mapped fields. GitLab (no published schema): the
adapter's mapped fields plus a few real unmapped ones.

Each schema has every such mutation field, taking one ``input`` object whose fields are the
argument names the adapters read (``body``, ``parentId``, ``repositoryId``, ``projectPath`` …)
and a few scalar arguments, so hypothesis-graphql varies names, aliases, arguments, literals
and variables over the real mutation list. Adapters classify by the top-level field name;
the argument shapes are the ones they look inside.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from graphql import OperationDefinitionNode, OperationType, build_schema, parse

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fuzz" / "schemas"
GITHUB_MUTATIONS = ROOT / "plugins/gitvow-github/src/gitvow_github/data/graphql_mutations.txt"
LINEAR_DOCUMENTS = ROOT / "plugins/gitvow-linear/tests/data/linear_sdk_documents.json"
GITLAB_MUTATIONS = ("mergeRequestCreate", "mergeRequestAccept", "mergeRequestUpdate", "mergeRequestSetDraft",
                    "mergeRequestSetLabels", "mergeRequestSetAssignees", "createIssue", "updateIssue", "createNote",
                    "destroyNote", "issueMove", "awardEmojiAdd", "workItemCreate", "projectSetLocked")

COMMON = """\
# Derived by scripts/derive_fuzz_schemas.py from {source}; do not edit by hand.
input FuzzObject {{
  id: ID
  body: String
  title: String
  description: String
}}

input FuzzInput {{
  id: ID
  body: String
  title: String
  description: String
  parentId: String
  teamId: String
  issueId: String
  repositoryId: ID
  subjectId: ID
  pullRequestId: ID
  repositoryNameWithOwner: String
  projectPath: ID
  noteableId: String
  iid: String
  labelIds: [String!]
  draft: Boolean
  nested: FuzzObject
}}

type Payload {{
  clientMutationId: String
  id: ID
  success: Boolean
}}

type Query {{
  viewer: Payload
  node(id: ID!): Payload
  search(query: String, first: Int): [Payload]
}}

type Mutation {{
{fields}
}}
"""


def github_mutations() -> list[str]:
    lines = GITHUB_MUTATIONS.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def linear_mutations() -> list[str]:
    documents = json.loads(LINEAR_DOCUMENTS.read_text(encoding="utf-8"))["documents"]
    names: set[str] = set()
    for document in documents.values():
        parsed = parse(document["operation"], no_location=True)
        for definition in parsed.definitions:
            if isinstance(definition, OperationDefinitionNode) and definition.operation is OperationType.MUTATION:
                names.update(selection.name.value for selection in definition.selection_set.selections  # type: ignore[attr-defined]
                             if hasattr(selection, "name"))
    sys.path.insert(0, str(ROOT / "plugins/gitvow-linear/src"))
    from gitvow_linear.mutations import MUTATIONS

    return sorted(names | set(MUTATIONS))


def sdl(names: list[str], source: str) -> str:
    fields = "\n".join(f"  {name}(input: FuzzInput, id: ID, body: String): Payload" for name in sorted(set(names)))
    text = COMMON.format(source=source, fields=fields)
    build_schema(text)  # it must be a valid schema
    return text


def schemas() -> dict[str, str]:
    return {
        "github.graphql": sdl(github_mutations(), "plugins/gitvow-github/src/gitvow_github/data/graphql_mutations.txt"),
        "linear.graphql": sdl(linear_mutations(), "plugins/gitvow-linear/tests/data/linear_sdk_documents.json"),
        "gitlab.graphql": sdl(list(GITLAB_MUTATIONS), "gitvow_gitlab.graphql_ops and GitLab's docs"),
    }


def main(argv: list[str]) -> int:
    stale = []
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in schemas().items():
        path = OUT / name
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    for name in stale:
        print(f"stale: tests/fuzz/schemas/{name} (run scripts/derive_fuzz_schemas.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
