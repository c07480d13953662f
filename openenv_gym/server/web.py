"""The web interface: a page to play a served env by hand, watch it render and read its
validation report, on upstream OpenEnv's ``/web`` routes.

Upstream's ``create_app`` mounts a web interface when ``ENABLE_WEB_INTERFACE`` is set, and
every Hugging Face Space of an OpenEnv package shows it. An openenv-gym server does the
same when that variable is set, or with ``create_app(..., web=True)`` / ``serve --web``:

    >>> app = create_app("CartPole-v1", web=True, env_kwargs={"render_mode": "rgb_array"})  # doctest: +SKIP

=====================  ========================================================================
route                  what it answers
=====================  ========================================================================
``GET /web/``          the page (static files shipped in the package; no env data, so it
                       answers without the token, and the page asks for the token once)
``GET /web/metadata``  upstream's ``EnvironmentMetadata`` (the ``/metadata`` document)
``POST /web/reset``    upstream's: the body is the reset data (``{"seed": 0}``); the reply
                       is ``{"observation": ..., "reward": ..., "done": ...}``
``POST /web/step``     upstream's: ``{"action": {...fields}}`` (or ``{"message": text}``,
                       read by the env's text view); the reply as ``/web/reset``'s
``GET /web/state``     upstream's: the episode's state
``WS /ws/ui``          upstream's: ``{"type": "state_update", "episode_state": {...}}`` on
                       connect and after every reset and step
``GET /web/about``     what the page builds itself from: the env's words (its instructions,
                       spaces), its action controls, whether it renders, its seats
``GET /web/report``    the validation report (``serve --web-report FILE``: the HTML
                       ``openenv-gym check --html FILE`` wrote)
``WS /web/live``       the page's socket: commands in (JSON text), updates out (JSON text),
                       each followed by the frame as a PNG (binary) when the env renders
                       ``rgb_array``; the first is the latest update (``{"type":
                       "waiting"}`` before any episode)
=====================  ========================================================================

All of them play one session, as upstream's play one env: every visitor of the page, and
every tool posting to ``/web/step``, sees the same episode, and each page follows it live.
That session is held like an MCP session (counted against capacity and the cap of held
sessions, closed when idle past ``held_session_timeout``: the next request opens a new
one). A viewer slower than the env misses frames, never the latest one.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Mapping
from importlib import resources
from typing import Any

import gymnasium as gym
import gymnasium.spaces as gs
import numpy as np
from gymnasium.envs.registration import load_env_creator
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from ..errors import ActionParseError, ErrorCode, ProtocolError
from ..protocol import Observation, Reset, Step
from ..protocol import gym as gym_data
from ..protocol import http as wire
from ..protocol import web as page
from ..protocol.codecs import loads_json
from ..text.formats import Board
from ..text.view import action_mask
from .fields import FieldsSession, FieldsSource
from .hosting import Server
from .http import constant, errors_as_responses, json_response, read_body
from .schema import metadata_document
from .session import Session

__all__ = ["COOKIE_PATHS", "PAGE_PATHS", "WEB_VARIABLE", "WebInterface", "web_enabled", "web_env_kwargs", "web_routes"]

logger = logging.getLogger("openenv_gym.server")

#: Upstream's switch for the web interface.
WEB_VARIABLE = "ENABLE_WEB_INTERFACE"
#: The page's files: answered without the token (they hold no env data).
PAGE_FILES = {"index.html": "text/html", "page.js": "text/javascript", "page.css": "text/css"}
PAGE_PATHS = frozenset({"/", "/web", "/web/", *(f"/web/{name}" for name in PAGE_FILES)})
#: The sockets a browser opens: they take the token from a cookie (:mod:`.auth`).
COOKIE_PATHS = frozenset({"/web/live", "/ws/ui"})
#: What a browser may run of the report page: nothing.
_NO_SCRIPT = "script-src 'none'"
#: Episode returns the page plots (the latest).
MAX_RETURNS = 200
#: Discrete actions shown as buttons; more are typed as text (read by the text view).
MAX_BUTTONS = 64
#: ``Box`` actions with up to this many numbers get a slider each.
MAX_SLIDERS = 16
#: The range of a slider whose ``Box`` bound is infinite.
UNBOUNDED_SLIDER = 10.0


def web_env_kwargs(env: Any, env_kwargs: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``env_kwargs`` with ``render_mode="rgb_array"`` for a Gymnasium id or PettingZoo
    module whose env renders so, when they name no render mode: the page shows frames.

        >>> web_env_kwargs("CartPole-v1", None)
        {'render_mode': 'rgb_array'}
        >>> web_env_kwargs("CartPole-v1", {"render_mode": None})
        {'render_mode': None}
    """
    if not isinstance(env, str) or "render_mode" in (env_kwargs or {}):
        return env_kwargs
    try:
        if env in gym.registry:
            entry = gym.spec(env).entry_point
            maker = load_env_creator(entry) if isinstance(entry, str) else entry
        else:
            module = importlib.import_module(env)
            maker = getattr(module, "raw_env", None) or getattr(module, "env", None)
        modes = getattr(maker, "metadata", {}).get("render_modes", ())
    except Exception:  # noqa: BLE001 - resolve says what is wrong with the env
        return env_kwargs
    return {**(env_kwargs or {}), "render_mode": "rgb_array"} if "rgb_array" in modes else env_kwargs


def web_enabled(option: bool | None) -> bool:
    """Whether the server mounts the web interface: ``option``, else upstream's
    ``ENABLE_WEB_INTERFACE`` environment variable (``true``, ``1`` or ``yes``)."""
    if option is not None:
        return option
    return os.environ.get(WEB_VARIABLE, "false").lower() in ("true", "1", "yes")


class _Viewer:
    """One socket following the episode. :meth:`offer` replaces what it has not sent
    yet, so a slow viewer skips to the latest update rather than falling behind."""

    def __init__(self, websocket: WebSocket, *, upstream: bool) -> None:
        self.websocket = websocket
        #: Whether it is upstream's ``/ws/ui`` (which takes ``state_update`` messages).
        self.upstream = upstream
        self._pending: list[str | bytes] | None = None
        self._wake = asyncio.Event()

    async def tell(self, message: str) -> None:
        """An error for this page only: its command was refused; the session goes on."""
        await self.websocket.send_text(page.page_error(message))

    def offer(self, messages: list[str | bytes]) -> None:
        self._pending = messages
        self._wake.set()

    async def pump(self) -> None:
        """Send what is offered, until the socket fails (then the viewer is dropped)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            messages, self._pending = self._pending or [], None
            for message in messages:
                if isinstance(message, bytes):
                    await self.websocket.send_bytes(message)
                else:
                    await self.websocket.send_text(message)


class WebInterface:
    """The session of a server's web interface, its episode as upstream's page keeps it
    (the action log of ``/ws/ui``), the returns of the episodes played, and the sockets
    that follow it."""

    @classmethod
    def of(cls, server: Server) -> WebInterface:
        """The web interface of ``server``, with the report its options name."""
        report = server.options.web_report
        return cls(server, report_html=None if report is None else _report_html(report))

    def __init__(self, server: Server, *, report_html: str | None = None) -> None:
        self.server = server
        #: The validation report the page shows, as a standalone HTML document.
        self.report_html = report_html
        self._session_id: str | None = None
        self._lock = asyncio.Lock()
        self._viewers: set[_Viewer] = set()
        #: The steps the action log keeps (:func:`~openenv_gym.protocol.web.action_log_capacity`).
        self._log_capacity = page.action_log_capacity(_values(server.source.observation_space))
        #: Upstream's ``EpisodeState``: what ``/ws/ui`` sends.
        self._episode: dict[str, Any] = page.episode_state(None)
        #: The returns of the latest episodes that ended, oldest first, and how many ended.
        self.returns: list[float] = []
        self.episodes = 0
        #: Whether a frame failed (logged once).
        self._frame_failed = False
        #: The last update a page got (sent to a page that connects), or ``None`` when no page
        #: followed the latest reply (a page that connects then gets it made from ``_reply``).
        self._update: list[str | bytes] | None = None
        #: The latest reply's data and whether it was a reset's.
        self._reply: tuple[dict[str, Any], bool] | None = None

    # -- the session ----------------------------------------------------------------------

    async def _session(self) -> Session:
        """The page's session, opened now when there is none (or the idle reaper closed it)."""
        if not issubclass(self.server.source.session_type, Session):
            raise ProtocolError(ErrorCode.SESSION_ERROR, "This server's sessions do not play one env at a time")
        found = self.server.find_session(self._session_id) if self._session_id else None
        if found is None:
            found = await self.server.open_session()
            self._session_id = found.id
            self._episode = page.episode_state(None)
            self._update, self._reply = None, None
        assert isinstance(found, Session)
        return found

    async def reset(self, reset: Reset) -> dict[str, Any]:
        """Start an episode; the reply's data, as ``POST /reset`` answers."""
        async with self._lock:
            session = await self._session()
            data = await self._answer(session, reset)
            self._episode = page.episode_state(session.episode_id, data["observation"])
            await self._publish(session, data, reset=True)
            return data

    async def step(self, action: Mapping[str, Any] | None = None, *, text: str | None = None) -> dict[str, Any]:
        """Play one action, given as the action's fields (``{"action": 1}``) or as text the
        env's view reads (``"left"``, ``"e2e4"``); the reply's data."""
        async with self._lock:
            session = await self._session()
            if text is not None:
                step = self._read_text(session, text)
            else:
                step = Step(dict(action or {}))
            data = await self._answer(session, step)
            log = page.action_log(step.fields, data, session.step_count)
            logs = [*self._episode["action_logs"], log][-self._log_capacity:]
            self._episode = {
                **page.episode_state(session.episode_id, data["observation"]),
                "step_count": session.step_count, "action_logs": logs, "is_reset": False,
            }
            if data.get("done"):
                self.returns = [*self.returns, session.episode_return][-MAX_RETURNS:]
                self.episodes += 1
            await self._publish(session, data, reset=False)
            return data

    async def state(self) -> dict[str, Any]:
        """The episode's state, as ``GET /state`` of a session answers."""
        async with self._lock:
            return (await self._session()).state()

    @staticmethod
    def _read_text(session: Session, text: str) -> Step:
        session.require_episode()
        if isinstance(session, FieldsSession):
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"{session.source.name} takes its actions as fields, not text: send {{\"action\": {{...fields}}}} "
                f"(its fields: {', '.join(_action_fields(session.source.schema))})",
            )
        try:
            action = session.view.parse_action(text)
        except ActionParseError as exc:
            raise ProtocolError(ErrorCode.VALIDATION_ERROR, str(exc)) from None
        return gym_data.action_step(session.codec, session.source.action_space, action)

    @staticmethod
    async def _answer(session: Session, message: Reset | Step) -> dict[str, Any]:
        answer, _ = await session.respond(message)
        assert isinstance(answer, Observation)
        data: dict[str, Any] = answer.to_wire()["data"]
        return data

    # -- what the sockets get -------------------------------------------------------------

    async def _publish(self, session: Session, data: dict[str, Any], *, reset: bool) -> None:
        pages = [viewer for viewer in self._viewers if not viewer.upstream]
        self._reply = (data, reset)
        # Without a page following, the update (and its frame) is made when one connects.
        self._update = await self._page_update(session, data, reset=reset) if pages else None
        for viewer in pages:
            assert self._update is not None
            viewer.offer(self._update)
        if any(viewer.upstream for viewer in self._viewers):
            message: list[str | bytes] = [self._state_update()]
            for viewer in self._viewers:
                if viewer.upstream:
                    viewer.offer(message)

    def _state_update(self) -> str:
        return page.state_update(self._episode)

    async def _page_update(self, session: Session, data: dict[str, Any], *, reset: bool) -> list[str | bytes]:
        """The page's update: the reply in words and numbers, then the frame."""
        observation = data.get("observation") or {}
        position = session.position
        frame, frame_error = None, None
        if session.source.render_mode == "rgb_array":
            try:
                frame = await session.frame_png(level=1)
            except ProtocolError as exc:  # a frame that fails must not cost the step: the page says why
                frame_error = exc.message
                if not self._frame_failed:
                    logger.warning("web_frame_failed env=%s error=%s", session.source.name, exc.message)
                self._frame_failed = True
        update = {
            "reset": reset,
            "episode_id": session.episode_id,
            "step": session.step_count,
            "reward": data.get("reward"),
            "done": bool(data.get("done")),
            "terminated": bool(observation.get("terminated", data.get("done"))),
            "truncated": bool(observation.get("truncated", False)),
            "return": session.episode_return,
            "returns": self.returns,
            "episodes": self.episodes,
            "text": observation.get("text"),
            "legal": _legal(session, observation, position),
            "board": _board(session, position),
            "frame": frame is not None,
            "frame_error": frame_error,
        }
        text = page.page_update(**update)
        return [text] if frame is None else [text, frame]

    async def follow(self, websocket: WebSocket, *, upstream: bool) -> None:
        """Serve a socket that follows the episode (``/ws/ui``, ``/web/live``) until it
        closes; the page's sends reset and step."""
        await websocket.accept()
        viewer = _Viewer(websocket, upstream=upstream)
        async with self._lock:  # no reset or step between the first message and the next ones
            viewer.offer([self._state_update()] if upstream else await self._latest())
            self._viewers.add(viewer)
        pump = asyncio.ensure_future(viewer.pump())
        try:
            await self._commands(websocket, viewer, pump)
        finally:
            self._viewers.discard(viewer)
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump

    async def _latest(self) -> list[str | bytes]:
        """Where the episode stands, for a page that connects (its first message): the last
        update, made now when the latest reply came with no page following (a tool posting to
        ``/web/step``), or ``waiting`` when no episode has started or its session is gone."""
        found = self.server.find_session(self._session_id) if self._session_id else None
        if not isinstance(found, Session) or self._reply is None:
            return [page.WAITING]
        if self._update is None:
            data, reset = self._reply
            self._update = await self._page_update(found, data, reset=reset)
        return self._update

    async def _commands(self, websocket: WebSocket, viewer: _Viewer, pump: asyncio.Future) -> None:
        limits = self.server.options.limits
        while not pump.done():
            receiving = asyncio.ensure_future(websocket.receive())
            await asyncio.wait({receiving, pump}, return_when=asyncio.FIRST_COMPLETED)
            if not receiving.done():
                receiving.cancel()
                return  # the socket failed under the pump
            message = receiving.result()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            if viewer.upstream:
                continue  # upstream's page only keeps its socket alive
            if raw is None:
                await viewer.tell("the page's commands are JSON text frames, not binary ones")
                continue
            if len(raw) > limits.max_frame_bytes:
                await websocket.close(1009, f"a command is at most {limits.max_frame_bytes} bytes")
                return
            try:
                await self._command(loads_json(raw.encode(), limits))
            except ProtocolError as exc:
                await viewer.tell(page.said(exc))
            except wire.HttpError as exc:
                await viewer.tell(str(exc.payload.get("detail")))

    async def _command(self, command: Any) -> None:
        message = page.read_command(command)
        if isinstance(message, Reset):
            await self.reset(message)
        elif isinstance(message, Step):
            await self.step(message.fields)
        else:
            await self.step(text=message)

    # -- what the page draws itself from ---------------------------------------------------

    def about(self) -> dict[str, Any]:
        """The env in words and its controls, for the page (``GET /web/about``)."""
        source = self.server.source
        view = _view(source)
        metadata = metadata_document(source)
        seats = getattr(getattr(source, "game", None), "seats", None)
        return page.finite({
            "name": metadata["name"],
            "description": source.description or getattr(view, "task", None) or metadata["description"],
            "instructions": view.describe() if view is not None else None,
            "observation": view.describe_observation() if view is not None else None,
            "actions": view.describe_actions() if view is not None else None,
            "control": _fields_control(source.schema) if isinstance(source, FieldsSource)
            else _control(source.action_space, view),
            "renders": source.render_mode == "rgb_array",
            "render_mode": source.render_mode,
            "seats": list(seats()) if callable(seats) else None,
            "report": self.report_html is not None,
        })


def _values(space: gs.Space) -> int:
    """How many values an observation of ``space`` holds (1 when that cannot be said)."""
    try:
        return int(gs.flatdim(space))
    except Exception:  # noqa: BLE001 - spaces without a flat form (text, graphs) log 1000 steps
        return 1


def _view(source: Any) -> Any:
    """A text view of the source's env, for words and labels (the page's session has its
    own, which reads its positions)."""
    from ..text import view_for_spaces

    try:
        return view_for_spaces(source.observation_space, source.action_space, env_id=source.env_id)
    except Exception:  # noqa: BLE001 - a page without words still plays
        logger.warning("web_view_failed env=%s", source.name, exc_info=True)
        return None


def _control(space: gs.Space, view: Any) -> dict[str, Any]:
    """How the page takes an action: buttons, sliders, or a text box the view reads."""
    if isinstance(space, gs.Discrete) and int(space.n) <= MAX_BUTTONS:
        start = int(space.start)
        actions = list(range(start, start + int(space.n)))
        labels = [view.action_to_text(a) if view is not None else str(a) for a in actions]
        return {"kind": "buttons", "field": "action", "actions": actions, "labels": labels}
    if isinstance(space, gs.Box) and space.shape is not None and 0 < int(np.prod(space.shape)) <= MAX_SLIDERS:
        low = np.where(np.isfinite(space.low), space.low, -UNBOUNDED_SLIDER).astype(float).ravel()
        high = np.where(np.isfinite(space.high), space.high, UNBOUNDED_SLIDER).astype(float).ravel()
        integer = bool(np.issubdtype(space.dtype, np.integer))
        return {
            "kind": "sliders", "field": "action", "shape": list(space.shape), "integer": integer,
            "low": low.tolist(), "high": high.tolist(),
            "names": list(getattr(view, "action_names", None) or []) or None,
        }
    return {"kind": "text", "example": view.example_action() if view is not None else None}


def _action_fields(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The action's fields in a ``/schema`` document, but OpenEnv's ``metadata``."""
    properties = schema.get("action", {}).get("properties", {})
    return {name: field for name, field in properties.items() if name != "metadata" and isinstance(field, dict)}


def _fields_control(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A form of the action's fields, as upstream's page has, for an env served by its fields."""
    required = set(schema.get("action", {}).get("required", ()))
    fields = [
        {
            "name": name,
            "type": field.get("type", "string") if isinstance(field.get("type"), str) else "string",
            "enum": field.get("enum"),
            "required": name in required,
            "description": field.get("description") or field.get("title"),
        }
        for name, field in _action_fields(schema).items()
    ]
    return {"kind": "fields", "fields": fields}


def _legal(session: Session, observation: Mapping[str, Any], position: Any) -> list[int] | None:
    """The legal actions when the env says them (a seat's ``legal_actions``, an action mask)."""
    legal = observation.get("legal_actions")
    if isinstance(legal, list):
        return [int(a) for a in legal]
    mask = action_mask(position.obs, position.info) if position is not None else None
    space = session.source.action_space
    if mask is None or not isinstance(space, gs.Discrete):
        return None
    return [int(space.start) + int(i) for i in np.flatnonzero(mask)]


def _board(session: Session, position: Any) -> list[list[dict[str, Any]]] | None:
    """A board game's cells, each with its mark and the action that plays it."""
    board = getattr(session.view, "observation", None)
    if not isinstance(board, Board) or position is None:
        return None
    try:
        marks = board.marks(position.obs)
    except Exception:  # noqa: BLE001 - a board that does not read is shown as text only
        return None
    return [
        [{"mark": mark, "action": board.action_at(r, c)} for c, mark in enumerate(row)] for r, row in enumerate(marks)
    ]


def _report_html(path: str | os.PathLike[str]) -> str:
    """The report ``openenv-gym check --html FILE`` wrote, for the page's "Validation" tab."""
    try:
        with open(path, encoding="utf-8") as file:
            document = file.read()
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"web_report= {str(path)!r}: {exc} (give the HTML `openenv-gym check --html FILE` wrote)"
        ) from None
    if "<html" not in document[:1000].lower():
        raise ValueError(
            f"web_report= {str(path)!r} is not an HTML document: give the file `openenv-gym check --html FILE` wrote"
        )
    return document


def _page_file(name: str) -> Response:
    body = resources.files("openenv_gym.server").joinpath(f"static/{name}").read_bytes()
    return Response(body, media_type=PAGE_FILES[name], headers={"Cache-Control": "no-cache"})


def web_routes(server: Server, web: WebInterface) -> list[BaseRoute]:
    """The web interface's routes on ``server``."""
    pages = {name: _page_file(name) for name in PAGE_FILES}

    async def reset(request: Request) -> Response:
        reset = wire.reset_request(await read_body(request, server), server.options.limits)
        return json_response(await web.reset(reset))

    async def step(request: Request) -> Response:
        body = wire.parse_body(await read_body(request, server), server.options.limits)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return json_response(await web.step(text=body["message"]))
        step, _ = wire.step_body(body)
        return json_response(await web.step(step.fields))

    async def state(request: Request) -> Response:
        return json_response(await web.state())

    async def about(request: Request) -> Response:
        return json_response(web.about())

    async def report(request: Request) -> Response:
        if web.report_html is None:
            detail = "No validation report is served: serve with --web-report FILE (the HTML check --html wrote)"
            return json_response({"detail": detail}, 404)
        # The report has no script; the page shows it in a sandboxed frame, and this says it to a browser that opens it.
        return Response(web.report_html, media_type="text/html", headers={"Content-Security-Policy": _NO_SCRIPT})

    async def ui(websocket: WebSocket) -> None:
        await web.follow(websocket, upstream=True)

    async def live(websocket: WebSocket) -> None:
        await web.follow(websocket, upstream=False)

    metadata = json_response(metadata_document(server.source))
    return [
        Route("/", constant(RedirectResponse("/web/")), methods=["GET"]),
        Route("/web", constant(RedirectResponse("/web/")), methods=["GET"]),
        Route("/web/", constant(pages["index.html"]), methods=["GET"]),
        *(Route(f"/web/{name}", constant(pages[name]), methods=["GET"]) for name in PAGE_FILES if name != "index.html"),
        Route("/web/metadata", constant(metadata), methods=["GET"]),
        Route("/web/reset", errors_as_responses(reset), methods=["POST"]),
        Route("/web/step", errors_as_responses(step), methods=["POST"]),
        Route("/web/state", errors_as_responses(state), methods=["GET"]),
        Route("/web/about", errors_as_responses(about), methods=["GET"]),
        Route("/web/report", report, methods=["GET"]),
        WebSocketRoute("/ws/ui", ui),
        WebSocketRoute("/web/live", live),
    ]
