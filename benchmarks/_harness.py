"""Shared machinery for the benchmarks in this directory (no project code here).

What it gives a benchmark script:

* **processes** -- :class:`Server` (a server subprocess on 127.0.0.1, waited for
  until it answers, stopped by its PID) and :class:`ClientWorker` (a client
  subprocess driven over a JSON-lines pipe, so every client has a process of its
  own: its own imports, its own GC heap, its own CPU accounting). Both are
  registered in a :class:`ProcessSet`, which stops them all, by PID, in a
  ``finally``; nothing is ever killed by name.
* **timed windows** -- :func:`run_window` runs ``client.step(i)`` until a
  deadline *or* an iteration cap, whichever comes first, after a bounded
  warm-up, recording per-call latency, the client's CPU (``time.process_time``,
  all threads) and the server's CPU (``/proc/<pid>/stat``, 10 ms ticks), and the
  CPU everything else on the machine used meanwhile (``/proc/stat``: other
  processes + VM steal), so windows disturbed by a shared machine can be flagged
  or re-measured; :func:`wait_for_idle` waits (bounded) for a quiet machine.
* **schedule** -- :func:`interleaved`: the rep loop outside the config loop, so
  the configs of one table are measured side by side (each rep starts one config
  later, so no config always runs first).
* **stats and output** -- median [min-max] summaries, numbers to 3 significant
  digits, paired ratios, machine/versions info, a JSON writer and a rewriter for
  one marked section of a Markdown file.
* **portable records** -- :func:`command_line`, :func:`portable_argv` and
  :func:`portable_text`: commands and log excerpts as a user of a fresh clone
  would write them (``python benchmarks/...``), without this machine's paths.
* **commands** -- :func:`openenv_gym_argv` and :func:`uvicorn_argv` start the
  servers under test with this interpreter.
* **a global timeout** -- :class:`GlobalTimeout`: SIGALRM raises in the main
  thread (so ``finally`` blocks stop the processes); a watchdog thread
  SIGKILLs every registered PID and exits if that did not end the run.

Worker side: ``python _harness.py worker`` reads one JSON request per line on
stdin and answers ``@@ {json}`` lines on the original stdout (library prints go to
stderr). Requests: ``open`` (``client="module:Class"``, ``params``),
``window``, ``call`` (any method of the client), ``close``, ``exit``. A client
class has ``open() -> dict``, ``step(i) -> round trips made``, ``close()``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import json
import math
import os
import platform
import select
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_T0 = time.perf_counter()


# ---------------------------------------------------------------- output ----

def progress(message: str) -> None:
    """One progress line, stamped with the seconds since the script started."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", flush=True)


def fmt(x: float | None, digits: int = 3) -> str:
    """3 significant digits, thousands separators for big numbers."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    ax = abs(x)
    if ax >= 10 ** digits:
        return f"{x:,.0f}"
    if ax == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(ax))))
    return f"{x:,.{decimals}f}"


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """``{"median", "min", "max", "n"}`` over the finite values (None when empty)."""
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def fmt_mmm(stats: dict[str, Any] | None, digits: int = 3) -> str:
    """``median [min–max]``."""
    if not stats or stats.get("median") is None:
        return "-"
    if stats["n"] == 1:
        return fmt(stats["median"], digits)
    return f"{fmt(stats['median'], digits)} [{fmt(stats['min'], digits)}–{fmt(stats['max'], digits)}]"


def paired_ratios(num: Sequence[float | None], den: Sequence[float | None]) -> list[float]:
    """Per-rep ratios num[i]/den[i] of two configs measured in the same reps."""
    return [a / b for a, b in zip(num, den) if a is not None and b]


def target_ratios(results: dict[str, list], targets: Sequence[tuple[str, str, str, float | None]]) -> dict[str, dict]:
    """For each ``(label, numerator, denominator, minimum)`` of ``targets``, the summary
    of the per-rep paired ratios of those two rows of ``results``."""
    return {label: {"numerator": a, "denominator": b, "target": target,
                    **summarize(paired_ratios(results.get(a, []), results.get(b, [])))}
            for label, a, b, target in targets}


def target_row(label: str, ratio: dict[str, Any]) -> str:
    """A markdown row ``| label | >= target | measured | met |`` of one :func:`target_ratios`
    entry (a target of ``None``: a ratio measured with no target, ``-`` in both columns)."""
    measured = fmt_mmm(ratio) + "x" if ratio["median"] is not None else "-"
    if ratio["target"] is None:
        return f"| {label} | - | {measured} | - |"
    met = "-" if ratio["median"] is None else ("yes" if ratio["median"] >= ratio["target"] else "**no**")
    return f"| {label} | ≥ {fmt(ratio['target'])}x | {measured} | {met} |"


#: The pointer of the benchmark sections of docs/benchmarks.md to the A/B of ``bench_ab.py``.
BEFORE_AFTER_NOTE = (
    "Before/after comparisons of openenv-gym itself cannot use figures from another day: this VM's speed "
    "drifts between runs by more than most changes gain or lose. [The A/B section]"
    "(#ab-two-checkouts-of-openenv-gym-side-by-side) measures two revisions in one run (CartPole, single "
    "env and batched N=64), with the official stack and SyncVectorEnv N=64 as anchors "
    "(`python benchmarks/bench_ab.py --base REVISION`).")


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted sequence."""
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, math.ceil(q / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


# ----------------------------------------------------------- the machine ----

def _first_line_with(path: str, key: str) -> str | None:
    with contextlib.suppress(OSError):
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    return None


def machine_info(packages: Sequence[str]) -> dict[str, Any]:
    """CPU, cores, RAM, OS, Python, the versions of ``packages`` and the load average now."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    mem = _first_line_with("/proc/meminfo", "MemTotal")
    mem_gib = round(int(mem.split()[0]) / 2 ** 20, 1) if mem else None
    loadavg = None
    with contextlib.suppress(OSError):
        loadavg = Path("/proc/loadavg").read_text()
    return {
        "cpu": _first_line_with("/proc/cpuinfo", "model name") or platform.processor(),
        "cpus": os.cpu_count(),
        "mem_gib": mem_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "versions": versions,
        "loadavg_at_start": " ".join(loadavg.split()[:3]) if loadavg else None,
    }


def format_machine(info: dict[str, Any]) -> str:
    vers = ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v) or "-"
    missing = [k for k, v in info["versions"].items() if not v]
    text = (f"{info['cpus']} vCPUs ({info['cpu']}), {info['mem_gib']} GiB RAM, {info['platform']}, "
            f"{info['python_impl']} {info['python']}; {vers}")
    if missing:
        text += f"; not installed: {', '.join(missing)}"
    return text


# ------------------------------------------------------- portable records ----

def portable_argv(argv: Sequence[Any]) -> list[str]:
    """``argv`` as a user of a fresh clone would type it: this interpreter as ``python``,
    a script next to it (``openenv-gym``) and any path outside the repository by its
    basename, a path inside the repository relative to its root."""
    bin_dir = Path(sys.executable).parent
    out = []
    for arg in map(str, argv):
        path = Path(arg)
        if arg == sys.executable:
            out.append("python")
        elif not path.is_absolute():
            out.append(arg)
        elif path.parent != bin_dir and path.is_relative_to(ROOT):
            out.append(path.relative_to(ROOT).as_posix())
        else:
            out.append(path.name)
    return out


def command_line(script: str | Path, argv: Sequence[str]) -> str:
    """The command that ran ``script`` with ``argv``, portable: ``python benchmarks/x.py ...``."""
    return shlex.join(["python", *portable_argv([Path(script).resolve(), *argv])])


def portable_text(text: str) -> str:
    """A log excerpt without this machine's install paths: library files as
    ``site-packages/...`` or ``stdlib/...``, repository files relative to its root."""
    paths = sysconfig.get_paths()
    prefixes = {paths["purelib"]: "site-packages", paths["platlib"]: "site-packages",
                paths["stdlib"]: "stdlib", str(ROOT): ""}
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix + os.sep, prefixes[prefix] and prefixes[prefix] + "/")
    return text


# --------------------------------------------------------------- commands ----

def python_env(*first: str | Path) -> dict[str, str]:
    """This process's environment with ``first``, then ``benchmarks/``, at the front of
    ``PYTHONPATH``, so a child process (server or client) can import the benchmark modules
    (``_envs``, ``_echo``...) and, given a checkout's root in ``first``, that checkout's
    ``openenv_gym`` rather than the installed one."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, first), str(HERE), *filter(None, [env.get("PYTHONPATH")])])
    return env


def openenv_gym_argv(*args: Any) -> list[str]:
    """``openenv-gym *args`` with this interpreter's installation of openenv-gym."""
    script = Path(sys.executable).with_name("openenv-gym")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "openenv_gym.cli"]
    return head + [str(a) for a in args]


def uvicorn_argv(app: str, port: int, *, ws: str | None = None, factory: bool = False) -> list[str]:
    """uvicorn serving ``app`` (``module:attr`` in ``benchmarks/``) on 127.0.0.1:``port``."""
    argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(HERE), "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "warning", "--no-access-log"]
    if ws:
        argv += ["--ws", ws]
    if factory:
        argv.append("--factory")
    return argv + [app]


# ---------------------------------------------------------------- servers ----

def parse_metrics(text: str) -> dict:
    """An openenv-gym server's ``/metrics`` text: message and error counts by type, step
    latency quantiles, and the step-latency sum and count and the session gauges as floats."""
    out: dict[str, Any] = {"messages": {}, "errors": {}, "quantiles": {}}
    for ln in text.splitlines():
        if ln.startswith("#") or not ln.strip():
            continue
        name, _, value = ln.rpartition(" ")
        if name.startswith("openenv_gym_messages_total"):
            out["messages"][name.split('"')[1]] = int(float(value))
        elif name.startswith("openenv_gym_errors_total"):
            out["errors"][name.split('"')[1]] = int(float(value))
        elif name.startswith("openenv_gym_step_quantile_seconds"):
            out["quantiles"][name.split('"')[1]] = float(value)
        elif name in ("openenv_gym_step_seconds_sum", "openenv_gym_step_seconds_count",
                      "openenv_gym_sessions_total", "openenv_gym_sessions_active"):
            out[name] = float(value)
    return out


# ------------------------------------------------------------- processes ----

def proc_cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of ``pid`` (all its threads) in seconds, from /proc (10 ms ticks)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_status(pid: int | None) -> dict[str, int]:
    """``VmRSS`` / ``VmHWM`` (KiB) and ``Threads`` of a process, from /proc (empty if gone)."""
    out: dict[str, int] = {}
    if pid is None:
        return out
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS", "VmHWM", "Threads")):
                    key, val = line.split(":", 1)
                    out[key] = int(val.split()[0])
    except OSError:
        pass
    return out


def system_cpu_seconds() -> tuple[float, float] | None:
    """(busy, steal) CPU seconds of the whole machine since boot, all cores, from /proc/stat.

    busy = everything but idle and iowait (steal included: time the hypervisor gave to
    other VMs while this one wanted to run).
    """
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    steal = fields[7] if len(fields) > 7 else 0
    return (sum(fields[:8]) - idle) / CLK_TCK, steal / CLK_TCK


def wait_for_idle(max_wait_s: float, *, threshold_cores: float = 0.25, sample_s: float = 1.0,
                  consecutive: int = 3) -> float | None:
    """Wait (at most ``max_wait_s``) until the machine's busy CPU stayed below
    ``threshold_cores`` for ``consecutive`` samples of ``sample_s``; return the last busy
    sample in cores (None if /proc/stat is unreadable)."""
    deadline = time.monotonic() + max_wait_s
    busy, quiet = None, 0
    while True:
        a = system_cpu_seconds()
        time.sleep(sample_s)
        b = system_cpu_seconds()
        if not a or not b:
            return None
        busy = (b[0] - a[0]) / sample_s
        quiet = quiet + 1 if busy < threshold_cores else 0
        if quiet >= consecutive or time.monotonic() >= deadline:
            return busy


def wait_for_idle_start(max_wait_s: float) -> None:
    """A benchmark's ``--wait-idle``: :func:`wait_for_idle`, with progress lines."""
    progress(f"waiting up to {max_wait_s:.0f} s for an idle machine")
    busy = wait_for_idle(max_wait_s)
    progress(f"machine busy: {busy:.2f} cores" if busy is not None else "no /proc/stat")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tail(path: Path | None, lines: int = 25) -> str:
    if path is None:
        return ""
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


class ManagedProcess:
    """A subprocess we started; stopped by its PID (SIGTERM, then SIGKILL)."""

    def __init__(self, name: str, argv: Sequence[str], *, env: dict[str, str] | None = None,
                 cwd: str | Path | None = None, log_path: Path | None = None,
                 pipes: bool = False) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.env = env
        self.cwd = str(cwd) if cwd else None
        self.log_path = log_path
        self.pipes = pipes
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> ManagedProcess:
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "wb")
        out = self._log if self._log is not None else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=self.cwd,
            stdin=subprocess.PIPE if self.pipes else subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.pipes else out,
            stderr=out,
            start_new_session=True,  # a Ctrl-C in the terminal reaches only us; we stop it
        )
        return self

    def stop(self, timeout: float = 5.0) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=timeout)
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(Exception):
                    if stream:
                        stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill_now(self) -> None:
        """SIGKILL by PID (watchdog path; safe from another thread)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                os.kill(self.proc.pid, signal.SIGKILL)


class Server(ManagedProcess):
    """A server subprocess on 127.0.0.1, built by ``argv_fn(port)``.

    The port is picked free at each start (or fixed with ``port=``); a server that
    loses the race for it ("address already in use") is restarted on a new one.
    ``ready`` is ``"http:/health"`` (GET must answer 200) or ``"tcp"`` (a TCP
    connect must succeed; uvicorn and websockets bind only once started).
    """

    def __init__(self, name: str, argv_fn: Callable[[int], Sequence[str]], *, ready: str = "tcp",
                 port: int | None = None, **kwargs: Any) -> None:
        super().__init__(name, [], **kwargs)
        self.argv_fn = argv_fn
        self.fixed_port = port
        self.port = port or 0
        self.ready = ready
        self.error: str | None = None
        self.starts = 0

    def start(self) -> Server:
        self.port = self.fixed_port or free_port()
        self.argv = [str(a) for a in self.argv_fn(self.port)]
        self.starts += 1
        super().start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _is_ready(self) -> bool:
        if self.ready.startswith("http:"):
            try:
                with urllib.request.urlopen(self.base_url + self.ready[5:], timeout=1.0) as r:
                    return r.status == 200
            except (urllib.error.URLError, OSError, ValueError):
                return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def wait_ready(self, timeout: float, port_retries: int = 3) -> bool:
        """Poll until ready (True), or until it exits / ``timeout`` passes (False, ``error`` set)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                log = tail(self.log_path)
                if ("address already in use" in log.lower() and not self.fixed_port
                        and self.starts <= port_retries):
                    self.stop()
                    self.start()
                    continue
                self.error = f"exited with code {code} during startup; log tail:\n{log}"
                return False
            if self._is_ready():
                return True
            time.sleep(0.05)
        self.error = f"not ready within {timeout:.0f} s; log tail:\n{tail(self.log_path)}"
        return False


class WorkerError(RuntimeError):
    pass


class ClientWorker(ManagedProcess):
    """A client subprocess (``_harness.py worker``) driven by JSON-lines requests;
    ``env``: its environment (default :func:`python_env`)."""

    def __init__(self, name: str, *, log_path: Path | None = None, env: dict[str, str] | None = None) -> None:
        env = dict(env or python_env())
        env["PYTHONUNBUFFERED"] = "1"
        super().__init__(name, [sys.executable, str(HERE / "_harness.py"), "worker"], env=env,
                         cwd=HERE, log_path=log_path, pipes=True)
        self._buf = b""

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request, wait (bounded) for its ``@@`` answer; raise WorkerError on failure."""
        if not self.alive():
            raise WorkerError(f"worker {self.name} is not running; log tail:\n{tail(self.log_path)}")
        assert self.proc and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if line.startswith(b"@@ "):
                    reply = json.loads(line[3:])
                    if not reply.get("ok"):
                        raise WorkerError(reply.get("error") or "worker error")
                    return reply
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerError(f"worker {self.name}: no answer to {message.get('op')} "
                                  f"within {timeout:.0f} s")
            readable, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise WorkerError(f"worker {self.name} exited; log tail:\n{tail(self.log_path)}")
                self._buf += chunk

    def measure(self, client: str, params: dict[str, Any], *, server: Server | None, window_s: float,
                max_iters: int, warmup_s: float, warmup_iters: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Open ``client`` (``"module:Class"``) with ``params``, run one timed window
        (:func:`run_window`; the server's CPU from ``server``'s PID) and close the client.

        Returns what ``open()`` reported and the window's result. Raises :class:`WorkerError`
        when the client fails (after closing it if the worker still runs) or when ``server``
        died during the window.
        """
        opened = self.request({"op": "open", "client": client, "params": params,
                               "server_pid": server.pid if server else None}, timeout=120)
        try:
            reply = self.request({"op": "window", "window_s": window_s, "max_iters": max_iters,
                                  "warmup_s": warmup_s, "warmup_iters": warmup_iters},
                                 timeout=window_s + warmup_s + 120)
            self.request({"op": "close"}, timeout=60)
        except WorkerError:
            if self.alive():
                with contextlib.suppress(WorkerError):
                    self.request({"op": "close"}, timeout=10)
            raise
        if server is not None and not server.alive():
            raise WorkerError(f"server {server.name} died; log tail:\n{tail(server.log_path)}")
        result = dict(reply["result"])
        result.pop("next_index", None)
        return opened.get("info") or {}, result

    def stop(self, timeout: float = 5.0) -> None:
        if self.alive():
            with contextlib.suppress(Exception):
                assert self.proc and self.proc.stdin
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
            with contextlib.suppress(subprocess.TimeoutExpired):
                assert self.proc
                self.proc.wait(timeout=2.0)
        super().stop(timeout)


class ProcessSet:
    """Every process a benchmark started; :meth:`stop_all` stops them by PID, newest first."""

    def __init__(self) -> None:
        self._procs: list[ManagedProcess] = []
        self._lock = threading.Lock()

    def add(self, proc: ManagedProcess) -> ManagedProcess:
        with self._lock:
            self._procs.append(proc)
        return proc

    def stop_all(self) -> None:
        with self._lock:
            procs = list(reversed(self._procs))
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.stop()

    def kill_all_now(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            proc.kill_now()


class GlobalTimeoutError(Exception):
    pass


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(143)  # so the finally blocks stop what we started


class GlobalTimeout:
    """SIGALRM after ``seconds`` raises :class:`GlobalTimeoutError` in the main thread;
    ``grace`` seconds later a watchdog SIGKILLs ``processes`` by PID and exits (124)."""

    def __init__(self, seconds: float, processes: ProcessSet, grace: float = 30.0) -> None:
        self.seconds = max(1, int(math.ceil(seconds)))
        self.processes = processes
        self.grace = grace
        self._done = threading.Event()

    def _alarm(self, signum: int, frame: Any) -> None:
        raise GlobalTimeoutError(f"global timeout of {self.seconds} s reached")

    def _watchdog(self) -> None:
        if not self._done.wait(self.seconds + self.grace):
            print(f"watchdog: run still going {self.grace:.0f} s after the global timeout; "
                  "killing the processes it started and exiting", file=sys.stderr, flush=True)
            self.processes.kill_all_now()
            os._exit(124)

    def __enter__(self) -> GlobalTimeout:
        signal.signal(signal.SIGALRM, self._alarm)
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        signal.alarm(self.seconds)
        threading.Thread(target=self._watchdog, name="bench watchdog", daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        signal.alarm(0)
        self._done.set()


# --------------------------------------------------------------- schedule ----

def interleaved(configs: Sequence[Any], reps: int) -> Iterator[tuple[int, Any]]:
    """(rep, config) pairs: rep loop outside, config loop inside, start rotated by one each rep."""
    n = len(configs)
    for rep in range(reps):
        k = rep % n if n else 0
        for config in list(configs[k:]) + list(configs[:k]):
            yield rep, config


# ---------------------------------------------------------- timed window ----

def run_window(step: Callable[[int], int], *, window_s: float, max_iters: int,
               warmup_s: float = 0.2, warmup_iters: int = 200, server_pid: int | None = None,
               first_index: int = 0) -> dict[str, Any]:
    """Warm up, then call ``step(i)`` until ``window_s`` elapsed or ``max_iters`` calls.

    ``step`` returns the round trips it made (1, or 2 when it also reset).
    Returns calls, round trips, elapsed seconds, rates, latency p50/p99 of one
    call (µs), and CPU µs per call for this process and the server.
    """
    i = first_index
    deadline = time.perf_counter() + warmup_s
    for _ in range(warmup_iters):
        if time.perf_counter() >= deadline:
            break
        step(i)
        i += 1

    lat: list[float] = []
    append = lat.append
    perf = time.perf_counter
    calls = rts = 0
    sys0 = system_cpu_seconds()
    srv0 = proc_cpu_seconds(server_pid)
    cpu0 = time.process_time()
    t0 = perf()
    deadline = t0 + window_s
    while calls < max_iters:
        ts = perf()
        if ts >= deadline:
            break
        rts += step(i)
        append(perf() - ts)
        calls += 1
        i += 1
    t1 = perf()
    cpu1 = time.process_time()
    srv1 = proc_cpu_seconds(server_pid)
    sys1 = system_cpu_seconds()

    elapsed = t1 - t0
    # CPU used by everything but this client and its server during the window, in cores
    # (other processes on the machine, plus VM steal): a shared machine's noise, reported.
    other = steal = None
    if sys0 and sys1 and srv0 is not None and srv1 is not None and elapsed > 0:
        other = max(0.0, (sys1[0] - sys0[0]) - (cpu1 - cpu0) - (srv1 - srv0)) / elapsed
        steal = (sys1[1] - sys0[1]) / elapsed
    lat.sort()
    return {
        "calls": calls,
        "round_trips": rts,
        "elapsed_s": elapsed,
        "capped": calls >= max_iters,
        "steps_per_s": calls / elapsed if elapsed > 0 else None,
        "round_trips_per_s": rts / elapsed if elapsed > 0 else None,
        "p50_us": (percentile(lat, 50) or 0) * 1e6 if lat else None,
        "p99_us": (percentile(lat, 99) or 0) * 1e6 if lat else None,
        "client_cpu_us_per_step": (cpu1 - cpu0) / calls * 1e6 if calls else None,
        "server_cpu_us_per_step": ((srv1 - srv0) / calls * 1e6
                                   if calls and srv0 is not None and srv1 is not None else None),
        "other_load_cores": other,
        "steal_cores": steal,
        "next_index": i,
    }


# ------------------------------------------------------------------ files ----

def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False, default=str) + "\n")
    tmp.replace(path)


def update_markdown_section(path: Path, tag: str, body: str, intro: str) -> None:
    """Replace the text between ``<!-- tag:begin -->`` and ``<!-- tag:end -->`` in ``path``
    (created with ``intro`` if missing; the section is appended if its markers are)."""
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    block = f"{begin}\n{body.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else intro.rstrip() + "\n\n"
    if begin in text and end in text and text.index(begin) < text.index(end):
        before = text[: text.index(begin)]
        after = text[text.index(end) + len(end):].lstrip("\n")
        text = before + block + ("\n" + after if after else "")
    else:
        text = text.rstrip() + "\n\n" + block
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def reps_parser(doc: str, *, window: float) -> argparse.ArgumentParser:
    """The command line of a benchmark of interleaved reps: ``--reps``, ``--window`` (seconds
    per timed window, ``window`` by default) and ``--no-doc``; ``doc``'s first paragraph
    describes it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--window", type=float, default=window, help="seconds per timed window")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/benchmarks.md")
    return parser


def run_record(script: str | Path, argv: Sequence[str] | None, args: argparse.Namespace,
               packages: Sequence[str]) -> dict[str, Any]:
    """What a run of a :func:`reps_parser` benchmark records of itself before it measures:
    its command line, start, machine, reps and window (:func:`publish` adds its duration)."""
    return {
        "command": command_line(script, sys.argv[1:] if argv is None else argv),
        "started": _dt.datetime.now().astimezone().isoformat(), "machine": machine_info(packages),
        "reps": args.reps, "window_s": args.window,
    }


def publish(data: dict[str, Any], results_path: Path, render: Callable[[dict[str, Any]], str],
            doc_tag: str | None) -> None:
    """Write a run's ``data`` to ``results_path``, print ``render(data)``, and put it in its
    section ``doc_tag`` of ``docs/benchmarks.md`` (``None``: not, as ``--no-doc`` asks);
    ``data`` from :func:`run_record` gets its duration."""
    started = _dt.datetime.fromisoformat(data["started"])
    data["duration_s"] = (_dt.datetime.now().astimezone() - started).total_seconds()
    write_json(results_path, data)
    text = render(data)
    print("\n" + text)
    if doc_tag is not None:
        update_markdown_section(ROOT / "docs" / "benchmarks.md", doc_tag, text, "# Benchmarks\n")


def run_heading(title: str, data: dict[str, Any]) -> list[str]:
    """The first lines of a run's section: its title, then its command, reps and windows,
    machine and start (``data`` as a benchmark's ``main`` gathers it)."""
    return [
        f"## {title}",
        "",
        f"Command: `{data['command']}` ({data['reps']} reps x {data['window_s']} s windows, the configs "
        f"interleaved; median [min–max]). Machine: {format_machine(data['machine'])}. "
        f"Started {data['started'][:19]}.",
        "",
    ]


# ----------------------------------------------------------------- worker ----

def _load(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def worker_main() -> int:
    """Serve requests from stdin until ``exit`` or EOF (see the module docstring)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints from libraries go to the log, not into the protocol
    sys.stdout = sys.stderr

    def answer(ok: bool, **fields: Any) -> None:
        proto.write("@@ " + json.dumps({"ok": ok, **fields}, default=str) + "\n")
        proto.flush()

    client: Any = None
    server_pid: int | None = None
    next_index = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "exit":
                answer(True)
                break
            if op == "open":
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()
                    client = None
                cls = _load(req["client"])
                candidate = cls(**req.get("params", {}))
                info = candidate.open() or {}
                client = candidate
                server_pid = req.get("server_pid")
                answer(True, info=info)
            elif op == "window":
                if client is None:
                    raise RuntimeError("window before open")
                result = run_window(
                    client.step, window_s=float(req["window_s"]), max_iters=int(req["max_iters"]),
                    warmup_s=float(req.get("warmup_s", 0.2)),
                    warmup_iters=int(req.get("warmup_iters", 200)),
                    server_pid=server_pid, first_index=next_index)
                next_index = result["next_index"]
                answer(True, result=result)
            elif op == "call":
                if client is None:
                    raise RuntimeError("call before open")
                value = getattr(client, req["method"])(*req.get("args", []), **req.get("kwargs", {}))
                answer(True, value=value)
            elif op == "close":
                if client is not None:
                    try:
                        client.close()
                    finally:
                        client = None
                answer(True)
            else:
                raise ValueError(f"unknown op {op!r}")
        except BaseException as exc:  # report everything; the parent decides
            answer(False, error="".join(traceback.format_exception(exc)))
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                break
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["worker"]:
        sys.exit(worker_main())
    print("usage: python _harness.py worker   (started by the benchmark scripts)", file=sys.stderr)
    sys.exit(2)
