"""The ``openenv-gym`` command.

    $ openenv-gym serve CartPole-v1 --port 8000 --max-sessions 64
    $ openenv-gym serve mypackage.envs:make_env --env-kwargs '{"level": 3}'
    $ openenv-gym serve pettingzoo.classic.connect_four_v3 --port 8001
    $ openenv-gym list

SIGINT and SIGTERM stop the server cleanly: open sessions get a close frame
and their environments are closed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence

from .wire import Limits

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-gym",
        description="Serve Gymnasium environments as OpenEnv servers, and more.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve an environment as an OpenEnv server",
        description="Serve ENV (a Gymnasium id such as CartPole-v1, module:factory, a "
        "PettingZoo module such as pettingzoo.classic.connect_four_v3, or gym:ID for an id "
        "of the old gym package) "
        "over OpenEnv's HTTP + WebSocket protocol.",
    )
    serve.add_argument("env", metavar="ENV", help="Gymnasium id, module:factory, PettingZoo module or gym:ID")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--max-sessions", type=int, default=None, help="concurrent sessions allowed")
    serve.add_argument(
        "--session-timeout", type=float, default=None,
        help="close sessions idle for this many seconds",
    )
    serve.add_argument(
        "--execution", choices=("auto", "thread", "inline"), default="auto",
        help="where env calls run (default auto)",
    )
    serve.add_argument(
        "--env-kwargs", type=json.loads, default=None, metavar="JSON",
        help="keyword arguments for gym.make or the factory, as a JSON object",
    )
    serve.add_argument(
        "--step-timeout", type=float, default=None, metavar="SECONDS",
        help="an env call taking longer gets EXECUTION_ERROR and a fresh env",
    )
    serve.add_argument(
        "--token", default=None,
        help="require 'Authorization: Bearer TOKEN' on every route but /health "
        "(default: $OPENENV_GYM_TOKEN if set)",
    )
    serve.add_argument(
        "--max-frame-bytes", type=int, default=None, metavar="BYTES",
        help="largest incoming WebSocket frame (default 16 MiB)",
    )
    serve.add_argument(
        "--ping-interval", type=_optional_seconds, default=20.0, metavar="SECONDS",
        help="WebSocket keepalive ping interval, or 'none' (default 20)",
    )
    serve.add_argument(
        "--ping-timeout", type=_optional_seconds, default=20.0, metavar="SECONDS",
        help="drop a peer that does not answer a ping in time, or 'none' (default 20)",
    )
    serve.add_argument(
        "--vector-backend", choices=("auto", "sync", "async"), default="auto",
        help="what steps the envs of a batched vector session: 'sync' in this process, "
        "'async' one worker process per env, 'auto' (default) 'sync' until the env's "
        "steps prove slow (each of the recent ones 1 ms or more), then 'async' for later sessions",
    )
    serve.add_argument(
        "--busy-poll", type=float, default=None, metavar="SECONDS",
        help="after replying to a client on this machine, keep polling for its next "
        "message this long instead of sleeping (default 0.001; 0 turns it off)",
    )
    serve.add_argument(
        "--drain-timeout", type=float, default=30.0, metavar="SECONDS",
        help="on SIGINT/SIGTERM, how long open sessions may finish their env call",
    )
    serve.add_argument(
        "--log-format", choices=("text", "json"), default="text",
        help="server log lines as text or as one JSON object per line",
    )
    commands.add_parser(
        "list",
        help="list the openenv/... catalog ids",
        description="Every catalog id, its upstream OpenEnv env, and where its server comes from.",
    )
    return parser


def _list_envs() -> int:
    from .catalog import list_envs

    entries = list_envs()
    width = max(len(entry.id) for entry in entries)
    upstream = max(len(entry.upstream) for entry in entries)
    for entry in entries:
        print(f"{entry.id:<{width}}  {entry.upstream:<{upstream}}  {entry.server_source()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        return _list_envs()
    if args.command == "serve":
        from .server import serve
        from .server.logs import configure_logging

        configure_logging(args.log_format)
        app_kwargs: dict = {
            "execution": args.execution,
            "vector_backend": args.vector_backend,
            "step_timeout": args.step_timeout,
            "token": args.token,
            "ping_interval": args.ping_interval,
            "ping_timeout": args.ping_timeout,
            "drain_timeout": args.drain_timeout,
        }
        if args.max_frame_bytes is not None:
            app_kwargs["limits"] = Limits(
                max_frame_bytes=args.max_frame_bytes, max_array_bytes=args.max_frame_bytes
            )
        if args.max_sessions is not None:
            app_kwargs["max_sessions"] = args.max_sessions
        if args.busy_poll is not None:
            app_kwargs["busy_poll"] = args.busy_poll
        if args.session_timeout is not None:
            app_kwargs["session_timeout"] = args.session_timeout
        if args.env_kwargs is not None:
            if not isinstance(args.env_kwargs, dict):
                print("openenv-gym: --env-kwargs must be a JSON object", file=sys.stderr)
                return 2
            app_kwargs["env_kwargs"] = args.env_kwargs
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, restores these
        # handlers and re-raises the signal: end with status 0, no traceback.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_quietly)
        print(f"openenv-gym: serving {args.env} on http://{args.host}:{args.port}", flush=True)
        serve(args.env, host=args.host, port=args.port, **app_kwargs)
    return 0


def _optional_seconds(text: str) -> float | None:
    return None if text.lower() in ("none", "off", "0") else float(text)


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main())
