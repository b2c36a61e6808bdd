"""Parsing a policy document, TOML or JSON by extension, into a plain dict.

Kept free of pydantic so the agent hook, which validates a file only when its content
changed, can read it on its hot path; ``policy.load`` validates what this returns.
"""

from __future__ import annotations

import json
import os
from typing import Any

from gitvow.errors import PolicyError


def parse_document(source: str, text: str) -> dict[str, Any]:
    """The document in ``text``, read as TOML or JSON by ``source``'s extension.

    Syntax errors name the file and the position.
    """
    suffix = os.path.splitext(source)[1].lower()
    try:
        if suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise PolicyError("expected a .toml or .json file", source=source)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source=source) from None
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise PolicyError(f"not valid TOML: {exc}", source=source) from None
    if not isinstance(data, dict):
        raise PolicyError("expected an object at the top level", source=source)
    return data
