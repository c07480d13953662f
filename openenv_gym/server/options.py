"""How a server serves: one options object for :func:`~openenv_gym.create_app`,
:class:`~openenv_gym.server.hosting.Server`, :func:`~openenv_gym.serve` and
:func:`~openenv_gym.local_server`.

:class:`ServeOptions` holds capacity, timeouts, limits, how env calls execute,
authentication, the vector backend, and what the server adds to each env (a
PettingZoo opponent, a text view, MCP tools, a ``set_state`` hook). It is frozen
and checks itself when built, so a bad combination fails before any env is built.
Every function that serves takes it the same way, as ``options=``, or as keyword
arguments of the same names, which override those of ``options`` (the client's
:class:`~openenv_gym.ConnectOptions` works alike):

    >>> options = ServeOptions(max_sessions=8, step_timeout=5.0)
    >>> app = openenv_gym.create_app("CartPole-v1", options)                 # doctest: +SKIP
    >>> app = openenv_gym.create_app("CartPole-v1", max_sessions=8)          # doctest: +SKIP
    >>> ServeOptions.merge(options, max_sessions=16).max_sessions
    16
    >>> ServeOptions(execution="inline", step_timeout=5.0)
    Traceback (most recent call last):
    ...
    ValueError: a step timeout needs env calls on a worker thread: use execution='auto' or 'thread' with it
    >>> ServeOptions.merge(None, max_sesions=8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: unknown server option 'max_sesions'; the options are: max_sessions, session_timeout, ...
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, get_args

from .._local import busy_poll_problem
from .._options import MergedByName
from ..protocol import Limits
from .execution import Execution
from .latency import DEFAULT_BUSY_POLL, DEFAULT_INLINE_DEADLINE, LatencyPolicy
from .multiagent import Opponent
from .schema import MODES, Mode
from .vector import VectorBackend

__all__ = [
    "ServeOptions",
    "ServeKwargs",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_HELD_SESSION_TIMEOUT",
    "MODE_VARIABLE",
]

#: Sessions one server holds at once unless told otherwise.
DEFAULT_MAX_SESSIONS = 256
#: Seconds without a message after which a session is closed.
DEFAULT_SESSION_TIMEOUT = 900.0
#: Seconds a connection may take to become a session (see :attr:`ServeOptions.handshake_timeout`).
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
#: Seconds a held session (one that outlives its socket) may idle with no socket attached.
DEFAULT_HELD_SESSION_TIMEOUT = 120.0
#: The environment variable naming the server mode when the options name none (OpenEnv's).
MODE_VARIABLE = "OPENENV_MODE"


@dataclass(frozen=True)
class ServeOptions(MergedByName):
    """How a server serves its env. Every field has a default; see each field."""

    kind = "server"

    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Sessions held at once; one more gets OpenEnv's CAPACITY_REACHED error frame and a
    close. A vector session of N envs takes N of them."""

    session_timeout: float | None = DEFAULT_SESSION_TIMEOUT
    """Seconds without a message after which a session is closed (``None``: never)."""

    max_held_sessions: int | None = None
    """Sessions that outlive their sockets (``POST /mcp``'s ``openenv/session/create`` and
    MCP's ``initialize``) held at once, among the ``max_sessions``; one more is refused
    (JSON-RPC -32000, CAPACITY_REACHED, naming this cap). ``None``: a quarter of
    ``max_sessions`` (at least 1), so that one client holding no socket cannot take the
    slots of those that hold one; 0: none."""

    held_session_timeout: float | None = DEFAULT_HELD_SESSION_TIMEOUT
    """Seconds a held session with no ``/ws`` socket attached may go without a request
    before it is closed; at most ``session_timeout`` (``None``: ``session_timeout``)."""

    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    """Seconds a connection may take to become a session: to send a complete HTTP request
    (a WebSocket upgrade included), a route's opening message (``vector_open``), or the
    next chunk of a request body. Connections that hold no session yet are closed after
    it, before they can pile up."""

    execution: Execution = "auto"
    """How env calls run (see :data:`~openenv_gym.server.execution.Execution`).
    ``"process"`` runs each session's env in a process of its own (see
    :mod:`openenv_gym.server.isolation`), killed when its session ends (even in the
    middle of a call: a client gone, the idle timeout, a drain) and, on Linux, when the
    server dies, even by SIGKILL."""

    step_timeout: float | None = None
    """Seconds an env call (reset, step, render) may take; a call that hangs longer gets
    EXECUTION_ERROR and its session a fresh environment (other sessions are unaffected).
    Env calls then always run on the session's worker thread. ``None``: no limit."""

    inline_deadline: float | None = DEFAULT_INLINE_DEADLINE
    """Seconds an env call running inline on the event loop (a session whose env proved
    fast) may take before it is interrupted, its session answered EXECUTION_ERROR and
    given a fresh env that runs on its thread (see :class:`~openenv_gym.server.latency.InlineDeadline`;
    enforced where the event loop runs in the main thread, as :func:`~openenv_gym.serve`
    and the CLI run it). ``None``: no deadline."""

    busy_poll: float = DEFAULT_BUSY_POLL
    """Seconds the event loop keeps polling for the next message after replying to a
    client on this machine whose env steps inline (see :class:`~openenv_gym.server.latency.BusyPoll`);
    it saves a kernel wake-up per step at the price of CPU while a client thinks. At most
    1 second (a larger value is one in the wrong unit); 0 turns it off
    (:func:`~openenv_gym.local_server` does: its server shares the client's process)."""

    single_thread: bool | None = None
    """Run every call of the envs (build, reset, step, render, close) on one thread of this
    process, which the sessions of such envs (and of every other server in the process)
    take turns on, for envs that are not thread-safe. ``None``: for envs that draw with
    pygame (:func:`~openenv_gym.server.resolve.uses_pygame`: Gymnasium's classic control,
    toy text and Box2D envs with a frame render mode, PettingZoo's pygame games), whose
    process-wide state two threads must not touch at once; ``True`` for any env (one whose
    toolkit is bound to a thread, say); ``False`` never. Not with ``execution="inline"``;
    with ``execution="process"`` each env has a process of its own and needs no such thread."""

    env_memory_mb: int | None = None
    """With ``execution="process"`` only, the MiB each env's process may allocate: its
    ``RLIMIT_DATA``, which Linux enforces on every private writable mapping (heap, numpy
    arrays, thread stacks). CartPole starts under 128 on two cores; numpy's OpenBLAS
    reserves about 40 MiB more per core it starts a thread for (``OPENBLAS_NUM_THREADS``
    bounds them). An env that reaches it ends its process: its session answers
    EXECUTION_ERROR naming the cap and gets a fresh env process. ``None``: no cap."""

    limits: Limits = field(default_factory=Limits)
    """Frame, array and nesting limits for incoming messages. Run the app with uvicorn's
    ``ws_max_size`` equal to ``limits.max_frame_bytes`` (:func:`~openenv_gym.serve` does)."""

    vector_backend: VectorBackend = "auto"
    """What hosts the envs of a batched vector session on ``WS /vector`` (see
    :mod:`openenv_gym.server.vector`): ``"sync"``, a ``SyncVectorEnv`` in this process;
    ``"async"``, an ``AsyncVectorEnv`` with one worker process per sub-env (for slow envs
    on a many-core server); ``"envpool"``, one EnvPool pool (for an EnvPool task,
    ``"envpool:CartPole-v1"``); ``"auto"``, ``"envpool"`` for an EnvPool task, else
    ``"sync"`` (see :mod:`openenv_gym.server.backends`)."""

    token: str | None = None
    """Require ``Authorization: Bearer <token>`` on every route but ``/health`` (see
    :mod:`openenv_gym.server.auth`). ``None`` reads the ``OPENENV_GYM_TOKEN`` environment
    variable; no token there means no authentication."""

    validation_token: str | None = None
    """The token that opens session telemetry on ``/ws`` (``validation_open``, see
    :mod:`openenv_gym.server.telemetry`); ``None`` reads the ``OPENENV_VALIDATION_TOKEN``
    environment variable; without one, or in production mode, telemetry is off."""

    mode: Mode | None = None
    """``"simulation"`` (every route) or ``"production"`` (no stateless ``/reset``,
    ``/step``, ``/state``), as OpenEnv defines them; ``None`` reads the ``OPENENV_MODE``
    environment variable, else simulation (see :meth:`served_mode`)."""

    opponent: Opponent | None = None
    """For PettingZoo envs, the policy playing the other seats of a ``/ws`` session (a
    callable taking a :class:`~openenv_gym.server.multiagent.Turn`; ``None``:
    :func:`~openenv_gym.server.multiagent.random_opponent`)."""

    text_view: Any = None
    """How observations read as text and replies as actions, for the ``text`` field of
    observations and the MCP tools: a :class:`~openenv_gym.text.TextView` (or an object
    with its methods), or a function making one from a session's env. ``None``: each
    env's own view (:func:`~openenv_gym.text.view_for`)."""

    tool_images: bool = False
    """Whether the built-in tools' results (``act``, ``observe``, ``legal_actions``,
    ``new_episode``) carry the env's frame as a PNG image after their text, for models that
    see: the env must render ``rgb_array`` (make it with ``render_mode="rgb_array"``). Off by
    default: a frame costs a render and tens of KB per call."""

    web: bool | None = None
    """Whether the server serves its web page at ``/web/`` and upstream's ``/web`` routes
    (:mod:`openenv_gym.server.web`); ``None`` reads upstream's ``ENABLE_WEB_INTERFACE``
    environment variable, else off. The page shows frames when the env renders ``rgb_array``."""

    web_report: str | os.PathLike[str] | None = None
    """A validation report for the web page's "Validation" tab: the HTML file
    ``openenv-gym check --html FILE`` wrote (with ``web``)."""

    tools: Sequence[Callable[..., Any]] = ()
    """MCP tools of your own, served beside ``act``, ``observe`` and ``legal_actions``:
    plain functions taking the session's env first, with type hints on their other
    parameters (see :func:`~openenv_gym.server.tools.function_tool` and ``docs/mcp.md``);
    not with ``execution="process"``, where the env is in another process."""

    set_state: Callable[[Any, Any], tuple[Any, Any]] | None = None
    """How a reset starts from an injected state (OpenEnv's RFC 008 ``set_state``
    capability): ``set_state(env, injected_state)`` is called on the session's env (as
    the factory built it; a PettingZoo seat's
    :class:`~openenv_gym.server.multiagent.SeatEnv`) right after its
    ``reset(seed=..., options=...)``, sets its state and returns ``(observation, info)``
    of that state, as ``reset`` does. A reset whose data holds ``injected_state`` on a
    server without it is refused (VALIDATION_ERROR naming this hook); ``/agents`` refuses
    it always. Not with ``execution="process"``, where the env is in another process."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))
        for problem in self._problems():
            raise ValueError(problem)

    def _problems(self) -> list[str]:
        """What is wrong with these options, each said as what to do instead."""
        problems = []
        if self.max_sessions < 1:
            problems.append(f"max_sessions must be at least 1, not {self.max_sessions}")
        for name in ("session_timeout", "held_session_timeout", "step_timeout", "inline_deadline"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                problems.append(f"{name} must be positive or None, not {value}")
        if self.max_held_sessions is not None and self.max_held_sessions < 0:
            problems.append(f"max_held_sessions must be 0 or more (0: none), or None, not {self.max_held_sessions}")
        if self.handshake_timeout <= 0:
            problems.append(f"handshake_timeout must be positive, not {self.handshake_timeout}")
        if (problem := busy_poll_problem(self.busy_poll)) is not None:
            problems.append(problem)
        executions = get_args(Execution)
        if self.execution not in executions:
            problems.append(f"execution must be {_either(executions)}, not {self.execution!r}")
        backends = get_args(VectorBackend)
        if self.vector_backend not in backends:
            problems.append(f"vector_backend must be {_either(backends)}, not {self.vector_backend!r}")
        if self.mode is not None and self.mode.lower() not in MODES:
            problems.append(f"the server mode is {' or '.join(MODES)}, not {self.mode!r}")
        if self.step_timeout is not None and self.execution == "inline":
            problems.append(
                "a step timeout needs env calls on a worker thread: use execution='auto' or 'thread' with it"
            )
        if self.single_thread and self.execution == "inline":
            problems.append(_INLINE_ON_ONE_THREAD)
        if self.env_memory_mb is not None:
            if self.execution != "process":
                problems.append(
                    f"env_memory_mb caps the memory of each env's own process, and execution={self.execution!r} "
                    f"runs envs in the server's: add execution='process' (--execution process), or drop the cap"
                )
            elif self.env_memory_mb <= 0:
                problems.append(f"env_memory_mb is a positive number of MiB, not {self.env_memory_mb}")
        if self.execution == "process":
            if self.tools:
                problems.append(
                    "tools= run on each session's env in the server's process, and execution='process' keeps "
                    "the env in a process of its own: choose one (put the tool's logic in the env's own methods, "
                    "or serve with another execution)"
                )
            if self.set_state is not None:
                problems.append(
                    "set_state= runs on each session's env in the server's process, and execution='process' "
                    "keeps the env in a process of its own: choose one"
                )
        return problems


    @property
    def latency(self) -> LatencyPolicy:
        """The settings of the server's latency mechanisms (:mod:`~openenv_gym.server.latency`)."""
        return LatencyPolicy(inline_deadline=self.inline_deadline, busy_poll=self.busy_poll)

    def served_mode(self) -> Mode:
        """The server mode: :attr:`mode`, else the ``OPENENV_MODE`` environment variable,
        else ``"simulation"``."""
        chosen = (self.mode or os.environ.get(MODE_VARIABLE) or "simulation").lower()
        if chosen not in MODES:
            raise ValueError(f"the server mode is {' or '.join(MODES)}, not {chosen!r} (from {MODE_VARIABLE})")
        return chosen

    def held_sessions(self) -> int:
        """How many held sessions the server keeps at once (:attr:`max_held_sessions`)."""
        return max(1, self.max_sessions // 4) if self.max_held_sessions is None else self.max_held_sessions

    def held_timeout(self) -> float | None:
        """Seconds a held session may idle with no socket attached: at most ``session_timeout``."""
        timeouts = (self.held_session_timeout, self.session_timeout)
        return min((t for t in timeouts if t is not None), default=None)


#: Why an env served on one thread cannot run inline (said where its pygame use is found, too).
_INLINE_ON_ONE_THREAD = (
    "this env is served on one thread (it draws with pygame, or single_thread=True said so), "
    "and execution='inline' runs its calls on the event loop: use execution='auto' or "
    "'thread', or single_thread=False (--no-single-thread) if the env is safe on several threads"
)


def check_single_thread(options: ServeOptions, single_thread: bool) -> None:
    """Refuse ``execution="inline"`` for an env that must run on one thread (found to
    draw with pygame when :attr:`ServeOptions.single_thread` is ``None``)."""
    if single_thread and options.execution == "inline":
        raise ValueError(_INLINE_ON_ONE_THREAD)


def _either(choices: Sequence[str]) -> str:
    quoted = [repr(choice) for choice in choices]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


class ServeKwargs(TypedDict, total=False):
    """:class:`ServeOptions` as keyword arguments (for ``**kwargs: Unpack[ServeKwargs]``)."""

    max_sessions: int
    session_timeout: float | None
    max_held_sessions: int | None
    held_session_timeout: float | None
    handshake_timeout: float
    execution: Execution
    step_timeout: float | None
    inline_deadline: float | None
    busy_poll: float
    single_thread: bool | None
    env_memory_mb: int | None
    limits: Limits
    vector_backend: VectorBackend
    token: str | None
    validation_token: str | None
    mode: Mode | None
    opponent: Opponent | None
    text_view: Any
    tool_images: bool
    web: bool | None
    web_report: str | os.PathLike[str] | None
    tools: Sequence[Callable[..., Any]]
    set_state: Callable[[Any, Any], tuple[Any, Any]] | None
