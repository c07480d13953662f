"""A shared-memory section: where a reply's arrays travel between two processes of one machine.

A version 2 msgpack frame carries its arrays after its message
(:class:`~openenv_gym.protocol.MsgpackBuffersCodec`). Between a client and a server on
one machine, those bytes cross the kernel's TCP path twice a step (a 225 KB reply of 8
84x84x4 frames costs each side about 120 µs of CPU more than a 1-byte one). With a
section, the server writes a reply's arrays into memory both processes map, and the frame
carries only the message; the client copies the arrays out.

Who may do what, and why it is safe for both ends:

- **The server creates it**: a ``memfd`` of :data:`HEADER_BYTES` plus the largest frame it
  sends, sealed against shrinking and growing (``F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL``),
  so no one can truncate it under a mapping (which would kill whoever touched the lost
  pages with SIGBUS). The server never reads what the client may write but two counters
  compared for equality: a client that scribbles on the section spoils only its own replies.
- **The client opens it** through ``/proc/<server pid>/fd/<fd>``, which the kernel allows a
  process of the same user in the same pid namespace (another container, another user, another
  machine: the open fails and every reply travels in its frame, as without a section). It maps
  the section only if it is a memfd of its own user with exactly those seals, of the size
  announced, bearing the nonce of its handshake.
- **One reply at a time**: the server writes a reply's arrays there only when the client
  has copied out those of every reply before (its ``read`` count equals the server's
  ``written`` count); otherwise they travel in the frame. So a client that pipelines
  requests gets the rest inline, and nothing is overwritten while it is read. The client
  counts a reply read after its copies, with one aligned 8-byte store: x86-64 keeps earlier
  reads before a later store, so the server that sees the count sees the copies done.
  Elsewhere no section is offered (:func:`supported`).

Layout: magic (8 bytes), nonce (16), 8 bytes free, ``attached`` (u64, the client sets 1),
``read`` (u64, the client's count), then the data from byte :data:`HEADER_BYTES`.

    >>> section = ServerSection(1 << 20) if supported() else None
    >>> section is None or ClientSection.attach(section.announcement, 1 << 21) is not None
    True
"""

from __future__ import annotations

import logging
import mmap
import os
import platform
import secrets
import sys
from collections.abc import Callable

import numpy as np

__all__ = ["HEADER_BYTES", "MAX_SECTIONS", "ServerSection", "ClientSection", "supported", "budget"]

logger = logging.getLogger("openenv_gym.client")

#: The most sections one server keeps open at once.
MAX_SECTIONS = 1024
#: Bytes before a section's data: magic, nonce, the client's two counters.
HEADER_BYTES = 64
_MAGIC = b"oegsect1"
_NONCE = slice(8, 24)
_COUNTERS = 32  # attached, read: two little-endian u64 at bytes 32 and 40
_SEALS = ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_SEAL")


def supported() -> bool:
    """Whether this process can create and attach sections: Linux on x86-64 (memfds with
    seals, ``/proc``, a memory model that orders the client's count after its copies)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    import fcntl

    return hasattr(os, "memfd_create") and all(hasattr(fcntl, name) for name in (*_SEALS, "F_ADD_SEALS"))


#: A mapping that keeps no descriptor of its own (Python 3.13+); before that, each end's mapping
#: holds one descriptor for as long as its connection lasts.
_MAP_OPTIONS = {"trackfd": False} if sys.version_info >= (3, 13) else {}


def budget() -> int:
    """How many sections a server may keep open at once: none where they are not
    :func:`supported`; else :data:`MAX_SECTIONS`, or fewer, so that they never hold more
    than a quarter of the process's descriptors (each holds its memfd's until the client
    attaches, and before Python 3.13 its mapping's until the connection ends)."""
    if not supported():
        return 0
    import resource

    held = 1 if _MAP_OPTIONS else 2
    return min(MAX_SECTIONS, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // (4 * held))


def _seals() -> int:
    """The seals of every section: the bits of :data:`_SEALS`."""
    import fcntl

    mask = 0
    for name in _SEALS:
        mask |= getattr(fcntl, name)
    return mask


class _Mapping:
    """A section's mapping, as either end holds it: its :attr:`data`, the client's two
    counters, and :meth:`close`, which unmaps it (the mapping holds a descriptor of its
    own, so a connection's end must close it rather than wait for the collector)."""

    def __init__(self, memory: mmap.mmap, data: memoryview) -> None:
        self._memory = memory
        self.data = data
        #: ``attached`` and ``read``: aligned u64 stores and loads, never torn.
        self._counters: np.ndarray | None = np.ndarray((2,), "<u8", memory, _COUNTERS)

    def close(self) -> None:
        """Unmap the section (idempotent). Arrays decoded from it were copies: none is lost;
        a frame read after this finds no bytes where it says its arrays are, and is refused."""
        if self._counters is None:
            return
        self._counters = None
        self.data.release()
        self.data = memoryview(b"")
        self._memory.close()


class ServerSection(_Mapping):
    """The server's end of one connection's section, of ``capacity`` data bytes.

    :attr:`announcement` is what the handshake reply tells the client (``"pid fd size
    nonce"``); :meth:`reserve` says whether a reply's arrays may go there now;
    :attr:`data` is where they go. :meth:`close` ends it, with its connection.
    """

    def __init__(self, capacity: int, on_close: Callable[[], None] | None = None) -> None:
        import fcntl

        size = HEADER_BYTES + capacity
        self._fd: int | None = os.memfd_create("openenv-gym-section", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self._fd, size)
            memory = mmap.mmap(self._fd, size, **_MAP_OPTIONS)
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, _seals())
        except BaseException:
            os.close(self._fd)
            raise
        nonce = secrets.token_bytes(16)
        memory[: _NONCE.stop] = _MAGIC + nonce
        super().__init__(memory, memoryview(memory)[HEADER_BYTES:])
        self.capacity = capacity
        self.announcement = f"{os.getpid()} {self._fd} {size} {nonce.hex()}"
        self._written = 0
        self._on_close = on_close

    def reserve(self, nbytes: int) -> bool:
        """Whether ``nbytes`` of a reply's arrays may be written to :attr:`data` now: the
        client attached, has read every reply written before, and they fit. If so, the
        reply counts as written."""
        counters = self._counters
        if counters is None or nbytes > self.capacity:
            return False
        attached, read = counters
        if attached != 1 or read != self._written:
            return False
        self._close_descriptor()  # the client has its own mapping now
        self._written += 1
        return True

    def _close_descriptor(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def close(self) -> None:
        """End the section: the descriptor a client would open, and the mapping (idempotent);
        then tell ``on_close``."""
        if self._counters is None:
            return
        self._close_descriptor()
        super().close()
        if self._on_close is not None:
            self._on_close()


class ClientSection(_Mapping):
    """The client's end of a section: :attr:`data` (read-only) holds the arrays of a reply
    whose frame says so; :meth:`consumed` counts the reply read once they are copied out."""

    def __init__(self, memory: mmap.mmap) -> None:
        super().__init__(memory, memoryview(memory)[HEADER_BYTES:].toreadonly())
        self._read = 0

    @classmethod
    def attach(cls, announcement: str, max_bytes: int) -> ClientSection | None:
        """The section a server announced (``"pid fd size nonce"``), mapped and marked
        attached; ``None`` (logged) when it cannot be reached or is not what a section
        must be: the replies then carry their arrays, as without one."""
        import fcntl

        try:
            pid_text, fd_text, size_text, nonce_hex = announcement.split(" ")
            pid, fd_number, size, nonce = int(pid_text), int(fd_text), int(size_text), bytes.fromhex(nonce_hex)
        except ValueError:
            logger.info("section_refused why=malformed announcement %r", announcement[:100])
            return None
        if not HEADER_BYTES < size <= HEADER_BYTES + max_bytes or len(nonce) != 16 or pid < 1 or fd_number < 0:
            logger.info("section_refused why=out of bounds %r", announcement[:100])
            return None
        try:
            fd = os.open(f"/proc/{pid}/fd/{fd_number}", os.O_RDWR | os.O_CLOEXEC)
        except OSError as exc:
            logger.info("section_unreachable why=%s", exc)
            return None
        try:
            status = os.fstat(fd)
            try:
                seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            except OSError:
                seals = 0
            if status.st_uid != os.geteuid() or status.st_size != size or seals & _seals() != _seals():
                logger.info("section_refused why=not a sealed memfd of this user of %d bytes", size)
                return None
            memory = mmap.mmap(fd, size, **_MAP_OPTIONS)
        except OSError as exc:
            logger.info("section_unreachable why=%s", exc)
            return None
        finally:
            os.close(fd)
        if memory[: _NONCE.stop] != _MAGIC + nonce:
            memory.close()
            logger.info("section_refused why=another section (magic or nonce differ)")
            return None
        section = cls(memory)
        assert section._counters is not None
        section._counters[1] = 0
        section._counters[0] = 1
        return section

    def consumed(self) -> None:
        """Count one more reply read: its arrays were copied out of :attr:`data`."""
        self._read += 1
        if self._counters is not None:
            self._counters[1] = self._read
