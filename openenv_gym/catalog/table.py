"""The catalog's entries: upstream OpenEnv's environments, one :class:`CatalogEntry` each.

Each entry's view (``observation_fields`` / ``action_fields``) is written from upstream's
models (``envs/<env>/models.py``) and the replies of its real servers
(``tests/upstream/captures/``; ``tests/upstream/schemas/`` for the envs whose servers
cannot run offline): a field's JSON Schema with the bounds and shapes upstream's code fixes
but its pydantic schema does not say, ``...`` for an optional field worth sending, ``None``
for a field an agent does not learn from (it goes to ``info``). A shape that depends on
how the server is configured (a grid's size, a state vector's length) is left to the first
observation (:func:`~openenv_gym.spaces.infer_view`), not written here.

MCP-tool envs (Echo, CodingTools, Jupyter, Terminus, FinQA) take ``call_tool`` actions: their
view is the tool's name, an enum of the tools the env's server defines, and its arguments,
the JSON Schema of one of those tools' parameters (``anyOf`` when the tools differ; a sampled
action's name and arguments are drawn apart, so they need not belong to the same tool).
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


def _at_least(low: float, kind: str = "integer") -> dict:
    return {"type": kind, "minimum": low}


def _array(shape: tuple[int, ...], item: dict) -> dict:
    """A nested list of a fixed ``shape`` (rows first) of ``item`` s."""
    for size in reversed(shape):
        item = {"type": "array", "minItems": size, "maxItems": size, "items": item}
    return item


def _list(item: dict, min_items: int = 0) -> dict:
    """A list whose length varies (never fixed by the first observation's)."""
    return {"type": "array", "items": item, **({"minItems": min_items} if min_items else {})}


def _enum(*values: object) -> dict:
    return {"enum": list(values)}


_STRING = {"type": "string"}


def _tool(required: dict | None = None, optional: dict | None = None) -> dict:
    """The arguments of one MCP tool: its parameters without a default are required."""
    properties = {**(required or {}), **(optional or {})}
    return {"type": "object", "properties": properties, "required": list(required or {}),
            "additionalProperties": False}


def _tools(tools: dict[str, dict]) -> dict:
    """An MCP env's ``call_tool`` view: ``tool_name`` one of ``tools``, ``arguments`` one of theirs."""
    arguments = list(tools.values())
    return {"tool_name": _enum(*tools), "arguments": arguments[0] if len(arguments) == 1 else {"anyOf": arguments}}


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "Chess", "chess_env",
        "Chess against a random (default), moonfish or no opponent; UCI moves",
        server="openenv_gym.catalog.chess_env:ChessEnvironment",
        requires=("chess",), extra="chess",
        views={"alphazero": "openenv_gym.catalog.alphazero:AlphaZeroChess"},
        default_view="alphazero",
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
        "Atari", "atari_env",
        "Atari 2600 games through the Arcade Learning Environment (ROMs bundled); game= picks one",
        server="openenv_gym.catalog.atari_env:AtariEnvironment",
        requires=("ale_py",), extra="atari",
        # The screen's shape is constant (screen_shape shapes it: an image Box); the frame counters
        # count across episodes (no two resets alike): bookkeeping, in info.
        observation_fields={"screen_shape": None, "frame_number": None, "episode_frame_number": None},
        settings={
            "game": Setting("game", "ATARI_GAME"),
            "obs_type": Setting("obs_type", "ATARI_OBS_TYPE"),
            "full_action_space": Setting("full_action_space", "ATARI_FULL_ACTION_SPACE"),
            "repeat_action_probability": Setting("repeat_action_probability", "ATARI_REPEAT_ACTION_PROB"),
            "frameskip": Setting("frameskip", "ATARI_FRAMESKIP"),
            "mode": Setting("mode", "ATARI_MODE"),
            "difficulty": Setting("difficulty", "ATARI_DIFFICULTY"),
        },
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
    CatalogEntry(
        "Snake", "snake_env", "Snake on a 20x20 walled grid (marlenv): keep going, turn left or turn right; eat fruit",
        # server/app.py builds SnakeEnvironment() with its defaults: one snake, a 20x20 grid
        # (walls included), observer="snake" (models.py: 0 noop, 1 turn left, 2 turn right).
        # The grid holds marlenv's Cell values (0 empty, 1 wall, 2 fruit, 3 head, 4 body, 5 tail);
        # the observation is marlenv's one-hot encoding of it, 8 channels of 0 or 1.
        observation_fields={
            "grid": _grid(20, 20, 0, 5),
            "observation": _array((20, 20, 8), {"type": "number", "minimum": 0, "maximum": 1}),
            "episode_steps": _at_least(0), "episode_fruits": _at_least(0), "episode_kills": _at_least(0),
        },
        action_fields={"action": _integers(0, 2)},
    ),
    CatalogEntry(
        "Wildfire", "wildfire_env",
        "Contain a spreading wildfire on a grid (16x16 by default): water or firebreak a cell, or wait",
        # The grid's size is the server's (WILDFIRE_WIDTH x WILDFIRE_HEIGHT): its length comes from
        # the first observation. server/wildfire_environment.py fixes the rest: step() knows
        # "water", "break" and "wait" (anything else is penalised as invalid); a cell is (x, y)
        # with 0 <= x < width (in_bounds); the wind is a key of DIRS_8; humidity is clamped to
        # [0, 1]; 8 water drops and 50 firebreaks per episode (its constructor's defaults, which
        # the app keeps). reward_hint repeats the step's reward: in info.
        observation_fields={
            "width": _at_least(1), "height": _at_least(1), "step": _at_least(0),
            "wind_dir": _enum("N", "NE", "E", "SE", "S", "SW", "W", "NW", "CALM"),
            "humidity": {"type": "number", "minimum": 0, "maximum": 1},
            "burning_count": _at_least(0), "burned_count": _at_least(0),
            "remaining_water": _integers(0, 8), "remaining_breaks": _integers(0, 50),
            "reward_hint": None,
        },
        action_fields={"action": _enum("break", "water", "wait"), "x": _at_least(0), "y": _at_least(0)},
        settings={
            "width": Setting("width", "WILDFIRE_WIDTH"),
            "height": Setting("height", "WILDFIRE_HEIGHT"),
            "humidity": Setting("humidity", "WILDFIRE_HUMIDITY"),
            "wind": Setting("wind", "WILDFIRE_WIND"),
        },
    ),
    CatalogEntry(
        "ReasoningGym", "reasoning_gym_env",
        "Reasoning Gym's procedural questions (leg_counting by default), one per episode: answer it, get its score",
        # The score is the step's reward; the dataset's metadata is the answer's bookkeeping:
        # both in info. Which dataset is asked is a reset option (dataset_name, dataset_config,
        # seed, size), not a server setting.
        observation_fields={"score": None, "dataset_metadata": None},
    ),
    CatalogEntry(
        "DMControl", "dm_control_env",
        "DeepMind Control Suite tasks on MuJoCo (cartpole/balance by default); continuous actions",
        # The observation's named arrays and the action's length are the domain's and task's
        # (its action_spec; the server clips each value to its bounds, [-1, 1] for most tasks):
        # left to the schema. pixels (a base64 PNG) come only with reset/step(render=True).
        settings={
            "domain": Setting("domain_name", "DMCONTROL_DOMAIN"),
            "task": Setting("task_name", "DMCONTROL_TASK"),
            "render_height": Setting("render_height", "DMCONTROL_RENDER_HEIGHT"),
            "render_width": Setting("render_width", "DMCONTROL_RENDER_WIDTH"),
        },
    ),
    CatalogEntry(
        "REPL", "repl_env",
        "A Python REPL for recursive language models: run code, finish with FINAL(answer) or is_final",
        settings={
            "max_iterations": Setting("max_iterations", "REPL_MAX_ITERATIONS"),
            "max_output_length": Setting("max_output_length", "REPL_MAX_OUTPUT_LENGTH"),
            "context_preview_length": Setting("context_preview_length", "REPL_CONTEXT_PREVIEW_LENGTH"),
            "rlm_max_depth": Setting("rlm_max_depth", "REPL_RLM_MAX_DEPTH"),
            "rlm_max_iterations": Setting("rlm_max_iterations", "REPL_RLM_MAX_ITERATIONS"),
            "llm_model": Setting("llm_model", "LLM_MODEL"),
        },
    ),
    CatalogEntry(
        "DIPGSafety", "dipg_safety_env",
        "Medical-safety questions (DIPG): a context and a question in, a channelled analysis/final answer out",
        # Under openenv 0.10 upstream's step() answers an error ("'StepResult' object has no
        # attribute 'model_dump'": it returns a client StepResult); reset works.
        settings={"dataset_path": Setting("dataset_path", "DIPG_DATASET_PATH")},
    ),
    CatalogEntry(
        "Carla", "carla_env",
        "CARLA driving scenarios (trolley problems, ...) as text; CARLA_MODE=mock runs without a simulator",
        # server/carla_environment.py: a lane change goes "left" or "right" (lane_direction); the
        # navigation agent is "cautious", "normal" or "aggressive" (other values fall back to a basic
        # agent); the goal's direction is compass-wise (_compute_goal_direction: east, north, west,
        # south, null without a goal), not what models.py's description says; location and
        # rotation are (x, y, z) and (pitch, yaw, roll). rubric_reward restates the reward: in info.
        # route_steps is at least 1 (models.py) and 1 by default: sent as such, never null (the
        # space of a nullable integer has no lower bound, and would send values below 1).
        observation_fields={
            "location": _array((3,), {"type": "number"}), "rotation": _array((3,), {"type": "number"}),
            "goal_direction": _enum("east", "north", "west", "south", None),
            "speed_kmh": _at_least(0, "number"), "simulation_time": _at_least(0, "number"),
            "step_number": _at_least(0), "collision_intensity": _at_least(0, "number"),
            "rubric_reward": None,
        },
        action_fields={
            "lane_direction": _enum("left", "right", None),
            "navigation_behavior": _enum("cautious", "normal", "aggressive"),
            "route_steps": _at_least(1),
        },
        settings={
            "scenario": Setting("scenario_name", "CARLA_SCENARIO"),
            "mode": Setting("mode", "CARLA_MODE"),
            "host": Setting("host", "CARLA_HOST"),
            "port": Setting("port", "CARLA_PORT"),
        },
    ),
    CatalogEntry(
        "KernRL", "kernrl",
        "Write a faster CUDA/Triton kernel for a PyTorch reference; compiled, checked and timed on the server's GPU",
        settings={"problems_dir": Setting("problems_dir", "KERNRL_PROBLEMS_DIR")},
    ),
    CatalogEntry(
        "SumoRL", "sumo_rl_env",
        "Traffic-signal control in SUMO (sumo-rl): pick the next green phase of an intersection",
        # The observation's length (the phases one-hot, a min-green flag, the lanes' densities and
        # queues) and the phase count are the network's: both come from the first observation
        # (observation_shape shapes the list, action_mask lists every phase: all are always legal).
        observation_fields={"observation_shape": None, "sim_time": _at_least(0, "number")},
        settings={
            "net_file": Setting("net_file", "SUMO_NET_FILE"),
            "route_file": Setting("route_file", "SUMO_ROUTE_FILE"),
            "num_seconds": Setting("num_seconds", "SUMO_NUM_SECONDS"),
            "delta_time": Setting("delta_time", "SUMO_DELTA_TIME"),
            "yellow_time": Setting("yellow_time", "SUMO_YELLOW_TIME"),
            "min_green": Setting("min_green", "SUMO_MIN_GREEN"),
            "max_green": Setting("max_green", "SUMO_MAX_GREEN"),
            "reward_fn": Setting("reward_fn", "SUMO_REWARD_FN"),
            "sumo_seed": Setting("sumo_seed", "SUMO_SEED"),
        },
    ),
    CatalogEntry(
        "BrowserGym", "browsergym_env",
        "Web tasks in a real browser (BrowserGym: MiniWoB++ by default, WebArena, ...); actions like click('Submit')",
        settings={
            "benchmark": Setting("benchmark", "BROWSERGYM_BENCHMARK"),
            "task_name": Setting("task_name", "BROWSERGYM_TASK_NAME"),
            "headless": Setting("headless", "BROWSERGYM_HEADLESS"),
            "viewport_width": Setting("viewport_width", "BROWSERGYM_VIEWPORT_WIDTH"),
            "viewport_height": Setting("viewport_height", "BROWSERGYM_VIEWPORT_HEIGHT"),
            "timeout": Setting("timeout", "BROWSERGYM_TIMEOUT"),
        },
    ),
    CatalogEntry(
        "FinRL", "finrl_env",
        "Stock trading (FinRL's StockTradingEnv): one buy/sell value in [-1, 1] per stock",
        # models.py: each action value is normalised to [-1, 1]; there is one per stock, and the
        # state vector's length follows the stocks and indicators of the server's config.
        action_fields={"actions": _list({"type": "number", "minimum": -1, "maximum": 1})},
        settings={"config_path": Setting("config_path", "FINRL_CONFIG_PATH")},
    ),
    CatalogEntry(
        "Git", "git_env", "Git operations on repositories of a Gitea server: list, clone, run git commands",
        # server/git_task_environment.py's step() knows these three action types.
        action_fields={"action_type": _enum("clone_repo", "list_repos", "execute_git_command")},
        settings={
            "gitea_url": Setting("gitea_url", "GITEA_URL"),
            "workspace_dir": Setting("workspace_dir", "WORKSPACE_DIR"),
        },
    ),
    CatalogEntry(
        "Julia", "julia_env", "Julia code and its tests in; stdout, stderr, exit code and test counts out",
        # test_code is optional upstream, and the tests are what the reward counts: sent.
        observation_fields={"tests_passed": _at_least(0), "tests_failed": _at_least(0)},
        action_fields={"test_code": ...},
        settings={
            "max_workers": Setting("max_workers", "JULIA_MAX_WORKERS"),
            "execution_timeout": Setting("execution_timeout", "JULIA_EXECUTION_TIMEOUT"),
        },
    ),
    CatalogEntry(
        "TBench2", "tbench2_env",
        "Terminal-Bench 2 tasks: shell commands and files in a task's terminal, then evaluate",
        # server/tbench2_env_environment.py: the action types of its local mode (the app's default;
        # TB2_MODE=docker knows exec, write_file, evaluate and close).
        action_fields={"action_type": _enum("exec", "write", "view", "wait", "kill", "write_file", "evaluate",
                                            "close"),
                       "wait_seconds": {"anyOf": [_at_least(0, "number"), {"type": "null"}]}},
        settings={
            "mode": Setting("mode", "TB2_MODE"),
            "tasks_dir": Setting("tasks_dir", "TB2_TASKS_DIR"),
            "task_id": Setting("task_id", "TB2_DEFAULT_TASK_ID"),
            "output_dir": Setting("output_dir", "TB2_OUTPUT_DIR"),
        },
    ),
    CatalogEntry("WebSearch", "websearch_env", "Web search (Google through the Serper API): a query in, results out"),
    CatalogEntry(
        "Chat", "chat_env", "A chat as token ids: the model's tokens in, the conversation's messages and tokens out",
        # Token ids are non-negative; the conversation's tokens grow every turn, so their length
        # is never the first observation's.
        observation_fields={"tokens": _list(_at_least(0))},
        action_fields={"tokens": _list(_at_least(0), min_items=1)},
        settings={
            "tokenizer": Setting("tokenizer", "TOKENIZER_NAME"),
            "system_prompt": Setting("system_prompt", "SYSTEM_PROMPT"),
        },
    ),
    CatalogEntry(
        "CodingTools", "coding_tools_env",
        "A coding agent's tools in an E2B sandbox: bash, read, write, edit, glob, grep, ls, todos, submit",
        # The tools server/coding_tools_env_environment.py defines, with their parameters.
        action_fields=_tools({
            "bash": _tool({"command": _STRING}, {"timeout": {"type": ["number", "null"]}}),
            "read": _tool({"file_path": _STRING}, {"offset": {"type": ["integer", "null"]},
                                                   "limit": {"type": ["integer", "null"]}}),
            "write": _tool({"file_path": _STRING, "content": _STRING}),
            "edit": _tool({"file_path": _STRING, "old_string": _STRING, "new_string": _STRING},
                          {"replace_all": {"type": "boolean"}}),
            "multi_edit": _tool({"file_path": _STRING, "edits": _list(_tool(
                {"old_string": _STRING, "new_string": _STRING}, {"replace_all": {"type": "boolean"}}))}),
            "glob": _tool({"pattern": _STRING}, {"path": {"type": ["string", "null"]}}),
            "grep": _tool({"pattern": _STRING}, {"path": {"type": ["string", "null"]},
                                                 "include": {"type": ["string", "null"]}}),
            "ls": _tool(optional={"path": _STRING, "ignore": {"anyOf": [_list(_STRING), {"type": "null"}]}}),
            "todo_write": _tool({"todos": _list(_tool({
                "id": _STRING, "content": _STRING, "status": _enum("pending", "in_progress", "completed"),
                "priority": _enum("high", "medium", "low")}))}),
            "submit_solution": _tool(),
        }),
    ),
    CatalogEntry(
        "Jupyter", "jupyter_env", "A Jupyter notebook in an E2B sandbox: run code cells and shell commands, answer",
        # The tools server/jupyter_environment.py defines, with their parameters.
        action_fields=_tools({
            "add_and_execute_code_cell": _tool({"code": _STRING}),
            "edit_and_execute_current_cell": _tool({"code": _STRING}),
            "execute_shell_command": _tool({"command": _STRING}),
            "get_notebook_state": _tool(optional={"include_images": {"type": "boolean"}}),
            "final_answer": _tool({"answer": _STRING}),
        }),
    ),
    CatalogEntry(
        "Terminus", "terminus_env",
        "One terminal tool in an E2B sandbox: run a shell command, or submit a final answer",
        # server/terminus_env_environment.py's one tool.
        action_fields=_tools({"terminal": _tool(optional={"command": _STRING, "final_answer": _STRING})}),
    ),
    CatalogEntry(
        "FinQA", "finqa_env", "Financial questions on SEC 10-K tables, answered through SQL tools",
        # The tools server/finqa_environment.py defines (models.py's AVAILABLE_TOOLS).
        action_fields=_tools({
            "get_descriptions": _tool({"company_name": _STRING}),
            "get_table_info": _tool({"company_name": _STRING, "table_name": _STRING}),
            "sql_query": _tool({"company_name": _STRING, "table_name": _STRING, "query": _STRING}),
            "submit_answer": _tool({"answer": _STRING}),
        }),
        settings={
            "data_path": Setting("data_path", "FINQA_DATA_PATH"),
            "max_steps": Setting("max_steps", "FINQA_MAX_STEPS"),
            "task": Setting("task", "FINQA_TASK"),
        },
    ),
)
