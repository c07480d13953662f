"""Bearer-token authentication for every route but ``/health``.

OpenEnv servers have no authentication; an openenv-gym server can require a
token, checked in constant time on every HTTP request and on the WebSocket
handshake (``Authorization: Bearer <token>``). ``/health`` stays open so
orchestrators can probe readiness. Wrong or missing tokens get HTTP 401, or a
refused handshake (HTTP 403) on WebSocket routes.

The web interface's page (:mod:`.web`) is open too (its files hold no env data); the page
asks for the token once and sends it on its requests. A browser cannot put a header on a
WebSocket handshake, so the page's sockets (``/web/live``, ``/ws/ui``) also take the token
from the same-site cookie :data:`TOKEN_COOKIE` the page sets (URL-encoded); no other route reads it.
A browser sends a site's cookies to all of its ports, and a page of any origin may open a
WebSocket, so the cookie counts only on a handshake from the server's own page: one whose
``Origin``, when it has one (every browser's has), names the host it was sent to (``Host``,
or ``X-Forwarded-Host`` behind a proxy). A page elsewhere on the same host cannot play with
the token it holds.

    >>> app = create_app("CartPole-v1", token="s3cret")        # doctest: +SKIP
    >>> RemoteEnv(url, token="s3cret")                          # doctest: +SKIP
    >>> GenericEnvClient(base_url=url, headers={"Authorization": "Bearer s3cret"})  # doctest: +SKIP
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from urllib.parse import unquote_to_bytes, urlsplit

from .logs import Throttled

__all__ = ["TokenAuth", "TOKEN_COOKIE", "TOKEN_ENV_VAR", "token_from_env"]

#: Environment variable a server reads its token from when none is given.
TOKEN_ENV_VAR = "OPENENV_GYM_TOKEN"
#: Routes that answer without a token.
OPEN_PATHS = frozenset({"/health"})
#: The cookie holding the token for the web page's sockets.
TOKEN_COOKIE = "openenv_gym_token"

logger = logging.getLogger("openenv_gym.server")


def token_from_env() -> str | None:
    """The token in :data:`TOKEN_ENV_VAR`, or ``None`` when unset or empty."""
    return os.environ.get(TOKEN_ENV_VAR) or None


def _same_origin(headers) -> bool:
    """Whether a handshake comes from a page of the host it was sent to: its ``Origin`` (a
    browser's always has one) names ``Host`` or ``X-Forwarded-Host``; no ``Origin``, no browser.

        >>> _same_origin([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")])
        True
        >>> _same_origin([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:9000")])
        False
        >>> _same_origin([(b"host", b"10.0.0.5:8000"), (b"x-forwarded-host", b"me.hf.space"),
        ...               (b"origin", b"https://me.hf.space")])
        True
    """
    origins = [value for name, value in headers if name == b"origin"]
    if not origins:
        return True
    hosts = {value.decode("latin-1").lower() for name, value in headers if name in (b"host", b"x-forwarded-host")}
    return len(origins) == 1 and urlsplit(origins[0].decode("latin-1")).netloc.lower() in hosts


class TokenAuth:
    """ASGI middleware requiring ``Authorization: Bearer <token>``."""

    def __init__(
        self, app, token: str, *, open_paths: frozenset[str] = frozenset(), cookie_paths: frozenset[str] = frozenset()
    ) -> None:
        if not token:
            raise ValueError("the token must be a non-empty string")
        self.app = app
        self._expected = f"Bearer {token}".encode()
        self._token = token.encode()
        #: Routes besides ``/health`` that answer without a token (the web page's files).
        self._open = OPEN_PATHS | open_paths
        #: WebSocket routes that take the token from :data:`TOKEN_COOKIE` too.
        self._cookie_paths = cookie_paths
        #: Refusals can come in floods: a line per minute at most, with the count.
        self._refused = Throttled(logger, "auth_refused")

    def _authorized(self, scope) -> bool:
        cookies = scope["type"] == "websocket" and scope.get("path") in self._cookie_paths
        headers = scope.get("headers") or ()
        for name, value in headers:
            if name == b"authorization" and hmac.compare_digest(value, self._expected):
                return True
            if cookies and name == b"cookie" and _same_origin(headers):
                for cookie in value.split(b";"):
                    name, _, quoted = cookie.strip().partition(b"=")
                    if name == TOKEN_COOKIE.encode() and hmac.compare_digest(unquote_to_bytes(quoted), self._token):
                        return True
        return False

    async def __call__(self, scope, receive, send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope.get("path") in self._open:
            await self.app(scope, receive, send)
            return
        if self._authorized(scope):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        self._refused.warning(
            "path=%s type=%s peer=%s", scope.get("path"), kind, f"{client[0]}:{client[1]}" if client else "?"
        )
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "unauthorized"})
            return
        body = json.dumps(
            {"detail": "Missing or wrong token: send the header 'Authorization: Bearer <token>'"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="openenv-gym"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
