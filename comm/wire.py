"""The control plane's wire format: a small tagged binary encoding and HMAC-signed frames.

Nothing read from a socket is ever unpickled. Values are encoded as a type byte followed by
the value (all lengths and counts are unsigned 32-bit big-endian):

    N            None
    T / F        True / False
    i <len> <b>  int, two's-complement big-endian bytes (any size)
    f <8 bytes>  float, IEEE-754 double big-endian
    s <len> <b>  str, UTF-8
    b <len> <b>  bytes (bytearray and memoryview encode as bytes)
    l <n> ...    list of n values
    t <n> ...    tuple of n values (tuple subclasses such as namedtuples decode as plain tuples)
    d <n> ...    dict of n (key, value) pairs, keys being any hashable encodable value

Nesting is limited to `MAX_DEPTH`. A message is two frames: a 32-byte HMAC-SHA256 tag of the
body under the per-job secret, then the body (the encoded envelope `[kind, sender, seq,
payload]`). A frame whose tag does not verify is dropped before it is decoded.
"""
from __future__ import annotations

import hashlib
import hmac
import struct

MAX_DEPTH = 64
TAG_SIZE = 32

_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")


def encode(obj) -> bytes:
    """Encode a value made of None/bool/int/float/str/bytes/list/tuple/dict into bytes."""
    parts: list[bytes] = []
    _encode(obj, parts, 0)
    return b"".join(parts)


def _encode(obj, parts: list, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"tidal.comm: object nested deeper than {MAX_DEPTH} levels")
    if obj is None:
        parts.append(b"N")
    elif obj is True or obj is False:
        parts.append(b"T" if obj else b"F")
    elif isinstance(obj, int):
        raw = int(obj).to_bytes((int(obj).bit_length() + 8) // 8, "big", signed=True)
        parts += (b"i", _U32.pack(len(raw)), raw)
    elif isinstance(obj, float):
        parts += (b"f", _F64.pack(obj))
    elif isinstance(obj, str):
        raw = obj.encode("utf-8")
        parts += (b"s", _U32.pack(len(raw)), raw)
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        raw = bytes(obj)
        parts += (b"b", _U32.pack(len(raw)), raw)
    elif isinstance(obj, (list, tuple)):
        parts += (b"l" if isinstance(obj, list) else b"t", _U32.pack(len(obj)))
        for item in obj:
            _encode(item, parts, depth + 1)
    elif isinstance(obj, dict):
        parts += (b"d", _U32.pack(len(obj)))
        for key, value in obj.items():
            _encode(key, parts, depth + 1)
            _encode(value, parts, depth + 1)
    else:
        raise TypeError(f"tidal.comm: cannot send an object of type {type(obj).__name__} over the control "
                        "plane (supported: None, bool, int, float, str, bytes, list, tuple, dict)")


def decode(data: bytes):
    """Decode bytes written by `encode`; raises ValueError on malformed input."""
    data = bytes(data)
    try:
        obj, end = _decode(data, 0, 0)
    except (IndexError, struct.error, UnicodeDecodeError, TypeError, RecursionError) as exc:
        raise ValueError(f"tidal.comm: malformed message ({exc})") from None
    if end != len(data):
        raise ValueError("tidal.comm: malformed message (trailing bytes)")
    return obj


_CONSTANTS = {ord("N"): None, ord("T"): True, ord("F"): False}
_SIZED = {ord("i"), ord("s"), ord("b")}
_CONTAINERS = {ord("l"), ord("t"), ord("d")}


def _decode(data: bytes, pos: int, depth: int):
    if depth > MAX_DEPTH:
        raise ValueError(f"tidal.comm: malformed message (nested deeper than {MAX_DEPTH} levels)")
    code = data[pos]
    pos += 1
    if code in _CONSTANTS:
        return _CONSTANTS[code], pos
    if code == 0x66:    # f
        return _F64.unpack_from(data, pos)[0], pos + 8
    if code in _SIZED or code in _CONTAINERS:
        size = _U32.unpack_from(data, pos)[0]
        pos += 4
        if code in _SIZED:
            if pos + size > len(data):
                raise IndexError("truncated")
            raw = data[pos:pos + size]
            value = int.from_bytes(raw, "big", signed=True) if code == 0x69 else raw.decode() if code == 0x73 else raw
            return value, pos + size
        if size > len(data) - pos:  # every item takes at least one byte: reject absurd counts early
            raise IndexError("truncated")
        items = []
        for _ in range(size * 2 if code == 0x64 else size):
            item, pos = _decode(data, pos, depth + 1)
            items.append(item)
        if code == 0x64:    # d
            return dict(zip(items[0::2], items[1::2])), pos
        return (items if code == 0x6C else tuple(items)), pos
    raise ValueError(f"tidal.comm: malformed message (unknown type code {code})")


def waiting(sock, zmq, copy: bool = True):
    """Every multipart message already waiting on `sock`, without blocking (as zmq Frames with
    `copy=False`, which also tell which connection a message came on)."""
    while True:
        try:
            yield sock.recv_multipart(zmq.NOBLOCK, copy=copy)
        except zmq.Again:
            return


def sign(key: bytes, body: bytes) -> list[bytes]:
    """The frames that carry `body`: its HMAC-SHA256 tag under `key`, then the body."""
    return [hmac.new(key, body, hashlib.sha256).digest(), body]


def verify(key: bytes, frames: list) -> bytes | None:
    """The body of a two-frame message whose tag verifies under `key`, else None."""
    if len(frames) != 2:
        return None
    tag, body = bytes(frames[0]), bytes(frames[1])
    if len(tag) != TAG_SIZE or not hmac.compare_digest(tag, hmac.new(key, body, hashlib.sha256).digest()):
        return None
    return body


def pack_message(key: bytes, kind: str, sender: int, seq: int, payload: dict) -> list[bytes]:
    """Encode and sign one control message."""
    return sign(key, envelope(kind, sender, seq, encode(payload)))


def envelope(kind: str, sender: int, seq: int, encoded_payload: bytes) -> bytes:
    """The body `encode([kind, sender, seq, payload])`, given the payload already encoded."""
    return b"".join((b"l", _U32.pack(4), encode(kind), encode(sender), encode(seq), encoded_payload))


def unpack_message(key: bytes, frames: list) -> tuple[str, int, int, dict] | None:
    """The (kind, sender, seq, payload) of a signed, well-formed message, else None."""
    body = verify(key, frames)
    if body is None:
        return None
    try:
        msg = decode(body)
    except ValueError:
        return None
    if (not isinstance(msg, list) or len(msg) != 4 or not isinstance(msg[0], str) or type(msg[1]) is not int
            or type(msg[2]) is not int or not isinstance(msg[3], dict)):
        return None
    return msg[0], msg[1], msg[2], msg[3]


def secret_key(secret: str | bytes) -> bytes:
    """The HMAC key for a job secret (the TIDAL_JOB_SECRET string)."""
    if isinstance(secret, str):
        secret = secret.encode("utf-8")
    if not secret:
        raise ValueError("tidal.comm: the job secret must not be empty")
    return bytes(secret)
