"""An env's tools as an LLM trainer calls them (openenv_gym.client.tools), against real
servers on 127.0.0.1: an upstream ``MCPEnvironment`` with tools of its own, and
openenv-gym and stock OpenEnv servers through an ``act`` tool made from a text view."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from pettingzoo.classic import tictactoe_v3

import openenv_gym
from openenv_gym.client.tools import EnvTools, env_tools, view_session
from openenv_gym.errors import OpenEnvGymError, ToolCallError
from tests.conftest import asgi_server
from tests.upstream_tools import corridor_app


@pytest.fixture(scope="module")
def corridor_url():
    with asgi_server(corridor_app()) as url:
        yield url


def test_server_tools_are_called_as_steps_that_bring_the_env_reward(corridor_url):
    tools = env_tools(corridor_url)
    assert (tools.name, tools.kind) == ("Corridor", "server")
    assert [tool.name for tool in tools.tools] == ["move", "observe"]
    move = tools.tools[0]
    assert move.input_schema["properties"]["direction"]["enum"] == ["left", "right"]
    session = tools.open()
    try:
        # The reset's text is what the observe tool says (the observation has none).
        assert session.reset(seed=1) == "cell 1 of 0-3; the exit is cell 3"
        first = session.call("move", {"direction": "right"})
        assert (first.text, first.reward, first.done) == ("cell 2 of 0-3; the exit is cell 3", 0.0, False)
        last = session.call("move", {"direction": "right"})
        assert (last.reward, last.done) == (1.0, True)
        with pytest.raises(ToolCallError, match="the walk is over") as over:
            session.call("move", {"direction": "left"})
        assert over.value.error_type == "execution_error"
        with pytest.raises(ToolCallError) as unknown:
            session.call("jump", {})
        assert unknown.value.error_type == "tool_not_found"
        with pytest.raises(ToolCallError, match="Missing required argument") as missing:
            session.call("move", {})
        assert missing.value.error_type == "invalid_args"
        # A second episode on the same session.
        assert session.reset(seed=0) == "cell 0 of 0-3; the exit is cell 3"
    finally:
        session.close()


def test_call_before_reset_says_to_reset(corridor_url):
    session = env_tools(corridor_url).open()
    with pytest.raises(OpenEnvGymError, match=r"call reset\(\) first"):
        session.call("observe", {})


def test_act_tool_from_the_text_view_of_a_served_game():
    app = openenv_gym.create_app(tictactoe_v3.env, opponent=lambda turn: turn.legal_actions[0])
    with asgi_server(app) as url:
        tools = env_tools(url, tools="client")
        assert (tools.name, tools.kind) == ("tictactoe_v3", "client")
        (act,) = tools.tools
        assert act.input_schema["properties"]["action"]["maximum"] == 8
        assert act.description.startswith("Tic-tac-toe")
        session = tools.open()
        try:
            assert session.reset(seed=0).endswith("Legal actions: 0, 1, 2, 3, 4, 5, 6, 7, 8")
            played = session.call("act", {"action": 4})
            assert played.text.endswith("Reward: 0. The episode goes on.")
            # An illegal move is refused with what is legal, and the game does not move.
            with pytest.raises(ToolCallError, match="4 is not legal now; legal actions: 1, 2, 3, 5") as illegal:
                session.call("act", {"action": 4})
            assert illegal.value.error_type == "invalid_args"
            with pytest.raises(ToolCallError, match="one argument, 'action'"):
                session.call("act", {"move": 1})
            assert session.call("act", {"action": 8}).text == played.text.replace("2 5 8", "2 5 X").replace(
                "1 X 7", "O X 7").replace("Legal actions: 1, 2, 3, 5, 6, 7, 8", "Legal actions: 2, 3, 5, 6, 7")
        finally:
            session.close()


def test_a_server_without_tools(stock_url):
    tools = env_tools(stock_url)
    assert tools.kind == "client"
    (act,) = tools.tools
    # A stock action of one required field (`mode` has a default): the act tool takes it as `action`.
    assert set(act.input_schema["properties"]) == {"action"}
    assert (act.input_schema["properties"]["action"]["minimum"], act.input_schema["properties"]["action"]["maximum"]) == (1, 5)
    with pytest.raises(OpenEnvGymError, match="offers no MCP tools.*tools='client'"):
        env_tools(stock_url, tools="server")


def test_a_local_env():
    tools = env_tools("FrozenLake-v1", env_kwargs={"is_slippery": False})
    assert (tools.name, tools.kind) == ("FrozenLake-v1", "client")
    assert tools.tools[0].input_schema["properties"]["action"]["anyOf"][0]["enum"] == ["left", "down", "right", "up"]
    session = tools.open()
    try:
        session.reset(seed=0)
        steps = [session.call("act", {"action": a}) for a in ["down", "down", "right", "right", "down", "right"]]
        assert [(s.reward, s.done) for s in steps[-2:]] == [(0.0, False), (1.0, True)]
    finally:
        session.close()
    with pytest.raises(ValueError, match="local env, which has no server tools"):
        env_tools("FrozenLake-v1", tools="server")
    with pytest.raises(TypeError, match="env_kwargs are for a local env"):
        env_tools("http://127.0.0.1:1", env_kwargs={"is_slippery": False})


def shown(tools: EnvTools, moves: list) -> dict:
    """What a model is shown of an env on one route: the instructions, the ``act`` tool,
    the text of a reset with seed 0 and of each of ``moves`` after it."""
    [act] = [tool for tool in tools.tools if tool.name == "act"]
    return {"instructions": tools.instructions, "act": (act.description, act.input_schema),
            "texts": transcript(tools.open(), moves)}


def transcript(session, moves: list) -> list[str]:
    try:
        return [session.reset(seed=0), *(session.call("act", {"action": move}).text for move in moves)]
    finally:
        session.close()


def skyrl_shown(session, moves: list) -> dict:
    """What SkyRL's ``TextEnv`` shows (its route, :func:`view_session`): the instructions
    it puts first and the texts; it takes the model's reply whole, so no ``act`` tool."""
    texts = transcript(session, moves)
    return {"instructions": session.instructions, "texts": texts}


@contextlib.contextmanager
def routes(game: str) -> Iterator[tuple[list, dict[str, EnvTools], dict[str, Any]]]:
    """The moves to play and an env on every route it has: local (a Gymnasium env), served
    with the server's tools and with an ``act`` made on the client, a catalog server of
    upstream's named fields, and SkyRL's route to a served env (a :func:`view_session`)."""
    opponent = lambda turn: turn.legal_actions[0]  # noqa: E731
    with contextlib.ExitStack() as stack:
        serve = lambda *args, **kwargs: stack.enter_context(openenv_gym.local_server(*args, **kwargs))  # noqa: E731
        if game == "FrozenLake":
            kwargs = {"env_kwargs": {"is_slippery": False}}
            url = serve("FrozenLake-v1", **kwargs)
            tools = {"local": env_tools("FrozenLake-v1", **kwargs), "served, server's tools": env_tools(url),
                     "served, client's act": env_tools(url, tools="client")}
            yield ["down", "down", "right", "right", "down", "right"], tools, {"skyrl": view_session(url)}
        elif game == "tic-tac-toe":
            url = serve(tictactoe_v3.env, opponent=opponent)
            tools = {"served, server's tools": env_tools(url), "served, client's act": env_tools(url, tools="client")}
            yield [4, 8, 2], tools, {"skyrl": view_session(url)}
        else:
            pytest.importorskip("chess")
            from pettingzoo.classic import chess_v6

            from openenv_gym.catalog.chess_env import ChessEnvironment

            games, catalog = serve(chess_v6.env, opponent=opponent), serve(ChessEnvironment)
            tools = {"local": env_tools("openenv/Chess-v0"), "served PettingZoo, server's tools": env_tools(games),
                     "served PettingZoo, client's act": env_tools(games, tools="client"),
                     "catalog's chess server": env_tools(catalog)}
            yield [], tools, {"skyrl, served PettingZoo": view_session(games), "skyrl, catalog's": view_session(catalog)}


@pytest.mark.parametrize("game", ["FrozenLake", "tic-tac-toe", "chess"])
def test_an_env_reads_the_same_on_every_route(game):
    """The same env shows a model the same instructions, ``act`` tool (description and
    argument's schema) and texts, from its first observation on, on every route. Only
    the server's tools add ``observe`` and ``legal_actions``."""
    with routes(game) as (moves, tools, skyrl):
        seen = {route: shown(found, moves) for route, found in tools.items()}
        seen_by_skyrl = {route: skyrl_shown(session, moves) for route, session in skyrl.items()}
    first, *others = seen
    for route in others:
        assert seen[route] == seen[first], f"{route} differs from {first}"
    for route, what in seen_by_skyrl.items():
        assert what == {"instructions": seen[first]["instructions"], "texts": seen[first]["texts"]}, route
    for route, found in tools.items():
        names = [tool.name for tool in found.tools]
        assert names == (["act", "observe", "legal_actions"] if found.kind == "server" else ["act"]), route
    if game == "FrozenLake":  # the map lives in the env, not its spaces: the server writes it on every route
        assert "map (* = you):\n*FFF\nFHFH" in seen[first]["texts"][0]
        assert seen[first]["texts"][-1].endswith("Reward: 1. The episode is over (terminated).")


def test_remote_env_text_is_the_server_text_of_its_last_observation():
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        asked, plain = openenv_gym.RemoteEnv(url, text=True), openenv_gym.RemoteEnv(url)
        try:
            first, _ = asked.reset(seed=0)
            assert asked.served_text(first).startswith("position: row 0, column 0 (cell 0)\nmap")
            second, *_ = asked.step(1)
            assert asked.served_text(second).startswith("position: row 1, column 0 (cell 4)")
            assert asked.served_text(first) is None  # not the last observation: no text of the server's
            obs, _ = plain.reset(seed=0)
            assert plain.served_text(obs) is None  # not asked for
        finally:
            asked.close()
            plain.close()


def test_instructions_are_the_env_view_description_on_every_route():
    """The task, the observations, the actions and how to answer, for a model's first
    message: the local view's, the server's own (``/schema``) for its tools and for an
    ``act`` tool made here, and nothing from a server that has none."""
    local = env_tools("FrozenLake-v1", env_kwargs={"is_slippery": False}).instructions
    assert local.startswith("FrozenLake: walk from the start S to the goal G")
    assert "Actions: left (move left), down (move down)" in local and "Answer with one action" in local
    with openenv_gym.local_server("FrozenLake-v1", env_kwargs={"is_slippery": False}) as url:
        assert env_tools(url).instructions == local
        assert env_tools(url, tools="client").instructions == local


def test_a_server_without_instructions_gives_the_client_view_description(corridor_url, stock_url):
    assert env_tools(corridor_url).instructions is None  # an upstream MCPEnvironment: tools, no view
    described = env_tools(stock_url).instructions  # a stock server: the client's view of its spaces
    assert described is not None and "Answer with one action" in described


def test_a_served_fields_env_reads_as_its_built_in_view_says():
    """The catalog's chess server speaks upstream's named fields (no tools, no spaces to
    name it by): its ``/metadata`` name finds the built-in chess view, so its ``act`` tool
    and text are the board, the EPD and the legal moves, as a local chess env's."""
    pytest.importorskip("chess")
    from openenv_gym.catalog.chess_env import ChessEnvironment

    with openenv_gym.local_server(ChessEnvironment) as url:
        tools = env_tools(url)
        (act,) = tools.tools
        assert (tools.name, tools.kind, list(act.input_schema["properties"])) == ("chess_env", "client", ["action"])
        assert tools.instructions.startswith("Chess: you move for the side to move")
        session = tools.open()
        try:
            first = session.reset(seed=0)
            assert first.startswith("You play white, to move.\n8 r n b q k b n r")
            assert "Position (EPD): rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -" in first
            assert "Legal moves: g1h3, g1f3" in first
            played = session.call("act", {"action": "e2e4"}).text
            assert "4 . . . . P . . ." in played
            with pytest.raises(ToolCallError, match="e2e5 is not a legal move here"):
                session.call("act", {"action": "e2e5"})
        finally:
            session.close()


def test_async_tool_sessions_play_at_once_on_one_event_loop():
    """Eight async sessions of a served env whose step takes 0.3 s, on one event loop: their
    steps are in flight at once (the env counts them), and each reads as the blocking session."""
    import asyncio
    import threading

    from tests.envs import SlowEnv

    in_flight = {"now": 0, "most": 0}
    lock = threading.Lock()

    class CountingSlowEnv(SlowEnv):
        def step(self, action):
            with lock:
                in_flight["now"] += 1
                in_flight["most"] = max(in_flight["most"], in_flight["now"])
            try:
                return super().step(action)
            finally:
                with lock:
                    in_flight["now"] -= 1

    app = openenv_gym.create_app(lambda: CountingSlowEnv(delay=0.3), execution="thread", max_sessions=16)
    with asgi_server(app) as url:
        tools = env_tools(url)
        assert tools.kind == "server"
        blocking = tools.open()
        try:
            blocking.reset(seed=0)
            expected = blocking.call("act", {"action": 1})
        finally:
            blocking.close()

        async def rollout(seed: int):
            session = tools.open_async()
            try:
                await session.reset(seed=seed)
                return await session.call("act", {"action": 1})
            finally:
                await session.close()

        async def all_of_them():
            return await asyncio.gather(*(rollout(seed) for seed in range(8)))

        results = asyncio.run(all_of_them())
    assert all(result == expected for result in results)
    # Overlap is shown by the count (8 here, even beside three busy processes), not by a
    # wall-clock bound that a busy CI machine missed (1.52 s against 1.44).
    assert in_flight["most"] >= 4, f"at most {in_flight['most']} of 8 async sessions' steps were in flight at once"


def test_tools_made_on_the_client_have_no_async_session():
    tools = env_tools("FrozenLake-v1")
    with pytest.raises(TypeError, match="made on the client.*asyncio.to_thread"):
        tools.open_async()


@pytest.mark.parametrize("tools", ["server", "client"])
def test_tic_tac_toe_says_which_mark_is_yours_in_either_seat(tools):
    """The instructions say the model's mark (X) and the opponent's (O), and the board
    keeps to it in either seat: as player_2, the server's opponent has put an O already."""
    app = openenv_gym.create_app(tictactoe_v3.env, opponent=lambda turn: turn.legal_actions[0])
    with asgi_server(app) as url:
        found = env_tools(url, tools=tools)
        assert "X your pieces, O your opponent's" in found.instructions
        session = found.open()
        try:
            first = session.reset(seed=0)
            assert "X" not in first and "O" not in first
            second = session.reset(seed=0, options={"agent": "player_2"})
            assert second.startswith("O 3 6\n") and "X" not in second
            after = session.call("act", {"action": 4}).text
            assert after.startswith("O 3 6\nO X 7\n2 5 8\n")  # the opponent takes the first free cell
        finally:
            session.close()
