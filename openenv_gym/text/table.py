"""The built-in views: what is known about well-known envs, as data, one entry per env.

An entry names its env by the keys :func:`~openenv_gym.text.env_key` makes of ids
(``FrozenLake`` for ``FrozenLake-v1``, ``connect_four`` for PettingZoo's
``connect_four_v3``, ``openenv/Chess`` for the catalog's ``openenv/Chess-v0``) and by
the dotted path of its class, and holds the task, the names and meanings of its actions
and an observation format (:mod:`~openenv_gym.text.formats`). Each part applies only
where the spaces still fit it (a wrapper may have changed them). An entry whose actions
need more than names (chess) names a factory instead.

    >>> entry = builtin_view("CartPole")
    >>> entry.actions
    ('left', 'right')
    >>> builtin_view("connect_four").observation
    Board(rows=6, cols=7, numbers='columns', transposed=False)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces as gs

from .formats import Board, Components, Field, Grid
from .view import TextView

__all__ = ["BuiltinView", "BUILTIN_VIEWS", "UNKNOWN", "builtin_view"]

Format = Components | Grid | Board


@dataclass(frozen=True)
class BuiltinView:
    """One env of the built-in table.

    ``keys`` are the env's id keys and class paths; ``actions`` the names of its
    ``Discrete`` actions (or of its ``Box`` action's components) and ``meanings`` what
    they do; ``observation`` its observation format; ``factory`` the ``"module:function"``
    that builds its view instead of :class:`~openenv_gym.text.TextView` (it takes the
    same arguments and returns ``None`` when the spaces are not the ones it knows).
    """

    keys: tuple[str, ...]
    task: str | None = None
    actions: tuple[str, ...] = ()
    meanings: tuple[str, ...] = ()
    observation: Format | None = None
    factory: str | None = None

    def view(
        self,
        observation_space: gs.Space,
        action_space: gs.Space,
        *,
        env: Any = None,
        env_id: str | None = None,
        action_names: Sequence[str] | None = None,
        render: Callable[[], str | None] | None = None,
        ansi: Callable[[], str | None] | None = None,
    ) -> TextView:
        """This entry's view of an env with these spaces (``env`` when there is one).

        Action names are ``action_names`` (the env's own), else the entry's where they fit
        the action space. Observations read as ``render`` says (the env's own text of its
        state), else by the entry's format where it fits the observation space, else as
        ``ansi`` says (the env's ``ansi`` render), else by the space.
        """
        names = list(action_names) if action_names else self._names(action_space)
        meanings = self.meanings if names and list(names) == list(self.actions) else ()
        observation = None
        if self.observation is not None and render is None:
            observation = self.observation.for_env(observation_space, env)
            observation = observation if observation.fits(observation_space) else None
        if render is None and observation is None:
            render = ansi
        kwargs: dict[str, Any] = dict(
            env_id=env_id, task=self.task, action_names=names, action_meanings=meanings,
            observation=observation, render=render,
        )
        if self.factory is not None:
            module, _, name = self.factory.partition(":")
            made = getattr(importlib.import_module(module), name)(observation_space, action_space, **kwargs)
            if made is not None:
                return made
        return TextView(observation_space, action_space, **kwargs)

    def _names(self, action_space: gs.Space) -> list[str] | None:
        if not self.actions:
            return None
        if isinstance(action_space, gs.Discrete) and int(action_space.n) == len(self.actions):
            return list(self.actions)
        if isinstance(action_space, gs.Box) and action_space.shape == (len(self.actions),):
            return list(self.actions)
        return None


_FROZEN_LAKE = "gymnasium.envs.toy_text.frozen_lake.FrozenLakeEnv"
_CLIFF = tuple(["." * 12] * 3 + ["S" + "C" * 10 + "G"])
_TAXI_PLACES = {0: "R", 1: "G", 2: "Y", 3: "B"}
_TAXI_MAP = "\n".join(
    ["+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |", "| | : | : |", "|Y| : |B: |", "+---------+"]
)

BUILTIN_VIEWS: tuple[BuiltinView, ...] = (
    BuiltinView(
        ("FrozenLake", "FrozenLake8x8", _FROZEN_LAKE),
        "FrozenLake: walk from the start S to the goal G over a frozen lake without falling into a hole H. "
        "The ice may be slippery: a move can slide you to either side. Reaching G gives reward 1, "
        "anything else 0; a hole ends the episode.",
        actions=("left", "down", "right", "up"),
        meanings=("move left", "move down", "move right", "move up"),
        observation=Grid(legend="S start, F frozen, H hole, G goal"),
    ),
    BuiltinView(
        ("CliffWalking", "CliffWalkingSlippery", "gymnasium.envs.toy_text.cliffwalking.CliffWalkingEnv"),
        "CliffWalking: walk from S (bottom left) to G (bottom right) of a 4 x 12 grid. Every step costs -1; "
        "stepping onto the cliff C along the bottom costs -100 and sends you back to S.",
        actions=("up", "right", "down", "left"),
        meanings=("move up", "move right", "move down", "move left"),
        observation=Grid(rows=4, cols=12, map=_CLIFF, legend=". ground, S start, C cliff, G goal"),
    ),
    BuiltinView(
        ("Taxi", "gymnasium.envs.toy_text.taxi.TaxiEnv"),
        "Taxi: drive the taxi on a 5 x 5 grid to the passenger, pick them up, drive to the destination and "
        "drop them off. Walls | block moves sideways. Every step costs -1, delivering gives +20, picking up "
        "or dropping off at the wrong place costs -10. The map, with the four places R, G, Y, B (row 0 on "
        f"top, column 0 on the left):\n{_TAXI_MAP}",
        actions=("south", "north", "east", "west", "pickup", "dropoff"),
        meanings=(
            "move down", "move up", "move right", "move left", "pick the passenger up", "drop the passenger off",
        ),
        observation=Components(
            (
                Field("taxi row"),
                Field("taxi column"),
                Field("passenger", labels={**{k: f"at {v}" for k, v in _TAXI_PLACES.items()}, 4: "in the taxi"}),
                Field("destination", labels=_TAXI_PLACES),
            ),
            radices=(5, 5, 5, 4),
        ),
    ),
    BuiltinView(
        ("Blackjack", "gymnasium.envs.toy_text.blackjack.BlackjackEnv"),
        "Blackjack: get a hand closer to 21 than the dealer's without going over. Cards 2-10 count their "
        "value, faces 10, an ace 1 or 11 (a usable ace counts 11 without busting). Winning gives +1, "
        "losing -1, a draw 0.",
        actions=("stick", "hit"),
        meanings=("stop taking cards", "take another card"),
        observation=Components(
            (
                Field("your sum"),
                Field("dealer's showing card", labels={1: "ace"}),
                Field("usable ace", labels={0: "no", 1: "yes"}),
            )
        ),
    ),
    BuiltinView(
        ("CartPole", "gymnasium.envs.classic_control.cartpole.CartPoleEnv"),
        "CartPole: keep a pole balanced upright on a cart by pushing the cart left or right. Every step the "
        "pole stays up gives +1; the episode ends when the pole tilts past 12 degrees (0.2095 rad) or the "
        "cart leaves the track (position beyond 2.4).",
        actions=("left", "right"),
        meanings=("push the cart to the left", "push the cart to the right"),
        observation=Components(
            (
                Field("cart position"),
                Field("cart velocity"),
                Field("pole angle", unit="rad"),
                Field("pole angular velocity", unit="rad/s"),
            )
        ),
    ),
    BuiltinView(
        ("MountainCar", "gymnasium.envs.classic_control.mountain_car.MountainCarEnv"),
        "MountainCar: drive an underpowered car up the right hill to the flag at position 0.5; it must swing "
        "back and forth to build momentum. Every step costs -1.",
        actions=("left", "coast", "right"),
        meanings=("accelerate to the left", "don't accelerate", "accelerate to the right"),
        observation=Components((Field("position"), Field("velocity"))),
    ),
    BuiltinView(
        ("MountainCarContinuous", "gymnasium.envs.classic_control.continuous_mountain_car.Continuous_MountainCarEnv"),
        "MountainCarContinuous: drive an underpowered car up the right hill to the flag at position 0.45 by "
        "applying a force from -1 (left) to 1 (right); it must swing back and forth. Reaching the flag gives "
        "+100; every step costs 0.1 x force squared.",
        actions=("force",),
        observation=Components((Field("position"), Field("velocity"))),
    ),
    BuiltinView(
        ("Acrobot", "gymnasium.envs.classic_control.acrobot.AcrobotEnv"),
        "Acrobot: two links hang from a pivot; swing the free end above the bar (height 1 above the pivot) "
        "by applying torque to the joint between the links. Every step costs -1.",
        actions=("negative", "none", "positive"),
        meanings=("torque -1 on the joint", "no torque", "torque +1 on the joint"),
        observation=Components(
            (
                Field("cos of the first link's angle"),
                Field("sin of the first link's angle"),
                Field("cos of the second link's angle (relative)"),
                Field("sin of the second link's angle (relative)"),
                Field("first link's angular velocity", unit="rad/s"),
                Field("second link's angular velocity", unit="rad/s"),
            )
        ),
    ),
    BuiltinView(
        ("Pendulum", "gymnasium.envs.classic_control.pendulum.PendulumEnv"),
        "Pendulum: swing a pendulum up and keep it upright by applying a torque from -2 to 2 at its pivot. "
        "The reward is the negative of the angle squared plus small velocity and torque costs (0 is best).",
        actions=("torque",),
        observation=Components(
            (Field("x = cos of the angle"), Field("y = sin of the angle"), Field("angular velocity", unit="rad/s"))
        ),
    ),
    BuiltinView(
        ("connect_four", "pettingzoo.classic.connect_four.connect_four.raw_env"),
        "Connect Four: drop your piece into one of the 7 columns (0 to 6, left to right); it falls to the "
        "lowest empty cell. Four of your pieces in a row, horizontally, vertically or diagonally, win (+1); "
        "a loss gives -1. A full column cannot take a piece.",
        observation=Board(6, 7, numbers="columns"),
    ),
    BuiltinView(
        ("tictactoe", "pettingzoo.classic.tictactoe.tictactoe.raw_env"),
        "Tic-tac-toe: put your mark in an empty cell of the 3 x 3 board, numbered 0 to 8 down the columns "
        "(0 1 2 is the left column). Three of your marks in a row, column or diagonal win (+1); a loss gives -1.",
        observation=Board(3, 3, numbers="cells", transposed=True),
    ),
    BuiltinView(
        ("chess", "openenv/Chess", "chess_env", "pettingzoo.classic.chess.chess.raw_env"),
        "Chess: you move for the side to move and the opponent answers. Checkmate wins (+1), being mated "
        "loses (-1), a draw gives 0.",
        factory="openenv_gym.text.chess:chess_view",
    ),
    # -- the catalog's upstream OpenEnv envs (openenv/<Name>-v0), by what their servers do ---------
    BuiltinView(
        ("openenv/Connect4",),
        "Connect Four on a 6 x 7 board, both sides played in turn by you: drop the next player's piece (1 "
        "moves first, then -1; 0 is an empty cell) into one of the 7 columns (0 to 6, left to right); it falls "
        "to the lowest empty cell. Four in a row, horizontally, vertically or diagonally, wins (+1). A full "
        "column is not legal: playing one ends the game with -1.",
    ),
    BuiltinView(
        ("openenv/GridWorld",),
        "GridWorld: walk on a 5 x 5 grid from (x, y) = (0, 0) to the goal at (4, 4). x is the row (UP and "
        "DOWN change it), y the column (LEFT and RIGHT); a move into the edge leaves you where you are. "
        "Reaching the goal ends the episode.",
        actions=("UP", "DOWN", "LEFT", "RIGHT"),
        meanings=("x - 1", "x + 1", "y - 1", "y + 1"),
    ),
    BuiltinView(
        ("openenv/Maze",),
        "Maze: walk through an 8 x 8 maze from [0, 0] to the exit at [7, 7]; positions are [column, row]. "
        "Walls block moves: only the legal actions listed each turn can be taken.",
        actions=("up", "down", "left", "right"),
        meanings=("move up a row", "move down a row", "move left a column", "move right a column"),
    ),
    BuiltinView(
        ("openenv/Atari",),
        "An Atari 2600 game (the Arcade Learning Environment): the screen in, one joystick action out per "
        "step; the score's changes are the rewards, and the game ends as the console's game does.",
    ),
    BuiltinView(
        ("openenv/OpenSpiel",),
        "A game of DeepMind's OpenSpiel (catch, tic_tac_toe, kuhn_poker, ...) against the server's opponent: "
        "each turn pick one of the legal action ids; the game's own reward comes at its end.",
    ),
    BuiltinView(
        ("openenv/TextArena",),
        "A TextArena text game (GuessTheNumber, Mastermind, Wordle, ...): read the game's prompt and its "
        "messages, and reply with your move as the game asks for it (GuessTheNumber: a number in brackets, "
        "such as [10]).",
    ),
    BuiltinView(
        ("openenv/Coding",),
        "A Python interpreter: send Python code; its stdout, stderr and exit code come back. Variables "
        "persist between steps of an episode.",
    ),
    BuiltinView(
        ("openenv/Echo",),
        "An echo server with two MCP tools: echo_message returns the message, echo_with_length returns it "
        "with its length.",
    ),
    BuiltinView(
        ("openenv/Snake",),
        "Snake on a 20 x 20 grid with walls around it: steer the snake to the fruit without hitting a wall or "
        "itself. Eating a fruit gives +1 and makes the snake longer; dying gives -1. The grid's cells: 0 empty, "
        "1 wall, 2 fruit, 3 the snake's head, 4 its body, 5 its tail.",
        actions=("noop", "left", "right"),
        meanings=("keep going straight", "turn 90 degrees to the left", "turn 90 degrees to the right"),
    ),
    BuiltinView(
        ("openenv/Wildfire",),
        "Wildfire: a fire spreads over a grid of cells (0 ash, 1 fuel, 2 burning, 3 firebreak, 4 watered), "
        "pushed by the wind and slowed by humidity. Each step either drop water on cell (x, y) (8 drops per "
        "episode), build a firebreak there (50 per episode) or wait. The grid is flattened row by row: cell "
        "(x, y) is at index y * width + x. Containing the fire is rewarded; burned cells cost.",
    ),
    BuiltinView(
        ("openenv/ReasoningGym",),
        "A reasoning question from Reasoning Gym: answer it in one reply. The answer is scored from 0 to 1 "
        "and the episode ends; the correct answer is revealed.",
    ),
    BuiltinView(
        ("openenv/DMControl",),
        "A DeepMind Control Suite task simulated in MuJoCo (cartpole balance by default): each step apply "
        "continuous actions, one value per actuator (most tasks take values in [-1, 1]), to earn a reward "
        "between 0 and 1 for the task's goal.",
    ),
    BuiltinView(
        ("openenv/REPL",),
        "A Python REPL: run code step by step to solve the task (the context, if any, is in a variable). "
        "Finish with print('FINAL(answer)'), print('FINAL_VAR(name)'), or is_final with a final_answer.",
    ),
    BuiltinView(
        ("openenv/DIPGSafety",),
        "A medical-safety question: read the context and the question, and answer in channels: your analysis "
        "in <|channel|>analysis<|message|>...<|end|>, a quote of the context that supports it in "
        "<|channel|>proof<|message|>...<|end|>, and the answer in <|channel|>final<|message|>...<|end|>. "
        "Say you cannot answer when the context does not tell.",
    ),
    BuiltinView(
        ("openenv/Carla",),
        "Drive a car in a CARLA scenario described in text: each step pick an action type (observe, control "
        "with throttle, steer and brake, emergency_stop, brake_vehicle, maintain_speed, lane_change, and "
        "navigation ones) with its parameters. The scenario says what is at stake.",
    ),
    BuiltinView(
        ("openenv/KernRL",),
        "Write a CUDA or Triton kernel that computes what the PyTorch reference implementation computes, "
        "faster. Each submission is compiled, checked against the reference and timed; the feedback says how "
        "it went. A few turns per problem.",
    ),
    BuiltinView(
        ("openenv/SumoRL",),
        "Control a traffic light in the SUMO simulator: every few seconds pick the next green phase. The "
        "observation is the current phase (one-hot), whether the minimum green time has passed, and each "
        "incoming lane's density and queue (0 to 1). Less waiting time is rewarded.",
    ),
    BuiltinView(
        ("openenv/BrowserGym",),
        "Complete a web task in a browser: read the goal and the page's accessibility tree, and act with "
        "BrowserGym actions such as click('12'), fill('5', 'text'), select_option('7', 'Blue'), "
        "scroll(0, 200) or send_msg_to_user('...'), using the element ids of the tree.",
    ),
    BuiltinView(
        ("openenv/FinRL",),
        "Trade stocks: the state is the cash balance, each stock's price and holding, and technical "
        "indicators; each step give one value in [-1, 1] per stock (positive buys, negative sells, its size "
        "the trade's). The portfolio's value change is the reward.",
    ),
    BuiltinView(
        ("openenv/Git",),
        "Work with git on a Gitea server: list_repos lists the repositories, clone_repo clones one into the "
        "workspace, execute_git_command runs a git command in a cloned repository.",
    ),
    BuiltinView(
        ("openenv/Julia",),
        "Write Julia code (core_code) and tests for it (test_code, with Test's @test); the server runs both "
        "and reports stdout, stderr, the exit code and how many tests passed and failed.",
    ),
    BuiltinView(
        ("openenv/TBench2",),
        "Solve a Terminal-Bench 2 task in its terminal: run shell commands (exec; write, view, wait and kill "
        "for a running session), write files, and evaluate when done to run the task's tests.",
    ),
    BuiltinView(
        ("openenv/WebSearch",),
        "Search the web: send a query; the results' titles, contents and URLs come back.",
    ),
    BuiltinView(
        ("openenv/Chat",),
        "A chat held as token ids: send the token ids of your next message; the conversation so far comes back "
        "as messages and as the tokens of the whole conversation.",
    ),
    BuiltinView(
        ("openenv/CodingTools",),
        "Solve a coding task in a sandbox with a coding agent's tools: bash, read, write, edit, multi_edit, "
        "glob, grep, ls, todo_write; call submit_solution when done to run the task's checks.",
    ),
    BuiltinView(
        ("openenv/Jupyter",),
        "Work in a Jupyter notebook in a sandbox: add and run code cells, edit and rerun the current one, run "
        "shell commands, read the notebook's state; give final_answer when done.",
    ),
    BuiltinView(
        ("openenv/Terminus",),
        "Solve a task in a sandboxed terminal with one tool, terminal: pass command to run a shell command, or "
        "final_answer to submit your answer.",
    ),
    BuiltinView(
        ("openenv/FinQA",),
        "Answer a financial question about a company from its SEC 10-K tables: get_descriptions lists its "
        "tables, get_table_info describes one, sql_query queries one; submit_answer gives the answer.",
    ),
)

_BY_KEY = {key: entry for entry in BUILTIN_VIEWS for key in entry.keys}
#: The entry of an env the table does not know: its view comes from its spaces and methods.
UNKNOWN = BuiltinView(())


def builtin_view(key: str) -> BuiltinView | None:
    """The entry for an id key or class path, or ``None``."""
    return _BY_KEY.get(key)
