"""GitHub REST requests → operations, through the route trie."""

from __future__ import annotations

from gitvow.request import Classification
from gitvow.vocabulary import READ, UNKNOWN
from gitvow_github.inventory import READ_METHODS
from gitvow_github.routes import RestRoutes, trie

ADAPTER = "github"


def _repo_from_prefix(path: str) -> str | None:
    """``owner/name`` of an unmatched ``/repos/OWNER/NAME/...`` path, for reads outside the inventory."""
    parts = path.split("/", 4)
    if len(parts) >= 4 and parts[1].lower() == "repos" and parts[2] and parts[3]:
        return f"{parts[2]}/{parts[3]}"
    return None


def classify_rest(method: str, path: str, routes: RestRoutes | None = None) -> Classification:
    """Classify one REST call given its method and its path below the API root.

    GET/HEAD/OPTIONS are ``read`` whether or not the route is in the inventory (a read
    changes nothing); any other method must match a route, and the route's reviewed row decides.
    """
    return _classify(method, path, routes or trie())


def _classify(method: str, path: str, routes: RestRoutes) -> Classification:
    method = method.upper()
    match = routes.match(method, path)
    if method in READ_METHODS:
        if match is None:
            return Classification((READ,), repo=_repo_from_prefix(path), adapter=ADAPTER)
        return Classification((READ,), repo=match.repo, adapter=ADAPTER, details=match.endpoint.details)
    if match is None:
        return Classification(
            (UNKNOWN,),
            repo=_repo_from_prefix(path),
            adapter=ADAPTER,
            note="no GitHub REST route takes this method on this path",
        )
    endpoint = match.endpoint
    if endpoint.operation == UNKNOWN:
        return Classification(
            (UNKNOWN,),
            repo=match.repo,
            adapter=ADAPTER,
            note=f"{endpoint.route.operation_id}: {endpoint.reason}",
            details=endpoint.details,
        )
    return Classification((endpoint.operation,), repo=match.repo, adapter=ADAPTER, details=endpoint.details)
