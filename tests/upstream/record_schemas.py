"""Record the ``/schema`` documents of upstream OpenEnv envs whose servers cannot run here.

Some of upstream's environments (huggingface/OpenEnv ``envs/``) need what this machine and
CI do not have: a browser build, a simulator or a service (Gitea, Julia), a cloud sandbox
or an API key, data from a hub. Their servers are not captured (:mod:`tests.upstream.record`);
what a client first reads of them, the ``/schema`` document, is recorded instead, for the
catalog's tests. :data:`SCHEMA_ONLY` says, for each, why its server was not run.

The document is exactly what openenv 0.10's ``create_app`` publishes: its own
``SchemaResponse`` of the ``model_json_schema()`` of the Action, Observation and State
classes the env's ``server/app.py`` passes (``reset_observation`` is the observation's, as
none of these apps declares another; ``state`` is openenv's ``State``, as none passes
``state_cls``). The classes are imported from the package, unmodified, by an interpreter
that has ``openenv`` 0.10 (the env's engine is not needed: only ``models.py`` is imported,
and, for FinQA, whose action class ``server/app.py`` defines, that module)::

    python tests/upstream/record_schemas.py --envs /path/to/OpenEnv/envs \\
        --python /path/to/venv/bin/python
    python tests/upstream/record_schemas.py --envs ... --only git julia

Each goes to ``tests/upstream/schemas/<name>.json``: ``{"env", "name", "recorded",
"not_run", "schema"}``, ``schema`` being the document. Checked on envs that do run: the
document built this way equals the ``/schema`` their servers answered in the captures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMAS = HERE / "schemas"

#: openenv's classes of MCP-tool envs, and the State every app here publishes.
CALL_TOOL_ACTION = "openenv.core.env_server.mcp_types:CallToolAction"
CALL_TOOL_OBSERVATION = "openenv.core.env_server.mcp_types:CallToolObservation"
STATE = "openenv.core.env_server.types:State"
E2B = "Runs its tools in an E2B cloud sandbox (E2B_API_KEY); no sandbox can be had offline."


@dataclass(frozen=True)
class SchemaOnly:
    """One upstream env recorded by its schema: ``name`` (``git``), its package directory
    (``git_env``), the ``module:Class`` its app passes for each part (``models:X`` is the
    package's ``models.py``, imported as ``<package>.models``) and why the server was not run."""

    name: str
    package: str
    action: str
    observation: str
    not_run: str
    state: str = STATE

    def classes(self) -> dict[str, str]:
        def path(spec: str) -> str:
            module, _, attribute = spec.partition(":")
            local = module == "models" or module.startswith(("models.", "server."))
            return f"{self.package}.{module}:{attribute}" if local else spec

        return {"action": path(self.action), "observation": path(self.observation), "state": path(self.state)}


SCHEMA_ONLY = (
    SchemaOnly("sumo_rl", "sumo_rl_env", "models:SumoAction", "models:SumoObservation", (
        "Its server starts (sumo-rl and eclipse-sumo from PyPI, the single-intersection network it ships), "
        "but every reset fails under openenv 0.10: metadata['num_green_phases'] is gymnasium's Discrete.n, "
        "a numpy int64, which the reply cannot serialize ('Unable to serialize unknown type: "
        "<class 'numpy.int64'>'), and its HTTP /reset answers a 500 that is not JSON: there is no "
        "observation to capture.")),
    SchemaOnly("browsergym", "browsergym_env", "models:BrowserGymAction", "models:BrowserGymObservation", (
        "Drives a Chromium build that `playwright install` downloads (not on PyPI), on the MiniWoB++ pages "
        "its Dockerfile fetches from GitHub (the default benchmark, BROWSERGYM_BENCHMARK=miniwob).")),
    SchemaOnly("finrl", "finrl_env", "models:FinRLAction", "models:FinRLObservation", (
        "FinRL's package imports its agents and data processors on import (torch, stable-baselines3, "
        "alpaca-trade-api, which pins websockets<11, wrds, yfinance): installing them would break the "
        "openenv 0.10 interpreter the other upstream servers share.")),
    SchemaOnly("git", "git_env", "models:GitAction", "models:GitObservation", (
        "Needs a Gitea server (GITEA_URL, default http://localhost:3000; upstream starts one with "
        "docker compose).")),
    SchemaOnly("julia", "julia_env", "models:JuliaAction", "models:JuliaObservation", (
        "Runs Julia code with a Julia installation (the julia binary and its process pool), which no "
        "PyPI package ships.")),
    SchemaOnly("tbench2", "tbench2_env", "models:Tbench2Action", "models:Tbench2Observation", (
        "Downloads the terminal-bench-2 task repository from GitHub at reset (TB2_REPO_URL) and runs "
        "commands through camel-ai's TerminalToolkit; TB2_MODE=docker runs each task in a container.")),
    SchemaOnly("websearch", "websearch_env", "models:WebSearchAction", "models:WebSearchObservation", (
        "Every step is a search through the Serper API (google.serper.dev) with SERPER_API_KEY.")),
    SchemaOnly("chat", "chat_env", "models:ChatAction", "models:ChatObservation", (
        "Loads its tokenizer from the Hugging Face hub when a session starts (transformers' AutoTokenizer, "
        "TOKENIZER_NAME, default gpt2); without transformers its fallback MockTokenizer does not import "
        "(server/test_chat_env.py imports ..models from a top-level module), so every session fails.")),
    SchemaOnly("coding_tools", "coding_tools_env", CALL_TOOL_ACTION, CALL_TOOL_OBSERVATION, E2B),
    SchemaOnly("jupyter", "jupyter_env", CALL_TOOL_ACTION, CALL_TOOL_OBSERVATION, E2B),
    SchemaOnly("terminus", "terminus_env", CALL_TOOL_ACTION, CALL_TOOL_OBSERVATION, E2B),
    SchemaOnly("finqa", "finqa_env", "server.app:FinQACallToolAction", CALL_TOOL_OBSERVATION, (
        "Answers from SEC 10-K tables that download_data.sh fetches from the Hugging Face hub into "
        "FINQA_DATA_PATH (default /app/env/data).")),
)

BY_NAME = {env.name: env for env in SCHEMA_ONLY}

#: Run by the upstream interpreter: the classes' document, as ``create_app``'s /schema builds it.
_PROGRAM = """
import importlib, json, sys
from openenv.core.env_server.types import SchemaResponse

def load(spec):
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)

classes = {part: load(spec) for part, spec in json.loads(sys.argv[1]).items()}
document = SchemaResponse(
    action=classes["action"].model_json_schema(),
    observation=classes["observation"].model_json_schema(),
    reset_observation=classes["observation"].model_json_schema(),
    state=classes["state"].model_json_schema(),
)
print(json.dumps(document.model_dump(mode="json")))
"""


def schema_document(env: SchemaOnly, envs_dir: Path, python: str) -> dict:
    """``env``'s ``/schema`` document, built by ``python`` from the package in ``envs_dir``."""
    environment = {**os.environ, "PYTHONPATH": str(envs_dir)}
    done = subprocess.run([python, "-c", _PROGRAM, json.dumps(env.classes())], cwd=envs_dir, env=environment,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{env.package}: the schema could not be built:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write(env: SchemaOnly, document: dict) -> Path:
    path = SCHEMAS / f"{env.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"env": env.package, "name": env.name, "recorded": datetime.date.today().isoformat(),
              "not_run": env.not_run, "schema": document}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", required=True, help="upstream OpenEnv's envs/ directory")
    parser.add_argument("--python", default=sys.executable, help="an interpreter with openenv 0.10")
    parser.add_argument("--only", nargs="*", help="record these envs only (short names: git, julia, ...)")
    args = parser.parse_args(argv)
    envs_dir = Path(args.envs).resolve()
    for env in SCHEMA_ONLY:
        if args.only and env.name not in args.only:
            continue
        path = write(env, schema_document(env, envs_dir, args.python))
        print(f"{env.package}: {path.relative_to(HERE.parent.parent)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
