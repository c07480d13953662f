"""The ``openenv-gym`` command on bad input: one line saying what was wrong, a
non-zero exit, no traceback unless ``--debug``; ``serving`` only once bound."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import gymnasium as gym
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.conftest import free_port, server_process, subprocess_env

CLI = [sys.executable, "-m", "openenv_gym.cli"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=subprocess_env()
    )


def assert_one_line_failure(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit status 1, nothing on stdout, one line on stderr holding ``fragments``."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("openenv-gym: ") and "Traceback" not in line and "serving" not in line
    for fragment in fragments:
        assert fragment in line, line
    assert line.endswith("(--debug shows the traceback)") or "--debug shows the traceback" in line
    return line


#: Ids Gymnasium has replaced, and their replacements (Taxi-v4 from gymnasium 1.3).
DEPRECATED = [("FrozenLake-v0", "FrozenLake-v1")] + (
    [("Taxi-v3", "Taxi-v4")] if "Taxi-v4" in gym.registry else []
)


@pytest.mark.parametrize("old, new", DEPRECATED)
def test_a_deprecated_gymnasium_id_says_which_version_to_use(old, new):
    line = assert_one_line_failure(run_cli("serve", old, "--port", str(free_port())),
                                   f"cannot serve {old!r}", new)
    assert "Gymnasium id, module:factory" in line


def test_an_unknown_id_says_what_env_may_be():
    assert_one_line_failure(run_cli("serve", "NoSuchEnv-v9", "--port", str(free_port())),
                            "cannot serve 'NoSuchEnv-v9'", "doesn't exist", "Gymnasium id")


def test_a_missing_module_names_it_and_where_it_must_be():
    assert_one_line_failure(run_cli("serve", "no_such_module_here:make", "--port", str(free_port())),
                            "No module named 'no_such_module_here'", "PYTHONPATH")


def test_a_factory_that_raises_gives_its_error_in_one_line(tmp_path):
    (tmp_path / "broken_factory.py").write_text(
        "def make():\n    raise RuntimeError('the simulator is not configured')\n"
    )
    # The module lives in the working directory: the command imports it from there.
    assert_one_line_failure(
        run_cli("serve", "broken_factory:make", "--port", str(free_port()), cwd=tmp_path),
        "cannot serve 'broken_factory:make'", "RuntimeError: the simulator is not configured",
    )


def test_debug_shows_the_traceback(tmp_path):
    (tmp_path / "broken_factory.py").write_text("def make():\n    raise RuntimeError('boom')\n")
    proc = run_cli("serve", "broken_factory:make", "--debug", "--port", str(free_port()), cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "RuntimeError: boom" in proc.stderr


def test_a_port_in_use_fails_before_serving():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = assert_one_line_failure(run_cli("serve", "CartPole-v1", "--port", str(port)),
                                       f"cannot listen on 127.0.0.1:{port}", "in use", "another port")
    assert "serving" not in line


def test_an_invalid_option_value_says_what_to_pass():
    proc = run_cli("serve", "CartPole-v1", "--max-sessions", "0", "--port", str(free_port()))
    assert_one_line_failure(proc, "max_sessions must be at least 1")
    proc = run_cli("serve", "CartPole-v1", "--env-kwargs", "[1, 2]")
    assert proc.returncode == 2 and "a JSON object is needed" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_env_that_draws_with_pygame_is_not_served_inline():
    proc = run_cli("serve", "CartPole-v1", "--env-kwargs", '{"render_mode": "rgb_array"}', "--execution", "inline",
                   "--port", str(free_port()))
    assert_one_line_failure(proc, "served on one thread", "--no-single-thread")


def test_serving_is_logged_once_the_port_answers():
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "serve", "CartPole-v1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=subprocess_env(),
    )
    try:
        line = proc.stderr.readline()  # the first line the server logs
        assert "serving env=CartPole-v1" in line and f"url=http://127.0.0.1:{port}" in line, line
        # No retry: the socket is bound and listening when the line is written.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
            assert json.loads(response.read())["status"] == "healthy"
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stderr.close()


@pytest.mark.parametrize("level", ["info", "debug"])
def test_sessions_are_logged_at_debug_level_only(level):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [*CLI, "serve", "CartPole-v1", "--port", str(port), "--log-level", level]
    with server_process(args, url) as proc:
        with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            ws.send('{"type": "reset", "data": {}}')
            ws.recv(10)
        time.sleep(0.5)  # the server logs the close after the socket is gone
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    opened, closed = "session_open" in output, "session_close" in output
    assert (opened, closed) == ((True, True) if level == "debug" else (False, False)), output


def test_a_text_frame_that_is_not_utf8_is_one_warning_line():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process([*CLI, "serve", "CartPole-v1", "--port", str(port)], url) as proc:
        with connect(f"ws://127.0.0.1:{port}/ws") as ws:
            with ws.protocol_mutex:  # bypass the client's own UTF-8 check
                ws.protocol.send_text(b"\xff\xfe not utf-8")
                ws.send_data()
            with pytest.raises(ConnectionClosed):
                ws.recv(10)  # the server closes with 1007
        with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
            assert response.status == 200
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert "Traceback" not in output and "ERROR" not in output, output
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "not-utf-8" in warnings[0], output


def test_list_shows_the_catalog():
    proc = run_cli("list")
    assert proc.returncode == 0 and "openenv/Chess-v0" in proc.stdout


def test_describe_says_which_rule_chose_each_field(capsys):
    from openenv_gym.cli import main
    from tests.conftest import asgi_server
    from tests.upstream.replay import replay_app

    with asgi_server(replay_app("maze")) as url:
        assert main(["describe", url]) == 0
        out = capsys.readouterr().out
        assert "action space:      Discrete(4)" in out
        assert "the largest legal action of the first observation (3) + 1" in out
        assert main(["describe", url, "--id", "openenv/Maze-v0"]) == 0
        out = capsys.readouterr().out
        assert "Box(0, 7, (2,), int64): the JSON Schema action_fields gives" not in out
        assert "observation.current_position" in out and "observation_fields gives" in out
    assert main(["describe", "http://127.0.0.1:9"]) == 1
    assert "cannot describe http://127.0.0.1:9" in capsys.readouterr().err


def test_serve_web_serves_the_page_and_the_report_it_is_given(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    from openenv_gym.kit.report_html import report_html

    report = tmp_path / "report.html"  # as `openenv-gym check --html report.html` writes it
    report.write_text(report_html(json.loads((Path(__file__).parent / "data" / "validation-cartpole.json").read_text())))
    args = [*CLI, "serve", "CartPole-v1", "--port", str(port), "--web", "--web-report", str(report)]
    with server_process(args, url):
        with urllib.request.urlopen(f"{url}/web/about", timeout=10) as response:
            about = json.loads(response.read())
        assert about["report"] and about["renders"] and about["control"]["labels"] == ["left", "right"]
        with urllib.request.urlopen(f"{url}/web/report", timeout=10) as response:
            assert "<table" in response.read().decode() and "script-src 'none'" in response.headers["content-security-policy"]


def test_a_web_report_that_is_not_a_report_fails_in_one_line(tmp_path):
    (tmp_path / "report.json").write_text('{"results": []}')  # the JSON report, not its page
    proc = run_cli("serve", "CartPole-v1", "--web", "--web-report", str(tmp_path / "report.json"),
                   "--port", str(free_port()))
    assert_one_line_failure(proc, "web_report=", "not an HTML document", "check --html")
