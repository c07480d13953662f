"""Dependency isolation: a gym==0.26.2 env served from its own virtualenv, used from this one.

    python examples/legacy_env_isolation.py [ENV]       (default ENV: gym:CartPole-v1)

gym 0.26.2 needs numpy<2 (it uses np.bool8), which a modern stack cannot have. In-process
wrappers (Shimmy) inherit that pin; a wire does not. This script

1. builds ./.legacy-venv with gym==0.26.2, numpy<2, shimmy and openenv-gym[server]
   (once; delete the folder to rebuild),
2. serves ENV from it on 127.0.0.1 in a subprocess (one call: openenv_gym.serve(ENV)),
3. checks it here, in the modern virtualenv, with Gymnasium's check_env over the wire,
4. stops the server.

The same works across machines or containers: run step 2 where the legacy env lives.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from gymnasium.utils.env_checker import check_env

import openenv_gym

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".legacy-venv"
SERVE = "import sys, openenv_gym; openenv_gym.serve(sys.argv[1], port=int(sys.argv[2]))"


def legacy_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "gym==0.26.2", "numpy<2", "shimmy>=2.0",
             "-e", f"{ROOT}[server]"],
            check=True, timeout=900,
        )
    return python


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the legacy server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not become healthy in {timeout} s")


def main(env: str = "gym:CartPole-v1") -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(legacy_python()), "-c", SERVE, env, str(port)])
    try:
        wait_healthy(url, server)
        remote = openenv_gym.RemoteEnv(url)
        check_env(remote, skip_render_check=True)
        obs, info = remote.reset(seed=0)
        print(f"{env} from gym 0.26.2 (numpy<2) passes check_env here; first observation {obs}")
        remote.close()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


if __name__ == "__main__":
    main(*sys.argv[1:2])
