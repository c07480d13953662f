"""The catalog's entries: upstream OpenEnv's environments, one :class:`CatalogEntry` each.

Each entry's view (``observation_fields`` / ``action_fields``) is written from upstream's
models (``envs/<env>/models.py``) and the replies of its real servers
(``tests/upstream/captures/``): a field's JSON Schema with the bounds and shapes upstream's
code fixes but its pydantic schema does not say, ``...`` for an optional field worth
sending, ``None`` for a field an agent does not learn from (it goes to ``info``).
"""

from __future__ import annotations

from .entry import CatalogEntry, Setting

__all__ = ["CATALOG"]


def _integers(low: int, high: int) -> dict:
    return {"type": "integer", "minimum": low, "maximum": high}


def _grid(rows: int, columns: int, low: int, high: int) -> dict:
    row = {"type": "array", "minItems": columns, "maxItems": columns, "items": _integers(low, high)}
    return {"type": "array", "minItems": rows, "maxItems": rows, "items": row}


def _cell(size: int) -> dict:
    """A ``[column, row]`` pair on a square grid of ``size``."""
    return {"type": "array", "minItems": 2, "maxItems": 2, "items": _integers(0, size - 1)}


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "Chess", "chess_env",
        "Chess against a random (default), moonfish or no opponent; UCI moves",
        server="openenv_gym.catalog.chess_env:ChessEnvironment",
        requires=("chess",), extra="chess",
        codecs={"alphazero": "openenv_gym.chess_codec:AlphaZeroChess"},
        default_codec="alphazero",
    ),
    CatalogEntry(
        "Connect4", "connect4_env",
        "Connect Four on a 6x7 board; drop a piece in a column",
        server="openenv_gym.catalog.connect4_env:Connect4Environment",
        # Upstream's docstring says "(0 to 6)" and "6 rows x 7 columns"; 1 and -1 are the players.
        observation_fields={"board": _grid(6, 7, -1, 1)},
        action_fields={"column": _integers(0, 6)},
    ),
    CatalogEntry(
        "GridWorld", "grid_world_env",
        "A 5x5 grid: walk from [0, 0] to [4, 4] with UP / DOWN / LEFT / RIGHT",
        server="openenv_gym.catalog.grid_world_env:GridWorldEnvironment",
        # The agent is clamped to the 5x5 grid; the status message goes to info.
        observation_fields={"x": _integers(0, 4), "y": _integers(0, 4), "message": None},
    ),
    CatalogEntry(
        "Echo", "echo_env", "MCP tools echo_message and echo_with_length",
        server="openenv_gym.catalog.echo_env:EchoEnvironment",
        action_fields={
            "tool_name": {"enum": ["echo_message", "echo_with_length"]},
            "arguments": {"type": "object", "required": ["message"],
                          "properties": {"message": {"type": "string", "maxLength": 256}}},
        },
    ),
    CatalogEntry(
        "Maze", "maze_env", "An 8x8 maze: walk from [0, 0] to the exit at [7, 7]; integer actions with legal_actions",
        # Upstream's Action enum: 0 up, 1 down, 2 left, 3 right; its default maze is 8x8.
        observation_fields={"current_position": _cell(8), "previous_position": _cell(8)},
        action_fields={"action": _integers(0, 3)},
    ),
    CatalogEntry(
        "OpenSpiel", "openspiel_env",
        "DeepMind OpenSpiel games (catch, tic_tac_toe, kuhn_poker, ...) against a seeded opponent; game= picks one",
        server="openenv_gym.catalog.openspiel_env:OpenSpielEnvironment",
        requires=("pyspiel",), extra="openspiel",
        # The phase and whose turn it is are the game's bookkeeping: in info.
        observation_fields={"game_phase": None, "current_player_id": None},
        settings={
            "game": Setting("game_name", "OPENSPIEL_GAME"),
            "agent_player": Setting("agent_player", "OPENSPIEL_AGENT_PLAYER"),
            "opponent_policy": Setting("opponent_policy", "OPENSPIEL_OPPONENT_POLICY"),
        },
    ),
    CatalogEntry(
        "TextArena", "textarena_env",
        "TextArena's text games (GuessTheNumber-v0, Mastermind-v0, ...): the prompt in, a message out; game= picks one",
        server="openenv_gym.catalog.textarena_env:TextArenaEnvironment",
        requires=("textarena",), extra="textarena",
        # Upstream's default game, Wordle-v0, needs NLTK data that cannot be downloaded offline.
        settings={
            "game": Setting("env_id", "TEXTARENA_ENV_ID", "GuessTheNumber-v0"),
            "num_players": Setting("num_players", "TEXTARENA_NUM_PLAYERS"),
            "max_turns": Setting("max_turns", "TEXTARENA_MAX_TURNS"),
        },
    ),
    CatalogEntry(
        "Coding", "coding_env", "Python code in, its stdout, stderr and exit code out (smolagents' executor)",
    ),
    CatalogEntry("Snake", "snake_env", "Snake (marlenv); integer actions, grid observations"),
)
