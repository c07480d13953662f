"""WebSocket echo servers: the transport floors for the benchmarks.

Every server answers each binary message on ``/echo/<n>`` with ``n`` bytes
(``n = 0``: the message itself), so a client can send a request-sized message and
get a reply-sized one back: the same bytes on the wire as a real step, and no
work at all.

* ``python _echo.py websockets --port N``: a plain ``websockets`` asyncio
  server (no ASGI, no framework), compression off.
* ASGI apps for uvicorn (``--ws websockets|websockets-sansio|wsproto``):
  ``_echo:asgi_app`` (a bare ASGI callable), ``_echo:starlette_app``,
  ``_echo:fastapi_app``.
"""

# No `from __future__ import annotations`: FastAPI must see the real `WebSocket`
# annotation of the endpoint below (a string would make it a query parameter).

import argparse
import asyncio
import os
import sys


def _reply_for(path: str) -> bytes | None:
    """``/echo/<n>`` -> n random bytes (None: echo the message itself)."""
    try:
        n = int(path.rstrip("/").rsplit("/", 1)[1])
    except (IndexError, ValueError):
        n = 0
    return os.urandom(n) if n > 0 else None


# ------------------------------------------------------------ websockets ----

async def _ws_handler(ws) -> None:
    reply = _reply_for(ws.request.path)
    async for message in ws:
        await ws.send(reply if reply is not None else message)


async def _ws_main(host: str, port: int) -> None:
    from websockets.asyncio.server import serve

    async with serve(_ws_handler, host, port, compression=None, max_size=None):
        await asyncio.Future()


# ------------------------------------------------------------------ ASGI ----

async def asgi_app(scope, receive, send) -> None:
    """A bare ASGI app: no framework between uvicorn and the echo loop."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    reply = _reply_for(scope["path"])
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            return
        data = message.get("bytes")
        if data is None:
            data = (message.get("text") or "").encode()
        await send({"type": "websocket.send", "bytes": reply if reply is not None else data})


def _make_starlette():
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket, WebSocketDisconnect

    async def echo(websocket: WebSocket) -> None:
        reply = _reply_for(websocket.url.path)
        await websocket.accept()
        try:
            while True:
                data = await websocket.receive_bytes()
                await websocket.send_bytes(reply if reply is not None else data)
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute("/echo/{n:int}", echo)])


def _make_fastapi():
    from fastapi import FastAPI, WebSocket, WebSocketDisconnect

    app = FastAPI()

    @app.websocket("/echo/{n}")
    async def echo(websocket: WebSocket, n: int) -> None:
        reply = os.urandom(n) if n > 0 else None
        await websocket.accept()
        try:
            while True:
                data = await websocket.receive_bytes()
                await websocket.send_bytes(reply if reply is not None else data)
        except WebSocketDisconnect:
            pass

    return app


def __getattr__(name: str):
    # Built on first access, so importing this module never imports a framework
    # that the server being started does not use.
    if name == "starlette_app":
        return _make_starlette()
    if name == "fastapi_app":
        return _make_fastapi()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["websockets"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        asyncio.run(_ws_main(args.host, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
