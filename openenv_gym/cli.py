"""The ``openenv-gym`` command.

    $ openenv-gym serve CartPole-v1 --port 8000 --max-sessions 64
    $ openenv-gym serve mypackage.envs:make_env --env-kwargs '{"level": 3}'
    $ openenv-gym serve pettingzoo.classic.connect_four_v3 --port 8001
    $ openenv-gym serve OpenEnv/envs/openspiel_env --server-env OPENSPIEL_GAME=catch --python venv/bin/python
    $ openenv-gym list
    $ openenv-gym kit CartPole-v1 --out my_package     # an RFC 008 validation kit
    $ openenv-gym kit wrappers/cartpole                # ... written into a package
    $ openenv-gym check wrappers/cartpole              # upstream's graders, then ours
    $ openenv-gym check CartPole-v1                    # ... on a kit generated on the fly
    $ openenv-gym check http://127.0.0.1:8000          # ... what can be checked on any server

SIGINT and SIGTERM stop the server cleanly: open sessions get a close frame
and their environments are closed. An OpenEnv package directory (one with
``openenv.yaml``) is served by its own app, in a child process that stops with
the command (see :class:`~openenv_gym.server.package.PackageServer`).

A server that cannot start (an unknown env, a module that does not import, a
factory that raises, a port in use) fails in one line on stderr saying what
was wrong, with exit status 1; ``--debug`` shows the traceback instead. The
line ``serving env=... url=...`` is logged once the port is bound. Modules of
the current directory are importable, as with ``python -m``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .errors import OpenEnvGymError
from .protocol import Limits

__all__ = ["main"]

#: ``--log-level`` choices (the server's :data:`~openenv_gym.server.logs.LOG_LEVELS`,
#: repeated here so that ``--help`` works without the server extra).
_LOG_LEVELS = ("debug", "info", "warning", "error")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openenv-gym",
        description="Serve Gymnasium environments as OpenEnv servers, and more.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(commands)
    commands.add_parser(
        "list",
        help="list the openenv/... catalog ids",
        description="Every catalog id, its upstream OpenEnv env, and where its server comes from.",
    )
    describe = commands.add_parser(
        "describe",
        help="the spaces a client sees at a URL, and for a stock server the rule that chose each field's",
        description="Read URL's /schema (and, for a stock OpenEnv server whose schema leaves shapes or action "
        "counts open, its first observation from POST /reset) and print the Gymnasium spaces RemoteEnv gives, "
        "with the rule that chose each field's space (docs/upstream.md lists the rules).",
    )
    describe.add_argument("url", metavar="URL", help="an OpenEnv server")
    describe.add_argument("--id", metavar="ID", default=None,
                          help="see it through a catalog id's exact view (openenv/Maze-v0, ...: openenv-gym list)")
    _add_kit(commands)
    _add_check(commands)
    return parser


#: What TARGET may be, for ``kit`` and ``check``.
_TARGET_HELP = "Gymnasium id, module:factory, PettingZoo module, or a package directory (with openenv.yaml)"


def _add_kit(commands: Any) -> None:
    kit = commands.add_parser(
        "kit",
        help="generate an RFC 008 validation kit (openenv.yaml's validation: block, runtime plan, canaries, oracle)",
        description="Measure TARGET and write what `openenv validate` needs: the validation: block of "
        "openenv.yaml (the rest is kept), validation/runtime.json, validation/canaries.json, "
        "validation/oracle.json when an oracle is found, and validation/kit.json.",
    )
    kit.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    kit.add_argument("--out", metavar="DIR", default=None, help="package directory to write (default: TARGET, "
                     "when it is a package)")
    kit.add_argument("--env-kwargs", type=_json_object, default=None, metavar="JSON",
                     help="keyword arguments for gym.make or the factory, as a JSON object")
    kit.add_argument("--seed", type=int, default=0, help="seed of every recorded episode (default 0)")
    kit.add_argument("--oracle", metavar="MODULE:POLICY", default=None,
                     help="oracle policy(obs, info, mask) -> action, instead of a bundled controller or search")


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="run upstream's validation graders without Docker, then the semantic checks upstream lacks",
        description="Check TARGET: upstream's static and runtime graders through a local provider, then "
        "episode_determinism, episode_isolation, oracle_max, floor_gap, canary_floor, replayability, "
        "no_solution_leakage, resource_envelope, reward hacking probes, a learnability probe and throughput. "
        "A package directory is checked with its validation kit (see `openenv-gym kit`); for a Gymnasium id, "
        "module:factory or PettingZoo module the kit is generated into a temporary directory first; at the "
        "URL of a running OpenEnv server, what needs a kit or a server of our own SKIPs, saying why.",
    )
    check.add_argument("target", metavar="TARGET", help=f"{_TARGET_HELP}, or the URL of an OpenEnv server")
    check.add_argument("--json", metavar="FILE", default=None, help="also write the report as JSON (upstream's shape)")
    check.add_argument("--markdown", metavar="FILE", default=None,
                       help="also write the report as Markdown, with its plots in FILE's stem .png (matplotlib)")
    check.add_argument("--html", metavar="FILE", default=None,
                       help="also write the report as one self-contained HTML page, its plots inline (SVG)")
    check.add_argument("--skip-upstream", action="store_true", help="run only openenv-gym's checks")
    check.add_argument("--env-kwargs", type=_json_object, default=None, metavar="JSON",
                       help="keyword arguments for gym.make or the factory, as a JSON object (not for a package)")
    check.add_argument("--oracle", metavar="MODULE:POLICY", default=None,
                       help="oracle policy(obs, info, mask) -> action of a generated kit (not for a package)")
    check.add_argument("--server-env", type=_key_value, action="append", default=None, metavar="KEY=VALUE",
                       help="an environment variable for a package without a kit (upstream's envs/<env>), "
                       "started here: OPENSPIEL_GAME=catch (repeatable)")
    check.add_argument("--python", default=None, metavar="PYTHON",
                       help="the interpreter that runs a package without a kit (one with its dependencies)")


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve an environment as an OpenEnv server",
        description="Serve ENV (a Gymnasium id such as CartPole-v1, module:factory, a "
        "PettingZoo module such as pettingzoo.classic.connect_four_v3, or gym:ID for an id "
        "of the old gym package) over OpenEnv's HTTP + WebSocket protocol; or serve the "
        "OpenEnv package directory ENV (one with openenv.yaml) with its own app, without Docker.",
    )
    serve.add_argument(
        "env", metavar="ENV",
        help="Gymnasium id, module:factory, PettingZoo module, gym:ID, envpool:TASK, or a package directory",
    )
    _add_network_options(serve)
    _add_session_options(serve)
    _add_package_options(serve)
    _add_output_options(serve)


#: The ``serve`` options that apply to a package directory: its own app configures the rest.
_PACKAGE_OPTIONS = ("host", "port", "server_env", "python", "log_format", "log_level", "debug")
#: Seconds a package's server may take to answer /health (imports of engines can be slow).
_PACKAGE_STARTUP_TIMEOUT = 120.0


def _add_package_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--server-env", type=_key_value, action="append", default=None, metavar="KEY=VALUE",
        help="for a package directory: an environment variable of its server, such as "
        "OPENSPIEL_GAME=catch (repeatable)",
    )
    serve.add_argument(
        "--python", default=None, metavar="PYTHON",
        help="for a package directory: the interpreter that runs its server, which must have the "
        "package's dependencies and uvicorn (default: this one)",
    )


def _add_network_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument(
        "--native-port", type=_optional_port, default=0, metavar="PORT",
        help="port of the native listener, where openenv-gym clients reach the WebSocket routes "
        "framed in C, or 'off' (default: a free port, advertised in /schema; off when "
        "$OPENENV_GYM_NATIVE=off)",
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
        "--busy-poll", type=float, default=None, metavar="SECONDS",
        help="after replying to a client on this machine, keep polling for its next "
        "message this long instead of sleeping (default 0.001; 0 turns it off; at most 1)",
    )
    serve.add_argument(
        "--drain-timeout", type=float, default=30.0, metavar="SECONDS",
        help="on SIGINT/SIGTERM, how long open sessions may finish their env call",
    )
    serve.add_argument(
        "--handshake-timeout", type=float, default=None, metavar="SECONDS",
        help="close a connection that does not become a session in time: a complete request, "
        "a vector_open, the next chunk of a body (default 10)",
    )


def _add_session_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--env-kwargs", type=_json_object, default=None, metavar="JSON",
        help="keyword arguments for gym.make or the factory, as a JSON object",
    )
    serve.add_argument("--max-sessions", type=int, default=None, help="concurrent sessions allowed")
    serve.add_argument(
        "--session-timeout", type=float, default=None,
        help="close sessions idle for this many seconds",
    )
    serve.add_argument(
        "--max-held-sessions", type=int, default=None, metavar="N",
        help="sessions that outlive their sockets (POST /mcp openenv/session/create, MCP's initialize) "
        "held at once, among --max-sessions (default: a quarter of them; 0: none)",
    )
    serve.add_argument(
        "--held-session-timeout", type=float, default=None, metavar="SECONDS",
        help="close a session that outlives its sockets after this many seconds without a request and "
        "no socket attached (default 120; at most --session-timeout)",
    )
    serve.add_argument(
        "--execution", choices=("auto", "thread", "inline", "process"), default="auto",
        help="where env calls run: 'auto' (default) on the event loop once proven fast, else on the "
        "session's thread; 'process': each session's env in a process of its own, for native or "
        "untrusted envs",
    )
    serve.add_argument(
        "--single-thread", action=argparse.BooleanOptionalAction, default=None,
        help="run every env call on one thread of the server, which sessions take turns on, for "
        "envs that are not thread-safe (default: for envs that draw with pygame)",
    )
    serve.add_argument(
        "--step-timeout", type=float, default=None, metavar="SECONDS",
        help="an env call taking longer gets EXECUTION_ERROR and a fresh env",
    )
    serve.add_argument(
        "--env-memory-mb", type=int, default=None, metavar="MIB",
        help="with --execution process: the memory each env's process may allocate; an env that "
        "reaches it gets EXECUTION_ERROR and a fresh process (default: no cap)",
    )
    serve.add_argument(
        "--inline-deadline", type=_optional_seconds, default=5.0, metavar="SECONDS",
        help="an env call running on the event loop (an env that proved fast) and taking longer is "
        "interrupted: EXECUTION_ERROR, a fresh env on its thread; 'none' never interrupts (default 5)",
    )
    serve.add_argument(
        "--tool-images", action="store_true",
        help="the MCP tools' results carry the env's frame as a PNG after their text, for models that "
        "see (the env must render rgb_array: --env-kwargs '{\"render_mode\": \"rgb_array\"}')",
    )
    serve.add_argument(
        "--web", action="store_true", default=None,
        help="serve the web page at /web/ (play the env by hand, watch it render, read its report) and "
        "upstream's /web routes; also on when ENABLE_WEB_INTERFACE=true, as upstream's servers",
    )
    serve.add_argument(
        "--web-report", default=None, metavar="FILE",
        help="the validation report the web page shows: the HTML `openenv-gym check --html FILE` wrote",
    )
    serve.add_argument(
        "--set-state", default=None, metavar="MODULE:FN",
        help="serve resets carrying injected_state (RFC 008's set_state): FN(env, injected_state) sets "
        "the env's state after its reset and returns (observation, info); without it such resets "
        "are refused",
    )
    serve.add_argument(  # server/backends.py's CHOICES, repeated so that --help needs no server extra
        "--vector-backend", choices=("auto", "envpool", "async", "sync"), default="auto",
        help="what steps the envs of a batched vector session: 'sync' in this process, "
        "'async' one worker process per env, 'envpool' one EnvPool pool (ENV is envpool:TASK), "
        "'auto' (default) 'envpool' for an EnvPool task, else 'sync'",
    )


def _add_output_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--log-format", choices=("text", "json"), default="text",
        help="server log lines as text or as one JSON object per line",
    )
    serve.add_argument(
        "--log-level", choices=_LOG_LEVELS, default="info",
        help="least severe log lines shown (default info; debug adds one line per session "
        "opened and closed)",
    )
    serve.add_argument(
        "--debug", action="store_true",
        help="show the traceback when the server cannot start (and log at debug level)",
    )


def _list_envs() -> int:
    from .catalog import list_envs

    entries = list_envs()
    width = max(len(entry.id) for entry in entries)
    upstream = max(len(entry.upstream) for entry in entries)
    for entry in entries:
        print(f"{entry.id:<{width}}  {entry.upstream:<{upstream}}  {entry.server_source()}")
    return 0


def _describe(url: str, catalog_id: str | None) -> int:
    from .client.connection import http_url
    from .client.contract import FieldsContract, read_contract
    from .client.options import ConnectOptions

    view: dict[str, Any] = {}
    try:
        if catalog_id is not None:
            from .catalog import get

            view = get(catalog_id).view()
        _, contract = read_contract(http_url(url), ConnectOptions.merge(None), **view)
    except (OpenEnvGymError, ValueError) as exc:
        print(f"openenv-gym: cannot describe {url}: {exc}", file=sys.stderr)
        return 1
    print(f"observation space: {contract.observation_space}")
    print(f"action space:      {contract.action_space}")
    if isinstance(contract, FieldsContract):
        print(f"a stock OpenEnv server{f', through {catalog_id} view' if catalog_id else ''}; the rule of each field:")
        print(contract.view.describe())
    else:
        print("an openenv-gym server: its exact spaces")
    return 0


def _serve_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`~openenv_gym.serve` that ``args`` set."""
    options: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "native_port": args.native_port,
        "execution": args.execution,
        "vector_backend": args.vector_backend,
        "step_timeout": args.step_timeout,
        "token": args.token,
        "ping_interval": args.ping_interval,
        "ping_timeout": args.ping_timeout,
        "drain_timeout": args.drain_timeout,
        "inline_deadline": args.inline_deadline,
    }
    if args.max_frame_bytes is not None:
        options["limits"] = Limits(
            max_frame_bytes=args.max_frame_bytes, max_array_bytes=args.max_frame_bytes
        )
    optional = {
        "handshake_timeout": args.handshake_timeout,
        "max_sessions": args.max_sessions,
        "busy_poll": args.busy_poll,
        "session_timeout": args.session_timeout,
        "max_held_sessions": args.max_held_sessions,
        "held_session_timeout": args.held_session_timeout,
        "env_kwargs": args.env_kwargs,
        "single_thread": args.single_thread,
        "env_memory_mb": args.env_memory_mb,
    }
    options.update({key: value for key, value in optional.items() if value is not None})
    if args.set_state is not None:
        options["set_state"] = _import_function(args.set_state, "--set-state")
    if args.tool_images:
        options["tool_images"] = True
    if args.web:
        options["web"] = True
    if args.web_report is not None:
        options["web_report"] = args.web_report
    return options


def _import_function(path: str, option: str) -> Any:
    """The function ``module:name`` names (the working directory is importable)."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"{option} takes module:function, not {path!r}")
    function = getattr(importlib.import_module(module), name, None)
    if not callable(function):
        raise TypeError(f"{option} {path}: the module {module!r} has no function {name!r}")
    return function


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    level = "debug" if args.debug else args.log_level
    try:
        from .server import serve
        from .server.logs import configure_logging, uvicorn_log_level
        from .server.package import is_package

        configure_logging(args.log_format, level)
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, restores these
        # handlers and re-raises the signal: end with status 0, no traceback.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_quietly)
        if is_package(args.env):
            return _serve_package(args, parser, uvicorn_log_level(level))
        if args.server_env or args.python:
            print("openenv-gym: --server-env and --python are for an OpenEnv package directory (one with "
                  f"openenv.yaml), whose server runs in a process of its own; {args.env!r} is not one",
                  file=sys.stderr)
            return 2
        if os.path.isdir(args.env):
            print(f"openenv-gym: cannot serve {args.env!r}: it is a directory without openenv.yaml; a "
                  "directory is served when it is an OpenEnv package (openenv.yaml, models.py, server/app.py)",
                  file=sys.stderr)
            return 1
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` and uvicorn do
        uvicorn_kwargs = {"log_level": uvicorn_log_level(level), "log_config": None}
        serve(args.env, uvicorn_kwargs=uvicorn_kwargs, **_serve_options(args))
    except Exception as exc:  # noqa: BLE001 - every failure to start is reported in one line
        if args.debug:
            raise
        print(f"openenv-gym: {_why_not_served(args.env, exc)}", file=sys.stderr)
        return 1
    return 0


def _serve_package(args: argparse.Namespace, parser: argparse.ArgumentParser, log_level: str) -> int:
    """Serve the package directory ``args.env`` in the foreground, until SIGINT or SIGTERM."""
    import logging

    from .errors import EmbeddedServerError
    from .server.package import PackageServer

    defaults = parser.parse_args(["serve", args.env])
    ignored = [f"--{dest.replace('_', '-')}" for dest, value in vars(args).items()
               if dest not in _PACKAGE_OPTIONS and value != getattr(defaults, dest)]
    if ignored:
        print(f"openenv-gym: {', '.join(ignored)}: {args.env} is an OpenEnv package, whose own app configures "
              "its server; for a package, serve takes --host, --port, --server-env and --python", file=sys.stderr)
        return 2
    with PackageServer(
        args.env, env=dict(args.server_env or ()), python=args.python, host=args.host, port=args.port,
        startup_timeout=_PACKAGE_STARTUP_TIMEOUT, capture_output=False, log_level=log_level,
    ) as server:
        logging.getLogger("openenv_gym.server").info(
            "serving package=%s url=%s pid=%d", args.env, server.url, server.pid
        )
        status = server.wait()
    raise EmbeddedServerError(f"{server.label} exited with status {status} (its output is above)")


def _why_not_served(env: str, exc: BaseException) -> str:
    """One line saying why ``env`` could not be served, and what to do."""
    hints = ["--debug shows the traceback"]
    if isinstance(exc, OSError) and isinstance(exc, OpenEnvGymError):  # the port: it says it all
        return f"{exc} ({hints[0]})"
    text = " ".join((str(exc) or type(exc).__name__).split())
    if isinstance(exc, ModuleNotFoundError):
        if exc.name and env.split(":")[0].startswith(exc.name):
            hints.insert(0, "a module of your own must be importable from this directory or PYTHONPATH")
    elif type(exc).__module__.startswith("gymnasium"):
        hints.insert(0, "ENV is a Gymnasium id, module:factory, a PettingZoo module or gym:ID")
    elif not isinstance(exc, (ImportError, OpenEnvGymError)):
        text = f"{type(exc).__name__}: {text}"
    return f"cannot serve {env!r}: {text} ({'; '.join(hints)})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list_envs()
    if args.command == "describe":
        return _describe(args.url, args.id)
    if args.command == "kit":
        return _kit(args)
    if args.command == "check":
        from .kit.checks import main as check_main

        return check_main(args.target, json_path=args.json, markdown_path=args.markdown, html_path=args.html,
                          upstream=not args.skip_upstream, env_kwargs=args.env_kwargs, oracle=args.oracle,
                          server_env=dict(args.server_env) if args.server_env else None, python=args.python)
    return _serve(args, parser)


def _kit(args: argparse.Namespace) -> int:
    from .kit import ProbeError, make_kit

    try:
        kit = make_kit(args.target, args.out, env_kwargs=args.env_kwargs, seed=args.seed, oracle=args.oracle)
    except (ProbeError, ValueError) as exc:
        print(f"openenv-gym: {exc}", file=sys.stderr)
        return 1
    print(kit.summary())
    return 0


def _optional_seconds(text: str) -> float | None:
    return None if text.lower() in ("none", "off", "0") else float(text)


def _optional_port(text: str) -> int | None:
    return None if text.lower() in ("none", "off") else int(text)


def _key_value(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not key or not equals:
        raise argparse.ArgumentTypeError(f"KEY=VALUE is needed, not {text!r}; such as OPENSPIEL_GAME=catch")
    return key, value


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}); pass an object such as '{{\"level\": 3}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"a JSON object is needed, not {text!r}; such as '{{\"level\": 3}}'")
    return value


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main())
