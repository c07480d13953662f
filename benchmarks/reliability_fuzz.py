#!/usr/bin/env python
"""Reliability: fuzz a live ``openenv-gym serve CartPole-v1`` with hostile frames.

    python benchmarks/reliability_fuzz.py    # >= 100k frames, <= 6 min
    python benchmarks/reliability_fuzz.py --frames 20000 --seconds 60

What it does (issue 6, "Reliability and security under load, faults and hostile input"):

* starts ``openenv-gym serve CartPole-v1 --max-frame-bytes 262144`` as a subprocess on
  127.0.0.1 (stopped by its PID in a ``finally``);
* opens several concurrent fuzzing connections (stock JSON, ``openenv-gym.json.v1`` and
  ``openenv-gym.msgpack.v1``) and sends generated frames, one at a time per connection,
  from a seeded ``random.Random`` per connection: valid messages, wrong types in every
  field, byte mutations (flip / overwrite / truncate / insert / delete / duplicate) of
  valid JSON and msgpack frames, random bytes and random values, msgpack ext type 1/2/3
  attacks (a 10 GB array declared with 8 bytes of data, product overflow, 255 dims,
  forbidden dtypes, truncated headers, ...), nesting 1e5 levels deep, long and
  huge-declared containers, frames above the server's frame limit, the wrong frame kind,
  invalid UTF-8 text frames; reconnecting whenever the server closes a connection;
* classifies every frame's outcome: a structured error frame (by code), a valid reply,
  a clean close (1000, or 1009 for an oversize frame), or a failure (anything else: another
  close code, a malformed reply, a "The server failed" internal error, no reply within 5 s
  = hang);
* meanwhile a healthy session (``RemoteEnv``, a separate process) plays seeded CartPole
  episodes and compares every step with a local ``gym.make("CartPole-v1")``;
* at the end: the server must still be alive and answer ``/health``; its RSS before,
  peak and after; the server log is scanned for tracebacks.

Writes benchmarks/results/reliability_fuzz.json (and the server log under results/logs/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _harness as h  # noqa: E402

RESULTS = HERE / "results"
LOGS = RESULTS / "logs"
MSGPACK = "openenv-gym.msgpack.v1"
JSONEXT = "openenv-gym.json.v1"
#: file name prefix of this run's logs and crash frames under results/logs/ (from --out)
LOG_PREFIX = "reliability_fuzz"
CLOSING_CODES = {"CAPACITY_REACHED", "FACTORY_ERROR", "SESSION_ERROR"}
HANG_S = 5.0
ALLOWED_DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
                  "<f2", "<f4", "<f8", "<c8", "<c16"]
BAD_DTYPES = ["|O", "O", "<U4", "|S4", "|V8", ">i4", ">f8", "<M8[s]", "<m8", "xyz", "", "<f4\x00",
              "\xff\xfe", "|b1" * 40, "<i4,<i4", "(2,)<i4", "<f16", "<g"]


# ------------------------------------------------------------ frame generation ----

def ext1_payload(dtype: str, shape: tuple[int, ...], data: bytes, *, ndim: int | None = None,
                 code_len: int | None = None) -> bytes:
    """The ndarray ext layout of docs/protocol.md (lengths can lie on purpose)."""
    code = dtype.encode("latin-1")
    n = len(shape) if ndim is None else ndim
    cl = len(code) if code_len is None else code_len
    return struct.pack("<BB", cl & 0xFF, n & 0xFF) + code + b"".join(
        struct.pack("<Q", d & 0xFFFFFFFFFFFFFFFF) for d in shape) + data


#: ``{"type": "step", "data": {"action": `` in msgpack, to append a raw value to.
STEP_ACTION_PREFIX = b"\x82\xa4type\xa4step\xa4data\x81\xa6action"


def raw_ext(code: int, data: bytes) -> bytes:
    """A msgpack ext value with any type code (msgpack.ExtType refuses negative ones)."""
    n = len(data)
    c = code & 0xFF
    fixed = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}
    if n in fixed:
        return bytes([fixed[n], c]) + data
    if n < 256:
        return bytes([0xC7, n, c]) + data
    if n < 65536:
        return b"\xc8" + struct.pack(">H", n) + bytes([c]) + data
    return b"\xc9" + struct.pack(">I", n) + bytes([c]) + data


class FrameGen:
    """Seeded generator of (category, payload, as_text) for one connection kind."""

    def __init__(self, seed: int, kind: str, frame_limit: int) -> None:
        self.r = random.Random(seed)
        self.kind = kind  # "json" | "jsonext" | "msgpack"
        self.binary = kind == "msgpack"
        self.limit = frame_limit
        self.field_cycle = 0
        import msgpack
        self.msgpack = msgpack
        # weights: (category, weight)
        cats = [
            ("valid", 10), ("wrong_type", 20), ("mutation", 25), ("random_bytes", 7),
            ("random_value", 10), ("special", 8), ("deep_nesting", 2), ("long_container", 3),
            ("oversize", 1), ("wrong_kind", 1), ("invalid_utf8", 0.3),
        ]
        if self.binary:
            cats.append(("ndarray", 12))
            cats = [(c, w) for c, w in cats if c != "invalid_utf8"]
        self.cats = [c for c, _ in cats]
        self.weights = [w for _, w in cats]
        self._cache: dict[Any, Any] = {}
        self.variant: str | None = None
        #: variants that crashed the server once (confirmed by replay) and are not sent again
        self.disabled: set[str] = set()

    # -- encoding
    def enc(self, msg: Any) -> Any:
        if self.binary:
            return self.msgpack.packb(msg, use_bin_type=True)
        return json.dumps(msg, separators=(",", ":"), allow_nan=True)

    # -- random pieces
    def rstr(self, max_len: int = 24) -> str:
        r = self.r
        n = r.choice([0, 1, 2, 5, 10, max_len, r.randint(0, max_len)])
        pools = ["abcdefghijklmnopqrstuvwxyz", "0123456789-_ ", "\x00\x01\x1f\x7f\"\\/",
                 "é日本語🚀\u200b\u202e\ufeff\uffff", "\ud800\udfff\udc00"]
        pool = "".join(r.sample(pools, r.randint(1, len(pools))))
        s = "".join(r.choice(pool) for _ in range(n))
        if self.binary:  # msgpack cannot pack lone surrogates
            s = "".join(c for c in s if not 0xD800 <= ord(c) <= 0xDFFF)
        return s

    def rnum(self) -> Any:
        r = self.r
        choices = [0, 1, -1, 2, 255, 256, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**63 - 1,
                   -(2**63), 0.0, -0.0, 0.5, -1.5, 1e308, 5e-324, float("nan"), float("inf"),
                   float("-inf"), r.randint(-10**6, 10**6), r.random() * 1e6]
        if self.binary:
            choices += [2**64 - 1, 2**63]
        else:
            choices += [10**30, -(10**25), 10**4000]
        return r.choice(choices)

    def rvalue(self, depth: int = 0) -> Any:
        r = self.r
        k = r.randint(0, 9 if depth < 4 else 5)
        if k == 0:
            return None
        if k == 1:
            return r.random() < 0.5
        if k in (2, 3):
            return self.rnum()
        if k in (4, 5):
            return self.rstr()
        if k == 6 and self.binary:
            return r.randbytes(r.randint(0, 16))
        if k in (6, 7):
            return [self.rvalue(depth + 1) for _ in range(r.randint(0, 4))]
        if k == 8:
            return {self.rstr(8): self.rvalue(depth + 1) for _ in range(r.randint(0, 4))}
        if self.binary:
            return self.msgpack.ExtType(r.randint(0, 127), r.randbytes(r.randint(0, 12)))
        return {"type": self.rstr(6), "data": self.rvalue(depth + 1)}

    def valid_msg(self) -> dict:
        r = self.r
        x = r.random()
        if x < 0.30:
            data: dict = {}
            if r.random() < 0.8:
                data["seed"] = r.randint(0, 2**31)
            if r.random() < 0.5:
                data["episode_id"] = f"fuzz-{r.randint(0, 10**6)}"
            if r.random() < 0.1:
                data["low"], data["high"] = -0.01, 0.01  # CartPole's reset options
            return {"type": "reset", "data": data} if data or r.random() < 0.5 else {"type": "reset"}
        if x < 0.80:
            data = {"action": r.randint(0, 1)}
            if r.random() < 0.1:
                data["metadata"] = {"note": self.rstr(8)}
            return {"type": "step", "data": data}
        if x < 0.92:
            return {"type": "state"}
        if x < 0.96:
            return {"type": "render"}
        if x < 0.995:
            return {"type": "mcp", "data": {"jsonrpc": "2.0", "id": r.randint(0, 99),
                                            "method": r.choice(["tools/list", "tools/call", "x"])}}
        return {"type": "close"}

    # -- categories
    def gen(self) -> tuple[str, str, Any, bool | None]:
        """(category, variant, payload, as_text); variants in ``self.disabled`` are skipped."""
        for _ in range(1000):
            cat = self.r.choices(self.cats, self.weights)[0]
            self.variant = None
            payload, text = getattr(self, "g_" + cat)()
            variant = f"{cat}/{self.variant}" if self.variant else cat
            if variant not in self.disabled:
                return cat, variant, payload, text
        raise RuntimeError("every variant is disabled")

    def g_valid(self):
        return self.enc(self.valid_msg()), None

    FIELD_PATHS = [(), ("type",), ("data",), ("data", "seed"), ("data", "episode_id"),
                   ("data", "action"), ("data", "metadata"), ("data", "types"), ("extra",),
                   ("data", "extra"), ("data", "low"), ("data", "high"), ("data", "jsonrpc"),
                   ("data", "method"), ("data", "params")]

    def g_wrong_type(self):
        """Walk every field of every message kind, putting a value of each type in it."""
        i = self.field_cycle
        self.field_cycle += 1
        path = self.FIELD_PATHS[i % len(self.FIELD_PATHS)]
        base_type = ["reset", "step", "state", "close", "render", "mcp"][(i // len(self.FIELD_PATHS)) % 6]
        if base_type == "close":
            base_type = "step"  # a close ends the connection; keep those in "valid"
        msg: Any = {"type": base_type}
        if base_type == "reset":
            msg["data"] = {"seed": 1, "episode_id": "e"}
        elif base_type == "step":
            msg["data"] = {"action": 1}
        elif base_type == "mcp":
            msg["data"] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        value = self.rvalue()
        if path == ():
            msg = value
        elif len(path) == 1:
            msg[path[0]] = value
        else:
            data = msg.get("data")
            if not isinstance(data, dict):
                data = msg["data"] = {}
            data[path[1]] = value
        if isinstance(msg, dict) and msg.get("type") == "close":
            msg["type"] = "step"
        return self.enc(msg), None

    def g_mutation(self):
        r = self.r
        msg = self.valid_msg()
        if msg.get("type") == "close":
            msg = {"type": "state"}
        frame = self.enc(msg)
        raw = bytearray(frame if self.binary else frame.encode())
        for _ in range(r.randint(1, 4)):
            op = r.randint(0, 6)
            n = len(raw)
            if op == 0 and n:  # bit flip
                raw[r.randrange(n)] ^= 1 << r.randrange(8)
            elif op == 1 and n:  # overwrite with a random / interesting byte
                raw[r.randrange(n)] = r.choice([0, 0xFF, 0x7F, 0x80, 0xC1, 0xD9, 0xDB, 0xDD, 0xDF,
                                                0xC7, 0xC9, 0xD4, 0xD8, ord("["), ord("{"),
                                                ord('"'), ord("\\"), r.randrange(256)])
            elif op == 2 and n:  # truncate
                del raw[r.randrange(n):]
            elif op == 3:  # insert random bytes
                pos = r.randrange(n + 1)
                raw[pos:pos] = r.randbytes(r.randint(1, 8))
            elif op == 4 and n:  # delete a range
                a = r.randrange(n)
                del raw[a:a + r.randint(1, 8)]
            elif op == 5 and n:  # duplicate a slice
                a = r.randrange(n)
                b = min(n, a + r.randint(1, 16))
                raw[b:b] = raw[a:b]
            elif op == 6 and n:  # splice another valid frame in
                other = self.enc(self.valid_msg())
                other_b = other if self.binary else other.encode()
                pos = r.randrange(n + 1)
                raw[pos:pos] = other_b[: r.randint(1, len(other_b))]
        data = bytes(raw)
        if self.binary:
            return data, None
        return data.decode("utf-8", "replace"), None

    def g_random_bytes(self):
        r = self.r
        n = r.choice([0, 1, 2, 3, 8, 64, 512, r.randint(0, 4096)])
        data = r.randbytes(n)
        if self.binary:
            if r.random() < 0.3 and n:  # start with a msgpack map header
                data = bytes([r.choice([0x81, 0x82, 0xDE, 0xDF])]) + data
            return data, None
        return data.decode("utf-8", "replace"), None

    def g_random_value(self):
        return self.enc(self.rvalue()), None

    def g_special(self):
        r = self.r
        if self.binary:
            mp = self.msgpack
            options = [
                lambda: mp.packb({1: "step"}, use_bin_type=True),  # non-str key
                lambda: mp.packb({"type": b"step", "data": {"action": 1}}, use_bin_type=True),
                lambda: mp.packb({"type": "step", "data": {"action": 2**64 - 1}}),
                lambda: mp.packb({"type": "step", "data": {"action": -(2**63)}}),
                lambda: mp.packb({"type": "reset", "data": {"seed": 2**64 - 1}}),
                lambda: mp.packb({"type": "reset", "data": {"seed": -1}}),
                lambda: mp.packb({"type": "reset", "data": {"seed": 1.5}}),
                lambda: mp.packb({"type": "reset", "data": {"episode_id": "x" * 256}}),
                lambda: mp.packb({"type": "reset", "data": {"low": float("nan"), "high": 1.0}}),
                lambda: mp.packb({"type": "reset", "data": {"low": 1.0, "high": -1.0}}),
                lambda: mp.packb({"type": "reset", "data": {"low": "a", "high": [1]}}),
                lambda: STEP_ACTION_PREFIX + raw_ext(-1, b"\0" * 4),  # a msgpack Timestamp
                lambda: STEP_ACTION_PREFIX + raw_ext(-1, b"\0" * 3),  # a broken Timestamp
                lambda: STEP_ACTION_PREFIX + raw_ext(r.randint(-128, -2), r.randbytes(r.randint(0, 20))),
                lambda: mp.packb({"type": "step", "data": {"action": True}}),
                lambda: mp.packb({"type": "step", "data": {"action": 1.0}}),
                lambda: mp.packb({"type": "step", "data": {"action": "1"}}),
                lambda: mp.packb({"type": "step", "data": {"action": 1}, "type2": 1}),
                lambda: mp.packb([{"type": "step"}]),
                lambda: mp.packb(None),
                lambda: b"",
                lambda: mp.packb({"type": "step", "data": {"action": 1}}) * 2,  # two maps
                lambda: mp.packb({"type": "step", "data": {"action": 1}}) + b"\xc1",
                lambda: b"\xc1",  # never-used byte
                lambda: mp.packb({"type": "reset"})[:-1],
                lambda: b"\xdf\xff\xff\xff\xff",  # map32 declaring 4G pairs
                lambda: b"\xdd\xff\xff\xff\xff",  # array32 declaring 4G items
                lambda: b"\xdb\xff\xff\xff\xff" + b"a" * 8,  # str32 declaring 4 GB
                lambda: b"\xc6\xff\xff\xff\xff" + b"a" * 8,  # bin32 declaring 4 GB
                lambda: b"\xc9\xff\xff\xff\xff\x01" + b"a" * 8,  # ext32 declaring 4 GB
                lambda: b"\x82\xa4type\xa4step\xa4data\x81\xa6action\xcf" + b"\xff" * 8,
            ]
            i = r.randrange(len(options))
            self.variant = f"msgpack{i}"
            return options[i](), None
        big_int = "9" * r.choice([4299, 4301, 10000])
        options = [
            '{"type":"reset","data":{"seed":NaN}}', '{"type":"reset","data":{"seed":Infinity}}',
            '{"type":"step","data":{"action":-Infinity}}', '{"type":"step","data":{"action":1e400}}',
            '{"type":"reset","data":{"seed":' + big_int + "}}",
            '{"type":"step","data":{"action":' + big_int + "}}",
            '{"type":"step","data":{"action":1},"type":"reset"}',  # duplicate key
            '{"type":"step","data":{"action":1,"action":0}}',
            "\ufeff" + '{"type":"state"}', "", " ", "\n\t", "null", "[]", "1", '"state"',
            '{"type":"state"} trailing', '{"type":"state"}{"type":"state"}',
            '{"type":"state" /* c */}', "{'type':'state'}", '{"type":"\\ud800"}',
            '{"type":"reset","data":{"episode_id":"\\ud800\\udfff\\ud800"}}',
            '{"type":"step","data":{"action":"\\u0000"}}', '{"type":"step\\u0000"}',
            '{"type":"reset","data":{"episode_id":"' + "x" * 256 + '"}}',
            '{"type":"reset","data":{"low":NaN,"high":1}}',
            '{"type":"reset","data":{"low":1,"high":-1}}',
            '{"type":"reset","data":{"low":"a","high":[1]}}',
            '{"type":"reset","data":{"seed":-1}}', '{"type":"reset","data":{"seed":1.0}}',
            '{"type":"reset","data":{"seed":true}}',
            '{"type":"step","data":{"action":true}}', '{"type":"step","data":{"action":1.0}}',
            '{"type":"step","data":{"action":[1]}}', '{"type":"step","data":{"action":{"a":1}}}',
            '{"type":"step","data":{"action":1,"types":{"np":"<i8"}}}',
            '{"type":"step","data":{"action":1,"types":{"np":"|O"}}}',
            '{"type":"step","data":{"action":1,"types":{"nd":"<f8"}}}',
            '{"type":"step","data":{"action":[[1]],"types":{"nd":"<i8"}}}',
            '{"type":"step","data":{"action":1,"types":{"tuple":{"0":{"np":"<u1"}}}}}',
            '{"type":"step","data":{"action":1,"types":[1,2]}}',
            "\x00" * 16, "\\", '"', "{", "[" * 70 + "]" * 70,
        ]
        i = r.randrange(len(options))
        self.variant = f"json{i}"
        return options[i], None

    def g_deep_nesting(self):
        r = self.r
        n = r.choice([63, 64, 65, 1000, 100_000])
        key = ("deep", n, r.randint(0, 2))
        self.variant = f"{['list', 'map', 'action'][key[2]]}{n}"
        if key not in self._cache:
            variant = key[2]
            if self.binary:
                inner = b"\x91" * n + b"\x01" if variant != 1 else b"\x81\xa1a" * n + b"\xc0"
                if variant == 2:  # nested inside a valid envelope, as the action
                    frame = STEP_ACTION_PREFIX + inner
                else:
                    frame = inner
            else:
                if variant == 1:
                    inner = '{"a":' * n + "null" + "}" * n
                else:
                    inner = "[" * n + "1" + "]" * n
                frame = ('{"type":"step","data":{"action":' + inner + "}}") if variant == 2 else inner
            self._cache[key] = frame
        return self._cache[key], None

    def g_long_container(self):
        r = self.r
        budget = self.limit - 4096
        x = r.randint(0, 4)
        if x == 0:  # a long list as the action
            n = r.choice([1000, 20_000, budget // 3])
            msg: Any = {"type": "step", "data": {"action": [1] * n}}
        elif x == 1:  # many keys in data
            n = r.choice([100, 5000, budget // 20])
            msg = {"type": "reset", "data": {f"k{i}": i for i in range(n)}}
        elif x == 2:  # a long string
            msg = {"type": "reset", "data": {"episode_id": "e" * r.choice([256, 10_000, budget - 100])}}
        elif x == 3:  # a long list as the envelope
            msg = [0] * r.choice([10, 1000, budget // 3])
        else:  # many keys in the envelope
            msg = {f"k{i}": None for i in range(r.choice([2, 100, budget // 20]))}
            msg["type"] = "state"
        return self.enc(msg), None

    def g_oversize(self):
        r = self.r
        size = self.limit + r.choice([1, 1000, self.limit])
        if self.binary:
            return self.msgpack.packb({"type": "reset", "data": {"episode_id": "x" * size}}), None
        return json.dumps({"type": "reset", "data": {"episode_id": "x" * size}}), None

    def g_wrong_kind(self):
        frame = self.enc({"type": "state"})
        if self.binary:
            return json.dumps({"type": "state"}), True  # text frame on a msgpack session
        return frame.encode(), False  # binary frame on a JSON session

    def g_invalid_utf8(self):
        return b'{"type":"state","x":"\xff\xfe"}', True  # a text frame that is not UTF-8

    def g_ndarray(self):
        r = self.r
        mp = self.msgpack
        x = r.randint(0, 15)
        self.variant = f"x{x}"
        if x == 0:  # the doc's case: a 10 GB array declared with 8 bytes of data
            payload = ext1_payload("|u1", (10 * 1024**3,), b"\0" * 8)
        elif x == 1:  # product overflow / enormous shapes
            payload = ext1_payload(r.choice(ALLOWED_DTYPES), (2**64 - 1,) * r.randint(1, 32), b"\0" * 8)
        elif x == 2:
            payload = ext1_payload("<f8", (2**32, 2**32), b"\0" * 8)
        elif x == 3:  # too many dims, or ndim lying about the header length
            nd = r.choice([33, 64, 255])
            payload = ext1_payload("<i4", (1,) * r.choice([0, 1, nd]), b"\0" * 4, ndim=nd)
        elif x == 4:  # forbidden dtypes
            payload = ext1_payload(r.choice(BAD_DTYPES), (2,), b"\0" * 16)
        elif x == 5:  # code length lying
            payload = ext1_payload("<i4", (1,), b"\0" * 4, code_len=r.choice([0, 1, 200, 255]))
        elif x == 6:  # truncated
            full = ext1_payload("<i4", (3,), b"\1" * 12)
            payload = full[: r.randint(0, len(full) - 1)]
        elif x == 7:  # too much data
            payload = ext1_payload("<i4", (3,), b"\1" * r.choice([13, 16, 100]))
        elif x == 8:  # zero-size arrays, zero dims
            payload = ext1_payload(r.choice(ALLOWED_DTYPES), r.choice([(0,), (0, 2**63), (2**63, 0), ()]),
                                   b"" if r.random() < 0.5 else b"\0")
        elif x == 9:  # a valid array as the action (Discrete wants an int)
            dt = r.choice(ALLOWED_DTYPES)
            import numpy as np
            itemsize = np.dtype(dt).itemsize
            shape = r.choice([(), (1,), (2, 2)])
            count = 1
            for d in shape:
                count *= d
            payload = ext1_payload(dt, shape, r.randbytes(itemsize * count))
        elif x == 10:  # numpy scalar ext 2: valid (a good action), with a shape, or a wrong size
            import numpy as np
            dt = r.choice(["<i8", "|u1", "|b1", "<i4", "<f4", "<u8"])
            if r.random() < 0.6:
                scalar = ext1_payload(dt, (), np.array(r.randint(0, 1), dtype=dt).tobytes())
            elif r.random() < 0.5:
                scalar = ext1_payload("<i8", (2,), b"\0" * 16)
            else:
                scalar = ext1_payload(dt, (), b"\0" * r.choice([0, 3, 9]))
            return mp.packb({"type": "step", "data": {"action": mp.ExtType(2, scalar)}}), None
        elif x == 11:  # tuple ext 3: garbage payload, or nested tuples
            if r.random() < 0.5:
                inner = r.randbytes(r.randint(0, 32))
            else:
                inner = mp.packb([0, 1])
                depth = r.choice([2, 100, 300, 2000])
                self.variant = f"ext3_nested{depth}"
                for _ in range(depth):
                    inner = mp.packb([mp.ExtType(3, inner)])
            return mp.packb({"type": "step", "data": {"action": mp.ExtType(3, inner)}}), None
        elif x == 12:  # unknown ext codes
            code = r.choice([0, 4, 5, 42, 127, -2, -128])
            return STEP_ACTION_PREFIX + raw_ext(code, r.randbytes(8)), None
        elif x == 13:  # ext in a map key / as the type / as seed
            place = r.randint(0, 2)
            ext = mp.ExtType(1, ext1_payload("<i4", (1,), b"\0" * 4))
            if place == 0:
                return b"\x81" + mp.packb(ext) + b"\x01", None  # {ext: 1}
            if place == 1:
                return mp.packb({"type": ext}), None
            return mp.packb({"type": "reset", "data": {"seed": ext, "episode_id": ext}}), None
        elif x == 14:  # array as reset options (go to env.reset(options=...))
            return mp.packb({"type": "reset", "data": {"low": mp.ExtType(1, ext1_payload("<f4", (2,), b"\0" * 8)),
                                                       "high": mp.ExtType(1, ext1_payload("<f4", (0,), b""))}}), None
        else:  # ext 1 payload declaring the maximum size with little data, in a random place
            payload = ext1_payload("<c16", (2**59,), b"\0" * 16)
        where = r.randint(0, 2)
        ext = mp.ExtType(1, payload)
        if where == 0:
            return mp.packb({"type": "step", "data": {"action": ext}}), None
        if where == 1:
            return mp.packb({"type": "step", "data": {"action": 1, "metadata": {"a": [ext, ext]}}}), None
        return mp.packb(ext), None



# ------------------------------------------------------------ fuzzing client ----

class Tally:
    def __init__(self) -> None:
        self.frames = 0
        self.outcomes: Counter[str] = Counter()          # outcome -> count
        self.by_cat: dict[str, Counter[str]] = defaultdict(Counter)  # category -> outcome -> count
        self.bytes_sent = 0
        self.reconnects = 0
        self.connect_failures: Counter[str] = Counter()
        self.failures: list[dict] = []                    # first examples of each failure
        self.failure_kinds: Counter[str] = Counter()
        self.closes_after_error: Counter[str] = Counter()
        self.max_reply_s = 0.0
        self.slowest: dict = {}

    def record(self, cat: str, outcome: str, payload: Any, detail: str = "") -> None:
        self.frames += 1
        self.outcomes[outcome] += 1
        self.by_cat[cat][outcome] += 1
        if is_failure(cat, outcome):
            key = f"{cat}:{outcome}"
            self.failure_kinds[key] += 1
            if self.failure_kinds[key] <= 3 and len(self.failures) < 60:
                preview = payload if isinstance(payload, str) else repr(payload)
                self.failures.append({"category": cat, "outcome": outcome, "detail": detail[:600],
                                      "frame_preview": preview[:300], "frame_len": len(payload)})


def is_failure(cat: str, outcome: str) -> bool:
    if outcome.startswith("error:"):
        return outcome.endswith(":internal")
    if outcome.startswith("valid:"):
        return False
    if outcome in ("close:1000", "close:1009"):
        return False
    if outcome == "close:1007" and cat == "invalid_utf8":
        return False  # RFC 6455 8.1: a text frame that is not UTF-8 fails the connection with 1007
    return True


def decode_reply(reply: Any, binary: bool) -> Any:
    import msgpack
    if binary:
        if not isinstance(reply, (bytes, bytearray)):
            raise ValueError(f"text reply on a msgpack session: {reply[:200]!r}")
        return msgpack.unpackb(reply, raw=False, strict_map_key=False,
                               ext_hook=lambda c, d: msgpack.ExtType(c, d))
    if not isinstance(reply, str):
        raise ValueError(f"binary reply on a JSON session: {reply[:200]!r}")
    return json.loads(reply)


class Ctx:
    """State shared by the fuzzing connections and the monitor (one event loop)."""

    def __init__(self, server: h.Server, ws_url: str) -> None:
        self.server = server
        self.ws_url = ws_url
        self.epoch = 0                      # bumped at every server restart
        self.running = asyncio.Event()      # cleared while a crash is being handled
        self.running.set()
        self.disabled: set[str] = set()     # variants confirmed to crash the server
        self.candidates: list[dict] = []    # frames in flight when the server died
        self.crashes: list[dict] = []

    async def server_died(self, epoch: int, wait: float = 2.0) -> bool:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.epoch != epoch or not self.server.alive() or not self.running.is_set():
                return True
            await asyncio.sleep(0.05)
        return False


async def fuzz_connection(idx: int, kind: str, ctx: Ctx, seed: int, frame_limit: int,
                          tally: Tally, stop: dict) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    gen = FrameGen(seed, kind, frame_limit)
    gen.disabled = ctx.disabled
    subprotocols = {"json": None, "jsonext": [JSONEXT], "msgpack": [MSGPACK]}[kind]
    binary = kind == "msgpack"
    ws = None
    connect_failures = 0
    try:
        while not stop["now"]:
            if not ctx.running.is_set():
                if ws is not None:
                    await _drop(ws)
                    ws = None
                await ctx.running.wait()
                continue
            if ws is None:
                try:
                    ws = await asyncio.wait_for(connect(ctx.ws_url, subprotocols=subprotocols, compression=None,
                                                        max_size=None, open_timeout=10, close_timeout=2,
                                                        ping_interval=None), 15)
                    expected = None if kind == "json" else subprotocols[0]
                    if ws.subprotocol != expected:
                        tally.connect_failures[f"subprotocol {ws.subprotocol!r} != {expected!r}"] += 1
                except Exception as exc:  # noqa: BLE001
                    ws = None
                    if not ctx.running.is_set() or not ctx.server.alive():
                        await asyncio.sleep(0.2)  # a crash is being handled
                        continue
                    tally.connect_failures[f"{type(exc).__name__}: {exc}"[:200]] += 1
                    connect_failures += 1
                    if connect_failures > 50:
                        tally.failure_kinds["connect:gave_up"] += 1
                        return
                    await asyncio.sleep(0.2)
                    continue
                tally.reconnects += 1
            if tally.frames >= stop["max_frames"] or time.monotonic() > stop["deadline"]:
                stop["now"] = True
                break
            cat, variant, payload, text = gen.gen()
            tally.bytes_sent += len(payload)
            epoch = ctx.epoch
            try:
                await ws.send(payload, text=text) if text is not None else await ws.send(payload)
                started = time.monotonic()
                reply = await asyncio.wait_for(ws.recv(), HANG_S)
            except asyncio.TimeoutError:
                if await ctx.server_died(epoch, 0.1):
                    tally.record(cat, "server_crash", payload, f"variant {variant}")
                    ctx.candidates.append({"variant": variant, "kind": kind, "payload": payload, "text": text})
                else:
                    tally.record(cat, "hang", payload, f"variant {variant}: no reply within {HANG_S} s")
                await _drop(ws)
                ws = None
                continue
            except (ConnectionClosed, OSError) as exc:
                code = getattr(getattr(exc, "rcvd", None), "code", None) or 1006
                if code == 1006 and await ctx.server_died(epoch):
                    tally.record(cat, "server_crash", payload, f"variant {variant}")
                    ctx.candidates.append({"variant": variant, "kind": kind, "payload": payload, "text": text})
                else:
                    tally.record(cat, f"close:{code}", payload, f"variant {variant}: {type(exc).__name__}: {exc}")
                ws = None
                continue
            took = time.monotonic() - started
            if took > tally.max_reply_s:
                tally.max_reply_s = took
                tally.slowest = {"seconds": took, "variant": variant, "kind": kind, "len": len(payload),
                                 "frame_preview": (payload if isinstance(payload, str) else repr(payload))[:200]}
            try:
                msg = decode_reply(reply, binary)
                mtype = msg.get("type") if isinstance(msg, dict) else None
                data = msg.get("data") if isinstance(msg, dict) else None
                if mtype == "error" and isinstance(data, dict):
                    code = str(data.get("code"))
                    text_msg = str(data.get("message", ""))
                    internal = text_msg.startswith("The server failed")
                    outcome = f"error:{code}" + (":internal" if internal else "")
                    tally.record(cat, outcome, payload, f"variant {variant}: {text_msg}")
                    if code in CLOSING_CODES:
                        # the server must now close with 1000
                        try:
                            extra = await asyncio.wait_for(ws.recv(), HANG_S)
                            tally.closes_after_error[f"{code}->frame"] += 1
                            tally.failure_kinds[f"{cat}:no_close_after_{code}"] += 1
                            tally.failures.append({"category": cat, "outcome": "no_close_after_closing_error",
                                                   "detail": repr(extra)[:300]})
                        except asyncio.TimeoutError:
                            tally.failure_kinds[f"{cat}:hang_after_{code}"] += 1
                        except (ConnectionClosed, OSError) as exc:
                            ccode = getattr(getattr(exc, "rcvd", None), "code", None) or 1006
                            tally.closes_after_error[f"{code}->{ccode}"] += 1
                            if ccode != 1000:
                                tally.failure_kinds[f"{cat}:close_{ccode}_after_{code}"] += 1
                        await _drop(ws)
                        ws = None
                elif mtype in ("observation", "state", "mcp", "render") and isinstance(data, dict):
                    tally.record(cat, f"valid:{mtype}", payload)
                else:
                    tally.record(cat, "bad_reply", payload, repr(msg)[:300])
            except Exception as exc:  # noqa: BLE001
                tally.record(cat, "undecodable_reply", payload, f"{type(exc).__name__}: {exc}")
    finally:
        if ws is not None:
            await _drop(ws)


async def _drop(ws) -> None:
    try:
        await asyncio.wait_for(ws.close(), 3)
    except Exception:  # noqa: BLE001
        pass


async def replay_kills(ws_url: str, server: h.Server, cand: dict) -> tuple[bool, str]:
    """Send one candidate frame alone on a fresh connection; did the server die?"""
    from websockets.asyncio.client import connect
    subprotocols = {"json": None, "jsonext": [JSONEXT], "msgpack": [MSGPACK]}[cand["kind"]]
    note = ""
    try:
        async with connect(ws_url, subprotocols=subprotocols, compression=None, max_size=None,
                           open_timeout=10, close_timeout=2, ping_interval=None) as ws:
            if cand["text"] is not None:
                await ws.send(cand["payload"], text=cand["text"])
            else:
                await ws.send(cand["payload"])
            reply = await asyncio.wait_for(ws.recv(), HANG_S)
            note = f"reply {reply[:160]!r}"
    except Exception as exc:  # noqa: BLE001
        note = f"{type(exc).__name__}: {exc}"
    for _ in range(20):
        if not server.alive():
            return True, note
        await asyncio.sleep(0.05)
    return False, note


class Crashes:
    """Restarts the server (same port) after a crash, finds the frame that killed it by
    replaying the frames in flight one at a time, and disables that variant."""

    def __init__(self, ctx: Ctx, tally: Tally, on_restart, keep_crashers: bool, max_crashes: int) -> None:
        self.ctx, self.tally, self.on_restart = ctx, tally, on_restart
        self.keep_crashers, self.max_crashes = keep_crashers, max_crashes
        self.restarts = 0

    async def restart(self) -> None:
        server = self.ctx.server
        self.restarts += 1
        server.stop()
        server.log_path = LOGS / f"{LOG_PREFIX}-server-restart{self.restarts}.log"
        server.start()
        ok = await asyncio.to_thread(server.wait_ready, 60)
        if not ok:
            raise RuntimeError(f"server did not restart: {server.error}")

    async def handle(self) -> bool:
        """Handle a dead server; False when the run must stop."""
        ctx = self.ctx
        ctx.running.clear()
        server = ctx.server
        crash = {"at_frame": self.tally.frames, "returncode": server.proc.returncode if server.proc else None,
                 "time": time.strftime("%H:%M:%S"), "log": str(server.log_path)}
        h.progress(f"SERVER DIED (returncode {crash['returncode']}) at frame {self.tally.frames:,}; "
                   f"replaying the frames in flight")
        await asyncio.sleep(1.5)  # let every connection register its frame in flight
        cands, ctx.candidates = ctx.candidates, []
        crash["in_flight"] = [{"variant": c["variant"], "kind": c["kind"], "len": len(c["payload"])}
                              for c in cands]
        crash["confirmed"] = []
        await self.restart()
        for i, cand in enumerate(cands):
            killed, note = await replay_kills(ctx.ws_url, server, cand)
            if killed:
                path = LOGS / f"{LOG_PREFIX}-crash{len(ctx.crashes) + 1}-{i}.bin"
                payload = cand["payload"]
                data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass")
                path.write_bytes(data)
                crash["confirmed"].append({"variant": cand["variant"], "kind": cand["kind"],
                                           "len": len(cand["payload"]), "returncode": server.proc.returncode,
                                           "frame_file": str(path.relative_to(HERE.parent)),
                                           "frame_head_hex": data[:48].hex(), "client_saw": note})
                h.progress(f"  confirmed: variant {cand['variant']} ({cand['kind']}, {len(data):,} B) "
                           f"kills the server (returncode {server.proc.returncode}); saved {path.name}")
                if not self.keep_crashers:
                    ctx.disabled.add(cand["variant"])
                await self.restart()
        crash["disabled_after"] = sorted(ctx.disabled)
        ctx.crashes.append(crash)
        ctx.epoch += 1
        self.on_restart()
        ctx.running.set()
        return len(ctx.crashes) < self.max_crashes


async def fuzz_main(args, ctx: Ctx, tally: Tally, rss: dict, on_restart) -> dict:
    kinds = (["msgpack", "json", "msgpack", "jsonext"] * 8)[: args.connections]
    stop = {"now": False, "max_frames": args.frames, "deadline": time.monotonic() + args.seconds}
    crashes = Crashes(ctx, tally, on_restart, args.keep_crashers, args.max_crashes)
    tasks = [asyncio.create_task(fuzz_connection(i, k, ctx, args.seed * 1000 + i, args.max_frame_bytes,
                                                 tally, stop)) for i, k in enumerate(kinds)]
    t0 = time.monotonic()
    next_report = args.progress_every
    while not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
        if not ctx.server.alive():
            if not await crashes.handle():
                h.progress(f"{len(ctx.crashes)} crashes: stopping the run")
                stop["now"] = True
                break
            continue
        status = h.proc_status(ctx.server.pid)
        if status:
            rss["peak_kib"] = max(rss.get("peak_kib", 0), status.get("VmRSS", 0))
        if tally.frames >= next_report:
            el = time.monotonic() - t0
            fails = sum(tally.failure_kinds.values())
            h.progress(f"{tally.frames:,} frames in {el:.0f} s ({tally.frames / el:,.0f}/s); "
                       f"failures {fails}; crashes {len(ctx.crashes)}; connects {tally.reconnects:,}; "
                       f"server RSS {status.get('VmRSS', 0) / 1024:.0f} MiB")
            next_report += args.progress_every
    stop["now"] = True
    ctx.running.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for res in results:
        if isinstance(res, BaseException):
            tally.failure_kinds["fuzzer_task_crashed"] += 1
            tally.failures.append({"category": "fuzzer", "outcome": "task_crashed",
                                   "detail": "".join(traceback.format_exception(res))[-1500:]})
    return {"elapsed_s": time.monotonic() - t0, "kinds": kinds, "restarts": crashes.restarts}


# ------------------------------------------------------------ healthy session ----

def healthy_main(argv: list[str]) -> int:
    """Child process: RemoteEnv plays seeded episodes, each step checked against a local env."""
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--encoding", default="msgpack")
    p.add_argument("--stop-file", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import gymnasium as gym
    import numpy as np

    import openenv_gym

    result: dict[str, Any] = {"encoding": a.encoding, "steps": 0, "episodes": 0, "mismatches": 0,
                              "errors": [], "first_mismatch": None}
    deadline = time.monotonic() + a.seconds
    rng = random.Random(a.seed)
    lat: list[float] = []
    try:
        remote = openenv_gym.RemoteEnv(a.url, encoding=a.encoding, message_timeout=15.0)
        result["encoding_used"] = remote.encoding
        local = gym.make("CartPole-v1")
        ep = 0
        while not os.path.exists(a.stop_file) and time.monotonic() < deadline and ep < 100_000:
            seed = a.seed * 100_000 + ep
            o1, _ = remote.reset(seed=seed)
            o2, _ = local.reset(seed=seed)
            if not np.array_equal(np.asarray(o1), o2) or np.asarray(o1).dtype != o2.dtype:
                result["mismatches"] += 1
                result["first_mismatch"] = result["first_mismatch"] or {"episode": ep, "step": 0,
                                                                        "remote": repr(o1), "local": repr(o2)}
            done = False
            t = 0
            while not done and t < 1000:
                action = rng.randint(0, 1)
                s = time.perf_counter()
                r1 = remote.step(action)
                lat.append(time.perf_counter() - s)
                r2 = local.step(action)
                same = (np.array_equal(np.asarray(r1[0]), r2[0]) and np.asarray(r1[0]).dtype == r2[0].dtype
                        and float(r1[1]) == float(r2[1]) and bool(r1[2]) == bool(r2[2])
                        and bool(r1[3]) == bool(r2[3]))
                if not same:
                    result["mismatches"] += 1
                    if result["first_mismatch"] is None:
                        result["first_mismatch"] = {"episode": ep, "step": t + 1,
                                                    "remote": repr(r1[:4]), "local": repr(r2[:4])}
                result["steps"] += 1
                t += 1
                done = bool(r2[2] or r2[3])
            ep += 1
            result["episodes"] = ep
            if ep == 1 or ep % 50 == 0:
                st = remote.state()
                result.setdefault("state_checks", 0)
                result["state_checks"] += 1
                if st.get("step_count") != t:
                    result["errors"].append(f"state step_count {st.get('step_count')} != {t}")
        remote.close()
    except Exception as exc:  # noqa: BLE001
        result["errors"].append("".join(traceback.format_exception(exc))[-2000:])
    lat.sort()
    result["step_rtt_ms"] = {q: (h.percentile(lat, q) or 0) * 1e3 for q in (50, 99, 100)}
    Path(a.out).write_text(json.dumps(result, default=str))
    return 0


# ------------------------------------------------------------ main ----

def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except Exception as exc:  # noqa: BLE001
        return -1, f"{type(exc).__name__}: {exc}"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "healthy":
        return healthy_main(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=150_000, help="frame cap (default 150,000)")
    p.add_argument("--seconds", type=float, default=360.0, help="fuzzing wall-time cap (default 360)")
    p.add_argument("--connections", type=int, default=8, help="concurrent fuzzing connections")
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--max-frame-bytes", type=int, default=262_144)
    p.add_argument("--progress-every", type=int, default=10_000)
    p.add_argument("--max-crashes", type=int, default=10, help="stop after this many server crashes")
    p.add_argument("--keep-crashers", action="store_true",
                   help="keep sending a variant after it was confirmed to crash the server")
    p.add_argument("--out", type=Path, default=RESULTS / "reliability_fuzz.json")
    args = p.parse_args()
    global LOG_PREFIX
    LOG_PREFIX = args.out.stem  # results/logs/<stem>-server.log, -healthy-*.log, -crash*.bin

    procs = h.ProcessSet()
    python = sys.executable
    log_path = LOGS / f"{LOG_PREFIX}-server.log"
    tally = Tally()
    rss: dict[str, Any] = {}
    result: dict[str, Any] = {"command": h.command_line(__file__, sys.argv[1:]),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    scratch = Path(tempfile.mkdtemp(prefix="openenv-gym-fuzz-"))  # healthy-session results, stop flag
    stop_file = scratch / "stop"
    for old in LOGS.glob(f"{LOG_PREFIX}-*"):
        old.unlink()
    healthy_segments: list[dict] = []  # one per (encoding, server incarnation)
    ok = False
    port = h.free_port()
    with h.GlobalTimeout(args.seconds + 240, procs):
        try:
            server = procs.add(h.Server(
                "fuzz-server",
                lambda port: [python, "-m", "openenv_gym.cli", "serve", "CartPole-v1", "--port", port,
                              "--max-frame-bytes", args.max_frame_bytes, "--max-sessions", 64],
                ready="http:/health", port=port, log_path=log_path))
            server.start()
            if not server.wait_ready(60):
                raise RuntimeError(f"server did not start: {server.error}")
            url = server.base_url
            ws_url = url.replace("http://", "ws://") + "/ws"
            cli = (f"openenv-gym serve CartPole-v1 --port {port} --max-frame-bytes {args.max_frame_bytes} "
                   f"--max-sessions 64")
            h.progress(f"server pid {server.pid}: {cli}")
            time.sleep(0.5)
            rss["before_kib"] = h.proc_status(server.pid).get("VmRSS")

            def start_healthy() -> None:
                n = len(healthy_segments)  # the sessions of a dead server end on their own
                for i, enc in enumerate(("msgpack", "json")):
                    out = scratch / f"healthy-{n + i}.json"
                    out.unlink(missing_ok=True)
                    proc = procs.add(h.ManagedProcess(
                        f"healthy-{enc}-{n + i}",
                        [python, str(Path(__file__).resolve()), "healthy", "--url", url, "--encoding", enc,
                         "--stop-file", stop_file, "--out", out, "--seconds", args.seconds + 30,
                         "--seed", args.seed + 10 * (n + i)],
                        log_path=LOGS / f"{LOG_PREFIX}-healthy-{n + i}-{enc}.log")).start()
                    healthy_segments.append({"encoding": enc, "proc": proc, "out": out,
                                             "server_epoch": len(ctx.crashes)})

            ctx = Ctx(server, ws_url)
            start_healthy()
            fz = asyncio.run(fuzz_main(args, ctx, tally, rss, start_healthy))
            stop_file.write_text("stop")
            healthy_res: list[dict] = []
            for seg in healthy_segments:
                if not with_timeout_wait(seg["proc"], 60):
                    tally.failure_kinds["healthy_did_not_stop"] += 1
                res = json.loads(seg["out"].read_text()) if seg["out"].exists() else {
                    "errors": [f"no result; log tail:\n{h.tail(seg['proc'].log_path)}"]}
                res["server_incarnation"] = seg["server_epoch"]
                res["ended_by_server_crash"] = seg["server_epoch"] < len(ctx.crashes)
                healthy_res.append(res)
            alive = server.alive()
            code, body = http_get(url + "/health")
            mcode, metrics = http_get(url + "/metrics")
            time.sleep(1.0)
            st = h.proc_status(server.pid)
            rss["after_kib"] = st.get("VmRSS")
            rss["hwm_kib"] = st.get("VmHWM")
            rss["threads_after"] = st.get("Threads")
            rss["note"] = ("before = first server process after start-up; after/hwm = the last server "
                           "process" + (f" (restarted {fz['restarts']} times after crashes)" if fz["restarts"] else ""))
            log_scan = scan_logs()
            n = tally.frames
            el = fz["elapsed_s"]
            hangs = tally.outcomes.get("hang", 0)
            fails = sum(tally.failure_kinds.values())
            healthy_ok = all(
                r.get("mismatches", 1) == 0 and r.get("steps", 0) > 0
                and (not r.get("errors") or r["ended_by_server_crash"]) for r in healthy_res)
            ok = (alive and code == 200 and hangs == 0 and fails == 0 and healthy_ok
                  and not ctx.crashes)
            result.update({
                "server_command": cli,
                "frames": n, "elapsed_s": el, "frames_per_s": n / el if el else None,
                "bytes_sent": tally.bytes_sent, "connections": fz["kinds"],
                "reconnects": tally.reconnects, "connect_failures": dict(tally.connect_failures),
                "outcomes": dict(tally.outcomes.most_common()),
                "by_category": {c: dict(v.most_common()) for c, v in sorted(tally.by_cat.items())},
                "closes_after_closing_error": dict(tally.closes_after_error),
                "failure_kinds": dict(tally.failure_kinds), "failure_examples": tally.failures,
                "hangs": hangs, "max_reply_s": tally.max_reply_s, "slowest_reply": tally.slowest,
                "server_crashes": ctx.crashes, "server_restarts": fz["restarts"],
                "disabled_variants": sorted(ctx.disabled),
                "healthy": healthy_res,
                "healthy_total": {
                    "steps": sum(r.get("steps", 0) for r in healthy_res),
                    "episodes": sum(r.get("episodes", 0) for r in healthy_res),
                    "mismatches": sum(r.get("mismatches", 0) for r in healthy_res),
                    "errors_not_caused_by_a_crash": sum(len(r.get("errors", [])) for r in healthy_res
                                                        if not r["ended_by_server_crash"]),
                },
                "server_alive": alive, "health": {"status": code, "body": body},
                "metrics_status": mcode,
                "metrics": [ln for ln in metrics.splitlines() if ln.startswith(
                    ("openenv_gym_errors_total", "openenv_gym_messages_total", "openenv_gym_sessions_total"))],
                "server_rss_kib": rss, "server_log": log_scan,
                "limits": {"max_frame_bytes": args.max_frame_bytes, "hang_s": HANG_S,
                           "frame_cap": args.frames, "seconds_cap": args.seconds},
                "machine": h.machine_info(["gymnasium", "websockets", "msgpack", "uvicorn", "numpy"]),
                "pass": ok,
            })
            print_report(result)
        finally:
            stop_file.write_text("stop")
            procs.stop_all()
            shutil.rmtree(scratch, ignore_errors=True)
            if result.get("frames") is not None:
                h.write_json(args.out, result)
                h.progress(f"wrote {args.out}")
    return 0 if ok else 1


def with_timeout_wait(proc: h.ManagedProcess, timeout: float) -> bool:
    if proc.proc is None:
        return True
    try:
        proc.proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.stop()
        return False


def scan_logs() -> dict:
    out: dict[str, Any] = {"files": [], "tracebacks": 0, "session_failed": 0, "exception_types": {}}
    types: Counter[str] = Counter()
    first = None
    for path in sorted(LOGS.glob(f"{LOG_PREFIX}-server*.log")):
        text = path.read_text(errors="replace")
        out["files"].append(str(path.relative_to(HERE.parent)))
        out["tracebacks"] += text.count("Traceback (most recent call last)")
        out["session_failed"] += text.count("session_failed")
        lines = text.splitlines()
        for i, ln in enumerate(lines):
            if ln.startswith("Traceback (most recent call last)"):
                j = i + 1
                while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
                    j += 1
                if j < len(lines):
                    kind = re.sub(r"characters? '[^']*'", "character(s) X", lines[j])
                    kind = re.sub(r"(in )?position \d+(-\d+)?", "position N", kind)
                    kind = re.sub(r"byte 0x[0-9a-f]+", "byte 0xNN", kind)
                    types[kind[:160]] += 1
                    if first is None:
                        first = "\n".join(lines[max(0, i - 1): j + 1])
    out["exception_types"] = dict(types.most_common(20))
    out["first_traceback"] = first and h.portable_text(first)
    return out


def print_report(r: dict) -> None:
    print()
    print(f"frames: {r['frames']:,} in {r['elapsed_s']:.1f} s = {r['frames_per_s']:,.0f} frames/s "
          f"over {len(r['connections'])} connections ({r['reconnects']:,} connects)")
    print("\n| outcome | frames |\n|---|---|")
    for k, v in r["outcomes"].items():
        print(f"| {k} | {v:,} |")
    print("\n| category | frames | outcomes |\n|---|---|---|")
    for c, v in r["by_category"].items():
        tot = sum(v.values())
        print(f"| {c} | {tot:,} | " + ", ".join(f"{k} {n:,}" for k, n in v.items()) + " |")
    print(f"\nclose after closing error: {r['closes_after_closing_error']}")
    print(f"failures: {r['failure_kinds'] or 'none'}; hangs: {r['hangs']}; "
          f"slowest reply {r['max_reply_s'] * 1e3:.1f} ms "
          f"({r['slowest_reply'].get('variant')}, {r['slowest_reply'].get('kind')})")
    for c in r["server_crashes"]:
        confirmed = [(x["variant"], x["len"], x["returncode"]) for x in c["confirmed"]]
        print(f"CRASH at frame {c['at_frame']:,}: returncode {c['returncode']}; confirmed {confirmed}")
    print(f"healthy total: {r['healthy_total']}")
    for hr in r["healthy"]:
        print(f"  healthy {hr.get('encoding')} (server #{hr['server_incarnation']}): {hr.get('steps', 0):,} steps, "
              f"{hr.get('episodes', 0)} episodes, mismatches {hr.get('mismatches')}, errors {len(hr.get('errors', []))}"
              f"{' (ended by a server crash)' if hr['ended_by_server_crash'] else ''}, rtt ms {hr.get('step_rtt_ms')}")
        for e in hr.get("errors", [])[:2]:
            print("     ", e.strip().splitlines()[-1][:300])
    rs = r["server_rss_kib"]
    print(f"server alive {r['server_alive']}, /health {r['health']['status']} {r['health']['body']}")
    print(f"server RSS before {rs.get('before_kib')} KiB, peak {rs.get('peak_kib')} KiB (HWM {rs.get('hwm_kib')}), "
          f"after {rs.get('after_kib')} KiB")
    lg = r["server_log"]
    print(f"server log: {lg['tracebacks']} tracebacks, {lg['session_failed']} session_failed; {lg['exception_types']}")
    print("PASS" if r["pass"] else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
