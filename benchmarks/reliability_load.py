#!/usr/bin/env python
"""Reliability under load: 256 concurrent sessions on one ``openenv-gym serve CartPole-v1``.

    python benchmarks/reliability_load.py            # 60 s window
    python benchmarks/reliability_load.py --quick    # 10 s window

* starts ``openenv-gym serve CartPole-v1 --max-sessions 300`` as a subprocess on 127.0.0.1
  (stopped by its PID in a ``finally``);
* two client processes (asyncio + ``websockets.asyncio.client``, raw protocol,
  ``compression=None``): process 0 drives sessions 0-127 over msgpack
  (``openenv-gym.msgpack.v1``), process 1 sessions 128-255 over stock JSON;
* every session resets with ``seed`` = f(its id, episode) and ``episode_id`` =
  ``s<id>-e<episode>``, then steps continuously with seeded random actions. Every reply is
  checked against a **local CartPole replica of that session** stepped with the same seed
  and actions (all 256 sessions, every step: observation bit for bit, reward,
  terminated, truncated, done), so a lost, duplicated or reordered reply shows up as a
  mismatch; every ``--check-every`` steps and at the end of every episode the session
  sends ``{"type":"state"}`` and checks that ``step_count`` equals the steps sent since
  the reset and that ``episode_id`` matches;
* after the window: every session closes; the server's ``/metrics`` step count must equal
  the steps the clients sent (warm-up included); ``/health`` and the server's RSS and CPU.

Reports total steps, steps/s, client-measured per-step latency p50/p90/p99/max, errors,
the server-side latency quantiles from /metrics. Writes benchmarks/results/reliability_load.json.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness as h  # noqa: E402

RESULTS = HERE / "results"
LOGS = RESULTS / "logs"
MSGPACK = "openenv-gym.msgpack.v1"


# ------------------------------------------------------------------ client process ----

class SessionStats:
    def __init__(self) -> None:
        self.steps = 0
        self.warm_steps = 0
        self.resets = 0
        self.state_checks = 0
        self.errors: Counter[str] = Counter()
        self.examples: list[str] = []

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        if len(self.examples) < 3:
            self.examples.append(f"{kind}: {detail}"[:500])


async def run_session(sid: int, args, go: asyncio.Event, ready: list, lat: array.array,
                      stats: SessionStats, deadline_box: dict) -> None:
    import gymnasium as gym
    import numpy as np
    from websockets.asyncio.client import connect

    from openenv_gym.protocol import codec_for

    binary = args.encoding == "msgpack"
    codec = codec_for(MSGPACK if binary else None)
    local = gym.make("CartPole-v1")
    rng = random.Random(args.seed * 1_000_003 + sid)
    ws = await connect(args.url.replace("http://", "ws://") + "/ws",
                       subprotocols=[MSGPACK] if binary else None, compression=None,
                       max_size=None, open_timeout=120, ping_interval=None, close_timeout=5)
    timeout = args.message_timeout

    async def request(message: dict) -> dict:
        await ws.send(codec.encode(message))
        frame = await asyncio.wait_for(ws.recv(), timeout)
        reply = codec.decode(frame)
        if not isinstance(reply, dict) or reply.get("type") == "error":
            raise RuntimeError(f"error reply to {message['type']}: {str(reply)[:300]}")
        return reply

    def as_obs(value):
        return value if binary else np.asarray(value, dtype=np.float32)

    episode = 0
    episode_id = ""
    since_reset = 0

    async def reset() -> None:
        nonlocal episode, episode_id, since_reset
        seed = (args.seed * 1_000_003 + sid) * 10_000 + episode
        episode_id = f"s{sid}-e{episode}"
        episode += 1
        reply = await request({"type": "reset", "data": {"seed": seed, "episode_id": episode_id}})
        obs, _ = local.reset(seed=seed)
        got = as_obs(reply["data"]["observation"]["obs"])
        if not (np.array_equal(got, obs) and got.dtype == obs.dtype):
            stats.error("reset_obs_mismatch", f"session {sid} episode {episode_id}: {got!r} != {obs!r}")
        since_reset = 0
        stats.resets += 1

    async def check_state() -> None:
        reply = await request({"type": "state"})
        data = reply["data"]
        stats.state_checks += 1
        if data.get("step_count") != since_reset or data.get("episode_id") != episode_id:
            stats.error("state_mismatch", f"session {sid}: state {data} but sent {since_reset} steps "
                                          f"since reset of {episode_id}")

    try:
        await reset()
        ready.append(sid)
        await go.wait()
        deadline = deadline_box["deadline"]
        while time.monotonic() < deadline:
            action = rng.randint(0, 1)
            t0 = time.perf_counter()
            reply = await request({"type": "step", "data": {"action": action}})
            lat.append(time.perf_counter() - t0)
            stats.steps += 1
            since_reset += 1
            obs, reward, terminated, truncated, _ = local.step(action)
            d = reply["data"]
            o = d["observation"]
            got = as_obs(o["obs"])
            if not (np.array_equal(got, obs) and got.dtype == obs.dtype and d["reward"] == float(reward)
                    and o["terminated"] == terminated and o["truncated"] == truncated
                    and d["done"] == (terminated or truncated)):
                stats.error("step_mismatch", f"session {sid} {episode_id} step {since_reset}: got {got!r} "
                                             f"r={d['reward']} t={o['terminated']} tr={o['truncated']}; "
                                             f"want {obs!r} r={reward} t={terminated} tr={truncated}")
                break  # the replica is out of step now; stop this session
            if since_reset % args.check_every == 0:
                await check_state()
            if terminated or truncated:
                await check_state()
                await reset()
        await request({"type": "state"})  # one last round trip: nothing left in flight
    except Exception as exc:  # noqa: BLE001
        stats.error(type(exc).__name__, f"session {sid}: {exc}")
    finally:
        try:
            await ws.send(codec.encode({"type": "close"}))
        except Exception:  # noqa: BLE001
            pass
        try:
            await asyncio.wait_for(ws.close(), 5)
        except Exception:  # noqa: BLE001
            pass
        local.close()


async def client_async(args) -> dict:
    lo, hi = (int(x) for x in args.ids.split(":"))
    go = asyncio.Event()
    ready: list[int] = []
    lat = array.array("d")
    stats = [SessionStats() for _ in range(lo, hi)]
    box: dict[str, float] = {}
    t_connect = time.monotonic()
    tasks = []
    for k, sid in enumerate(range(lo, hi)):
        tasks.append(asyncio.create_task(run_session(sid, args, go, ready, lat, stats[k], box)))
        if k % 16 == 15:
            await asyncio.sleep(0.05)  # a gentle ramp: 16 handshakes at a time
    while len(ready) + sum(1 for t in tasks if t.done()) < len(tasks):
        if time.monotonic() - t_connect > 180:
            break
        await asyncio.sleep(0.05)
    connect_s = time.monotonic() - t_connect
    print("READY " + json.dumps({"ready": len(ready), "sessions": hi - lo, "connect_s": connect_s}), flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line.startswith("GO"):
        go.set()
        box["deadline"] = time.monotonic()
    cpu0 = time.process_time()
    t0 = time.monotonic()
    box["deadline"] = t0 + args.seconds
    go.set()
    await asyncio.wait(tasks, timeout=args.seconds + 120)
    t1 = time.monotonic()
    cpu = time.process_time() - cpu0
    errors: Counter[str] = Counter()
    examples: list[str] = []
    for s in stats:
        errors.update(s.errors)
        examples.extend(s.examples)
    lat_path = Path(args.out).with_suffix(".lat")
    with open(lat_path, "wb") as f:
        lat.tofile(f)
    return {
        "ids": args.ids, "encoding": args.encoding, "sessions": hi - lo, "ready": len(ready),
        "connect_s": connect_s, "window_s": t1 - t0, "client_cpu_s": cpu,
        "steps": sum(s.steps for s in stats), "resets": sum(s.resets for s in stats),
        "state_checks": sum(s.state_checks for s in stats),
        "steps_per_session_min": min(s.steps for s in stats),
        "steps_per_session_max": max(s.steps for s in stats),
        "errors": dict(errors), "error_examples": examples[:20], "latency_file": str(lat_path),
        "unfinished_tasks": sum(1 for t in tasks if not t.done()),
    }


def client_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--encoding", choices=("msgpack", "json"), required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--check-every", type=int, default=25)
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--message-timeout", type=float, default=30.0)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        result = asyncio.run(client_async(args))
    except BaseException as exc:  # noqa: BLE001
        result = {"fatal": "".join(traceback.format_exception(exc))[-3000:]}
    Path(args.out).write_text(json.dumps(result))
    print("DONE", flush=True)
    return 0


# ------------------------------------------------------------------ parent ----

def http_get(url: str, timeout: float = 10.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except Exception as exc:  # noqa: BLE001
        return -1, f"{type(exc).__name__}: {exc}"


def read_line(proc: subprocess.Popen, prefix: str, timeout: float) -> str | None:
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            chunk = os.read(fd, 1)
            if not chunk:
                return None
            buf += chunk
            if chunk == b"\n":
                line = buf.decode(errors="replace")
                buf = b""
                if line.startswith(prefix):
                    return line
        elif proc.poll() is not None:
            return None
    return None


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        return client_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a 10 s window instead of 60 s")
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--sessions", type=int, default=256)
    p.add_argument("--max-sessions", type=int, default=300)
    p.add_argument("--check-every", type=int, default=25)
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--out", type=Path, default=RESULTS / "reliability_load.json")
    args = p.parse_args()
    seconds = args.seconds or (10.0 if args.quick else 60.0)
    python = sys.executable
    procs = h.ProcessSet()
    result: dict[str, Any] = {"command": h.command_line(__file__, sys.argv[1:]),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    ok = False
    half = args.sessions // 2
    groups = [("msgpack", f"0:{half}"), ("json", f"{half}:{args.sessions}")]
    scratch = Path(tempfile.mkdtemp(prefix="openenv-gym-load-"))  # client results
    with h.GlobalTimeout(seconds + 420, procs):
        try:
            server = procs.add(h.Server(
                "load-server",
                lambda port: [python, "-m", "openenv_gym.cli", "serve", "CartPole-v1", "--port", port,
                              "--max-sessions", args.max_sessions],
                ready="http:/health", log_path=LOGS / "reliability-load-server.log"))
            server.start()
            if not server.wait_ready(60):
                raise RuntimeError(f"server did not start: {server.error}")
            url = server.base_url
            cli = f"openenv-gym serve CartPole-v1 --port {server.port} --max-sessions {args.max_sessions}"
            h.progress(f"server pid {server.pid}: {cli}")
            rss_before = h.proc_status(server.pid).get("VmRSS")
            clients = []
            for i, (enc, ids) in enumerate(groups):
                out = scratch / f"client-{i}.json"
                out.unlink(missing_ok=True)
                c = procs.add(h.ManagedProcess(
                    f"load-client-{i}",
                    [python, str(Path(__file__).resolve()), "client", "--url", url, "--ids", ids,
                     "--encoding", enc, "--seconds", seconds, "--check-every", args.check_every,
                     "--seed", args.seed, "--out", out],
                    log_path=LOGS / f"reliability-load-client-{i}.log", pipes=True)).start()
                clients.append((c, out))
            readies = []
            for c, _ in clients:
                line = read_line(c.proc, "READY", 240)
                if line is None:
                    raise RuntimeError(f"{c.name} never got ready; log:\n{h.tail(c.log_path)}")
                readies.append(json.loads(line.split(" ", 1)[1]))
            code, health_ready = http_get(url + "/health")
            h.progress(f"all sessions open: {readies}; /health {health_ready}")
            cpu0 = h.proc_cpu_seconds(server.pid)
            t0 = time.monotonic()
            for c, _ in clients:
                c.proc.stdin.write(b"GO\n")
                c.proc.stdin.flush()
            time.sleep(seconds / 2)
            _, health_mid = http_get(url + "/health")
            rss_mid = h.proc_status(server.pid)
            h.progress(f"mid-window /health {health_mid}; server RSS {rss_mid.get('VmRSS', 0) / 1024:.0f} MiB, "
                       f"threads {rss_mid.get('Threads')}")
            for c, _ in clients:
                if read_line(c.proc, "DONE", seconds + 180) is None:
                    raise RuntimeError(f"{c.name} did not finish; log:\n{h.tail(c.log_path)}")
            wall = time.monotonic() - t0
            cpu1 = h.proc_cpu_seconds(server.pid)
            time.sleep(1.0)  # let the server finish closing the sessions
            _, health_end = http_get(url + "/health")
            mcode, metrics_text = http_get(url + "/metrics")
            metrics = h.parse_metrics(metrics_text)
            rss_end = h.proc_status(server.pid)
            per_client = [json.loads(out.read_text()) for _, out in clients]
            import numpy as np
            lats = np.concatenate([np.fromfile(r["latency_file"], dtype=np.float64)
                                   for r in per_client if "latency_file" in r]) if per_client else np.array([])
            for r in per_client:
                if "latency_file" in r:
                    Path(r["latency_file"]).unlink(missing_ok=True)
            lats.sort()
            steps = sum(r.get("steps", 0) for r in per_client)
            window = max(r.get("window_s", 0) for r in per_client)
            errors: Counter[str] = Counter()
            for r in per_client:
                errors.update(r.get("errors", {}))
                if "fatal" in r:
                    errors["client_fatal"] += 1
            server_steps = metrics["messages"].get("step")
            client_steps_total = steps  # every step message the clients sent (all in the window)
            pct = {f"p{q}": float(np.percentile(lats, q)) * 1e3 for q in (50, 90, 99)} if len(lats) else {}
            pct["max"] = float(lats[-1]) * 1e3 if len(lats) else None
            log_text = server.log_path.read_text(errors="replace") if server.log_path else ""
            result.update({
                "server_command": cli, "sessions": args.sessions, "window_s": seconds,
                "measured_window_s": window, "wall_s": wall,
                "clients": per_client, "ready": readies,
                "total_steps": steps, "steps_per_s": steps / window if window else None,
                "latency_ms": pct,
                "latency_samples": int(len(lats)),
                "errors": dict(errors),
                "sequence_check": {
                    "replica": "every step of all sessions compared with a local CartPole replica",
                    "state_every": args.check_every,
                    "state_checks": sum(r.get("state_checks", 0) for r in per_client),
                    "resets": sum(r.get("resets", 0) for r in per_client),
                    "server_step_messages": server_steps, "client_step_messages": client_steps_total,
                    "counts_match": server_steps == client_steps_total,
                },
                "server": {
                    "health_ready": health_ready, "health_mid": health_mid, "health_end": health_end,
                    "metrics_status": mcode, "metrics": metrics,
                    "metrics_quantiles_ms": {q: v * 1e3 for q, v in metrics["quantiles"].items()},
                    "metrics_mean_ms": (metrics["openenv_gym_step_seconds_sum"]
                                        / metrics["openenv_gym_step_seconds_count"] * 1e3
                                        if metrics.get("openenv_gym_step_seconds_count") else None),
                    "cpu_s_in_window": (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None,
                    "rss_kib": {"before": rss_before, "mid": rss_mid.get("VmRSS"), "end": rss_end.get("VmRSS"),
                                "hwm": rss_end.get("VmHWM")},
                    "threads_mid": rss_mid.get("Threads"),
                    "alive": server.alive(),
                    "log_tracebacks": log_text.count("Traceback (most recent call last)"),
                    "log_warnings": sum(1 for ln in log_text.splitlines() if "WARNING" in ln),
                },
                "machine": h.machine_info(["gymnasium", "websockets", "msgpack", "uvicorn", "numpy"]),
            })
            ok = (not errors and server.alive() and result["sequence_check"]["counts_match"]
                  and all(r.get("ready") == r.get("sessions") for r in per_client))
            result["pass"] = ok
            report(result)
        finally:
            procs.stop_all()
            shutil.rmtree(scratch, ignore_errors=True)
            if result.get("total_steps") is not None:
                h.write_json(args.out, result)
                h.progress(f"wrote {args.out}")
    return 0 if ok else 1


def report(r: dict) -> None:
    s = r["server"]
    print()
    print(f"{r['sessions']} sessions, window {r['measured_window_s']:.1f} s: {r['total_steps']:,} steps = "
          f"{r['steps_per_s']:,.0f} steps/s")
    print("client latency ms: " + ", ".join(f"{k} {v:.2f}" for k, v in r["latency_ms"].items() if v is not None))
    print(f"server /metrics step quantiles ms: {s['metrics_quantiles_ms']}; mean {s['metrics_mean_ms']}")
    print(f"errors: {r['errors'] or 'none'}")
    print(f"sequence check: {r['sequence_check']}")
    for c in r["clients"]:
        print(f"  client {c.get('ids')} {c.get('encoding')}: {c.get('steps', 0):,} steps, per session "
              f"{c.get('steps_per_session_min')}-{c.get('steps_per_session_max')}, "
              f"connect {c.get('connect_s', 0):.1f} s, "
              f"client CPU {c.get('client_cpu_s', 0):.1f} s, errors {c.get('errors')}")
        for e in c.get("error_examples", [])[:3]:
            print("     ", e)
        if "fatal" in c:
            print(c["fatal"])
    print(f"server: CPU {s['cpu_s_in_window']} s in window; RSS {s['rss_kib']} KiB; threads mid {s['threads_mid']}; "
          f"health end {s['health_end']}; tracebacks in log {s['log_tracebacks']}")
    print("PASS" if r["pass"] else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
