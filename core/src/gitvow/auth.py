"""Credential headers the adapters share.

git smart-HTTP takes a token as HTTP Basic credentials, each forge with its own convention
for the half the token does not fill (GitHub ``x-access-token:TOKEN``, GitLab
``oauth2:TOKEN``, Gitea ``TOKEN:x-oauth-basic``). A configured token that already has the
form ``user:password`` is used as written.
"""

from __future__ import annotations

import binascii  # base64.b64encode without importing base64 (and struct) on the agent hook's forge path


def basic_authorization(token: str, *, user: str | None = None, password: str | None = None) -> dict[str, str]:
    """``{"authorization": "Basic base64(user:token)"}`` (or ``token:password`` when ``user`` is None).

    Always an ``authorization`` header, so whatever the agent sent is replaced.
    """
    if ":" in token:
        userpass = token
    elif user is not None:
        userpass = f"{user}:{token}"
    else:
        userpass = f"{token}:{password or ''}"
    return {"authorization": "Basic " + binascii.b2a_base64(userpass.encode(), newline=False).decode()}
