"""The embedded server's process: ``python -m openenv_gym.catalog._serve NAME``.

Started by :class:`~openenv_gym.catalog.embedded.EmbeddedServer`, never by
hand. Binds a free port on 127.0.0.1, prints ``PORT <n>`` once it listens,
and serves until SIGTERM, or until its parent dies (the parent pid changes, or
the lifeline pipe from the parent reaches end of file).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import sys
import threading
from collections.abc import Sequence

import uvicorn

from ..server.app import create_app
from ..server.run import uvicorn_config
from . import get

#: Seconds between two looks at the parent.
_WATCH_INTERVAL = 0.1
#: Seconds a graceful shutdown may take before the process exits anyway.
_SHUTDOWN_GRACE = 5.0


class _Server(uvicorn.Server):
    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            port = sockets[0].getsockname()[1]
            print(f"PORT {port}", flush=True)


def _watch_parent(server: _Server, parent_pid: int, lifeline: int) -> None:
    """Stop ``server`` (and, failing that, the process) when the parent is gone."""
    with selectors.DefaultSelector() as selector:
        selector.register(lifeline, selectors.EVENT_READ)
        while os.getppid() == parent_pid and not selector.select(_WATCH_INTERVAL):
            pass
    server.should_exit = True
    threading.Timer(_SHUTDOWN_GRACE, os._exit, args=(0,)).start()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openenv_gym.catalog._serve")
    parser.add_argument("name")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--lifeline-fd", type=int, required=True)
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--env-kwargs", type=json.loads, default={})
    args = parser.parse_args(argv)
    if os.getppid() != args.parent_pid:  # the parent died before we got here
        return 0

    entry = get(args.name)
    app = create_app(entry.builtin_server(), env_kwargs=args.env_kwargs, max_sessions=args.max_sessions)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn_config(
        app, host="127.0.0.1", port=sock.getsockname()[1], limits=None,
        timeout_graceful_shutdown=_SHUTDOWN_GRACE,
    )
    server = _Server(config)
    watcher = threading.Thread(
        target=_watch_parent, args=(server, args.parent_pid, args.lifeline_fd),
        name="openenv-gym parent watch", daemon=True,
    )
    watcher.start()
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
