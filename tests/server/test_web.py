"""The web interface's routes (openenv_gym/server/web.py), on real servers: upstream's
``/web`` shapes beside openenv 0.10's own ``WebInterfaceManager``, the page's socket, bad
input, the token. The page itself is driven in a real browser in tests/web/."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import gymnasium as gym
import httpx
import pytest
import websockets
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from openenv.core.env_server.web_interface import EpisodeState, WebInterfaceManager

import openenv_gym
from openenv_gym.server.web import MAX_BUTTONS, web_enabled

# -- upstream's own web interface, on the same env ------------------------------------------


class GymAction(Action):
    action: int


class GymObservation(Observation):
    obs: list[float]
    terminated: bool = False
    truncated: bool = False
    info: dict = {}
    text: str = ""


class UpstreamCartPole(Environment):
    """CartPole as an upstream OpenEnv env, with the fields our server's observations have."""

    def __init__(self) -> None:
        super().__init__()
        self.env = gym.make("CartPole-v1")
        self._state = State(episode_id="e", step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GymObservation:
        obs, info = self.env.reset(seed=seed)
        self._state = State(episode_id=episode_id or "e", step_count=0)
        return GymObservation(obs=obs.tolist(), info=info, reward=None, done=False)

    def step(self, action: GymAction, timeout_s: float | None = None, **kwargs: Any) -> GymObservation:
        obs, reward, terminated, truncated, info = self.env.step(action.action)
        self._state.step_count += 1
        return GymObservation(obs=obs.tolist(), terminated=terminated, truncated=truncated, info=info,
                              reward=float(reward), done=terminated or truncated)

    @property
    def state(self) -> State:
        return self._state


@pytest.fixture(scope="module")
def cartpole() -> Any:
    with openenv_gym.local_server("CartPole-v1", web=True) as url:
        yield url


def test_the_routes_answer_in_upstreams_shapes(cartpole: str) -> None:
    upstream = WebInterfaceManager(UpstreamCartPole(), GymAction, GymObservation)
    theirs_reset = asyncio.run(upstream.reset_environment({"seed": 3}))
    theirs_step = asyncio.run(upstream.step_environment({"action": 1}))
    ours_reset = httpx.post(f"{cartpole}/web/reset", json={"seed": 3}).json()
    ours_step = httpx.post(f"{cartpole}/web/step", json={"action": {"action": 1}}).json()
    for ours, theirs in ((ours_reset, theirs_reset), (ours_step, theirs_step)):
        assert set(ours) == set(theirs) == {"observation", "reward", "done"}
        assert ours["observation"]["obs"] == pytest.approx(theirs["observation"]["obs"])  # same seed, same env
        assert ours["reward"] == theirs["reward"] and ours["done"] == theirs["done"]
        # Upstream's observations also dump its base model's empty ``metadata``, which ours leave out.
        assert theirs["observation"].pop("metadata") == {}
        assert set(theirs["observation"]) <= set(ours["observation"])
    state = httpx.get(f"{cartpole}/web/state").json()
    assert set(upstream.get_state()) <= set(state) and state["step_count"] == 1
    EnvironmentMetadata.model_validate(httpx.get(f"{cartpole}/web/metadata").json())


def test_ws_ui_sends_upstreams_episode_state(cartpole: str) -> None:
    async def follow() -> list[dict]:
        async with websockets.connect(f"{cartpole.replace('http', 'ws')}/ws/ui") as socket:
            first = json.loads(await socket.recv())
            async with httpx.AsyncClient() as client:
                await client.post(f"{cartpole}/web/reset", json={"seed": 0})
                await client.post(f"{cartpole}/web/step", json={"action": {"action": 0}})
            return [first, json.loads(await socket.recv()), json.loads(await socket.recv())]

    messages = asyncio.run(asyncio.wait_for(follow(), 30))
    assert [m["type"] for m in messages] == ["state_update"] * 3
    after_reset, after_step = (EpisodeState.model_validate(m["episode_state"]) for m in messages[1:])
    assert after_reset.is_reset and after_reset.step_count == 0 and after_reset.action_logs == []
    assert not after_step.is_reset and after_step.step_count == 1
    assert after_step.action_logs[0].action == {"action": 0} and after_step.action_logs[0].reward == 1.0


def test_the_page_is_served_with_its_files(cartpole: str) -> None:
    page = httpx.get(f"{cartpole}/web/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="page.js"' in page.text and "<script>" not in page.text  # no inline script, no CDN
    assert "http" not in page.text.split("<body>")[0].replace("http-equiv", "")
    assert httpx.get(f"{cartpole}/web/page.js").headers["content-type"].startswith("text/javascript")
    assert httpx.get(f"{cartpole}/web").status_code == 307  # upstream's redirects
    assert httpx.get(f"{cartpole}/web/report").status_code == 404


def test_about_describes_the_env_and_its_controls(cartpole: str) -> None:
    about = httpx.get(f"{cartpole}/web/about").json()
    assert about["name"] == "CartPole-v1" and about["renders"] and about["render_mode"] == "rgb_array"
    assert about["control"] == {"kind": "buttons", "field": "action", "actions": [0, 1], "labels": ["left", "right"]}
    assert "keep a pole balanced" in about["instructions"] and about["seats"] is None


async def _live(url: str, *commands: str | bytes, replies: int) -> list[Any]:
    """The replies to ``commands``, after the latest update the socket sends first."""
    async with websockets.connect(f"{url.replace('http', 'ws')}/web/live", max_size=None) as socket:
        first = json.loads(await socket.recv())
        assert first["type"] in ("update", "waiting")
        if first.get("frame"):
            assert (await socket.recv())[:4] == b"\x89PNG"
        got = []
        for command in commands:
            await socket.send(command)
        while len(got) < replies:
            got.append(await socket.recv())
        return got


def test_the_live_socket_steps_and_sends_png_frames(cartpole: str) -> None:
    got = asyncio.run(asyncio.wait_for(_live(
        cartpole, json.dumps({"type": "reset", "seed": 1}), json.dumps({"type": "step", "text": "right"}), replies=4,
    ), 30))
    reset, reset_frame, step, step_frame = got
    reset, step = json.loads(reset), json.loads(step)
    assert reset["reset"] and reset["step"] == 0 and reset["frame"]
    assert step["step"] == 1 and step["reward"] == 1.0 and "pole angle" in step["text"]
    assert reset_frame[:8] == step_frame[:8] == b"\x89PNG\r\n\x1a\n" and reset_frame != step_frame


def test_a_page_that_connects_after_a_tool_played_sees_where_the_episode_stands() -> None:
    async def first(url: str) -> tuple[dict, bytes | None]:
        async with websockets.connect(f"{url.replace('http', 'ws')}/web/live", max_size=None) as socket:
            update = json.loads(await socket.recv())
            return update, (await socket.recv() if update.get("frame") else None)

    with openenv_gym.local_server("CartPole-v1", web=True) as url:
        assert asyncio.run(asyncio.wait_for(first(url), 30))[0] == {"type": "waiting"}
        httpx.post(f"{url}/web/reset", json={"seed": 0})
        shown, frame = asyncio.run(asyncio.wait_for(first(url), 30))  # a page followed the reset ...
        assert shown["step"] == 0 and frame is not None
        for _ in range(3):  # ... and none these steps, posted by a tool
            reply = httpx.post(f"{url}/web/step", json={"action": {"action": 1}}).json()
        update, frame = asyncio.run(asyncio.wait_for(first(url), 30))
        assert update["type"] == "update" and update["step"] == 3 and update["return"] == 3.0
        assert update["text"] == reply["observation"]["text"] and not update["reset"]
        assert frame is not None and frame[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (b"\x00\x01", "JSON text frames"),
        ("{not json", "Invalid JSON"),
        (json.dumps({"type": "jump"}), '"type": "step"'),
        (json.dumps({"type": "step", "action": {"action": 7}}), "action"),
        (json.dumps({"type": "step", "action": {"action": 1, "extra": 2}}), "extra"),
        (json.dumps({"type": "step", "text": "sideways"}), "sideways"),
        (json.dumps({"type": "reset", "seed": "zero"}), "seed"),
        (json.dumps({"type": "reset", "options": [1]}), "options"),
    ],
)
def test_a_bad_command_is_told_and_the_session_goes_on(cartpole: str, command: str | bytes, said: str) -> None:
    httpx.post(f"{cartpole}/web/reset", json={"seed": 0})
    got = asyncio.run(asyncio.wait_for(_live(
        cartpole, command, json.dumps({"type": "step", "action": {"action": 0}}), replies=3,
    ), 30))
    error = json.loads(got[0])
    assert error["type"] == "error" and said in error["message"], error
    assert json.loads(got[1])["type"] == "update"  # the next command plays


def test_an_oversize_command_closes_the_socket_with_1009() -> None:
    from openenv_gym.protocol import Limits

    with openenv_gym.local_server("CartPole-v1", web=True, limits=Limits(max_frame_bytes=4096)) as url:
        async def oversize() -> int | None:
            async with websockets.connect(f"{url.replace('http', 'ws')}/web/live") as socket:
                assert json.loads(await socket.recv())["type"] == "waiting"
                await socket.send(json.dumps({"type": "step", "text": "x" * 3000}) * 2)
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await socket.recv()
                return closed.value.rcvd.code if closed.value.rcvd else None

        assert asyncio.run(asyncio.wait_for(oversize(), 30)) == 1009
        body = json.dumps({"action": {"action": 1}, "pad": "x" * 5000})
        for route in ("/web/reset", "/web/step"):  # the HTTP routes take the same limit
            refused = httpx.post(f"{url}{route}", content=body, headers={"Content-Type": "application/json"})
            assert refused.status_code == 413 and "exceeds the limit of 4096 bytes" in refused.text, route
        assert httpx.post(f"{url}/web/reset", json={}).status_code == 200  # the server goes on


def test_bad_http_bodies_get_upstreams_errors(cartpole: str) -> None:
    assert httpx.post(f"{cartpole}/web/step", json={"act": 1}).status_code == 422
    assert httpx.post(f"{cartpole}/web/step", content=b"{").status_code == 422
    assert httpx.post(f"{cartpole}/web/reset", json={"seed": -1}).status_code == 422
    assert httpx.post(f"{cartpole}/web/reset", json={}).status_code == 200


def test_a_board_game_gets_its_cells_legal_moves_and_seats() -> None:
    with openenv_gym.local_server("pettingzoo.classic.tictactoe_v3", web=True) as url:
        about = httpx.get(f"{url}/web/about").json()
        assert about["seats"] == ["player_1", "player_2"] and about["renders"]
        got = asyncio.run(asyncio.wait_for(_live(
            url, json.dumps({"type": "reset", "seed": 0, "options": {"agent": "player_2"}}), replies=2,
        ), 30))
        update = json.loads(got[0])
        cells = [cell for row in update["board"] for cell in row]
        assert sorted(cell["action"] for cell in cells) == list(range(9))
        assert [cell["mark"] for cell in cells].count("O") == 1  # player_1, the server's, moved first
        taken = next(cell["action"] for cell in cells if cell["mark"])
        assert taken not in update["legal"] and len(update["legal"]) == 8


def test_box_actions_get_sliders_and_large_discrete_ones_a_text_box() -> None:
    with openenv_gym.local_server("Pendulum-v1", web=True) as url:
        control = httpx.get(f"{url}/web/about").json()["control"]
        assert control["kind"] == "sliders" and control["low"] == [-2.0] and control["high"] == [2.0]
        httpx.post(f"{url}/web/reset", json={"seed": 0})
        assert httpx.post(f"{url}/web/step", json={"action": {"action": [0.5]}}).status_code == 200
    with openenv_gym.local_server("pettingzoo.classic.chess_v6", web=True) as url:  # 4672 actions
        control = httpx.get(f"{url}/web/about").json()["control"]
        assert control == {"kind": "text", "example": "e2e4"} and MAX_BUTTONS < 4672
        httpx.post(f"{url}/web/reset", json={"seed": 0, "agent": "player_0"})
        played = httpx.post(f"{url}/web/step", json={"message": "e2e4"}).json()  # read by the chess view
        assert "e2e4" not in played["observation"]["text"].split("Legal moves:")[-1]


def test_an_env_served_by_its_fields_gets_a_form_of_them() -> None:
    with openenv_gym.local_server("openenv_gym.catalog.chess_env:ChessEnvironment", web=True) as url:
        control = httpx.get(f"{url}/web/about").json()["control"]
        assert control["kind"] == "fields" and [f["name"] for f in control["fields"]] == ["move"]
        assert control["fields"][0]["type"] == "string" and control["fields"][0]["required"]
        httpx.post(f"{url}/web/reset", json={})
        assert httpx.post(f"{url}/web/step", json={"action": {"move": "e2e4"}}).json()["done"] is False
        refused = httpx.post(f"{url}/web/step", json={"message": "e7e5"})
        assert refused.status_code == 422 and "its fields: move" in refused.json()["detail"]


def test_a_token_guards_every_route_but_the_pages_files() -> None:
    with openenv_gym.local_server("CartPole-v1", web=True, token="s3cr;et") as url:
        assert httpx.get(f"{url}/web/").status_code == 200
        assert httpx.get(f"{url}/web/page.js").status_code == 200
        for path in ("/web/about", "/web/metadata", "/web/state", "/web/report"):
            assert httpx.get(f"{url}{path}").status_code == 401, path
        assert httpx.post(f"{url}/web/reset", json={}).status_code == 401
        headers = {"Authorization": "Bearer s3cr;et"}
        assert httpx.get(f"{url}/web/about", headers=headers).status_code == 200
        ws = url.replace("http", "ws")

        async def handshake(path: str, cookie: str | None, origin: str | None = None) -> bool:
            extra = {"Cookie": cookie} if cookie else {}
            if origin:
                extra["Origin"] = origin
            try:
                async with websockets.connect(f"{ws}{path}", additional_headers=extra) as socket:
                    await socket.send(json.dumps({"type": "reset"}))
                    await asyncio.wait_for(socket.recv(), 10)
                    return True
            except (websockets.InvalidStatus, websockets.ConnectionClosed):
                return False

        assert not asyncio.run(handshake("/web/live", None))
        assert not asyncio.run(handshake("/web/live", "openenv_gym_token=wrong"))
        assert asyncio.run(handshake("/web/live", "a=b; openenv_gym_token=s3cr%3Bet"))
        assert not asyncio.run(handshake("/ws", "openenv_gym_token=s3cr%3Bet"))  # only the page's sockets read it
        # A browser sends the cookie from a page of any port of the host: only the server's own page's counts.
        assert asyncio.run(handshake("/web/live", "openenv_gym_token=s3cr%3Bet", url))
        elsewhere = url.rsplit(":", 1)[0] + ":1"
        for origin in (elsewhere, "http://evil.example", "null"):
            assert not asyncio.run(handshake("/web/live", "openenv_gym_token=s3cr%3Bet", origin)), origin
            assert not asyncio.run(handshake("/ws/ui", "openenv_gym_token=s3cr%3Bet", origin)), origin


def test_the_web_interface_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_WEB_INTERFACE", raising=False)
    assert not web_enabled(None) and web_enabled(True)
    monkeypatch.setenv("ENABLE_WEB_INTERFACE", "true")
    assert web_enabled(None) and not web_enabled(False)
    with openenv_gym.local_server("CartPole-v1") as url:  # the variable, as upstream's servers read it
        assert httpx.get(f"{url}/web/about").status_code == 200
    monkeypatch.delenv("ENABLE_WEB_INTERFACE")
    with openenv_gym.local_server("CartPole-v1") as url:
        assert httpx.get(f"{url}/web/about").status_code == 404


def test_at_capacity_the_page_is_told_and_plays_once_a_slot_frees() -> None:
    with openenv_gym.local_server("CartPole-v1", web=True, max_sessions=1) as url:
        env = openenv_gym.RemoteEnv(url)
        env.reset(seed=0)  # holds the one slot
        try:
            refused = httpx.post(f"{url}/web/reset", json={})
            assert refused.status_code == 503 and "capacity" in refused.json()["detail"]
        finally:
            env.close()
        assert asyncio.run(_settled(url)), "the slot was not given back"
        assert httpx.post(f"{url}/web/reset", json={}).status_code == 200


async def _settled(url: str, timeout: float = 10.0) -> bool:
    async with httpx.AsyncClient() as client:
        for _ in range(int(timeout / 0.05)):
            if (await client.get(f"{url}/health")).json()["active_sessions"] == 0:
                return True
            await asyncio.sleep(0.05)
    return False


def test_a_page_that_vanishes_mid_game_leaves_the_others_playing(cartpole: str) -> None:
    async def vanish_then_play() -> dict:
        ws = cartpole.replace("http", "ws")
        gone = await websockets.connect(f"{ws}/web/live")
        await gone.recv()
        async with websockets.connect(f"{ws}/web/live", max_size=None) as watcher:
            first = json.loads(await watcher.recv())
            if first.get("frame"):
                await watcher.recv()
            await gone.send(json.dumps({"type": "reset", "seed": 5}))
            gone.transport.abort()  # no close frame: a dead peer
            update = json.loads(await watcher.recv())  # the reset it asked for, seen by the other page
            await watcher.recv()
            await watcher.send(json.dumps({"type": "step", "action": {"action": 1}}))
            step = json.loads(await watcher.recv())
            return {"reset": update, "step": step}

    got = asyncio.run(asyncio.wait_for(vanish_then_play(), 30))
    assert got["reset"]["reset"] and got["step"]["step"] == 1
    assert httpx.get(f"{cartpole}/health").json()["status"] == "healthy"


class NoDisplay(gym.Env):
    """An env that says it renders rgb_array, and fails to (a missing pygame, a display)."""

    metadata = {"render_modes": ["rgb_array"]}
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict]:
        return 1, 1.0, False, False, {}

    def render(self) -> None:
        raise RuntimeError("pygame is not installed, run `pip install pygame`")


def test_a_frame_that_fails_is_said_and_the_step_goes_on() -> None:
    with openenv_gym.local_server(NoDisplay, web=True, env_kwargs={"render_mode": "rgb_array"}) as url:
        got = asyncio.run(asyncio.wait_for(_live(url, json.dumps({"type": "reset"}), replies=1), 30))
        update = json.loads(got[0])
        assert update["type"] == "update" and not update["frame"]
        assert "pip install pygame" in update["frame_error"]


def test_an_idle_page_session_is_closed_and_the_next_request_opens_one() -> None:
    import time

    with openenv_gym.local_server("CartPole-v1", web=True, held_session_timeout=0.3) as url:
        assert httpx.post(f"{url}/web/reset", json={"seed": 0}).status_code == 200
        assert httpx.get(f"{url}/health").json()["held_sessions"] == 1
        for _ in range(100):  # bounded: the reaper runs every fraction of the timeout
            if httpx.get(f"{url}/health").json()["held_sessions"] == 0:
                break
            time.sleep(0.05)
        assert httpx.get(f"{url}/health").json()["held_sessions"] == 0
        refused = httpx.post(f"{url}/web/step", json={"action": {"action": 0}})
        assert refused.status_code == 409 and "Call reset before step" in refused.json()["detail"]
        in_words = httpx.post(f"{url}/web/step", json={"message": "left"})  # read by the text view, as refused
        assert in_words.status_code == 409 and "Call reset before step" in in_words.json()["detail"]
        assert httpx.post(f"{url}/web/reset", json={}).status_code == 200
