"""The ``openenv-gym`` command.

    $ openenv-gym serve CartPole-v1 --port 8000 --max-sessions 64
    $ openenv-gym serve mypackage.envs:make_env --env-kwargs '{"level": 3}'

SIGINT and SIGTERM stop the server cleanly: open sessions get a close frame
and their environments are closed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence

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
        description="Serve ENV (a Gymnasium id such as CartPole-v1, or module:factory) "
        "over OpenEnv's HTTP + WebSocket protocol.",
    )
    serve.add_argument("env", metavar="ENV", help="Gymnasium id or module:factory")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from .server import serve

        app_kwargs: dict = {"execution": args.execution}
        if args.max_sessions is not None:
            app_kwargs["max_sessions"] = args.max_sessions
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


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main())
