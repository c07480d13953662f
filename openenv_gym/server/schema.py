"""What the server publishes about its environment: ``/schema``, ``/metadata``
and the OpenAPI document.

``/schema`` is standard JSON Schema (draft 2020-12), so stock OpenEnv tools
and the RFC 008 graders accept it, and every observation and action the server
sends or accepts validates against it. The exact Gymnasium spaces ride along
under :data:`~openenv_gym.spaces.SCHEMA_EXTENSION_KEY`, which is how an
openenv-gym client recovers them losslessly.
"""

from __future__ import annotations

from typing import Any, Literal

from .. import spaces
from .._version import __version__
from ..protocol import EXTENSION_KEY, SUBPROTOCOLS, jsonable
from ..protocol.attributes import ATTRIBUTES_VERSION
from ..protocol.vector import VECTOR_PATH, VECTOR_VERSION
from .source import EnvSource
from .tools import BUILTIN_TOOL_NAMES

__all__ = ["gym_schema_document", "metadata_document", "openapi_document", "Mode", "MODES", "TEXT_VERSION",
           "MCP_VERSION"]

#: OpenEnv's server modes: ``"production"`` drops the stateless ``/reset``, ``/step`` and
#: ``/state`` routes (agents then reach the env through MCP tools and ``/ws`` only).
Mode = Literal["simulation", "production"]
MODES: tuple[Mode, ...] = ("simulation", "production")
#: Versions of the extensions ``/schema`` advertises: observations as text, MCP tools.
TEXT_VERSION = 1
MCP_VERSION = 1

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _space_schema(space: Any) -> dict:
    schema = spaces.to_json_schema(space)
    schema[spaces.SCHEMA_EXTENSION_KEY] = {"format": spaces.FORMAT, "space": spaces.describe(space)}
    return schema


def _observation_schema(source: EnvSource, title: str) -> dict:
    return {
        "$schema": _DRAFT,
        "title": title,
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "obs": _space_schema(source.observation_space),
            "terminated": {"type": "boolean", "description": "Gymnasium's terminated"},
            "truncated": {"type": "boolean", "description": "Gymnasium's truncated"},
            "info": {"type": "object", "description": "Gymnasium's info, as JSON"},
            "types": {
                "type": "object",
                "description": "openenv-gym type hints restoring the exact types of reward and info",
            },
            "text": {
                "type": "string",
                "description": "The observation as text, for language models (sent to stock JSON peers, "
                "and to openenv-gym peers that ask with /ws?text=1)",
            },
            "done": {"type": "boolean", "default": False},
            "reward": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            "metadata": {"type": "object", "additionalProperties": True},
            **source.extra_fields,
        },
        "required": ["obs", "terminated", "truncated", "info"],
    }


def gym_schema_document(source: EnvSource, extensions: dict[str, Any] | None = None) -> dict:
    """The ``/schema`` response of a Gymnasium env (or a PettingZoo game's seat
    view): ``action``, ``observation``, ``reset_observation``, ``state``, and the
    extensions the server offers under :data:`~openenv_gym.protocol.EXTENSION_KEY`
    (``extensions``: those of its kind, such as a game's ``multiagent`` entry); its MCP
    tools are the built-in ones and ``source.tools``.

    (An env with OpenEnv's own schemas, a :class:`~openenv_gym.fields.FieldsEnv`,
    publishes those instead.)
    """
    observation = _observation_schema(source, "GymObservation")
    return {
        "action": {
            "$schema": _DRAFT,
            "title": "GymAction",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "action": _space_schema(source.action_space),
                "metadata": {"type": "object", "additionalProperties": True},
            },
            "required": ["action"],
        },
        "observation": observation,
        "reset_observation": observation,
        "state": {
            "$schema": _DRAFT,
            "title": "GymState",
            "type": "object",
            "additionalProperties": True,
            "properties": {
                "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "step_count": {"type": "integer", "minimum": 0, "default": 0},
                "env_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "seed": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            },
        },
        EXTENSION_KEY: {
            "version": 1,
            "subprotocols": list(SUBPROTOCOLS),
            "env_id": source.env_id,
            "render_mode": source.render_mode,
            "metadata": jsonable(source.env_metadata),
            "max_episode_steps": source.max_episode_steps,
            **(extensions or {}),
            "vector": {"path": VECTOR_PATH, "version": VECTOR_VERSION},
            "text": {"version": TEXT_VERSION, "query": "text=1", "instructions": source.instructions},
            "mcp": {"version": MCP_VERSION, "path": "/mcp",
                    "tools": [*BUILTIN_TOOL_NAMES, *(t.name for t in source.tools)]},
            "attributes": {"version": ATTRIBUTES_VERSION},
        },
    }


def metadata_document(source: EnvSource) -> dict:
    """The ``/metadata`` response (OpenEnv's ``EnvironmentMetadata`` fields)."""
    return {
        "name": source.env_id or source.name,
        "description": source.description
        or f"{source.env_id or source.name} served by openenv-gym",
        "readme_content": None,
        "version": __version__,
        "author": None,
        "documentation_url": None,
    }


_JSON_BODY = {"content": {"application/json": {"schema": {"type": "object"}}}}


def _operation(summary: str, body: bool = False) -> dict:
    operation: dict = {
        "summary": summary,
        "responses": {"200": {"description": "Successful Response", **_JSON_BODY}},
    }
    if body:
        operation["requestBody"] = {"required": False, **_JSON_BODY}
    return operation


def openapi_document(title: str, mode: Mode = "simulation") -> dict:
    """The ``/openapi.json`` document (OpenEnv HTTP profile ``openenv-http/1.x``): its
    paths tell validators the mode (production has no ``/reset``, ``/step``, ``/state``)."""
    simulation = {
        "/reset": {"post": _operation("Reset a fresh environment (stateless)", body=True)},
        "/step": {"post": _operation("Step a fresh environment (stateless)", body=True)},
        "/state": {"get": _operation("State of a fresh environment")},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": f"OpenEnv Environment HTTP API ({title})", "version": "1.0.0"},
        "paths": {
            **(simulation if mode == "simulation" else {}),
            "/health": {"get": _operation("Health check")},
            "/schema": {"get": _operation("JSON Schemas of action, observation and state")},
            "/metadata": {"get": _operation("Environment metadata")},
            "/mcp": {"post": _operation("MCP JSON-RPC endpoint", body=True)},
        },
    }
