#!/usr/bin/env python
"""MCP tool calls: openenv-gym's server vs OpenEnv 0.10's own MCP server, side by side.

    python benchmarks/bench_mcp.py            # 5 reps x 2 s windows, ~3 min
    python benchmarks/bench_mcp.py --quick    # 2 reps x 0.5 s windows, ~1 min

Servers, each a process of its own on 127.0.0.1, started here and stopped by PID:
``openenv-gym serve openenv_gym.catalog.echo_env:EchoEnvironment`` (our Echo server),
``openenv-gym serve CartPole-v1`` (its generated ``act`` tool), both with ``--busy-poll 0``
(the official server does not poll), and upstream's echo server: an ``MCPEnvironment``
with FastMCP tools on ``openenv.core.env_server.create_app`` under uvicorn
(``_official_env:echo_app``). Every client is the same code for every server
(``_clients.py``), in a worker process of its own:

1. ``echo_message`` over ``POST /mcp`` (``tools/call`` on a session made by
   ``openenv/session/create``, as ``MCPToolClient`` calls tools), one keep-alive connection;
2. ``echo_message`` as a ``/ws`` step ``{"type": "call_tool"}`` (the path carrying reward
   and done);
3. CartPole's ``act`` as a ``/ws`` step (a reset when the episode ends, in the time but not
   in the count): an env step, its text and legal actions, for scale;
4. 32 sessions calling ``echo_message`` as ``/ws`` steps at once from one asyncio process:
   tool calls per second.

Reps are interleaved (the rep loop outside the config loop); each row is median [min–max]
over the reps, ratios are paired per rep. Writes ``benchmarks/results/mcp.json`` and
rewrites the ``bench_mcp`` section of ``docs/mcp.md`` (not with ``--no-doc``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _harness as H  # noqa: E402

RESULTS_PATH = HERE / "results" / "mcp.json"
LOG_DIR = HERE / "results" / "logs"
DOC_PATH = ROOT / "docs" / "mcp.md"
DOC_TAG = "bench_mcp"
PACKAGES = ["openenv-gym", "openenv", "fastmcp", "mcp", "uvicorn", "starlette", "fastapi", "websockets", "httpx"]
ECHO = {"message": "hello"}
SESSIONS = 32

#: (row, server, client class, tool, arguments, concurrent sessions or None)
CONFIGS = [
    ("echo, POST /mcp: ours", "ours/echo", "McpHttpClient", "echo_message", ECHO, None),
    ("echo, POST /mcp: official", "official/echo", "McpHttpClient", "echo_message", ECHO, None),
    ("echo, /ws call_tool: ours", "ours/echo", "McpStepClient", "echo_message", ECHO, None),
    ("echo, /ws call_tool: official", "official/echo", "McpStepClient", "echo_message", ECHO, None),
    ("CartPole act, /ws call_tool: ours", "ours/cartpole", "McpStepClient", "act", {"action": "left"}, None),
    (f"echo, {SESSIONS} sessions: ours", "ours/echo", "McpConcurrentClient", "echo_message", ECHO, SESSIONS),
    (f"echo, {SESSIONS} sessions: official", "official/echo", "McpConcurrentClient", "echo_message", ECHO, SESSIONS),
]
#: Rows compared: (ours, official).
PAIRS = [(0, 1), (2, 3), (5, 6)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--window", type=float, default=2.0, help="seconds per timed window")
    parser.add_argument("--quick", action="store_true", help="2 reps x 0.5 s windows")
    parser.add_argument("--timeout", type=float, default=900.0, help="global timeout, seconds")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/mcp.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.window = 2, 0.5
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = _dt.datetime.now().astimezone()
    t0 = time.perf_counter()
    command = H.command_line(__file__, sys.argv[1:] if argv is None else argv)
    machine = H.machine_info(PACKAGES)
    H.progress(f"bench_mcp: {args.reps} reps x {args.window} s; machine: {H.format_machine(machine)}")
    py_env = H.python_env()

    def ours(env: str) -> Any:
        return lambda p: H.openenv_gym_argv("serve", env, "--port", p, "--busy-poll", 0)

    server_argv = {
        "ours/echo": ours("openenv_gym.catalog.echo_env:EchoEnvironment"),
        "ours/cartpole": ours("CartPole-v1"),
        "official/echo": lambda p: H.uvicorn_argv("_official_env:echo_app", p, factory=True),
    }
    processes = H.ProcessSet()
    rows: dict[str, list[dict[str, Any] | None]] = {config[0]: [] for config in CONFIGS}
    errors: dict[str, str] = {}
    incomplete = None
    try:
        with H.GlobalTimeout(args.timeout, processes):
            servers = {
                key: processes.add(H.Server(key, fn, ready="http:/health", env=py_env, cwd=ROOT,
                                            log_path=LOG_DIR / f"mcp-{key.replace('/', '-')}.log")).start()
                for key, fn in server_argv.items()
            }
            for key, srv in servers.items():
                if not srv.wait_ready(60):
                    raise RuntimeError(f"server {key} failed: {srv.error}")
            worker = processes.add(H.ClientWorker("mcp", log_path=LOG_DIR / "mcp-client.log")).start()
            schedule = list(H.interleaved(CONFIGS, args.reps))
            for k, (rep, (name, server, client, tool, arguments, sessions)) in enumerate(schedule):
                if name in errors:
                    rows[name].append(None)
                    continue
                srv = servers[server]
                params: dict[str, Any] = {"base_url": srv.base_url, "tool": tool, "arguments": arguments}
                if sessions:
                    params["sessions"] = sessions
                try:
                    worker.request({"op": "open", "client": f"_clients:{client}", "params": params,
                                    "server_pid": srv.pid}, timeout=120)
                    reply = worker.request({"op": "window", "window_s": args.window, "max_iters": 20_000,
                                            "warmup_s": 0.2, "warmup_iters": 50}, timeout=args.window + 120)
                    worker.request({"op": "close"}, timeout=60)
                except H.WorkerError as exc:
                    errors[name] = str(exc).strip().splitlines()[-1]
                    rows[name].append(None)
                    H.progress(f"[{k + 1}/{len(schedule)}] {name}: FAILED {errors[name]}")
                    if not worker.alive():
                        worker = processes.add(H.ClientWorker("mcp", log_path=LOG_DIR / "mcp-client.log")).start()
                    continue
                result = reply["result"]
                rows[name].append(result)
                rate = result["round_trips_per_s"] if sessions else result["steps_per_s"]
                H.progress(f"[{k + 1}/{len(schedule)}] rep {rep + 1} {name:38s} {H.fmt(rate):>9s} calls/s "
                           f"p50 {H.fmt(result['p50_us'])} µs")
    except H.GlobalTimeoutError as exc:
        incomplete = str(exc)
    finally:
        processes.stop_all()

    table = _table(rows)
    H.write_json(RESULTS_PATH, {
        "command": command, "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - t0, 1), "machine": machine, "reps": args.reps,
        "window_s": args.window, "incomplete": incomplete, "errors": errors, "rows": rows,
    })
    body = (f"Measured {started:%Y-%m-%d} with `{command}` ({args.reps} reps x {args.window} s windows); "
            f"machine: {H.format_machine(machine)}.\n\n{table}")
    if incomplete or errors:
        body += f"\n\nIncomplete: {incomplete or ''} {errors or ''}"
    print("\n" + table)
    if not args.no_doc and not incomplete:
        H.update_markdown_section(DOC_PATH, DOC_TAG, body, "# MCP tools\n")
    return 1 if incomplete or errors else 0


def _metric(results: list[dict[str, Any] | None], key: str) -> list[float | None]:
    return [None if r is None else r[key] for r in results]


def _table(rows: dict[str, list[dict[str, Any] | None]]) -> str:
    lines = [
        "| configuration | tool calls/s | latency p50 (µs) | server CPU µs/call |",
        "|---|---|---|---|",
    ]
    for name, _server, _client, _tool, _arguments, sessions in CONFIGS:
        results = rows[name]
        rate = _metric(results, "round_trips_per_s" if sessions else "steps_per_s")
        server_cpu = [None if r is None or r["server_cpu_us_per_step"] is None
                      else r["server_cpu_us_per_step"] / (sessions or 1) for r in results]
        lines.append(f"| {name} | {H.fmt_mmm(H.summarize(rate))} | {H.fmt_mmm(H.summarize(_metric(results, 'p50_us')))}"
                     f" | {H.fmt_mmm(H.summarize(server_cpu))} |")
    lines += ["", "| ours vs official (paired per rep) | calls/s ratio |", "|---|---|"]
    for mine, theirs in PAIRS:
        name, sessions = CONFIGS[mine][0], CONFIGS[mine][5]
        key = "round_trips_per_s" if sessions else "steps_per_s"
        ratios = H.paired_ratios(_metric(rows[name], key), _metric(rows[CONFIGS[theirs][0]], key))
        label = name.rsplit(":", 1)[0]
        lines.append(f"| {label} | {H.fmt_mmm(H.summarize(ratios))}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
