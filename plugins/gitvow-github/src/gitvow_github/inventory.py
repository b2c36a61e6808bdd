"""The committed inventories and their mappings, read from the package's ``data/`` files.

Four files, two pairs:

- ``rest_routes.tsv`` (derived, never edited): every REST route of GitHub's OpenAPI
  descriptions — method, path template, operationId, plans.
- ``rest_operations.tsv`` (reviewed by hand): operationId → operation, with a reason for
  every ``unknown``. Only write routes are listed; GET/HEAD/OPTIONS are ``read``.
- ``graphql_mutations.txt`` (derived): every field of the schema's ``Mutation`` type.
- ``graphql_operations.tsv`` (reviewed by hand): mutation → operation, reasons as above.

The split is the point: a refresh of the derived files that brings a route or mutation
nobody has mapped leaves it without a row, and the completeness tests fail until it has one.
At runtime a route without a row classifies as ``unknown`` — never as allowed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from gitvow.vocabulary import OPERATIONS, READ, UNKNOWN

#: The derived lists ship inside the package (a wheel installs them beside this module).
#: Read by path: ``importlib.resources`` alone costs the agent hook ~4 ms to import, on every
#: ``gh`` command.
DATA = os.path.join(os.path.dirname(__file__), "data")


def _read(name: str) -> str:
    with open(os.path.join(DATA, name), encoding="utf-8") as fh:
        return fh.read()

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class InventoryError(ValueError):
    """A data file is malformed: names the file, the line and what was expected."""


@dataclass(frozen=True, slots=True)
class Route:
    """One REST route of the inventory."""

    method: str
    path: str
    operation_id: str
    plans: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One reviewed mapping row: the operation, and why (required for ``unknown``)."""

    operation: str
    reason: str = ""


def _lines(name: str) -> Iterator[tuple[int, str]]:
    text = _read(name)
    for number, line in enumerate(text.splitlines(), 1):
        if line and not line.startswith("#"):
            yield number, line


def source_header(name: str) -> str:
    """The ``# source:`` line of a derived file: the npm package and version it came from."""
    text = _read(name)
    for line in text.splitlines():
        if line.startswith("# source:"):
            return line[len("# source:") :].strip()
    return ""


@cache
def rest_routes() -> tuple[Route, ...]:
    """Every REST route in ``rest_routes.tsv``."""
    routes = []
    for number, line in _lines("rest_routes.tsv"):
        parts = line.split("\t")
        if len(parts) != 4 or not parts[1].startswith("/"):
            raise InventoryError(f"rest_routes.tsv:{number}: expected method, path, operationId, plans")
        routes.append(Route(parts[0], parts[1], parts[2], tuple(parts[3].split(","))))
    return tuple(routes)


def _mapping(name: str) -> dict[str, Rule]:
    rows: dict[str, Rule] = {}
    for number, line in _lines(name):
        parts = line.split("\t")
        if len(parts) not in (2, 3):
            raise InventoryError(f"{name}:{number}: expected key, operation[, reason]")
        key, operation = parts[0], parts[1]
        reason = parts[2] if len(parts) == 3 else ""
        if operation not in OPERATIONS:
            raise InventoryError(f"{name}:{number}: {operation!r} is not an operation of the vocabulary")
        if operation == UNKNOWN and not reason:
            raise InventoryError(f"{name}:{number}: an unknown row must say why")
        if key in rows:
            raise InventoryError(f"{name}:{number}: {key!r} is mapped twice")
        rows[key] = Rule(operation, reason)
    return rows


@cache
def rest_operations() -> Mapping[str, Rule]:
    """operationId → reviewed mapping, for write routes."""
    return _mapping("rest_operations.tsv")


@cache
def graphql_mutations() -> tuple[str, ...]:
    """Every mutation field of GitHub's GraphQL schema."""
    return tuple(line.strip() for _, line in _lines("graphql_mutations.txt"))


@cache
def graphql_operations() -> Mapping[str, Rule]:
    """Mutation field → reviewed mapping."""
    return _mapping("graphql_operations.tsv")


def rest_operation(route: Route) -> Rule:
    """The operation a route performs: ``read`` for GET/HEAD/OPTIONS, else its reviewed row."""
    if route.method in READ_METHODS:
        return Rule(READ)
    row = rest_operations().get(route.operation_id)
    if row is None:
        return Rule(UNKNOWN, f"{route.operation_id} is not mapped yet")
    return row
