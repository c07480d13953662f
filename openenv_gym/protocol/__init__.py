"""The OpenEnv protocol and openenv-gym's extensions, sans I/O.

Servers and clients both speak through this package; nothing else builds or
reads a message. It knows no sockets and no threads: bytes (or text) in,
typed messages out, and back.

===================  ==========================================================
module               what it owns
===================  ==========================================================
:mod:`.frames`       :class:`Limits`, size and shape checks, the handshake's
                     process header
:mod:`.codecs`       JSON and msgpack frames, how values travel on each
                     (:class:`Codec`), and the subprotocols that select them
:mod:`.hints`        type hints that carry numpy types and tuples over JSON
:mod:`.messages`     the envelope validator and ``/ws``'s typed messages, both ways
:mod:`.gym`          the action and observation objects of Gymnasium servers
:mod:`.vector`       ``/vector``: batched vector sessions
:mod:`.attributes`   ``call`` / ``get_attr`` / ``set_attr`` on ``/vector`` and ``/ws``
:mod:`.agents`       ``/agents``: whole PettingZoo games
:mod:`.mcp`          JSON-RPC 2.0 requests and responses of ``/mcp``
:mod:`.http`         the bodies of the HTTP routes, under the same limits
:mod:`.validation`   session telemetry on ``/ws``: ``validation_open`` / ``validation_read``
===================  ==========================================================

A server reads a frame, validates it and answers::

    >>> codec = codec_for(None)                     # no subprotocol: stock JSON
    >>> message = parse_message(codec.decode('{"type": "state"}'), WS_MESSAGES)
    >>> message
    State()
    >>> codec.encode(StateReply({"episode_id": None, "step_count": 0}).to_wire())
    '{"type":"state","data":{"episode_id":null,"step_count":0}}'

Errors are :class:`~openenv_gym.errors.ProtocolError` carrying an OpenEnv
error code; :class:`ErrorReply` is the frame that answers one.
"""

from __future__ import annotations

from . import codecs, frames, hints, messages
from .codecs import *  # noqa: F403
from .frames import *  # noqa: F403
from .hints import *  # noqa: F403
from .messages import *  # noqa: F403

#: The names of the modules above: each module's ``__all__`` says what it gives the
#: package (the other modules are imported by their own names, ``protocol.vector``).
__all__ = [*codecs.__all__, *frames.__all__, *hints.__all__, *messages.__all__]
