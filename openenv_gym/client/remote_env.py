"""``RemoteEnv``: any OpenEnv server as a ``gymnasium.Env``.

    >>> import openenv_gym
    >>> env = openenv_gym.RemoteEnv("http://127.0.0.1:8000")      # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                               # doctest: +SKIP
    >>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())  # doctest: +SKIP
    >>> env.close()                                                 # doctest: +SKIP

Against an openenv-gym server the spaces are exact, ``terminated`` and
``truncated`` are the env's own, and ``info`` keeps its numpy types. Against a
stock OpenEnv server the spaces are inferred from ``/schema`` and the server's
first observation (:mod:`openenv_gym.spaces.stock` has the rules;
``env.contract.view.describe()`` says which rule chose each field), observations
are ``Dict`` values of the schema's fields, an action of one field is that
field's value (``Discrete(4)`` with ``info["action_mask"]`` when the observation
lists the legal actions), OpenEnv's ``done`` becomes ``terminated`` (wrap the env
in ``TimeLimit`` for truncation), and a non-empty observation ``metadata``
appears as ``info["metadata"]``. Override single fields with
``observation_fields=`` / ``action_fields=`` (a space, or ``None`` to leave one
out), whole sides with ``observation_space=`` / ``action_space=``. Nothing is
dropped silently: observation fields outside the space go to
``info["openenv_gym.extra_fields"]``, fields the server left out take their
schema default or a neutral value and are listed in
``info["openenv_gym.missing_fields"]``, and fields that were null (a sentinel
stands for them) in ``info["openenv_gym.null_fields"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from ..errors import CapacityReachedError, OpenEnvGymError
from ..protocol import Render, RenderReply, Reset, ServerMessage, State, StateReply, Step
from .connection import http_url
from .contract import Contract, FieldOverrides, read_contract
from .options import ConnectOptions
from .pickling import PicklesAsArguments, remembers_arguments
from .retry import LOST_REASON, RECONNECTED, RECOVERABLE
from .session import RemoteSession

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .options import ConnectKwargs

__all__ = ["RemoteEnv", "owned_arrays"]


class RemoteEnv(PicklesAsArguments, gym.Env):
    """A Gymnasium environment whose episodes run on an OpenEnv server.

    Args:
        base_url: the server, as ``http(s)://host:port``, ``ws(s)://...`` or ``host:port``.
        observation_space, action_space: override the spaces read from (or, for
            stock servers, inferred from) the server's ``/schema``.
        observation_fields, action_fields: for a stock server, override the space of
            single fields (``{"screen": Box(...)}``), or leave one out (``None``).
        render_mode: ignored when the server reports its own; the server's
            render mode is the one that applies.
        options: how to connect (:class:`~openenv_gym.client.options.ConnectOptions`:
            encoding, token, headers, timeouts, message size, pings,
            compression, busy polling, reconnect policy); keyword arguments of
            the same names override it (``RemoteEnv(url, token=..., busy_poll=0)``).
        text: ask the server for each observation as its text view writes it
            (``/ws?text=1``: the view of the env itself, which knows what the spaces do
            not, FrozenLake's map say): :meth:`served_text`, and
            :func:`~openenv_gym.text.view_for` of this env reads observations with it.
            An openenv-gym server sends it when asked, a stock server always.

    With ``reconnect``, a step whose connection is lost ends the episode with
    ``truncated=True``, the last observation and
    ``info["openenv_gym.reconnected"] = True``; the next ``reset`` runs on a new
    connection. CAPACITY_REACHED is retried with backoff too.

    Server error frames raise :class:`~openenv_gym.errors.RemoteError`
    subclasses carrying the server's code and message; a lost connection
    raises :class:`~openenv_gym.errors.ConnectionClosedError` and a server that
    does not answer within ``message_timeout``
    :class:`~openenv_gym.errors.MessageTimeoutError`.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    @remembers_arguments
    def __init__(
        self,
        base_url: str,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        render_mode: str | None = None,
        options: ConnectOptions | None = None,
        observation_fields: FieldOverrides | None = None,
        action_fields: FieldOverrides | None = None,
        text: bool = False,
        **connect: Unpack[ConnectKwargs],
    ) -> None:
        self.base_url = http_url(base_url)
        #: Whether it asks the server for each observation's text (``text=``).
        self.text = text
        self._path = "/ws?text=1" if text else "/ws"
        self._last_text: str | None = None
        self._session: RemoteSession | None = None
        self._closed = False
        self.options = options = ConnectOptions.merge(options, **connect)
        self.reconnect = options.reconnect
        self.contract: Contract
        _, self.contract = read_contract(
            self.base_url, options, observation_space=observation_space, action_space=action_space,
            observation_fields=observation_fields, action_fields=action_fields,
        )
        self.observation_space = self.contract.observation_space
        self.action_space = self.contract.action_space
        self.render_mode = self.contract.render_mode if self.contract.extended else render_mode
        self.metadata = {**self.contract.env_metadata}
        self.metadata["render_modes"] = [self.render_mode] if self.render_mode else []
        self._last_obs: Any = None
        self._last_mask: Any = None
        self._lost: BaseException | None = None
        self._session = (
            self._connect() if self.reconnect is None else self.reconnect.call(self._connect)
        )

    def _connect(self) -> RemoteSession:
        return RemoteSession(self.base_url, self.contract.session_options(self.options), path=self._path)

    def _reconnect(self) -> RemoteSession:
        """A new connection after a loss, where the policy says the server is now."""
        if self.reconnect is not None:
            self.base_url = http_url(self.reconnect.locate(self.base_url))
        return self._connect()

    @property
    def encoding(self) -> str:
        """The encoding in use: ``"msgpack"`` or ``"json"``."""
        return self._live().codec.name

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode on the server.

        ``seed`` goes to the server's ``reset(seed=...)``; the keys of
        ``options`` are sent beside it (an openenv-gym server passes them on as
        the env's ``options``; ``episode_id`` names the episode in ``state()``).
        """
        super().reset(seed=seed)
        message = Reset(seed, options=options)
        lost, self._lost = self._lost, None

        def attempt() -> ServerMessage:
            if self._session is None or self._session.connection.closed:
                self._session = self._reconnect()
            try:
                return self._session.request(message)
            except (*RECOVERABLE, CapacityReachedError):
                self._session.close()  # a timed-out connection is out of step: drop it
                self._session = None
                raise

        if self.reconnect is None:
            reply = self._live().request(message)
        else:
            self._live_or_closed()
            reply = self.reconnect.call(attempt)
        step = self.contract.read(self._live().codec, reply)
        obs, info = owned_arrays(step.obs), owned_arrays(step.info)
        self._last_obs, self._last_text = obs, step.text
        self._last_mask = info.get("action_mask")
        if lost is not None:
            info[RECONNECTED] = True
            info[LOST_REASON] = str(lost)
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        session = self._live()
        contract, codec = self.contract, session.codec
        try:
            reply = session.exchange(contract.step_frame(codec, action))
            step = contract.read_decoded(codec, reply) or contract.read(codec, session.typed(reply))
        except RECOVERABLE as exc:
            if self.reconnect is None:
                raise
            # The episode is gone with its connection: end it here, flagged;
            # the next reset opens a new connection.
            session.close()
            self._session, self._lost = None, exc
            info = {RECONNECTED: True, LOST_REASON: str(exc)}
            return owned_arrays(self._last_obs, always=True), 0.0, False, True, info
        obs = self._last_obs = owned_arrays(step.obs)
        self._last_text = step.text
        self._last_mask = step.info.get("action_mask")
        return obs, step.reward, step.terminated, step.truncated, owned_arrays(step.info)

    def served_text(self, obs: Any) -> str | None:
        """The server's text of ``obs`` when it is the last observation this env returned
        and the server sent its text (see ``text=``); ``None`` otherwise."""
        return self._last_text if obs is self._last_obs and self._last_text is not None else None

    def action_masks(self) -> np.ndarray | None:
        """The legal actions of the current position, as booleans (``info["action_mask"]`` of the
        last reset or step; ``None`` when the server lists none): what sb3-contrib's
        ``MaskablePPO`` calls."""
        return None if self._last_mask is None else np.asarray(self._last_mask, dtype=bool)

    def step_raw(self, data: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step with ``data`` sent as it is, not checked against the action space: a stock
        server's action object (``{"column": 7}``), an openenv-gym server's wire value. What a
        probe of the server's own validation sends (``openenv-gym check``'s out-of-space
        probe); a refused action raises the server's error, and the session goes on.

            >>> env.step_raw({"column": "seven"})        # doctest: +SKIP
            Traceback (most recent call last):
            ...
            openenv_gym.errors.ValidationError: VALIDATION_ERROR: Invalid message ...
        """
        session = self._live()
        message = Step(data) if not self.contract.extended else Step({"action": data})
        step = self.contract.read(session.codec, session.request(message))
        obs = self._last_obs = owned_arrays(step.obs)
        self._last_text = step.text
        return obs, step.reward, step.terminated, step.truncated, owned_arrays(step.info)

    def state(self) -> dict[str, Any]:
        """The server's state of this session (``episode_id``, ``step_count``, ...)."""
        reply = self._live().request(State())
        assert isinstance(reply, StateReply)
        return reply.state

    def render(self) -> Any:
        """The server-side render of the current state (``rgb_array`` or ``ansi``).

        Returns ``None`` when the server has no render mode (stock OpenEnv
        servers have no render message).
        """
        if self.render_mode is None or not self.contract.extended:
            return None
        reply = self._live().request(Render())
        return owned_arrays(reply.decoded_frame()) if isinstance(reply, RenderReply) else None

    def close(self) -> None:
        """Tell the server to end the session and close the connection (idempotent)."""
        session, self._session = self._session, None
        self._closed = True
        if session is not None:
            session.close()
        super().close()

    def _live_or_closed(self) -> None:
        if self._closed:
            raise OpenEnvGymError("this RemoteEnv is closed; create a new one to reconnect")

    def _live(self) -> RemoteSession:
        self._live_or_closed()
        if self._session is None:
            raise OpenEnvGymError(
                "this RemoteEnv lost its connection; call reset() to start a new episode"
            )
        return self._session

    def __repr__(self) -> str:
        return f"<RemoteEnv {self.base_url}>"


def owned_arrays(value: Any, *, always: bool = False) -> Any:
    """``value`` with every read-only array replaced by a copy the caller owns.

    msgpack frames decode arrays as read-only views of the received bytes (no
    copy on the way in); a Gymnasium env's caller expects arrays it may write
    to, as a local env returns them (``torch.as_tensor`` warns on read-only
    ones). ``always`` copies writable arrays too (a value returned twice).
    """
    if isinstance(value, np.ndarray):
        return value.copy() if always or not value.flags.writeable else value
    if isinstance(value, dict):
        if not value:
            return value
        return {key: owned_arrays(item, always=always) for key, item in value.items()}
    if isinstance(value, tuple):
        items = [owned_arrays(item, always=always) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value
