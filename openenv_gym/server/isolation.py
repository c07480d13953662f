"""Process isolation: each session's environment in a process of its own.

With ``execution="process"`` (``--execution process``), a session's env is a
:class:`ProcessEnv`: a stand-in whose calls run in a child process that owns
the real env. An env that segfaults, calls ``os.abort()``, leaks or hangs
takes its own process down, not the server: the session answers
EXECUTION_ERROR, gets a fresh process, and every other session goes on. A
call past the step timeout kills the child (a thread could only be abandoned).

The child is contained:

- it is killed when its session ends, whatever ends it, even in the middle of
  a call (:meth:`ProcessEnv.kill` is safe from another thread than the one
  waiting for the call);
- it dies with the server, even one killed by SIGKILL (Linux): the kernel
  kills it when its parent, multiprocessing's fork server, exits, and the fork
  server exits when the server does (:func:`_die_with_server`). Elsewhere an
  idle child exits when the server's end of its pipe closes, but one in the
  middle of a call finishes it first;
- with ``memory_mb`` it cannot allocate more than that (``RLIMIT_DATA``,
  enforced by Linux on every private writable mapping: malloc, numpy, thread
  stacks); an allocation past it ends the process with
  :data:`OUT_OF_MEMORY_STATUS`, and its session is told the cap it reached.

What crosses the pipe is msgpack (actions one way; observations, rewards and
infos the other, decoded within limits), never pickle: an env's process cannot
run code in the server. The server sends the child its env factory, once
(pickled: the server trusts its own factory), which must therefore be
importable: a Gymnasium id, ``module:factory``, an importable class or
function (not a lambda or a class defined in ``__main__``).

Each call costs a round trip through a pipe and a context switch (see
``docs/operations.md`` for what it costs per step), and each session a process
(started from a fork server, so about a hundred milliseconds after the first).
Use it for native or untrusted envs; trusted Python envs are faster inline.

    >>> env = ProcessEnv(functools.partial(gym.make, "CartPole-v1"))    # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)                              # doctest: +SKIP
    >>> env.close()                                                # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym

from .. import spaces
from ..errors import EnvCrashed
from ..protocol import Limits, MsgpackCodec
from .attributes import call_attribute, is_wrapped

__all__ = ["ProcessEnv", "EnvCrashed", "OUT_OF_MEMORY_STATUS", "env_processes"]

#: Limits on what a child sends back (its env is not trusted to stay small).
_FROM_CHILD = Limits(
    max_frame_bytes=256 << 20, max_array_bytes=256 << 20, max_container_len=1 << 24, max_items=1 << 24,
    max_arrays=1 << 24,
)

#: The exit status of an env process that ran out of its memory cap (``memory_mb``).
OUT_OF_MEMORY_STATUS = 213
#: ``prctl``'s option asking for a signal when the parent exits (``linux/prctl.h``).
_PR_SET_PDEATHSIG = 1


class _ChildError(Exception):
    """An exception the env raised in its process, under the name of its type."""


_ERROR_TYPES: dict[str, type[_ChildError]] = {}


def _child_error(type_name: str, message: str) -> _ChildError:
    """The exception to raise for the env's, named as the env's was (``ValueError: ...``)."""
    cls = _ERROR_TYPES.get(type_name)
    if cls is None:
        cls = _ERROR_TYPES[type_name] = type(type_name, (_ChildError,), {})
    return cls(message)


class ProcessEnv(gym.Env):
    """A Gymnasium env whose calls run in a child process that owns the real env.

    Methods the session calls (``reset``, ``step``, ``render``, ``close``) and
    any other method (``unwrapped.seat_fields()`` for a PettingZoo seat, say)
    are forwarded; spaces, ``render_mode`` and ``metadata`` are read once at
    start. A dead child raises :class:`EnvCrashed`; an exception of the env
    arrives as one of the same type name and message.

    ``memory_mb`` caps the memory the child may allocate, in MiB (``None``: no
    cap): an env that reaches it raises :class:`EnvCrashed` naming the cap, as
    a crash does.
    """

    def __init__(self, factory: Callable[[], Any], name: str = "the env", *, memory_mb: int | None = None) -> None:
        methods = multiprocessing.get_all_start_methods()
        context: Any = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        self._conn, child_conn = context.Pipe()
        self._codec = MsgpackCodec(_FROM_CHILD)
        self._memory_mb = memory_mb
        #: Guards the three below: a call runs on the session's thread, a kill comes from the event loop.
        self._lock = threading.Lock()
        self._in_flight = False
        self._killed = False
        self._process = context.Process(target=_child_main, args=(child_conn, factory, memory_mb), daemon=True)
        try:
            self._process.start()
        except Exception as exc:  # noqa: BLE001 - a factory multiprocessing cannot send (PicklingError, ...)
            self._conn.close()
            raise TypeError(
                f"{name!r} cannot run in a process of its own: its factory cannot be sent to another "
                f"process ({exc}); serve it by id, 'module:factory', or an importable class or function"
            ) from exc
        finally:
            child_conn.close()
        described = self._request("describe")
        self.observation_space = spaces.restore(described["observation_space"])
        self.action_space = spaces.restore(described["action_space"])
        self.render_mode = described["render_mode"]
        self.metadata = dict(described["metadata"] or {})

    # -- the Gymnasium API -----------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = self._request("call", "reset", [], {"seed": seed, "options": options})
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self._request("call", "step", [action], {})
        return obs, reward, terminated, truncated, info

    def render(self) -> Any:
        return self._request("call", "render", [], {})

    def close(self) -> None:
        if self._process.is_alive():
            try:
                self._request("close")
            except (EnvCrashed, _ChildError):
                pass
        self.kill()

    def kill(self) -> None:
        """End the child at once (a call that hangs, a session that ends), from any thread.

        A call waiting for the child on another thread then raises
        :class:`EnvCrashed` (the child's end of the pipe closes), and that thread
        closes the pipe once it is done with it: a pipe closed under a thread
        still reading it could hand its descriptor to another file.
        """
        with self._lock:
            self._killed = True
            if self._process.is_alive():
                self._process.kill()
            self._process.join(5)
            if not self._in_flight:
                self._conn.close()

    @property
    def unwrapped(self) -> Any:
        return _Methods(self, "unwrapped.")

    # The attribute messages reach the env in the child (openenv_gym.server.attributes).
    def call_attribute(self, name: str, args: list, kwargs: dict) -> Any:
        """:func:`~openenv_gym.server.attributes.call_attribute` of the env in the child."""
        return self._request("call_attribute", name, args, kwargs)

    def set_wrapper_attr(self, name: str, value: Any, **kwargs: Any) -> Any:
        """``set_wrapper_attr`` of the env in the child."""
        return self._request("call", "set_wrapper_attr", [name, value], kwargs)

    def is_wrapped(self, wrapper: str) -> bool:
        """:func:`~openenv_gym.server.attributes.is_wrapped` of the env in the child."""
        return bool(self._request("is_wrapped", wrapper))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(_Methods(self, ""), name)

    # -- the pipe ----------------------------------------------------------------------

    def _request(self, *message: Any) -> Any:
        with self._lock:
            if self._killed:
                raise EnvCrashed("the environment's process was killed: its session ended, or its call hung")
            self._in_flight = True
        try:
            self._conn.send_bytes(self._codec.encode(list(message)))
            reply = self._codec.decode(self._conn.recv_bytes())
        except (EOFError, OSError) as exc:
            raise EnvCrashed(f"the environment's process died ({self._exit_reason()})") from exc
        finally:
            with self._lock:
                self._in_flight = False
                if self._killed:
                    self._conn.close()
        kind, value = reply
        if kind == "error":
            raise _child_error(*value)
        return value

    def _exit_reason(self) -> str:
        with self._lock:  # not beside kill(): two threads reaping one child may read its status wrong
            self._process.join(1)
        code, cap = self._process.exitcode, self._memory_mb
        if code is None:
            return "it stopped answering"
        if code == OUT_OF_MEMORY_STATUS and cap is not None:
            return (
                f"it ran out of memory: it reached its cap of {cap} MiB, set by env_memory_mb "
                f"(--env-memory-mb); raise the cap, or find what grows in the env"
            )
        reason = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        if cap is not None:  # native code whose allocation fails may abort, or numpy's import fail
            reason += f", under a memory cap of {cap} MiB (--env-memory-mb): perhaps it needs more"
        return reason


def env_processes(env: Any) -> list[ProcessEnv]:
    """The processes behind a session's env: the env itself, or the sub-envs of a
    batched session's ``SyncVectorEnv``, when they run in processes of their own."""
    if isinstance(env, ProcessEnv):
        return [env]
    if isinstance(env, gym.vector.SyncVectorEnv):
        return [sub for sub in env.envs if isinstance(sub, ProcessEnv)]
    return []


class _Methods:
    """Methods of the env in the child, by dotted name (``unwrapped.seat_fields``)."""

    def __init__(self, env: ProcessEnv, prefix: str) -> None:
        self._env, self._prefix = env, prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            return self._env._request("call", self._prefix + name, list(args), kwargs)

        return method


def _child_main(conn: Connection, factory: Callable[[], Any], memory_mb: int | None) -> None:
    """The child: tie its life to the server's, cap its memory, build the env with the
    server's factory, then answer calls until closed. Under a cap, running out of
    memory anywhere (the factory, a call, a reply) ends the process with
    :data:`OUT_OF_MEMORY_STATUS`: its state is not to be trusted after that."""
    _die_with_server()
    if memory_mb is None:
        _serve_env(conn, factory, capped=False)
        return
    import resource

    cap, hard = memory_mb << 20, resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))  # the hard limit too: the env cannot lift it
    try:
        _serve_env(conn, factory, capped=True)
    except MemoryError:
        os._exit(OUT_OF_MEMORY_STATUS)


def _die_with_server() -> None:
    """Have the kernel kill this process when the server is gone (Linux, a child of
    multiprocessing's fork server; elsewhere nothing).

    Its parent is the fork server, not the server: ``PR_SET_PDEATHSIG`` kills it
    when the fork server exits, and the fork server exits when the last holder of
    its lifeline (the write end of a pipe the server keeps) is gone. Every child of
    the fork server inherits that lifeline, so a child in the middle of a call kept
    the fork server, and so itself, alive after the server was killed: the child
    lets go of it here. It does so after ``prctl``: until then the fork server
    cannot exit because of the server, so there is no moment in which the server's
    death would go unnoticed.
    """
    if not sys.platform.startswith("linux"):
        return
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # the fork server's state in its child (private to multiprocessing)
    if server._forkserver_alive_fd is None:
        return  # not a fork server's child (spawn: the parent is the server's thread, whose end prctl would see)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not allowed here (a seccomp profile): keep the lifeline, and so today's behaviour
    os.close(server._forkserver_alive_fd)
    server._forkserver_alive_fd = None  # an env that uses a fork server of its own starts one


def _serve_env(conn: Connection, factory: Callable[[], Any], *, capped: bool) -> None:
    """Build the env and answer the server's calls on ``conn`` until it closes the env
    or goes away; ``capped``: a MemoryError is not the env's to report, but raised."""
    codec = MsgpackCodec(
        Limits(max_frame_bytes=1 << 30, max_array_bytes=1 << 30, max_items=1 << 24, max_arrays=1 << 24)
    )
    env = factory()
    while True:
        try:
            message = codec.decode(conn.recv_bytes())
        except (EOFError, OSError):
            return  # the server is gone
        kind = message[0]
        try:
            if kind == "describe":
                value: Any = {
                    "observation_space": spaces.describe(env.observation_space),
                    "action_space": spaces.describe(env.action_space),
                    "render_mode": getattr(env, "render_mode", None),
                    "metadata": dict(getattr(env, "metadata", None) or {}),
                }
            elif kind == "close":
                env.close()
                value = None
            elif kind == "is_wrapped":
                value = is_wrapped(env, message[1])
            elif kind == "call_attribute":
                value = call_attribute(env, *message[1:])
            else:
                _, name, args, kwargs = message
                target: Any = env
                for part in name.split("."):
                    target = getattr(target, part)
                value = target(*args, **kwargs)
            reply = ["ok", value]
        except Exception as exc:  # noqa: BLE001 - the server reports it
            if capped and isinstance(exc, MemoryError):
                raise
            reply = ["error", [type(exc).__name__, str(exc)]]
        conn.send_bytes(codec.encode(reply))
        if kind == "close":
            return
